// Named image_*.cpp so that src/CMakeLists.txt's glob of the image datasets' sources builds it.
#include "gpufeed/detail/jpeg_decode.hpp"

#include <jpeglib.h>
#include <algorithm>
#include <csetjmp>
#include <cstddef>
#include <cstdint>
#include <cstdio>  // jpeglib.h uses FILE and size_t without declaring them
#include <cstdlib>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

#include "gpufeed/error.hpp"

namespace {

// libjpeg hands its callbacks only the jpeg_error_mgr; being the first member of a
// standard-layout struct, it leads them to the jump buffer and the message.
struct jpeg_failure {
  jpeg_error_mgr mgr;
  std::jmp_buf jump;
  char message[JMSG_LENGTH_MAX];
};
static_assert(std::is_standard_layout_v<jpeg_failure>);

}  // namespace

// libjpeg is C: an exception must never unwind through its frames, so both callbacks leave it
// by longjmp to the setjmp of the function that called into it, which has nothing to destroy.
extern "C" {

static void gpufeed_jpeg_error_exit(j_common_ptr info) {
  auto* failure = reinterpret_cast<jpeg_failure*>(info->err);
  failure->mgr.format_message(info, failure->message);
  std::longjmp(failure->jump, 1);
}

// A warning (level < 0) is how libjpeg reports damaged scan data it decodes anyway into a
// garbled picture, so it fails like an error. Trace messages (level >= 0) are dropped.
static void gpufeed_jpeg_emit_message(j_common_ptr info, int level) {
  if (level < 0) gpufeed_jpeg_error_exit(info);
}

}  // extern "C"

namespace gpufeed::detail {

namespace {

struct decompressor {
  jpeg_decompress_struct info{};
  jpeg_failure failure{};

