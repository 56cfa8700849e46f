#pragma once
/// @file
/// @brief What kind of image a file holds, told by its first bytes (internal).

#include <span>
#include <string_view>

namespace gpufeed::detail {

/// @brief The formats the image datasets tell apart. JPEG and PNG are decoded in every build;
/// the others only where OpenCV is built in (`opencv_reads`), whose decoders read them.
enum class image_format {
  unknown,
  jpeg,
  png,
  bmp,         ///< "BM"
  tiff,        ///< "II*\0" or "MM\0*"
  webp,        ///< "RIFF", a size, "WEBP"
  jpeg2000,    ///< the JP2 signature box, or a bare codestream (FF 4F FF 51)
  pnm,         ///< "P1" .. "P6" and whitespace (PBM, PGM, PPM)
  sun_raster,  ///< 59 A6 6A 95
};

/// @brief The format whose signature `bytes` start with, or `unknown`.
[[nodiscard]] image_format sniff_image_format(std::span<unsigned char const> bytes) noexcept;

/// @brief The format's usual name ("JPEG", "BMP", ...; "unknown").
[[nodiscard]] std::string_view image_format_name(image_format format) noexcept;

/// @brief Whether the format is one only OpenCV's decoders read here (all but JPEG and PNG).
[[nodiscard]] constexpr bool needs_opencv(image_format format) noexcept {
  return format != image_format::unknown && format != image_format::jpeg &&
         format != image_format::png;
}

}  // namespace gpufeed::detail
