#include "image/decode/opencv_decode.hpp"

#include <cstdint>
#include <opencv2/core.hpp>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>
#include <string>
#include <string_view>

#include "gpufeed/error.hpp"

namespace gpufeed::detail {

namespace {

// imdecode gives a file to the first decoder whose signature check accepts it, and GDCM's (DICOM,
// "DICM" at byte 128) asserts on damaged input; a file carrying both signatures is refused.
bool has_dicom_marker(std::span<unsigned char const> bytes) noexcept {
  return bytes.size() >= 132 && bytes[128] == 'D' && bytes[129] == 'I' && bytes[130] == 'C' &&
         bytes[131] == 'M';
}

}  // namespace

rgbx_view decode_with_opencv(std::span<unsigned char const> bytes, image_format format,
                             std::string const& name, rgbx_buffer& pixels) {
  std::string const what{image_format_name(format)};
  if (!needs_opencv(format) || has_dicom_marker(bytes)) {
    throw file_error(name, "not decoded with OpenCV: its first bytes are not those of a " + what +
                               " image alone");
  }
  try {
    // imdecode does not write through its input; the const_cast only satisfies cv::Mat.
    cv::Mat const raw(1, static_cast<int>(bytes.size()), CV_8UC1,
                      const_cast<unsigned char*>(bytes.data()));  // NOLINT
    // A new image each time: when OpenCV cannot read a header it leaves the output it was given
    // as it was, so a reused one would hold the last picture decoded, not an empty image.
    cv::Mat const bgr = cv::imdecode(raw, cv::IMREAD_COLOR | cv::IMREAD_IGNORE_ORIENTATION);
    if (bgr.empty()) {
      throw file_error(name, "cannot decode the " + what +
                                 " image with OpenCV (corrupt, truncated, or a variant its " +
                                 what + " decoder does not read)");
    }
    if (bgr.type() != CV_8UC3) {
      throw file_error(name, "OpenCV decoded the " + what + " image to the unexpected pixel type " +
                                 std::to_string(bgr.type()));
    }
    std::uint8_t* const rows = pixels.reset(bgr.cols, bgr.rows);
    cv::Mat rgbx(bgr.rows, bgr.cols, CV_8UC4, rows, pixels.stride());
    cv::cvtColor(bgr, rgbx, cv::COLOR_BGR2RGBA);
    return pixels.view(bgr.cols, bgr.rows);
  } catch (cv::Exception const& e) {
    throw file_error(name, "OpenCV could not decode the " + what + " image: " + e.what());
  }
}

}  // namespace gpufeed::detail