  decompressor() noexcept {
    info.err = jpeg_std_error(&failure.mgr);
    failure.mgr.error_exit = gpufeed_jpeg_error_exit;
    failure.mgr.emit_message = gpufeed_jpeg_emit_message;
  }
  // Safe after a longjmp out of libjpeg, and before or after a failed jpeg_create_decompress
  // (it frees nothing while `info.mem` is null).
  ~decompressor() { jpeg_destroy_decompress(&info); }
  decompressor(decompressor const&) = delete;
  decompressor& operator=(decompressor const&) = delete;
};

// The two functions below are the only frames that call into libjpeg. Each sets the jump point
// itself and holds only trivially destructible locals, so the longjmp skips no destructor; they
// return false after one.

bool read_header(decompressor& d, std::span<unsigned char const> bytes, int reduction) noexcept {
  if (setjmp(d.failure.jump) != 0) return false;
  jpeg_create_decompress(&d.info);
  jpeg_mem_src(&d.info, bytes.data(), static_cast<unsigned long>(bytes.size()));
  (void)jpeg_read_header(&d.info, TRUE);
  if (d.info.jpeg_color_space == JCS_CMYK || d.info.jpeg_color_space == JCS_YCCK) {
    // libjpeg-turbo converts neither to RGB; it turns YCCK into CMYK, converted per row below.
    d.info.out_color_space = JCS_CMYK;
  } else {
#ifdef JCS_EXTENSIONS
    d.info.out_color_space = JCS_EXT_BGR;  // what the pipeline expects, with no extra pass
#else
    d.info.out_color_space = JCS_RGB;  // swapped per row below
#endif
  }
  d.info.scale_num = 1;
  d.info.scale_denom = static_cast<unsigned>(reduction);
  jpeg_calc_output_dimensions(&d.info);
  return true;
}

// Adobe's CMYK JPEGs (those with an APP14 "Adobe" marker, which is nearly all) store the inks
// inverted, 255 meaning no ink; the others store them plainly. The usual approximation without
// a colour profile: each channel is what its ink and the black leave of the paper.
void cmyk_row_to_bgr(unsigned char const* cmyk, unsigned char* bgr, std::size_t width,
                     bool inverted) noexcept {
  auto const paper = [inverted](unsigned char v) -> unsigned { return inverted ? v : 255U - v; };
  for (std::size_t i = 0; i < width; ++i, cmyk += 4, bgr += 3) {
    unsigned const k = paper(cmyk[3]);
    bgr[0] = static_cast<unsigned char>((paper(cmyk[2]) * k + 127U) / 255U);
    bgr[1] = static_cast<unsigned char>((paper(cmyk[1]) * k + 127U) / 255U);
    bgr[2] = static_cast<unsigned char>((paper(cmyk[0]) * k + 127U) / 255U);
  }
}

// Decodes into `pixels` (output_height rows of `stride` bytes, BGR). `staging` holds one row of
// libjpeg's output when that is not BGR already (CMYK; RGB without libjpeg-turbo), else null.
bool read_pixels(decompressor& d, unsigned char* pixels, std::size_t stride,
                 unsigned char* staging) noexcept {
  if (setjmp(d.failure.jump) != 0) return false;
  (void)jpeg_start_decompress(&d.info);
  bool const cmyk = d.info.out_color_space == JCS_CMYK;
  std::size_t const width = d.info.output_width;
  while (d.info.output_scanline < d.info.output_height) {
    unsigned char* const dst = pixels + stride * d.info.output_scanline;
    JSAMPROW row = staging != nullptr ? staging : dst;
    (void)jpeg_read_scanlines(&d.info, &row, 1);
    if (cmyk) {
      cmyk_row_to_bgr(staging, dst, width, d.info.saw_Adobe_marker != FALSE);
    } else if (staging != nullptr) {
      for (std::size_t i = 0; i < 3 * width; i += 3) {
        dst[i] = staging[i + 2];
        dst[i + 1] = staging[i + 1];
        dst[i + 2] = staging[i];
      }
    }
  }
  // Reads on to the end of the image: damage after the last row is reported here.
  (void)jpeg_finish_decompress(&d.info);
  return true;
}

// OpenCV's own cap on a decoded image, read from the same variable, so that the limit a user
// set for cv::imdecode still holds.
std::uint64_t max_pixels() {
  static std::uint64_t const limit = [] {
    std::uint64_t value = std::uint64_t{1} << 30U;
    char const* text = std::getenv("OPENCV_IO_MAX_IMAGE_PIXELS");  // NOLINT(concurrency-mt-unsafe)
    if (text != nullptr) {
      char* end = nullptr;
      unsigned long long const parsed = std::strtoull(text, &end, 10);
      if (end != text && *end == '\0' && parsed > 0) value = parsed;
    }
    return value;
  }();
  return limit;
}

}  // namespace

bool looks_like_jpeg(std::span<unsigned char const> bytes) noexcept {
  return bytes.size() >= 3 && bytes[0] == 0xFF && bytes[1] == 0xD8 && bytes[2] == 0xFF;
}

bool looks_like_png(std::span<unsigned char const> bytes) noexcept {
  static constexpr unsigned char signature[] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1A, '\n'};
  return bytes.size() >= sizeof signature &&
         std::equal(std::begin(signature), std::end(signature), bytes.begin());
}

cv::Mat decode_jpeg(std::span<unsigned char const> bytes, int reduction, std::string const& name) {
  GPUFEED_EXPECTS(reduction == 1 || reduction == 2 || reduction == 4 || reduction == 8,
                  "decode_jpeg: reduction " + std::to_string(reduction) + " is not 1, 2, 4 or 8");
  decompressor d;
  auto const fail = [&] {
    return file_error(name, std::string{"corrupt JPEG: "} + d.failure.message);
  };
  if (!read_header(d, bytes, reduction)) throw fail();
  std::uint64_t const width = d.info.output_width;
  std::uint64_t const height = d.info.output_height;
  if (width * height > max_pixels()) {
    throw file_error(name, "the JPEG's decoded size " + std::to_string(width) + "x" +
                               std::to_string(height) + " is over OPENCV_IO_MAX_IMAGE_PIXELS (" +
                               std::to_string(max_pixels()) + ")");
  }
  cv::Mat image(static_cast<int>(height), static_cast<int>(width), CV_8UC3);
  std::vector<unsigned char> staging;
#ifdef JCS_EXTENSIONS
  bool const staged = d.info.out_color_space == JCS_CMYK;
#else
  bool const staged = true;
#endif
  if (staged) staging.resize(static_cast<std::size_t>(width) * 4U);
  if (!read_pixels(d, image.data, image.step[0], staged ? staging.data() : nullptr)) throw fail();
  return image;
}

}  // namespace gpufeed::detail
