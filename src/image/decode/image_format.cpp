#include "image/decode/image_format.hpp"

#include <algorithm>
#include <cstddef>
#include <initializer_list>

#include "image/decode/jpeg_decode.hpp"

namespace gpufeed::detail {

namespace {

bool starts_with(std::span<unsigned char const> bytes, std::size_t at,
                 std::initializer_list<unsigned char> signature) noexcept {
  return bytes.size() >= at + signature.size() &&
         std::equal(signature.begin(), signature.end(), bytes.begin() + static_cast<long>(at));
}

bool is_space(unsigned char c) noexcept {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}

}  // namespace

image_format sniff_image_format(std::span<unsigned char const> bytes) noexcept {
  if (looks_like_jpeg(bytes)) return image_format::jpeg;
  if (looks_like_png(bytes)) return image_format::png;
  // BMP's two letters alone match text files too; its file header's reserved words are zero.
  if (starts_with(bytes, 0, {'B', 'M'}) && bytes.size() >= 14 && bytes[6] == 0 && bytes[7] == 0 &&
      bytes[8] == 0 && bytes[9] == 0) {
    return image_format::bmp;
  }
  if (starts_with(bytes, 0, {'I', 'I', 0x2A, 0x00}) ||
      starts_with(bytes, 0, {'M', 'M', 0x00, 0x2A})) {
    return image_format::tiff;
  }
  if (starts_with(bytes, 0, {'R', 'I', 'F', 'F'}) && starts_with(bytes, 8, {'W', 'E', 'B', 'P'})) {
    return image_format::webp;
  }
  if (starts_with(bytes, 0, {0x00, 0x00, 0x00, 0x0C, 'j', 'P', ' ', ' ', 0x0D, 0x0A, 0x87, 0x0A}) ||
      starts_with(bytes, 0, {0xFF, 0x4F, 0xFF, 0x51})) {
    return image_format::jpeg2000;
  }
  if (bytes.size() >= 3 && bytes[0] == 'P' && bytes[1] >= '1' && bytes[1] <= '6' &&
      is_space(bytes[2])) {
    return image_format::pnm;
  }
  if (starts_with(bytes, 0, {0x59, 0xA6, 0x6A, 0x95})) return image_format::sun_raster;
  return image_format::unknown;
}

std::string_view image_format_name(image_format format) noexcept {
  switch (format) {
    case image_format::jpeg:
      return "JPEG";
    case image_format::png:
      return "PNG";
    case image_format::bmp:
      return "BMP";
    case image_format::tiff:
      return "TIFF";
    case image_format::webp:
      return "WebP";
    case image_format::jpeg2000:
      return "JPEG 2000";
    case image_format::pnm:
      return "PNM (PBM/PGM/PPM)";
    case image_format::sun_raster:
      return "Sun raster";
    case image_format::unknown:
      break;
  }
  return "unknown";
}

}  // namespace gpufeed::detail
