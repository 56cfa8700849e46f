// The CUDA path on a real device: content, transforms, reuse safety, memory, teardown.
// Every case skips with the reason when no CUDA device is present (CI, laptops).

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <new>
#include <random>
#include <string>
#include <vector>

#include "../support/test_datasets.hpp"
#include "gpufeed/cuda/buffer.hpp"
#include "gpufeed/cuda/device.hpp"
#include "gpufeed/cuda/error.hpp"
#include "gpufeed/cuda/event.hpp"
#include "gpufeed/cuda/stream.hpp"
#include "gpufeed/datasets/synthetic.hpp"
#include "gpufeed/gpufeed.hpp"
#include "test_kernels.hpp"

namespace gpufeed::test {
namespace {

class CudaLoader : public ::testing::Test {
 protected:
  void SetUp() override {
    if (cuda::device_count() == 0) {
      GTEST_SKIP() << "no CUDA device: " << cuda::unavailable_reason();
    }
    stream_.emplace();
  }

  [[nodiscard]] stream_view stream() const { return stream_->view(); }

  loader_options cuda_options(std::size_t batch_size) const {
    return loader_options{.batch_size = batch_size,
                          .workers = 4,
                          .prefetch_depth = 3,
                          .shuffle = true,
                          .seed = 11,
                          .timeout = std::chrono::milliseconds{60'000},
                          .target = placement::cuda,
                          .consumer_stream = stream()};
  }

  /// The bytes of a device tensor, read on the consumer stream (so after the batch's copy).
  std::vector<std::byte> to_host(tensor_view const& t) const {
    std::vector<std::byte> out(t.bytes());
    GPUFEED_CUDA_TRY(cudaMemcpyAsync(out.data(), t.data(), out.size(), cudaMemcpyDeviceToHost,
                                     stream_->native()));
    stream_->synchronize();
    return out;
  }

  std::optional<cuda::cuda_stream> stream_;
};

std::vector<std::byte> expected_field(synthetic const& data, batch const& b, std::size_t f) {
  auto const bytes = data.spec()[f].bytes();
  std::vector<std::byte> out(bytes * b.size());
  for (std::size_t i = 0; i < b.size(); ++i) {
    data.expected(b.indices()[i], f, std::span{out}.subspan(i * bytes, bytes));
  }
  return out;
}

TEST_F(CudaLoader, DeviceContentEqualsDatasetForRandomShapes) {
  std::mt19937 rng{2024};
  dtype const types[] = {dtype::u8,  dtype::i16,  dtype::i32, dtype::i64,
                         dtype::f16, dtype::bf16, dtype::f32, dtype::f64};
  for (int round = 0; round < 12; ++round) {
    sample_spec spec;
    auto const fields = 1 + rng() % 3;
    for (std::size_t f = 0; f < fields; ++f) {
      std::vector<std::int64_t> shape(rng() % 4);
      for (auto& d : shape) {
        d = 1 + static_cast<std::int64_t>(rng() % 9);
      }
      spec.add("f" + std::to_string(f), types[rng() % std::size(types)], shape);
    }
    auto const size = 20 + rng() % 200;
    auto const batch_size = 1 + rng() % 37;
    auto data = std::make_shared<synthetic>(size, spec, synthetic_options{.seed = rng()});
    loader feed{data, cuda_options(batch_size)};
    std::size_t seen = 0;
    for (auto& b : feed) {
      for (std::size_t f = 0; f < b.fields(); ++f) {
        auto const t = b.field(f);
        ASSERT_EQ(t.device(), 0);
        ASSERT_EQ(to_host(t), expected_field(*data, b, f))
            << "round " << round << ", " << spec.to_string() << ", batch_size " << batch_size;
      }
      seen += b.size();
    }
    EXPECT_EQ(seen, size);
  }
}

// Host memory from a source (shared with worker processes in the Python package): page-locked
// with cudaHostRegister, copied like the loader's own, for the slots held batches add too.
TEST_F(CudaLoader, HostMemoryFromASourceIsPageLockedAndCopied) {
  class aligned_source final : public host_memory_source {
   public:
    ~aligned_source() override {
      for (auto* p : blocks_) ::operator delete (p, std::align_val_t{4096});
    }
    std::byte* slot_memory(std::size_t, std::size_t bytes) override {
      blocks_.push_back(static_cast<std::byte*>(::operator new (bytes, std::align_val_t{4096})));
      return blocks_.back();
    }
    std::vector<std::byte*> blocks_;
  };
  auto data = std::make_shared<synthetic>(
      120, sample_spec{}.add("x", dtype::u8, {33, 5}).add("y", dtype::i64, {}));
  auto source = std::make_shared<aligned_source>();
  auto options = cuda_options(8);
  options.host_memory = source;
  loader feed{data, options};
  std::vector<batch> held;  // every batch alive: the ring grows from the source
  while (auto b = feed.next()) {
    ASSERT_EQ(to_host(b->field(0)), expected_field(*data, *b, 0));
    ASSERT_EQ(to_host(b->field(1)), expected_field(*data, *b, 1));
    held.push_back(std::move(*b));
  }
  EXPECT_GE(source->blocks_.size(), held.size());
  EXPECT_GT(feed.snapshot().pinned_bytes, 0U);
}

TEST_F(CudaLoader, PageableStagingDeliversTheSameBytes) {
  auto data = std::make_shared<synthetic>(
      300, sample_spec{}.add("x", dtype::u8, {33, 5}).add("y", dtype::i64, {}));
  auto options = cuda_options(16);
  options.staging = staging_memory::pageable;
  loader feed{data, options};
  for (auto& b : feed) {
    ASSERT_EQ(to_host(b.field(0)), expected_field(*data, b, 0));
    ASSERT_EQ(to_host(b.field(1)), expected_field(*data, b, 1));
  }
  auto const s = feed.snapshot();
  EXPECT_EQ(s.staging, "pageable");
  EXPECT_EQ(s.pinned_bytes, 0u);
  EXPECT_GT(s.copies, 0u);
}

// ---- transforms -------------------------------------------------------------------------------

struct transform_case {
  field_transform transform;
  std::vector<std::int64_t> shape;  // the field as read
};

// The expected output in double precision, in the output's element order.
std::vector<double> reference(std::vector<std::uint8_t> const& in, std::size_t samples,
                              transform_case const& c) {
  auto const& t = c.transform;
  bool const image = c.shape.size() == 3;
  std::size_t const channels =
      image
          ? static_cast<std::size_t>(t.input_layout == image_layout::hwc ? c.shape[2] : c.shape[0])
          : 1;
  std::size_t elements = 1;
  for (auto d : c.shape) {
    elements *= static_cast<std::size_t>(d);
  }
  auto const pixels = elements / channels;
  auto value = [&](std::size_t n, std::size_t ch, std::size_t p) {
    auto const source = t.input_layout == image_layout::hwc ? n * elements + p * channels + ch
                                                            : n * elements + ch * pixels + p;
    auto const mean = t.mean.empty() ? 0.0 : t.mean[t.mean.size() == 1 ? 0 : ch];
    auto const sd = t.std.empty() ? 1.0 : t.std[t.std.size() == 1 ? 0 : ch];
    return (static_cast<double>(in[source]) * t.scale - mean) / sd;
  };
  std::vector<double> out(samples * elements);
  for (std::size_t n = 0; n < samples; ++n) {
    for (std::size_t ch = 0; ch < channels; ++ch) {
      for (std::size_t p = 0; p < pixels; ++p) {
        auto const o = t.output_layout == image_layout::hwc ? n * elements + p * channels + ch
                                                            : n * elements + ch * pixels + p;
        out[o] = value(n, ch, p);
      }
    }
  }
  return out;
}

std::vector<double> decode(std::vector<std::byte> const& raw, dtype type) {
  std::vector<double> out(raw.size() / size_of(type));
  for (std::size_t i = 0; i < out.size(); ++i) {
    if (type == dtype::f32) {
      float v;
      std::memcpy(&v, raw.data() + i * 4, 4);
      out[i] = v;
    } else if (type == dtype::f16) {
      __half v;
      std::memcpy(&v, raw.data() + i * 2, 2);
      out[i] = static_cast<double>(__half2float(v));
    } else {
      __nv_bfloat16 v;
      std::memcpy(&v, raw.data() + i * 2, 2);
      out[i] = static_cast<double>(__bfloat162float(v));
    }
  }
  return out;
}

TEST_F(CudaLoader, TransformsMatchACpuReference) {
  std::vector<transform_case> const cases{
      {{.field = "image",
        .to = dtype::f32,
        .output_layout = image_layout::chw,
        .scale = 1.0f / 255,
        .mean = {0.485f, 0.456f, 0.406f},
        .std = {0.229f, 0.224f, 0.225f}},
       {17, 13, 3}},
      {{.field = "image", .to = dtype::f16, .scale = 1.0f / 255, .mean = {0.5f}, .std = {0.25f}},
       {9, 31, 3}},
      {{.field = "image",
        .to = dtype::bf16,
        .output_layout = image_layout::chw,
        .mean = {10, 20, 30, 40},
        .std = {2, 3, 4, 5}},
       {8, 8, 4}},
      {{.field = "image",
        .to = dtype::f32,
        .input_layout = image_layout::chw,
        .output_layout = image_layout::hwc,
        .mean = {1, 2},
        .std = {3, 4}},
       {2, 11, 7}},
      {{.field = "image", .to = dtype::f16, .scale = 0.5f}, {100}},
  };
  for (auto const& c : cases) {
    auto data = std::make_shared<synthetic>(
        97, sample_spec{}.add("image", dtype::u8, c.shape).add("label", dtype::i32, {}));
    auto options = cuda_options(10);
    options.transforms = {c.transform};
    loader feed{data, options};
    for (auto& b : feed) {
      auto const t = b.field("image");
      ASSERT_EQ(t.type(), c.transform.to);
      auto const raw = expected_field(*data, b, 0);
      std::vector<std::uint8_t> in(raw.size());
      std::memcpy(in.data(), raw.data(), raw.size());
      auto const want = reference(in, b.size(), c);
      auto const got = decode(to_host(t), t.type());
      ASSERT_EQ(got.size(), want.size());
      if (c.transform.to == dtype::f32) {
        double diff = 0;
        double norm = 0;
        for (std::size_t i = 0; i < got.size(); ++i) {
          diff += (got[i] - want[i]) * (got[i] - want[i]);
          norm += want[i] * want[i];
        }
        EXPECT_LE(std::sqrt(diff), 1e-6 * std::sqrt(norm));
      } else {
        // Rounding to the format: within one unit in the last place (10 bits for f16, 7 for
        // bf16), plus f32 arithmetic before rounding.
        double const ulp = c.transform.to == dtype::f16 ? 0x1p-10 : 0x1p-7;
        for (std::size_t i = 0; i < got.size(); ++i) {
          ASSERT_LE(std::abs(got[i] - want[i]), ulp * std::abs(want[i]) + 1e-6)
              << "element " << i << " of " << std::string{to_string(c.transform.to)};
        }
      }
      // The field's shape follows the output layout; the untransformed label is untouched.
      auto want_shape = c.shape;
      if (c.shape.size() == 3 && c.transform.input_layout != c.transform.output_layout) {
        want_shape = c.transform.input_layout == image_layout::hwc
                         ? std::vector<std::int64_t>{c.shape[2], c.shape[0], c.shape[1]}
                         : std::vector<std::int64_t>{c.shape[1], c.shape[2], c.shape[0]};
      }
      EXPECT_EQ(std::vector<std::int64_t>(t.shape().begin() + 1, t.shape().end()), want_shape);
      ASSERT_EQ(to_host(b.field("label")), expected_field(*data, b, 1));
    }
  }
}

// ---- reuse safety -----------------------------------------------------------------------------

TEST_F(CudaLoader, ReleasedBatchIsNotOverwrittenWhileItsStreamStillReadsIt) {
  // Two slots: a batch is released while its stream still has a 20 ms spin and a checksum of
  // it queued, and the next round's next() makes the loader refill that slot at once. The
  // checksums before and after the spin must agree with the dataset: the copy into the
  // released slot has to wait for the stream.
  auto data = std::make_shared<synthetic>(400, sample_spec{}.add("x", dtype::u8, {4096}));
  auto options = cuda_options(32);
  options.prefetch_depth = 2;
  loader feed{data, options};
  cuda::device_buffer sums{64 * 2 * sizeof(unsigned long long)};
  GPUFEED_CUDA_TRY(cudaMemsetAsync(sums.data(), 0, sums.size(), stream().native()));
  auto* const sum = reinterpret_cast<unsigned long long*>(sums.data());
  cuda::cuda_event read_again;  // the second checksum of the previous round
  std::vector<unsigned long long> expected;
  for (int round = 0; round < 6; ++round) {
    auto b = feed.next();
    ASSERT_TRUE(b);
    if (round > 0) {
      // This batch's slot was refilled after the previous round's release; the test only
      // tests something if that refill was queued while the stream was still spinning.
      ASSERT_FALSE(read_again.done()) << "the host fell behind the 20 ms spin; nothing tested";
    }
    auto const t = b->field(0);
    auto const want = expected_field(*data, *b, 0);
    unsigned long long total = 0;
    for (auto byte : want) {
      total += static_cast<unsigned long long>(byte);
    }
    expected.push_back(total);
    expected.push_back(total);
    checksum_async(t.data(), t.bytes(), sum + 2 * round, stream().native());
    spin_async(20'000, stream().native());
    checksum_async(t.data(), t.bytes(), sum + 2 * round + 1, stream().native());
    read_again.record(stream().native());
    b.reset();                     // released while the stream has not even started the spin
    auto following = feed.next();  // the other slot; the released one is being refilled
    ASSERT_TRUE(following);
  }
  std::vector<unsigned long long> got(expected.size());
  GPUFEED_CUDA_TRY(cudaMemcpyAsync(got.data(), sum, got.size() * sizeof(got[0]),
                                   cudaMemcpyDeviceToHost, stream().native()));
  stream_->synchronize();
  EXPECT_EQ(got, expected);
}

TEST_F(CudaLoader, ReleaseWaitsForEveryStreamTheBatchWasUsedOn) {
  // As above, but the slow reader is a second stream the batch was declared on (use_on): the
  // refill of the released slot must wait for that stream too, not only for the one next()
  // handed the batch to.
  auto data = std::make_shared<synthetic>(400, sample_spec{}.add("x", dtype::u8, {4096}));
  auto options = cuda_options(32);
  options.prefetch_depth = 2;
  loader feed{data, options};
  cuda::cuda_stream other;
  cuda::device_buffer sums{64 * sizeof(unsigned long long)};
  GPUFEED_CUDA_TRY(cudaMemsetAsync(sums.data(), 0, sums.size(), other.native()));
  auto* const sum = reinterpret_cast<unsigned long long*>(sums.data());
  cuda::cuda_event read_again;
  std::vector<unsigned long long> expected;
  for (int round = 0; round < 6; ++round) {
    auto b = feed.next();
    ASSERT_TRUE(b);
    if (round > 0) {
      ASSERT_FALSE(read_again.done()) << "the host fell behind the 20 ms spin; nothing tested";
    }
    auto const t = b->field(0);
    unsigned long long total = 0;
    for (auto byte : expected_field(*data, *b, 0)) {
      total += static_cast<unsigned long long>(byte);
    }
    expected.push_back(total);
    b->use_on(other.view());  // `other` waits for the copy, and the release waits for `other`
    spin_async(20'000, other.native());
    checksum_async(t.data(), t.bytes(), sum + round, other.native());
    read_again.record(other.native());
    b.reset();
    auto following = feed.next();
    ASSERT_TRUE(following);
  }
  std::vector<unsigned long long> got(expected.size());
  GPUFEED_CUDA_TRY(cudaMemcpyAsync(got.data(), sum, got.size() * sizeof(got[0]),
                                   cudaMemcpyDeviceToHost, other.native()));
  other.synchronize();
  EXPECT_EQ(got, expected);
}

TEST_F(CudaLoader, HeldBatchesGrowTheRingOnTheDevice) {
  // Every batch held at once: the ring (pinned host and device halves) grows instead of
  // failing, and each held batch keeps its own bytes on the device.
  auto data = std::make_shared<synthetic>(96, sample_spec{}.add("x", dtype::u8, {1000}));
  auto options = cuda_options(8);
  options.prefetch_depth = 2;
  loader feed{data, options};
  std::vector<batch> held;
  while (auto b = feed.next()) {
    held.push_back(std::move(*b));
  }
  ASSERT_EQ(held.size(), 12U);
  for (auto const& b : held) {
    auto const want = expected_field(*data, b, 0);
    EXPECT_EQ(to_host(b.field(0)), want) << "batch " << b.sequence();
  }
  auto const st = feed.snapshot();
  EXPECT_GE(st.ring_grown, 10U);
  EXPECT_EQ(st.pinned_bytes, st.ring_capacity * st.slot_bytes);
}

TEST_F(CudaLoader, SanitizerRunOfAThousandBatches) {
  // The run compute-sanitizer's memcheck and racecheck inspect on the device machine. The
  // checksum kernel is a reader of each batch for them to watch, not a check of its own: the
  // content of transformed batches is checked against a CPU reference in
  // TransformsMatchACpuReference. What this test asserts by itself is the batch count; its
  // verdict is the sanitizers' (scripts/device-check).
  auto data = std::make_shared<synthetic>(
      2000, sample_spec{}.add("image", dtype::u8, {16, 16, 3}).add("label", dtype::i64, {}));
  auto options = cuda_options(8);
  options.transforms = {{.field = "image",
                         .to = dtype::bf16,
                         .output_layout = image_layout::chw,
                         .scale = 1.0f / 255,
                         .mean = {0.5f},
                         .std = {0.5f}}};
  loader feed{data, options};
  cuda::device_buffer sums{sizeof(unsigned long long)};
  GPUFEED_CUDA_TRY(cudaMemsetAsync(sums.data(), 0, sums.size(), stream().native()));
  std::size_t batches = 0;
  for (std::uint64_t epoch = 0; batches < 1000; ++epoch) {
    feed.set_epoch(epoch);
    for (auto& b : feed) {
      auto const t = b.field(0);
      checksum_async(t.data(), t.bytes(), reinterpret_cast<unsigned long long*>(sums.data()),
                     stream().native());
      if (++batches == 1000) {
        break;
      }
    }
  }
  stream_->synchronize();
  EXPECT_EQ(feed.snapshot().batches, 1000u);
}

TEST_F(CudaLoader, MemoryDoesNotGrowOverTenThousandBatches) {
  auto data = std::make_shared<synthetic>(
      5000, sample_spec{}.add("x", dtype::u8, {64, 3}).add("y", dtype::f32, {}));
  auto options = cuda_options(16);
  options.transforms = {{.field = "x", .to = dtype::f16}};
  loader feed{data, options};
  auto const allocations = cuda::allocation_count();
  std::size_t batches = 0;
  auto run_to = [&](std::size_t target) {
    for (std::uint64_t epoch = feed.epoch(); batches < target; ++epoch) {
      feed.set_epoch(epoch);
      for (auto& b : feed) {
        (void)b;
        if (++batches == target) {
          break;
        }
      }
    }
    stream_->synchronize();
  };
  // Measured from batch 1,000 on, once the allocator and the log have settled: a leak of even
  // 512 bytes per batch would add over 4 MiB by batch 10,000.
  run_to(1'000);
  std::size_t free_before = 0;
  std::size_t total = 0;
  GPUFEED_CUDA_TRY(cudaMemGetInfo(&free_before, &total));
  auto const rss_before = rss_bytes();
  run_to(10'000);
  std::size_t free_after = 0;
  GPUFEED_CUDA_TRY(cudaMemGetInfo(&free_after, &total));
  EXPECT_EQ(cuda::allocation_count(), allocations)
      << "gpufeed allocated pinned or device memory after construction";
  EXPECT_EQ(free_after, free_before);
  EXPECT_LT(rss_bytes(), rss_before + (4u << 20));
}

TEST_F(CudaLoader, DestroyingTheLoaderWithCopiesInFlightIsClean) {
  // No batch outlives the loader here: the destructor itself must wait for the refill copies
  // queued behind the stream's spin and for the stream's last read of the released batch.
  auto data = std::make_shared<synthetic>(64, sample_spec{}.add("x", dtype::u8, {1 << 20}));
  cuda::device_buffer sums{10 * sizeof(unsigned long long)};
  GPUFEED_CUDA_TRY(cudaMemsetAsync(sums.data(), 0, sums.size(), stream().native()));
  auto* const sum = reinterpret_cast<unsigned long long*>(sums.data());
  std::vector<unsigned long long> expected;
  for (int round = 0; round < 10; ++round) {
    auto options = cuda_options(4);  // 4 MiB batches: copies take a while
    options.prefetch_depth = 4;
    loader feed{data, options};
    auto b = feed.next();
    ASSERT_TRUE(b);
    unsigned long long total = 0;
    for (auto byte : expected_field(*data, *b, 0)) {
      total += static_cast<unsigned long long>(byte);
    }
    expected.push_back(total);
    auto const t = b->field(0);
    spin_async(20'000, stream().native());
    checksum_async(t.data(), t.bytes(), sum + round, stream().native());
    b.reset();
  }  // each loader is destroyed while its stream still spins and its workers refill
  std::vector<unsigned long long> got(expected.size());
  GPUFEED_CUDA_TRY(cudaMemcpyAsync(got.data(), sum, got.size() * sizeof(got[0]),
                                   cudaMemcpyDeviceToHost, stream().native()));
  stream_->synchronize();
  EXPECT_EQ(got, expected);
  GPUFEED_CUDA_TRY(cudaGetLastError());
}

TEST_F(CudaLoader, BatchOutlivingItsLoaderKeepsItsMemory) {
  auto data = std::make_shared<synthetic>(64, sample_spec{}.add("x", dtype::u8, {1 << 20}));
  for (int round = 0; round < 5; ++round) {
    std::optional<batch> held;
    {
      loader feed{data, cuda_options(4)};
      held = feed.next();
      ASSERT_TRUE(held);
    }
    EXPECT_EQ(to_host(held->field(0)), expected_field(*data, *held, 0));
  }
}

TEST_F(CudaLoader, TheLastBatchOfAGoneLoaderIsReleasedWithoutWaitingForTheGpu) {
  // Dropping the last batch of a destroyed loader tears the CUDA stage down; that teardown waits
  // for the batch's release on the consumer stream, which is still spinning (2 s). It must run
  // off this thread: the release returns while the stream is still busy. (Held on the old,
  // synchronous teardown, the release returned only after the spin, and the query below said
  // the stream was done.)
  auto data = std::make_shared<synthetic>(16, sample_spec{}.add("x", dtype::u8, {1 << 16}));
  std::optional<batch> held;
  {
    loader feed{data, cuda_options(4)};
    held = feed.next();
    ASSERT_TRUE(held);
  }
  spin_async(2'000'000, stream().native());
  held.reset();
  EXPECT_EQ(cudaStreamQuery(stream().native()), cudaErrorNotReady);
  stream_->synchronize();
  // The next loader waits for that teardown before it allocates, and works as usual.
  loader again{data, cuda_options(4)};
  auto b = again.next();
  ASSERT_TRUE(b);
  EXPECT_EQ(to_host(b->field(0)), expected_field(*data, *b, 0));
}

TEST_F(CudaLoader, PinnedBudgetTooSmallSaysWhatToChange) {
  auto data = std::make_shared<synthetic>(100, sample_spec{}.add("x", dtype::u8, {1 << 16}));
  auto options = cuda_options(16);  // 1 MiB per batch, 3 slots
  options.pinned_budget = std::size_t{1} << 20;
  try {
    loader feed{data, options};
    FAIL() << "a 3 MiB ring fitted a 1 MiB budget";
  } catch (out_of_memory const& e) {
    std::string const what = e.what();
    EXPECT_NE(what.find("prefetch_depth 3"), std::string::npos) << what;
    EXPECT_NE(what.find("pinned_budget"), std::string::npos) << what;
    EXPECT_NE(what.find("staging_memory::pageable"), std::string::npos) << what;
  }
}

TEST_F(CudaLoader, NextWithoutAConsumerStreamIsRefused) {
  auto data = std::make_shared<synthetic>(10, sample_spec{}.add("x", dtype::u8, {4}));
  auto options = cuda_options(2);
  options.consumer_stream.reset();
  loader feed{data, options};
  EXPECT_THROW((void)feed.next(), logic_error);
  auto b = feed.next(stream());  // given per call instead
  ASSERT_TRUE(b);
  EXPECT_EQ(to_host(b->field(0)), expected_field(*data, *b, 0));
}

TEST_F(CudaLoader, CallersCurrentDeviceIsRestored) {
  int const devices = cuda::device_count();
  if (devices < 2) {
    GTEST_SKIP() << "needs two CUDA devices to tell them apart; this machine has " << devices;
  }
  GPUFEED_CUDA_TRY(cudaSetDevice(0));
  auto data = std::make_shared<synthetic>(50, sample_spec{}.add("x", dtype::u8, {8}));
  auto options = cuda_options(5);
  options.device = 1;
  {
    cuda::device_guard const on_one{1};
    cuda::cuda_stream consumer;
    options.consumer_stream = consumer.view();
    GPUFEED_CUDA_TRY(cudaSetDevice(0));
    loader feed{data, options};
    int current = -1;
    GPUFEED_CUDA_TRY(cudaGetDevice(&current));
    EXPECT_EQ(current, 0);
    auto b = feed.next();
    GPUFEED_CUDA_TRY(cudaGetDevice(&current));
    EXPECT_EQ(current, 0);
    EXPECT_EQ(b->field(0).device(), 1);
    b.reset();
    GPUFEED_CUDA_TRY(cudaGetDevice(&current));
    EXPECT_EQ(current, 0);
  }
}

TEST_F(CudaLoader, StatsReportTheCopies) {
  auto data = std::make_shared<synthetic>(160, sample_spec{}.add("x", dtype::u8, {1000}));
  loader feed{data, cuda_options(16)};
  for (auto& b : feed) {
    (void)b;
  }
  stream_->synchronize();
  auto const s = feed.snapshot();
  EXPECT_EQ(s.staging, "pinned");
  EXPECT_EQ(s.device, 0);
  EXPECT_EQ(s.pinned_bytes, s.host_bytes);
  EXPECT_GE(s.device_bytes, s.host_bytes);
  // The epoch's 10 batches, and at most the 3 slots' worth of epoch 1 prefetched already.
  EXPECT_GE(s.copies, 10u);
  EXPECT_LE(s.copies, 13u);
  EXPECT_GE(s.h2d_bytes, 160u * 1000u);
  // Copies are timed when their slot is refilled: 10 batches through 3 slots refill 7.
  EXPECT_GE(s.timed_copies, 7u);
  EXPECT_GT(s.h2d_s, 0.0);
  EXPECT_LT(s.h2d_s, s.wall_s);
}

}  // namespace
}  // namespace gpufeed::test
