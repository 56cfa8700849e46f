// The CUDA path on a real device: content, transforms, the pinned budget, the consumer stream,
// the caller's device and the copy counters.
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

#include "../support/sourced_dataset.hpp"
#include "../support/test_datasets.hpp"
#include "cuda_loader_fixture.hpp"
#include "gpufeed/cuda/buffer.hpp"
#include "gpufeed/cuda/device.hpp"
#include "gpufeed/cuda/error.hpp"
#include "gpufeed/cuda/event.hpp"
#include "gpufeed/cuda/stream.hpp"
#include "gpufeed/datasets/synthetic.hpp"
#include "gpufeed/gpufeed.hpp"

namespace gpufeed::test {
namespace {

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
  class aligned_source final : public detail::host_memory_source {
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
  loader feed{std::make_shared<test::sourced_dataset>(data, source), cuda_options(8)};
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

// ---- budget, streams, devices and counters ----------------------------------------------------

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
