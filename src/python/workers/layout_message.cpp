#include "python/workers/layout_message.hpp"

#include <cstdint>
#include <stdexcept>

namespace gpufeed::python::workers {

void put_layout(payload_writer& out, sample_layout_message const& layout) {
  out.put<std::uint32_t>(static_cast<std::uint32_t>(layout.spec.size()));
  for (std::size_t f = 0; f < layout.spec.size(); ++f) {
    auto const& field = layout.spec[f];
    out.put_bytes(field.name);
    out.put<std::uint8_t>(static_cast<std::uint8_t>(field.type));
    out.put<std::uint8_t>(static_cast<std::uint8_t>(layout.kinds[f]));
    out.put<std::uint8_t>(static_cast<std::uint8_t>(field.shape.size()));
    for (auto const d : field.shape) out.put<std::int64_t>(d);
  }
  out.put_bytes(layout.structure);
}

sample_layout_message get_layout(payload_reader& in) {
  sample_layout_message layout;
  auto const fields = in.get<std::uint32_t>();
  for (std::uint32_t f = 0; f < fields; ++f) {
    std::string name{in.get_bytes()};
    auto const type = in.get<std::uint8_t>();
    auto const kind = in.get<std::uint8_t>();
    auto const rank = in.get<std::uint8_t>();
    if (type > static_cast<std::uint8_t>(dtype::boolean) ||
        kind > static_cast<std::uint8_t>(sample_tree::leaf_kind::bytes)) {
      throw std::runtime_error{"gpufeed: a worker sent a layout with an unknown dtype or leaf"};
    }
    std::vector<std::int64_t> shape(rank);
    for (auto& d : shape) d = in.get<std::int64_t>();
    layout.spec.add(std::move(name), static_cast<dtype>(type), std::move(shape));
    layout.kinds.push_back(static_cast<sample_tree::leaf_kind>(kind));
  }
  layout.structure = std::string{in.get_bytes()};
  return layout;
}

}  // namespace gpufeed::python::workers
