#include "core/device/device_layout.hpp"

#include <string>

#include "core/checked_math.hpp"
#include "gpufeed/error.hpp"

namespace gpufeed::detail {

namespace {
char const* layout_name(image_layout l) {
  return l == image_layout::hwc ? "hwc" : "chw";
}

// Fills the transform's part of `out` from `t` for field `f` (`out` holds f's plain output).
void plan_transform(field const& f, field_transform const& t, field_output& out) {
  auto const where = "transform of field '" + f.name + "': ";
  GPUFEED_EXPECTS(f.type == dtype::u8, where + "the field is " + std::string{to_string(f.type)} +
                                           "; GPU transforms take uint8 fields");
  GPUFEED_EXPECTS(t.to == dtype::f32 || t.to == dtype::f16 || t.to == dtype::bf16,
                  where + "output type " + std::string{to_string(t.to)} +
                      " is not supported; use f32, f16 or bf16");
  out.transformed = true;
  out.input_layout = t.input_layout;
  out.output_layout = t.output_layout;
  out.scale = t.scale;
  if (f.shape.size() == 3) {
    auto const c = t.input_layout == image_layout::hwc ? f.shape[2] : f.shape[0];
    out.channels = static_cast<std::size_t>(c);
    out.pixels = f.elements() / out.channels;
    if (t.input_layout != t.output_layout) {
      auto const h = t.input_layout == image_layout::hwc ? f.shape[0] : f.shape[1];
      auto const w = t.input_layout == image_layout::hwc ? f.shape[1] : f.shape[2];
      out.shape = t.output_layout == image_layout::chw ? std::vector<std::int64_t>{c, h, w}
                                                       : std::vector<std::int64_t>{h, w, c};
    }
  } else {
    GPUFEED_EXPECTS(t.input_layout == t.output_layout,
                    where + "the field has rank " + std::to_string(f.shape.size()) +
                        ", so it has no image layout to change (" + layout_name(t.input_layout) +
                        " -> " + layout_name(t.output_layout) + "); layout changes need rank 3");
    out.channels = 1;
    out.pixels = f.elements();
  }
  auto per_channel = [&](std::vector<float> const& given, float fallback, char const* what) {
    GPUFEED_EXPECTS(given.size() <= 1 || given.size() == out.channels,
                    where + what + " has " + std::to_string(given.size()) +
                        " values but the field has " + std::to_string(out.channels) +
                        " channels; give one per channel, or one for all");
    std::vector<float> values(out.channels, given.empty() ? fallback : given[0]);
    if (given.size() == out.channels) {
      values = given;
    }
    return values;
  };
  out.mean = per_channel(t.mean, 0.0f, "mean");
  auto const std_dev = per_channel(t.std, 1.0f, "std");
  for (auto const s : std_dev) {
    GPUFEED_EXPECTS(s > 0.0f, where + "std values must be positive; got " + std::to_string(s));
    out.inv_std.push_back(1.0f / s);
  }
  out.type = t.to;
  out.bytes = checked_mul(f.elements(), size_of(t.to), [&] {
    return where + "the output's bytes per sample (elements x " + std::string{to_string(t.to)} +
           ")";
  });
}
}  // namespace

device_layout::device_layout(slot_layout const& host,
                             std::vector<field_transform> const& transforms) {
  auto const& spec = host.spec();
  std::vector<field_transform const*> by_field(spec.size(), nullptr);
  for (auto const& t : transforms) {
    auto const f = spec.find(t.field);
    GPUFEED_EXPECTS(f.has_value(), "loader_options::transforms names field '" + t.field +
                                       "', but the dataset's fields are " + spec.to_string());
    GPUFEED_EXPECTS(by_field[*f] == nullptr,
                    "loader_options::transforms has two transforms of field '" + t.field +
                        "'; give at most one per field");
    by_field[*f] = &t;
  }
  slot_bytes_ = host.slot_bytes();  // the mirror of the host slot comes first
  for (std::size_t f = 0; f < spec.size(); ++f) {
    field_output out;
    out.type = spec[f].type;
    out.shape = spec[f].shape;
    out.bytes = spec[f].bytes();
    out.device_offset = host.field_offset(f);
    if (by_field[f] != nullptr) {
      plan_transform(spec[f], *by_field[f], out);
      out.device_offset = slot_bytes_;
      auto const what = [&] {
        return "the device slot: loader_options::batch_size x the output of the transform of "
               "field '" +
               spec[f].name + "' (" + std::to_string(out.bytes) + " bytes per sample)";
      };
      auto const region = checked_mul(out.bytes, host.batch_size(), what);
      slot_bytes_ =
          checked_add(slot_bytes_, checked_round_up(region, slot_layout::alignment, what), what);
      any_transform_ = true;
    }
    fields_.push_back(std::move(out));
  }
}

}  // namespace gpufeed::detail
