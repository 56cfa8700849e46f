#include "gpufeed/sample_spec.hpp"

#include <string>

#include "core/checked_math.hpp"
#include "gpufeed/error.hpp"

namespace gpufeed {

std::string shape_text(std::span<std::int64_t const> shape) {
  std::string text = "[";
  for (std::size_t i = 0; i < shape.size(); ++i) {
    text += (i > 0 ? "," : "") + std::to_string(shape[i]);
  }
  return text + ']';
}

std::size_t field::elements() const {
  std::size_t n = 1;
  for (auto const d : shape) {
    GPUFEED_EXPECTS(d >= 0, "field '" + name + "' has dimension " + std::to_string(d) +
                                "; a dimension cannot be negative");
    n = detail::checked_mul(n, static_cast<std::size_t>(d), [&] {
      return "field '" + name + "' of shape " + shape_text(shape) + ": its element count";
    });
  }
  return n;
}

std::size_t field::bytes() const {
  return detail::checked_mul(elements(), size_of(type), [&] {
    return "field '" + name + "' of shape " + shape_text(shape) + ": its bytes (elements x " +
           std::string{to_string(type)} + ")";
  });
}

sample_spec::sample_spec(std::vector<field> fields) {
  for (auto& f : fields) {
    bytes_ = validate(f);
    fields_.push_back(std::move(f));
  }
}

sample_spec& sample_spec::add(std::string name, dtype type, std::vector<std::int64_t> shape) {
  field f{std::move(name), type, std::move(shape)};
  bytes_ = validate(f);
  fields_.push_back(std::move(f));
  return *this;
}

std::size_t sample_spec::validate(field const& f) const {
  GPUFEED_EXPECTS(!f.name.empty(), "a field needs a non-empty name");
  for (auto const& other : fields_) {
    GPUFEED_EXPECTS(other.name != f.name, "field name '" + f.name + "' appears twice");
  }
  GPUFEED_EXPECTS(f.shape.size() <= max_field_dims,
                  "field '" + f.name + "' has " + std::to_string(f.shape.size()) +
                      " dimensions; at most " + std::to_string(max_field_dims) + " are allowed");
  for (auto d : f.shape) {
    GPUFEED_EXPECTS(d >= 0, "field '" + f.name + "' has dimension " + std::to_string(d) +
                                "; a dimension cannot be negative");
  }
  return detail::checked_add(bytes_, f.bytes(), [&] {
    return "the sample's bytes with field '" + f.name + "' " + shape_text(f.shape) + " added";
  });
}

std::optional<std::size_t> sample_spec::find(std::string_view name) const noexcept {
  for (std::size_t i = 0; i < fields_.size(); ++i) {
    if (fields_[i].name == name) {
      return i;
    }
  }
  return std::nullopt;
}

std::string sample_spec::to_string() const {
  std::string text;
  for (auto const& f : fields_) {
    if (!text.empty()) {
      text += ' ';
    }
    text += f.name + ':' + std::string{gpufeed::to_string(f.type)} + shape_text(f.shape);
  }
  return text;
}

}  // namespace gpufeed
