#include "hdf5_handle.hpp"

namespace gpufeed::detail::h5 {

namespace {

herr_t collect_error(unsigned /*n*/, H5E_error2_t const* e, void* data) noexcept {
  auto* out = static_cast<std::vector<std::string>*>(data);
  if (e != nullptr && e->desc != nullptr && *e->desc != '\0') {
    out->emplace_back(e->desc);
  }
  return 0;
}

}  // namespace

void silence() noexcept {
  H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
}

std::string with_error(std::string what) {
  std::vector<std::string> messages;
  H5Ewalk2(H5E_DEFAULT, H5E_WALK_DOWNWARD, collect_error, &messages);
  H5Eclear2(H5E_DEFAULT);
  if (!messages.empty()) {
    what += " (HDF5: " + messages.front();
    if (messages.size() > 1) what += ": " + messages.back();
    what += ")";
  }
  return what;
}

std::string describe_type(hid_t type) {
  auto const size = H5Tget_size(type);
  std::string const bits = std::to_string(size * 8) + "-bit ";
  switch (H5Tget_class(type)) {
    case H5T_INTEGER:
      return bits + (H5Tget_sign(type) == H5T_SGN_NONE ? "unsigned integer" : "signed integer");
    case H5T_FLOAT:
      return bits + "float";
    case H5T_STRING:
      return "string";
    case H5T_BITFIELD:
      return bits + "bitfield";
    case H5T_OPAQUE:
      return "opaque";
    case H5T_COMPOUND:
      return "compound";
    case H5T_REFERENCE:
      return "reference";
    case H5T_ENUM:
      return bits + "enum";
    case H5T_VLEN:
      return "variable-length";
    case H5T_ARRAY:
      return "array";
    default:
      return "unknown";
  }
}

std::optional<dtype> map_type(hid_t type) {
  auto const size = H5Tget_size(type);
  switch (H5Tget_class(type)) {
    case H5T_INTEGER: {
      bool const is_signed = H5Tget_sign(type) != H5T_SGN_NONE;
      switch (size) {
        case 1:
          return is_signed ? dtype::i8 : dtype::u8;
        case 2:
          return is_signed ? dtype::i16 : dtype::u16;
        case 4:
          return is_signed ? std::optional{dtype::i32} : std::nullopt;
        case 8:
          return is_signed ? std::optional{dtype::i64} : std::nullopt;
        default:
          return std::nullopt;
      }
    }
    case H5T_FLOAT: {
      if (size == 4) return dtype::f32;
      if (size == 8) return dtype::f64;
      if (size == 2) {
        std::size_t spos = 0, epos = 0, esize = 0, mpos = 0, msize = 0;
        if (H5Tget_fields(type, &spos, &epos, &esize, &mpos, &msize) < 0) return std::nullopt;
        if (spos == 15 && epos == 10 && esize == 5 && mpos == 0 && msize == 10) return dtype::f16;
        if (spos == 15 && epos == 7 && esize == 8 && mpos == 0 && msize == 7) return dtype::bf16;
      }
      return std::nullopt;
    }
    default:
      return std::nullopt;
  }
}

std::string dims_string(std::vector<hsize_t> const& dims) {
  std::string s = "[";
  for (std::size_t d = 0; d < dims.size(); ++d) {
    if (d > 0) s += ",";
    s += std::to_string(dims[d]);
  }
  return s + "]";
}

}  // namespace gpufeed::detail::h5
