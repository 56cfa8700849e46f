// The bundled datasets: synthetic (deterministic bytes) and in_memory (rows of caller arrays).

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <set>
#include <span>
#include <vector>

#include "gpufeed/datasets/in_memory.hpp"
#include "gpufeed/datasets/synthetic.hpp"
#include "gpufeed/detail/slot_layout.hpp"
#include "gpufeed/gpufeed.hpp"
#include "support/test_datasets.hpp"

namespace {

using gpufeed::dtype;
using gpufeed::read_context;
using gpufeed::sample_spec;
using namespace gpufeed::test;  // NOLINT(google-build-using-namespace): test doubles

using bytes_t = std::vector<std::byte>;

read_context context_for(std::size_t index, std::uint64_t epoch = 0, unsigned worker = 0,
                         std::uint64_t seed = 0) {
  read_context ctx;
  ctx.index = index;
  ctx.epoch = epoch;
  ctx.worker = worker;
  ctx.seed = seed;
  return ctx;
}

// Reads sample `index` at `position` of a 3-sample slot pre-filled with 0xAB; returns each
// field's bytes and checks that the other positions were left alone.
std::vector<bytes_t> read_sample(gpufeed::dataset const& d, std::size_t index,
                                 read_context const& ctx, std::size_t position = 1) {
  gpufeed::detail::slot_layout layout{d.spec(), 3};
  bytes_t slot(layout.slot_bytes(), std::byte{0xAB});
  d.read(index, gpufeed::sample_view{layout, slot.data(), position}, ctx);
  std::vector<bytes_t> out;
  for (std::size_t f = 0; f < layout.spec().size(); ++f) {
    auto const* at = layout.locate(slot.data(), f, position);
    out.emplace_back(at, at + layout.field_bytes(f));
    for (std::size_t p = 0; p < 3; ++p) {
      if (p == position) continue;
      auto const* other = layout.locate(slot.data(), f, p);
      for (std::size_t b = 0; b < layout.field_bytes(f); ++b) {
        EXPECT_EQ(other[b], std::byte{0xAB})
            << "read() wrote outside its sample (field " << f << ", position " << p << ")";
      }
    }
  }
  return out;
}

std::vector<bytes_t> expected_sample(gpufeed::synthetic const& d, std::size_t index) {
  std::vector<bytes_t> out;
  auto spec = d.spec();
  for (std::size_t f = 0; f < spec.size(); ++f) {
    bytes_t field(spec[f].bytes());
    d.expected(index, f, field);
    out.push_back(std::move(field));
  }
  return out;
}

float half_to_float(std::uint16_t h) {
  int const exponent = (h >> 10) & 0x1f;
  int const mantissa = h & 0x3ff;
  float const sign = (h & 0x8000) != 0 ? -1.0F : 1.0F;
  if (exponent == 0) return sign * std::ldexp(static_cast<float>(mantissa), -24);
  if (exponent == 31) return mantissa == 0 ? sign * INFINITY : NAN;
  return sign * std::ldexp(1.0F + static_cast<float>(mantissa) / 1024.0F, exponent - 15);
}

float bf16_to_float(std::uint16_t h) {
  return std::bit_cast<float>(static_cast<std::uint32_t>(h) << 16);
}

template <class T>
std::vector<T> as_values(bytes_t const& b) {
  std::vector<T> out(b.size() / sizeof(T));
  std::memcpy(out.data(), b.data(), out.size() * sizeof(T));
  return out;
}

sample_spec mixed_spec() {
  sample_spec spec;
  spec.add("image", dtype::u8, {8, 8, 3})
      .add("label", dtype::i64, {})
      .add("f32", dtype::f32, {64})
      .add("f64", dtype::f64, {16})
      .add("f16", dtype::f16, {32})
      .add("bf16", dtype::bf16, {32})
      .add("i16", dtype::i16, {5});
  return spec;
}

// ------------------------------------------------------------------------------------------------
// synthetic

TEST(datasets_test, SyntheticIsDeterministic) {
  gpufeed::synthetic d{100, mixed_spec(), gpufeed::synthetic_options{.seed = 7}};
  EXPECT_EQ(d.size(), 100U);
  EXPECT_EQ(d.spec(), mixed_spec());
  for (std::size_t i : {0U, 1U, 42U, 99U}) {
    auto want = expected_sample(d, i);
    EXPECT_EQ(read_sample(d, i, context_for(i)), want) << "index " << i;
    // The same bytes on any worker, in any epoch, at any position, with any read seed.
    EXPECT_EQ(read_sample(d, i, context_for(i, 3, 5, 0x1234), 0), want) << "index " << i;
    EXPECT_EQ(read_sample(d, i, context_for(i, 9, 1, 0x9999), 2), want) << "index " << i;
  }
  gpufeed::synthetic same{100, mixed_spec(), gpufeed::synthetic_options{.seed = 7}};
  EXPECT_EQ(expected_sample(same, 42), expected_sample(d, 42));
}

TEST(datasets_test, SyntheticDependsOnSeedAndIndex) {
  gpufeed::synthetic a{100, mixed_spec(), gpufeed::synthetic_options{.seed = 7}};
  gpufeed::synthetic b{100, mixed_spec(), gpufeed::synthetic_options{.seed = 8}};
  auto sample = expected_sample(a, 3);
  EXPECT_NE(sample, expected_sample(b, 3));
  EXPECT_NE(sample, expected_sample(a, 4));
  // Field by field too (the image of sample 3 is not the image of sample 4).
  EXPECT_NE(sample[0], expected_sample(a, 4)[0]);
  EXPECT_NE(sample[0], expected_sample(b, 3)[0]);
  // Integer fields are uniform bits: 192 image bytes take many values.
  std::set<std::byte> values(sample[0].begin(), sample[0].end());
  EXPECT_GT(values.size(), 64U);
}

TEST(datasets_test, SyntheticFloatsAreInUnitInterval) {
  gpufeed::synthetic d{50, mixed_spec(), gpufeed::synthetic_options{.seed = 3}};
  double sum = 0;
  std::size_t count = 0;
  for (std::size_t i = 0; i < 50; ++i) {
    auto s = read_sample(d, i, context_for(i));
    for (float v : as_values<float>(s[2])) {
      ASSERT_GE(v, 0.0F) << "index " << i;
      ASSERT_LT(v, 1.0F) << "index " << i;
      sum += v;
      ++count;
    }
    for (double v : as_values<double>(s[3])) {
      ASSERT_GE(v, 0.0) << "index " << i;
      ASSERT_LT(v, 1.0) << "index " << i;
    }
    for (std::uint16_t h : as_values<std::uint16_t>(s[4])) {
      float v = half_to_float(h);
      ASSERT_GE(v, 0.0F) << "float16 bits " << h << ", index " << i;
      ASSERT_LT(v, 1.0F) << "float16 bits " << h << ", index " << i;
    }
    for (std::uint16_t h : as_values<std::uint16_t>(s[5])) {
      float v = bf16_to_float(h);
      ASSERT_GE(v, 0.0F) << "bfloat16 bits " << h << ", index " << i;
      ASSERT_LT(v, 1.0F) << "bfloat16 bits " << h << ", index " << i;
    }
  }
  // Spread over the interval, not a constant.
  double const mean = sum / static_cast<double>(count);
  EXPECT_GT(mean, 0.3);
  EXPECT_LT(mean, 0.7);
}

TEST(datasets_test, SyntheticWithoutWriteLeavesMemoryAlone) {
  gpufeed::synthetic d{10, mixed_spec(), gpufeed::synthetic_options{.seed = 1, .write = false}};
  auto s = read_sample(d, 4, context_for(4));
  for (auto const& field : s) {
    for (auto b : field) ASSERT_EQ(b, std::byte{0xAB});
  }
}

TEST(datasets_test, SyntheticThroughLoader) {
  std::size_t const n = 37;
  sample_spec spec;
  spec.add("image", dtype::u8, {4, 4, 3}).add("label", dtype::i64, {}).add("x", dtype::f32, {5});
  auto data = std::make_shared<gpufeed::synthetic>(n, spec, gpufeed::synthetic_options{.seed = 11});
  auto o = small_options(8, 3);
  o.shuffle = true;
  o.seed = 2;
  gpufeed::loader l{data, o};
  std::size_t seen = 0;
  while (auto b = l.next()) {
    ASSERT_EQ(b->fields(), 3U);
    for (std::size_t f = 0; f < 3; ++f) {
      auto t = b->field(f);
      ASSERT_EQ(t.shape()[0], static_cast<std::int64_t>(b->size()));
      auto bytes = t.as<std::byte>();
      std::size_t const row = spec[f].bytes();
      for (std::size_t r = 0; r < b->size(); ++r) {
        bytes_t want(row);
        data->expected(b->indices()[r], f, want);
        EXPECT_EQ(bytes_t(bytes.begin() + static_cast<std::ptrdiff_t>(r * row),
                          bytes.begin() + static_cast<std::ptrdiff_t>((r + 1) * row)),
                  want)
            << "batch " << b->sequence() << " row " << r << " field " << f;
      }
    }
    seen += b->size();
  }
  EXPECT_EQ(seen, n);
}

// ------------------------------------------------------------------------------------------------
// in_memory

TEST(datasets_test, InMemoryReturnsRows) {
  std::size_t const n = 6;
  std::vector<float> x(n * 3);
  std::vector<std::int64_t> y(n);
  for (std::size_t i = 0; i < n; ++i) {
    for (std::size_t j = 0; j < 3; ++j)
      x[i * 3 + j] = static_cast<float>(i) + 0.25F * static_cast<float>(j);
    y[i] = static_cast<std::int64_t>(i * i) - 7;
  }
  gpufeed::in_memory d{n};
  d.add<float>("x", {3}, x).add<std::int64_t>("y", {}, y);
  EXPECT_EQ(d.size(), n);
  ASSERT_EQ(d.spec().size(), 2U);
  EXPECT_EQ(d.spec()[0], (gpufeed::field{"x", dtype::f32, {3}}));
  EXPECT_EQ(d.spec()[1], (gpufeed::field{"y", dtype::i64, {}}));
  for (std::size_t i = 0; i < n; ++i) {
    auto s = read_sample(d, i, context_for(i));
    EXPECT_EQ(as_values<float>(s[0]), (std::vector<float>{x[i * 3], x[i * 3 + 1], x[i * 3 + 2]}));
    EXPECT_EQ(as_values<std::int64_t>(s[1]), (std::vector<std::int64_t>{y[i]}));
  }
}

TEST(datasets_test, InMemoryThroughLoader) {
  std::size_t const n = 50;
  std::vector<std::int32_t> a(n * 2);
  std::vector<std::uint16_t> h(n);
  for (std::size_t i = 0; i < n; ++i) {
    a[2 * i] = static_cast<std::int32_t>(i);
    a[2 * i + 1] = -static_cast<std::int32_t>(i);
    h[i] = static_cast<std::uint16_t>(0x3c00 + i);
  }
  auto data = std::make_shared<gpufeed::in_memory>(n);
  data->add<std::int32_t>("a", {2}, a);
  data->add_bytes("h", dtype::f16, {}, std::as_bytes(std::span{h}));
  auto o = small_options(7, 2);
  o.shuffle = true;
  o.seed = 6;
  gpufeed::loader l{data, o};
  std::vector<std::size_t> seen;
  while (auto b = l.next()) {
    auto av = b->field("a").as<std::int32_t>();
    auto hv = b->field("h").as<std::uint16_t>();
    EXPECT_EQ(b->field("h").type(), dtype::f16);
    for (std::size_t r = 0; r < b->size(); ++r) {
      auto i = b->indices()[r];
      EXPECT_EQ(av[2 * r], static_cast<std::int32_t>(i));
      EXPECT_EQ(av[2 * r + 1], -static_cast<std::int32_t>(i));
      EXPECT_EQ(hv[r], h[i]);
      seen.push_back(i);
    }
  }
  EXPECT_EQ(seen, gpufeed::sampler(n, true, 6).epoch_indices(0));
}

TEST(datasets_test, InMemoryRejectsWrongSize) {
  gpufeed::in_memory d{4};
  std::vector<float> too_short(4 * 3 - 1);
  std::vector<float> too_long(4 * 3 + 3);
  std::vector<float> right(4 * 3);
  EXPECT_THROW(d.add<float>("x", {3}, too_short), gpufeed::logic_error);
  EXPECT_THROW(d.add<float>("x", {3}, too_long), gpufeed::logic_error);
  EXPECT_EQ(d.spec().size(), 0U) << "a rejected field was added";
  EXPECT_NO_THROW(d.add<float>("x", {3}, right));
  EXPECT_THROW(d.add<float>("x", {3}, right), gpufeed::logic_error) << "duplicate name";
  std::vector<std::byte> raw(4 * 2 + 1);
  EXPECT_THROW(d.add_bytes("h", dtype::f16, {}, raw), gpufeed::logic_error);
  EXPECT_EQ(d.spec().size(), 1U);
}

TEST(datasets_test, InMemoryKeepsOwnerAlive) {
  auto storage = std::make_shared<std::vector<double>>(5 * 2, 0.5);
  std::weak_ptr<std::vector<double>> watch = storage;
  auto d = std::make_shared<gpufeed::in_memory>(5);
  d->add<double>("v", {2}, std::span<double const>{*storage}, storage);
  storage.reset();
  EXPECT_FALSE(watch.expired()) << "the owner was not kept";
  auto s = read_sample(*d, 3, context_for(3));
  EXPECT_EQ(as_values<double>(s[0]), (std::vector<double>{0.5, 0.5}));
  d.reset();
  EXPECT_TRUE(watch.expired()) << "the owner outlived the dataset";
}

}  // namespace
