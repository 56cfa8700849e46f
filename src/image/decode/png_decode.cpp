// PNG through libpng's sequential reader (the whole file in memory). libpng reports errors by
// calling back into us, and the callback leaves libpng by longjmp to the setjmp of the function
// that called into it; those functions (read_header, read_pixels) hold only trivially destructible
// locals, so the jump skips no destructor, and return false after one.

#include "image/decode/png_decode.hpp"

#include <png.h>

#include <csetjmp>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "gpufeed/error.hpp"
#include "image/decode/decode_limits.hpp"

namespace gpufeed::detail {

namespace {

// The encoded bytes, how far libpng has read them, and libpng's last error message: what the
// callbacks and the setjmp frames share. Trivially destructible, like everything those frames
// hold.
struct png_source {
  unsigned char const* data = nullptr;
  std::size_t size = 0;
  std::size_t offset = 0;
  char message[256] = {};
};

// The header's fields that decide the transforms and the buffer.
struct png_header {
  png_uint_32 width = 0;
  png_uint_32 height = 0;
  int bit_depth = 0;
  int color_type = 0;
};

}  // namespace

}  // namespace gpufeed::detail

extern "C" {

static void gpufeed_png_error(png_structp png, png_const_charp message) {
  auto* source = static_cast<gpufeed::detail::png_source*>(png_get_error_ptr(png));
  std::strncpy(source->message, message != nullptr ? message : "unknown libpng error",
               sizeof source->message - 1);
  png_longjmp(png, 1);
}

// Warnings are about damage libpng recovers from (an ancillary chunk's CRC, an unknown chunk);
// the pixels are still right, so they are dropped rather than printed on stderr.
static void gpufeed_png_warning(png_structp /*png*/, png_const_charp /*message*/) {}

static void gpufeed_png_read(png_structp png, png_bytep out, png_size_t length) {
  auto* source = static_cast<gpufeed::detail::png_source*>(png_get_io_ptr(png));
  if (source->size - source->offset < length) {
    png_error(png, "the file ends before the image does (truncated)");
  }
  std::memcpy(out, source->data + source->offset, length);
  source->offset += length;
}

}  // extern "C"

namespace gpufeed::detail {

namespace {

// libpng's read and info structs, destroyed together.
class png_reader {
 public:
  explicit png_reader(png_source* source)
      : png_{png_create_read_struct(PNG_LIBPNG_VER_STRING, source, gpufeed_png_error,
                                    gpufeed_png_warning)} {
    if (png_ != nullptr) info_ = png_create_info_struct(png_);
  }
  ~png_reader() {
    if (png_ != nullptr)
      png_destroy_read_struct(&png_, info_ != nullptr ? &info_ : nullptr, nullptr);
  }
  png_reader(png_reader const&) = delete;
  png_reader& operator=(png_reader const&) = delete;
  png_reader(png_reader&&) = delete;
  png_reader& operator=(png_reader&&) = delete;

  [[nodiscard]] bool ready() const noexcept { return png_ != nullptr && info_ != nullptr; }
  [[nodiscard]] png_structp png() const noexcept { return png_; }
  [[nodiscard]] png_infop info() const noexcept { return info_; }

 private:
  png_structp png_ = nullptr;
  png_infop info_ = nullptr;
};

// Reads the chunks up to the image data and the header's fields.
bool read_header(png_structp png, png_infop info, png_source* source, png_header* header) {
  if (setjmp(png_jmpbuf(png)) != 0) return false;  // NOLINT(cert-err52-cpp)
  png_set_read_fn(png, source, gpufeed_png_read);
  png_read_info(png, info);
  header->width = png_get_image_width(png, info);
  header->height = png_get_image_height(png, info);
  header->bit_depth = png_get_bit_depth(png, info);
  header->color_type = png_get_color_type(png, info);
  return true;
}

// Decodes every pass into `rows` as 8-bit RGBX, the transforms those of OpenCV's PNG decoder
// for IMREAD_COLOR (strip 16 to 8 bits, drop alpha, expand palettes and low-depth grey, grey to
// RGB), then reads the chunks after the image data up to IEND, so that a file cut after its
// pixels is an error too.
bool read_pixels(png_structp png, png_infop info, png_header const* header, png_bytepp rows) {
  if (setjmp(png_jmpbuf(png)) != 0) return false;  // NOLINT(cert-err52-cpp)
  if (header->bit_depth == 16) png_set_strip_16(png);
  png_set_strip_alpha(png);
  if (header->color_type == PNG_COLOR_TYPE_PALETTE) png_set_palette_to_rgb(png);
  if ((header->color_type & PNG_COLOR_MASK_COLOR) == 0) {
    if (header->bit_depth < 8) png_set_expand_gray_1_2_4_to_8(png);
    png_set_gray_to_rgb(png);
  }
  png_set_filler(png, 0xFF, PNG_FILLER_AFTER);
  (void)png_set_interlace_handling(png);
  png_read_update_info(png, info);
  if (png_get_bit_depth(png, info) != 8 || png_get_channels(png, info) != 4 ||
      png_get_rowbytes(png, info) != std::size_t{header->width} * 4U) {
    png_error(png, "the PNG's pixel layout did not convert to 8-bit RGBX");
  }
  png_read_image(png, rows);
  png_read_end(png, nullptr);
  return true;
}

}  // namespace

rgbx_view decode_png_rgbx(std::span<unsigned char const> bytes, std::string const& name,
                          rgbx_buffer& pixels) {
  png_source source;
  source.data = bytes.data();
  source.size = bytes.size();
  png_reader reader{&source};
  if (!reader.ready()) throw file_error(name, "cannot start libpng's reader (out of memory?)");
  png_header header;
  if (!read_header(reader.png(), reader.info(), &source, &header)) {
    throw file_error(name, std::string{"corrupt PNG: "} + source.message);
  }
  // libpng refuses sides over its user limits (a million) itself; the product is checked here,
  // before anything is allocated for it (each factor is under 2^32, so it cannot overflow).
  std::uint64_t const area = std::uint64_t{header.width} * std::uint64_t{header.height};
  if (header.width == 0 || header.height == 0) throw file_error(name, "the PNG has no pixels");
  if (area > max_decoded_pixels() || header.width > (1U << 30U) || header.height > (1U << 30U)) {
    throw file_error(name, "the PNG's size " + std::to_string(header.width) + "x" +
                               std::to_string(header.height) +
                               " is over OPENCV_IO_MAX_IMAGE_PIXELS (" +
                               std::to_string(max_decoded_pixels()) + " pixels)");
  }
  int const width = static_cast<int>(header.width);
  int const height = static_cast<int>(header.height);
  std::uint8_t* const first = pixels.reset(width, height);
  thread_local std::vector<png_bytep> rows;
  rows.resize(static_cast<std::size_t>(height));
  for (std::size_t y = 0; y < rows.size(); ++y) rows[y] = first + y * pixels.stride();
  if (!read_pixels(reader.png(), reader.info(), &header, rows.data())) {
    throw file_error(name, std::string{"corrupt PNG: "} + source.message);
  }
  return pixels.view(width, height);
}

}  // namespace gpufeed::detail
