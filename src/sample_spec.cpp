#include "gpufeed/sample_spec.hpp"

#include <string>

#include "gpufeed/error.hpp"

namespace gpufeed {

std::size_t field::elements() const noexcept {
  std::size_t n = 1;
  for (auto d : shape) {
    n *= static_cast<std::size_t>(d);
  }
  return n;
}

sample_spec::sample_spec(std::vector<field> fields) {
  for (auto& f : fields) {
    validate(f, fields_);
    fields_.push_back(std::move(f));
  }
}

sample_spec& sample_spec::add(std::string name, dtype type, std::vector<std::int64_t> shape) {
  field f{std::move(name), type, std::move(shape)};
  validate(f, fields_);
  fields_.push_back(std::move(f));
  return *this;
}

void sample_spec::validate(field const& f, std::span<field const> before) {
  GPUFEED_EXPECTS(!f.name.empty(), "a field needs a non-empty name");
  for (auto const& other : before) {
    GPUFEED_EXPECTS(other.name != f.name, "field name '" + f.name + "' appears twice");
  }
  GPUFEED_EXPECTS(f.shape.size() <= max_field_dims,
                  "field '" + f.name + "' has " + std::to_string(f.shape.size()) +
                      " dimensions; at most " + std::to_string(max_field_dims) + " are allowed");
  for (auto d : f.shape) {
    GPUFEED_EXPECTS(d >= 1, "field '" + f.name + "' has dimension " + std::to_string(d) +
                                "; every dimension must be at least 1");
  }
}

std::optional<std::size_t> sample_spec::find(std::string_view name) const noexcept {
  for (std::size_t i = 0; i < fields_.size(); ++i) {
    if (fields_[i].name == name) {
      return i;
    }
  }
  return std::nullopt;
}

std::size_t sample_spec::bytes_per_sample() const noexcept {
  std::size_t total = 0;
  for (auto const& f : fields_) {
    total += f.bytes();
  }
  return total;
}

std::string sample_spec::to_string() const {
  std::string text;
  for (auto const& f : fields_) {
    if (!text.empty()) {
      text += ' ';
    }
    text += f.name + ':' + std::string{gpufeed::to_string(f.type)} + '[';
    for (std::size_t i = 0; i < f.shape.size(); ++i) {
      if (i > 0) {
        text += ',';
      }
      text += std::to_string(f.shape[i]);
    }
    text += ']';
  }
  return text;
}

}  // namespace gpufeed
