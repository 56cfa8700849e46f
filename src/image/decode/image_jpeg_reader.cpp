// jpeg_reader's header, sizes and errors: libjpeg's errors and warnings become a longjmp out of
// it, then a file_error naming the image.

#include "image/decode/jpeg_decode.hpp"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <iterator>
#include <memory>
#include <span>
#include <string>
#include <utility>

#include "gpufeed/error.hpp"
#include "image/decode/decode_limits.hpp"
#include "image/decode/jpeg_reader_state.hpp"

// libjpeg is C: an exception must never unwind through its frames, so both callbacks leave it
// by longjmp to the setjmp of the function that called into it, which has nothing to destroy.
extern "C" {

static void gpufeed_jpeg_error_exit(j_common_ptr info) {
  auto* failure = reinterpret_cast<gpufeed::detail::jpeg_failure*>(info->err);
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

// Whether the bytes from the start of the first scan's entropy-coded data hold an end-of-image
// marker. There a 0xFF byte is always stuffed (FF 00) or a restart marker, so FF D9 is the end.
bool has_end_marker(unsigned char const* scan, std::size_t size) noexcept {
  if (size >= 2 && scan[size - 2] == 0xFF && scan[size - 1] == 0xD9) return true;  // the usual
  for (std::size_t i = 0; i + 1 < size; ++i) {
    if (scan[i] == 0xFF && scan[i + 1] == 0xD9) return true;
  }
  return false;
}

// These two and those of image_jpeg_rgb.cpp and image_jpeg_planes.cpp are the only frames that
// call into libjpeg. Each sets the jump point itself and holds only trivially destructible
// locals, so the longjmp skips no destructor; they return false after one.

bool read_header(jpeg_state& info, jpeg_failure& failure,
                 std::span<unsigned char const> bytes) noexcept {
  if (setjmp(failure.jump) != 0) return false;
  jpeg_create_decompress(&info);
  jpeg_mem_src(&info, bytes.data(), static_cast<unsigned long>(bytes.size()));
  (void)jpeg_read_header(&info, TRUE);
  if (info.jpeg_color_space == JCS_CMYK || info.jpeg_color_space == JCS_YCCK) {
    // libjpeg-turbo converts neither to RGB; it turns YCCK into CMYK, converted per row
    // by image_jpeg_rgb.cpp.
    info.out_color_space = JCS_CMYK;
  } else {
#ifdef JCS_EXTENSIONS
    info.out_color_space = JCS_EXT_RGBX;  // what the resampler reads, with no extra pass
#else
    info.out_color_space = JCS_RGB;  // widened per row by image_jpeg_rgb.cpp
#endif
  }
  jpeg_calc_output_dimensions(&info);
  return true;
}

bool scale(jpeg_state& info, jpeg_failure& failure, int reduction) noexcept {
  if (setjmp(failure.jump) != 0) return false;
  info.scale_num = 1;
  info.scale_denom = static_cast<unsigned>(reduction);
  jpeg_calc_output_dimensions(&info);
  return true;
}

}  // namespace

jpeg_reader::state::state() noexcept {
  info.err = jpeg_std_error(&failure.mgr);
  failure.mgr.error_exit = gpufeed_jpeg_error_exit;
  failure.mgr.emit_message = gpufeed_jpeg_emit_message;
}

bool looks_like_jpeg(std::span<unsigned char const> bytes) noexcept {
  return bytes.size() >= 3 && bytes[0] == 0xFF && bytes[1] == 0xD8 && bytes[2] == 0xFF;
}

bool looks_like_png(std::span<unsigned char const> bytes) noexcept {
  static constexpr unsigned char signature[] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1A, '\n'};
  return bytes.size() >= sizeof signature &&
         std::equal(std::begin(signature), std::end(signature), bytes.begin());
}

jpeg_reader::jpeg_reader(std::span<unsigned char const> bytes, std::string name)
    : state_{std::make_unique<state>()}, name_{std::move(name)} {
  if (!read_header(state_->info, state_->failure, bytes)) {
    throw corrupt();
  }
  // The header is read up to the first scan: the memory source now points at its data.
  jpeg_source_mgr const& source = *state_->info.src;
  state_->complete = has_end_marker(source.next_input_byte, source.bytes_in_buffer);
}

bool jpeg_reader::complete() const noexcept {
  return state_->complete;
}

void jpeg_reader::set_read_to_end(bool read_to_end) noexcept {
  state_->read_to_end = read_to_end;
}

jpeg_reader::~jpeg_reader() = default;

file_error jpeg_reader::corrupt() const {
  return file_error(name_, std::string{"corrupt JPEG: "} + state_->failure.message);
}

void jpeg_reader::check_decoded_size() const {
  std::uint64_t const width = state_->info.output_width;
  std::uint64_t const height = state_->info.output_height;
  if (width * height > max_decoded_pixels()) {
    throw file_error(name_, "the JPEG's decoded size " + std::to_string(width) + "x" +
                                std::to_string(height) + " is over OPENCV_IO_MAX_IMAGE_PIXELS (" +
                                std::to_string(max_decoded_pixels()) + ")");
  }
  if (width == 0 || height == 0) throw file_error(name_, "the JPEG has no pixels");
}

int jpeg_reader::width() const noexcept {
  return static_cast<int>(state_->info.image_width);
}

int jpeg_reader::height() const noexcept {
  return static_cast<int>(state_->info.image_height);
}

int jpeg_reader::decoded_width() const noexcept {
  return static_cast<int>(state_->info.output_width);
}

int jpeg_reader::decoded_height() const noexcept {
  return static_cast<int>(state_->info.output_height);
}

void jpeg_reader::set_reduction(int reduction) {
  GPUFEED_EXPECTS(reduction == 1 || reduction == 2 || reduction == 4 || reduction == 8,
                  "jpeg_reader: reduction " + std::to_string(reduction) + " is not 1, 2, 4 or 8");
  if (!scale(state_->info, state_->failure, reduction)) {
    throw corrupt();
  }
}

}  // namespace gpufeed::detail
