// What the CUDA path decides before it touches a device: where each field lives in a device
// slot, what a transform makes of it, and which options and streams are refused. Runs anywhere.

#include <gtest/gtest.h>

#include <string>

#include "core/device/device_layout.hpp"
#include "gpufeed/gpufeed.hpp"
#include "support/test_datasets.hpp"
#if GPUFEED_WITH_CUDA
#include "gpufeed/cuda/device.hpp"
#endif

namespace gpufeed::test {
namespace {

using detail::device_layout;
using detail::slot_layout;

sample_spec image_spec() {
  return sample_spec{}.add("image", dtype::u8, {4, 6, 3}).add("label", dtype::i64, {});
}

std::string message_of(auto&& action) {
  try {
    action();
  } catch (std::exception const& e) {
    return e.what();
  }
  return "(no exception)";
}

// Before sizes were checked, a float32 output of 2^62 uint8 elements wrapped to 0 bytes.
TEST(DeviceLayout, TransformOutputThatOverflowsIsRefused) {
  std::int64_t const two_to_31 = std::int64_t{1} << 31;
  slot_layout const host{sample_spec{}.add("image", dtype::u8, {two_to_31, two_to_31}), 1};
  auto const what = message_of([&] {
    device_layout{host, {{.field = "image", .to = dtype::f32}}};
  });
  EXPECT_NE(what.find("transform of field 'image'"), std::string::npos) << what;
  EXPECT_NE(what.find("4611686018427387904 x 4"), std::string::npos) << what;
}

TEST(DeviceLayout, DeviceSlotThatOverflowsIsRefused) {
  // The host slot (3 x 2^62 bytes) fits; the float16 output (3 x 2^63 bytes) does not.
  std::int64_t const two_to_31 = std::int64_t{1} << 31;
  slot_layout const host{sample_spec{}.add("image", dtype::u8, {two_to_31, two_to_31}), 3};
  auto const what = message_of([&] {
    device_layout{host, {{.field = "image", .to = dtype::f16}}};
  });
  EXPECT_NE(what.find("batch_size"), std::string::npos) << what;
  EXPECT_NE(what.find("'image'"), std::string::npos) << what;
  EXPECT_THROW((device_layout{host, {{.field = "image", .to = dtype::f16}}}), logic_error);
}

TEST(DeviceLayout, UntransformedFieldsAreReadFromTheHostMirror) {
  slot_layout const host{image_spec(), 10};
  device_layout const device{host, {}};
  EXPECT_EQ(device.slot_bytes(), host.slot_bytes());
  EXPECT_FALSE(device.any_transform());
  for (std::size_t f = 0; f < 2; ++f) {
    EXPECT_EQ(device.field(f).device_offset, host.field_offset(f));
    EXPECT_EQ(device.field(f).bytes, host.field_bytes(f));
    EXPECT_FALSE(device.field(f).transformed);
  }
}

TEST(DeviceLayout, TransformedFieldGetsItsOwnAlignedRegionAfterTheMirror) {
  slot_layout const host{image_spec(), 10};
  device_layout const device{
      host, {{.field = "image", .to = dtype::f32, .output_layout = image_layout::chw}}};
  auto const& image = device.field(0);
  EXPECT_TRUE(image.transformed);
  EXPECT_EQ(image.type, dtype::f32);
  EXPECT_EQ(image.shape, (std::vector<std::int64_t>{3, 4, 6}));
  EXPECT_EQ(image.bytes, 4u * 6 * 3 * 4);
  EXPECT_EQ(image.channels, 3u);
  EXPECT_EQ(image.pixels, 24u);
  EXPECT_GE(image.device_offset, host.slot_bytes());
  EXPECT_EQ(image.device_offset % slot_layout::alignment, 0u);
  EXPECT_GE(device.slot_bytes(), image.device_offset + image.bytes * 10);
  EXPECT_EQ(device.field(1).device_offset, host.field_offset(1));  // the label stays put
}

TEST(DeviceLayout, MeanAndStdAreSpreadPerChannelAndInverted) {
  slot_layout const host{image_spec(), 2};
  device_layout const one{host, {{.field = "image", .mean = {0.5f}, .std = {0.25f}}}};
  EXPECT_EQ(one.field(0).mean, (std::vector<float>{0.5f, 0.5f, 0.5f}));
  EXPECT_EQ(one.field(0).inv_std, (std::vector<float>{4.0f, 4.0f, 4.0f}));
  device_layout const each{host, {{.field = "image", .mean = {1, 2, 3}, .std = {1, 2, 4}}}};
  EXPECT_EQ(each.field(0).mean, (std::vector<float>{1, 2, 3}));
  EXPECT_EQ(each.field(0).inv_std, (std::vector<float>{1.0f, 0.5f, 0.25f}));
  device_layout const none{host, {{.field = "image"}}};
  EXPECT_EQ(none.field(0).mean, (std::vector<float>{0, 0, 0}));
  EXPECT_EQ(none.field(0).inv_std, (std::vector<float>{1, 1, 1}));
}

TEST(DeviceLayout, ChwInputCountsChannelsFromTheFirstDimension) {
  slot_layout const host{sample_spec{}.add("x", dtype::u8, {2, 5, 7}), 1};
  device_layout const device{host,
                             {{.field = "x",
                               .to = dtype::f16,
                               .input_layout = image_layout::chw,
                               .output_layout = image_layout::hwc}}};
  EXPECT_EQ(device.field(0).channels, 2u);
  EXPECT_EQ(device.field(0).shape, (std::vector<std::int64_t>{5, 7, 2}));
  EXPECT_EQ(device.field(0).bytes, 2u * 5 * 7 * 2);
}

TEST(DeviceLayout, BadTransformsAreRefusedWithTheFieldAndTheFix) {
  slot_layout const host{image_spec(), 4};
  auto refused = [&](field_transform t) { return message_of([&] { device_layout{host, {t}}; }); };
  EXPECT_NE(refused({.field = "pixels"}).find("'pixels'"), std::string::npos);
  EXPECT_NE(refused({.field = "label"}).find("uint8"), std::string::npos);
  EXPECT_NE(refused({.field = "image", .to = dtype::i32}).find("f32, f16 or bf16"),
            std::string::npos);
  EXPECT_NE(refused({.field = "image", .mean = {1, 2}}).find("3 channels"), std::string::npos);
  EXPECT_NE(refused({.field = "image", .std = {1, 0, 1}}).find("positive"), std::string::npos);
  slot_layout const flat{sample_spec{}.add("v", dtype::u8, {12}), 4};
  EXPECT_NE(message_of([&] {
              device_layout{flat, {{.field = "v", .output_layout = image_layout::chw}}};
            }).find("rank 3"),
            std::string::npos);
  EXPECT_NE(message_of([&] {
              device_layout{host, {{.field = "image"}, {.field = "image"}}};
            }).find("two transforms"),
            std::string::npos);
}

TEST(StreamView, RefusesTheLegacyDefaultStream) {
  EXPECT_THROW(stream_view{static_cast<stream_view::native_type>(nullptr)}, logic_error);
  auto const legacy = reinterpret_cast<stream_view::native_type>(std::uintptr_t{1});
  EXPECT_NE(message_of([&] { stream_view{legacy}; }).find("legacy default stream"),
            std::string::npos);
  auto const per_thread = reinterpret_cast<stream_view::native_type>(std::uintptr_t{2});
  EXPECT_EQ(stream_view{per_thread}.native(), per_thread);
}

TEST(StreamView, LegacyDefaultIsOnlyEverNamedExplicitly) {
  // cudaStreamLegacy's handle, which the constructor refuses when passed as a plain value.
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(stream_view::legacy_default().native()), 1U);
  EXPECT_EQ(stream_view::legacy_default(), stream_view::legacy_default());
}

TEST(CudaOptions, TransformsOnTheHostPathAreRefused) {
  loader_options options{.batch_size = 2};
  options.transforms = {{.field = "image"}};
  EXPECT_NE(message_of([&] { validate(options); }).find("placement::cuda"), std::string::npos);
}

TEST(CudaOptions, DeviceComesFromLocalRankOnlyForTheCudaPath) {
  env_guard const local_rank{"LOCAL_RANK", "3"};
  EXPECT_FALSE(resolve_distributed(loader_options{}).device.has_value());
  auto const resolved = resolve_distributed(loader_options{.target = placement::cuda});
  ASSERT_TRUE(resolved.device.has_value());
  EXPECT_EQ(*resolved.device, 3);
  auto const given = resolve_distributed(loader_options{.target = placement::cuda, .device = 1});
  EXPECT_EQ(*given.device, 1);
}

TEST(CudaOptions, CudaPlacementWithoutADeviceSaysWhyAndWhatToUse) {
#if GPUFEED_WITH_CUDA
  if (cuda::device_count() > 0) {
    GTEST_SKIP() << "a CUDA device is present; the CUDA suite covers this path";
  }
#endif
  auto data = std::make_shared<echo_dataset>(10);
  auto const why = message_of([&] {
    loader{data, loader_options{.batch_size = 2, .target = placement::cuda}};
  });
  EXPECT_NE(why.find("placement::host"), std::string::npos) << why;
}

}  // namespace
}  // namespace gpufeed::test
