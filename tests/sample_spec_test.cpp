// sample_spec, dtype, sample_view and tensor_view: layout and type checks.

#include <gtest/gtest.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "gpufeed/detail/slot_layout.hpp"
#include "gpufeed/dtype.hpp"
#include "gpufeed/error.hpp"
#include "gpufeed/sample_layout.hpp"
#include "gpufeed/sample_spec.hpp"
#include "gpufeed/sample_view.hpp"
#include "gpufeed/tensor_view.hpp"
#include "support/test_datasets.hpp"

namespace {

using gpufeed::dtype;
using gpufeed::sample_spec;

TEST(sample_spec_test, BytesPerSampleSumsFields) {
  sample_spec spec;
  spec.add("image", dtype::u8, {224, 224, 3}).add("label", dtype::i64, {});
  EXPECT_EQ(spec.size(), 2U);
  EXPECT_FALSE(spec.empty());
  EXPECT_EQ(spec.bytes_per_sample(), 224U * 224U * 3U + 8U);
  EXPECT_EQ(spec[0].elements(), 224U * 224U * 3U);
  EXPECT_EQ(spec[1].elements(), 1U);
  EXPECT_EQ(spec[1].bytes(), 8U);

  sample_spec mixed;
  mixed.add("a", dtype::f16, {3, 5})
      .add("b", dtype::f64, {2})
      .add("c", dtype::i8, {7})
      .add("d", dtype::bf16, {})
      .add("e", dtype::i32, {1, 1, 1});
  EXPECT_EQ(mixed.bytes_per_sample(), 2U * 15U + 8U * 2U + 7U + 2U + 4U);
  EXPECT_EQ(sample_spec{}.bytes_per_sample(), 0U);
  EXPECT_TRUE(sample_spec{}.empty());
}

TEST(sample_spec_test, FindsFieldsByName) {
  sample_spec spec;
  spec.add("x", dtype::f32, {4}).add("y", dtype::i64, {});
  ASSERT_TRUE(spec.find("y").has_value());
  EXPECT_EQ(*spec.find("y"), 1U);
  EXPECT_EQ(*spec.find("x"), 0U);
  EXPECT_FALSE(spec.find("z").has_value());
  EXPECT_FALSE(spec.find("").has_value());
  EXPECT_EQ(spec.fields().size(), 2U);
  EXPECT_EQ(spec.fields()[0].name, "x");
}

TEST(sample_spec_test, ConstructorAndAddAgree) {
  sample_spec added;
  added.add("x", dtype::f32, {4}).add("y", dtype::i64, {});
  sample_spec built{{{"x", dtype::f32, {4}}, {"y", dtype::i64, {}}}};
  EXPECT_EQ(added, built);
  sample_spec other{{{"x", dtype::f32, {5}}, {"y", dtype::i64, {}}}};
  EXPECT_NE(added, other);
}

TEST(sample_spec_test, RejectsEmptyName) {
  sample_spec spec;
  EXPECT_THROW(spec.add("", dtype::u8, {1}), gpufeed::logic_error);
  EXPECT_THROW((sample_spec{{{"", dtype::u8, {1}}}}), gpufeed::logic_error);
}

TEST(sample_spec_test, RejectsDuplicateName) {
  sample_spec spec;
  spec.add("x", dtype::u8, {1});
  try {
    spec.add("x", dtype::f32, {2});
    FAIL() << "a repeated field name was accepted";
  } catch (gpufeed::logic_error const& e) {
    EXPECT_NE(std::string{e.what()}.find('x'), std::string::npos) << e.what();
  }
  EXPECT_EQ(spec.size(), 1U) << "a rejected field must not be added";
  EXPECT_THROW((sample_spec{{{"a", dtype::u8, {1}}, {"a", dtype::u8, {1}}}}), gpufeed::logic_error);
}

TEST(sample_spec_test, RejectsBadDimensions) {
  sample_spec spec;
  EXPECT_THROW(spec.add("negative", dtype::u8, {-1}), gpufeed::logic_error);
  EXPECT_THROW(
      spec.add("too_many", dtype::u8, std::vector<std::int64_t>(gpufeed::max_field_dims + 1, 1)),
      gpufeed::logic_error);
  EXPECT_NO_THROW(
      spec.add("most", dtype::u8, std::vector<std::int64_t>(gpufeed::max_field_dims, 2)));
  EXPECT_EQ(spec.size(), 1U);
  EXPECT_THROW((sample_spec{{{"negative", dtype::f32, {-2}}}}), gpufeed::logic_error);
}

// A field with a zero-size dimension holds no bytes and batches as torch batches it, [B, 0].
TEST(sample_spec_test, AcceptsZeroSizeDimensions) {
  sample_spec spec;
  spec.add("empty", dtype::f32, {4, 0, 3}).add("x", dtype::u8, {2});
  EXPECT_EQ(spec[0].bytes(), 0U);
  EXPECT_EQ(spec.bytes_per_sample(), 2U);
  EXPECT_EQ(spec.to_string(), "empty:float32[4,0,3] x:uint8[2]");
}

TEST(sample_spec_test, ToStringNamesFieldsAndTypes) {
  sample_spec spec;
  spec.add("image", dtype::u8, {224, 224, 3}).add("label", dtype::i64, {});
  auto text = spec.to_string();
  for (char const* part : {"image", "uint8", "224", "label", "int64"}) {
    EXPECT_NE(text.find(part), std::string::npos) << "'" << text << "' lacks " << part;
  }
}

TEST(sample_spec_test, DtypeSizesAndNames) {
  EXPECT_EQ(gpufeed::size_of(dtype::u8), 1U);
  EXPECT_EQ(gpufeed::size_of(dtype::bf16), 2U);
  EXPECT_EQ(gpufeed::size_of(dtype::f32), 4U);
  EXPECT_EQ(gpufeed::size_of(dtype::i64), 8U);
  EXPECT_EQ(gpufeed::to_string(dtype::u8), "uint8");
  EXPECT_EQ(gpufeed::to_string(dtype::f32), "float32");
  EXPECT_EQ(gpufeed::to_string(dtype::bf16), "bfloat16");
  EXPECT_EQ(gpufeed::to_string(dtype::i64), "int64");
  static_assert(gpufeed::dtype_matches<float>(dtype::f32));
  static_assert(!gpufeed::dtype_matches<float>(dtype::f64));
  static_assert(gpufeed::dtype_matches<std::uint16_t>(dtype::bf16));
  static_assert(gpufeed::dtype_matches<std::byte>(dtype::i64));
  static_assert(!gpufeed::dtype_matches<std::int32_t>(dtype::u16));
  // bool: one byte, NumPy's and torch's name; written as bool or as uint8.
  EXPECT_EQ(gpufeed::size_of(dtype::boolean), 1U);
  EXPECT_EQ(gpufeed::to_string(dtype::boolean), "bool");
  static_assert(gpufeed::dtype_matches<bool>(dtype::boolean));
  static_assert(gpufeed::dtype_matches<std::uint8_t>(dtype::boolean));
  static_assert(!gpufeed::dtype_matches<bool>(dtype::u8));
}

TEST(sample_spec_test, SlotLayoutAlignsEachField) {
  sample_spec spec;
  spec.add("a", dtype::u8, {3}).add("b", dtype::f64, {2}).add("c", dtype::i16, {});
  gpufeed::detail::slot_layout layout{spec, 5};
  EXPECT_EQ(layout.batch_size(), 5U);
  EXPECT_EQ(layout.spec(), spec);
  std::size_t end = 0;
  for (std::size_t f = 0; f < spec.size(); ++f) {
    EXPECT_EQ(layout.field_offset(f) % gpufeed::detail::slot_layout::alignment, 0U);
    EXPECT_GE(layout.field_offset(f), end) << "field regions overlap";
    EXPECT_EQ(layout.field_bytes(f), spec[f].bytes());
    end = layout.field_offset(f) + 5 * spec[f].bytes();
  }
  EXPECT_GE(layout.slot_bytes(), end);
}

// The message of the logic_error `action` throws (a failure when it throws nothing).
std::string logic_error_of(auto&& action) {
  try {
    action();
  } catch (gpufeed::logic_error const& e) {
    return e.what();
  }
  ADD_FAILURE() << "no logic_error";
  return {};
}

void expect_mentions(std::string const& what, std::vector<std::string> const& parts) {
  for (auto const& part : parts) EXPECT_NE(what.find(part), std::string::npos) << what;
}

constexpr std::int64_t two_to_31 = std::int64_t{1} << 31;
constexpr std::int64_t two_to_32 = std::int64_t{1} << 32;

// Before sizes were checked, these wrapped: 2^32 x 2^32 elements to 0, and 2^62 float32
// elements to 0 bytes, so a loader made a zero-byte slot for a field that claimed 16 EiB.
TEST(sample_spec_test, ElementCountThatOverflowsIsRefusedNamingTheField) {
  sample_spec spec;
  spec.add("ok", dtype::u8, {2});
  expect_mentions(logic_error_of([&] {
                    spec.add("huge", dtype::u8, {two_to_32, two_to_32});
                  }),
                  {"'huge'", "[4294967296,4294967296]", "element count", "4294967296 x"});
  EXPECT_EQ(spec.size(), 1U);  // a refused field is not added
  EXPECT_EQ(spec.bytes_per_sample(), 2U);
}

TEST(sample_spec_test, ByteCountThatOverflowsIsRefusedNamingTheField) {
  // 2^62 elements fit in a size_t; 2^62 x 4 bytes do not.
  expect_mentions(logic_error_of([] {
                    sample_spec{}.add("wide", dtype::f32, {two_to_31, two_to_31});
                  }),
                  {"'wide'", "bytes", "float32", "4611686018427387904 x 4"});
  expect_mentions(
      logic_error_of([] {
        sample_spec{std::vector<gpufeed::field>{{"wide", dtype::f64, {two_to_31, two_to_31}}}};
      }),
      {"'wide'", "float64"});
}

TEST(sample_spec_test, SampleBytesThatOverflowAreRefused) {
  // Each field is 2^63 bytes, which fits; the two together do not.
  sample_spec spec;
  spec.add("a", dtype::u8, {two_to_31, two_to_32});
  EXPECT_EQ(spec.bytes_per_sample(), std::size_t{1} << 63);
  expect_mentions(logic_error_of([&] {
                    spec.add("b", dtype::u8, {two_to_31, two_to_32});
                  }),
                  {"sample's bytes", "'b'", "9223372036854775808 + 9223372036854775808"});
  EXPECT_EQ(spec.size(), 1U);
  EXPECT_EQ(spec.bytes_per_sample(), std::size_t{1} << 63);
}

TEST(sample_spec_test, AFieldBuiltByHandIsCheckedWhereItIsSized) {
  gpufeed::field const negative{"neg", dtype::u8, {4, -3}};
  expect_mentions(logic_error_of([&] { (void)negative.elements(); }), {"'neg'", "-3"});
  gpufeed::field const wide{"wide", dtype::i64, {two_to_31, two_to_31}};
  EXPECT_EQ(wide.elements(), std::size_t{1} << 62);
  expect_mentions(logic_error_of([&] { (void)wide.bytes(); }), {"'wide'", "int64"});
  EXPECT_EQ((gpufeed::field{"empty", dtype::f32, {3, 0}}.bytes()), 0U);
}

TEST(sample_spec_test, SlotLayoutRefusesABatchThatOverflows) {
  sample_spec spec;
  spec.add("image", dtype::u8, {1 << 20}).add("label", dtype::i64, {});
  expect_mentions(logic_error_of([&] {
                    gpufeed::detail::slot_layout{spec, std::size_t{1} << 50};
                  }),
                  {"batch_size", "'image'", "1125899906842624 x 1048576"});
  // Each region fits; rounded up to the alignment, the first one does not.
  sample_spec const almost{
      std::vector<gpufeed::field>{{"x", dtype::u8, {std::numeric_limits<std::int64_t>::max()}}}};
  expect_mentions(logic_error_of([&] {
                    gpufeed::detail::slot_layout{almost, 2};
                  }),
                  {"batch_size", "'x'"});
  // Each field's region fits, their sum does not.
  sample_spec two;
  two.add("a", dtype::u8, {two_to_31, two_to_31}).add("b", dtype::u8, {two_to_31, two_to_31});
  expect_mentions(logic_error_of([&] {
                    gpufeed::detail::slot_layout{two, 3};
                  }),
                  {"regions of the fields up to 'b'", "batch_size 3"});
  EXPECT_EQ((gpufeed::detail::slot_layout{two, 1}.slot_bytes()), std::size_t{1} << 63);
}

TEST(sample_spec_test, SampleViewAsChecksType) {
  sample_spec spec;
  spec.add("x", dtype::f32, {4}).add("y", dtype::i64, {}).add("h", dtype::f16, {2});
  gpufeed::detail::slot_layout layout{spec, 3};
  std::vector<std::byte> slot(layout.slot_bytes() + gpufeed::detail::slot_layout::alignment);
  gpufeed::sample_view view{layout, slot.data(), 2};
  EXPECT_EQ(view.position(), 2U);
  EXPECT_EQ(view.fields(), 3U);
  EXPECT_EQ(view.spec(), spec);

  EXPECT_EQ(view.as<float>(0).size(), 4U);
  EXPECT_EQ(view.as<std::int64_t>(1).size(), 1U);
  EXPECT_EQ(view.as<std::uint16_t>(2).size(), 2U);
  EXPECT_EQ(view.as<std::byte>(0).size(), 16U);
  EXPECT_EQ(view.bytes(0).size(), 16U);

  EXPECT_THROW((void)view.as<double>(0), gpufeed::logic_error);
  EXPECT_THROW((void)view.as<std::int32_t>(1), gpufeed::logic_error);
  EXPECT_THROW((void)view.as<std::uint64_t>(1), gpufeed::logic_error);
  try {
    (void)view.as<std::uint8_t>(0);
    FAIL() << "as<uint8_t> on a float32 field was accepted";
  } catch (gpufeed::logic_error const& e) {
    std::string what = e.what();
    EXPECT_NE(what.find("float32"), std::string::npos) << what;
    EXPECT_NE(what.find('x'), std::string::npos) << what;
  }

  // A write lands at the sample's place in the field's region.
  view.as<std::int64_t>(1)[0] = 1234;
  auto* where = layout.locate(slot.data(), 1, 2);
  EXPECT_EQ(where, slot.data() + layout.field_offset(1) + 2 * 8);
  std::int64_t value = 0;
  std::memcpy(&value, where, sizeof value);
  EXPECT_EQ(value, 1234);
}

TEST(sample_spec_test, SampleLayoutPlacesEachSampleInItsFieldsRegion) {
  sample_spec spec;
  spec.add("x", dtype::f32, {3}).add("y", dtype::i64, {});
  gpufeed::sample_layout const layout{spec, 4};
  EXPECT_EQ(layout.samples(), 4U);
  EXPECT_EQ(layout.spec(), spec);
  EXPECT_EQ(layout.field_bytes(0), 12U);
  EXPECT_EQ(layout.field_offset(1) % gpufeed::sample_layout::alignment, 0U);
  EXPECT_GE(layout.field_offset(1), 4U * 12U);
  EXPECT_EQ(layout.used_bytes(4), layout.field_offset(1) + 4U * 8U);
  std::vector<std::byte> block(layout.bytes());
  for (std::size_t i = 0; i < 4; ++i) {
    auto const view = layout.view(block.data(), i);
    EXPECT_EQ(view.position(), i);
    view.as<float>(0)[2] = static_cast<float>(i) + 0.5F;
    view.as<std::int64_t>(1)[0] = 100 + static_cast<std::int64_t>(i);
  }
  for (std::size_t i = 0; i < 4; ++i) {
    float x = 0;
    std::int64_t y = 0;
    std::memcpy(&x, block.data() + layout.field_offset(0) + i * 12 + 8, sizeof x);
    std::memcpy(&y, block.data() + layout.field_offset(1) + i * 8, sizeof y);
    EXPECT_EQ(x, static_cast<float>(i) + 0.5F) << i;
    EXPECT_EQ(y, 100 + static_cast<std::int64_t>(i)) << i;
  }
  EXPECT_THROW((gpufeed::sample_layout{sample_spec{}, 4}), gpufeed::logic_error);
}

TEST(sample_spec_test, TensorViewShapeAndTypeChecks) {
  std::array<std::int64_t, 2> dims{3, 4};
  std::vector<float> data(5 * 12, 1.5F);
  gpufeed::tensor_view host{"x", dtype::f32, data.data(), 5, dims, -1};
  EXPECT_EQ(host.name(), "x");
  EXPECT_EQ(host.rank(), 3U);
  ASSERT_EQ(host.shape().size(), 3U);
  EXPECT_EQ(host.shape()[0], 5);
  EXPECT_EQ(host.shape()[1], 3);
  EXPECT_EQ(host.shape()[2], 4);
  EXPECT_EQ(host.elements(), 60U);
  EXPECT_EQ(host.bytes(), 240U);
  EXPECT_EQ(host.device(), -1);
  EXPECT_EQ(host.as<float>().size(), 60U);
  EXPECT_EQ(host.as<float>()[59], 1.5F);
  EXPECT_THROW((void)host.as<double>(), gpufeed::logic_error);

  gpufeed::tensor_view on_device{"y", dtype::f32, data.data(), 5, dims, 0};
  EXPECT_THROW((void)on_device.as<float>(), gpufeed::logic_error);

  gpufeed::tensor_view scalar{"s", dtype::i64, data.data(), 7, {}, -1};
  EXPECT_EQ(scalar.rank(), 1U);
  EXPECT_EQ(scalar.elements(), 7U);
}

}  // namespace
