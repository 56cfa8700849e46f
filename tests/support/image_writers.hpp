#pragma once
// Encoders for the image suites that run without OpenCV: PNGs of any colour type, bit depth and
// interlacing written with libpng, baseline JPEGs with libjpeg, uncompressed BMPs by hand.

#include <png.h>

#include <csetjmp>
#include <cstddef>
#include <cstdint>
#include <cstdio>  // jpeglib.h uses FILE and size_t without declaring them
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include <jpeglib.h>

namespace gpufeed::test {

// What a PNG holds: `samples` has width x height x channels values of `bit_depth` bits (the
// palette index for PNG_COLOR_TYPE_PALETTE), row by row.
struct png_picture {
  int width = 0;
  int height = 0;
  int color_type = PNG_COLOR_TYPE_RGB;
  int bit_depth = 8;
  bool interlaced = false;
  std::vector<std::uint16_t> samples;
  std::vector<png_color> palette;          // PNG_COLOR_TYPE_PALETTE
  std::vector<std::uint8_t> transparency;  // tRNS alpha per palette entry, if any
};

inline int png_channels(int color_type) {
  switch (color_type) {
    case PNG_COLOR_TYPE_GRAY:
    case PNG_COLOR_TYPE_PALETTE:
      return 1;
    case PNG_COLOR_TYPE_GRAY_ALPHA:
      return 2;
    case PNG_COLOR_TYPE_RGB:
      return 3;
    default:
      return 4;
  }
}

namespace detail_writers {

extern "C" inline void png_append(png_structp png, png_bytep data, png_size_t length) {
  auto* out = static_cast<std::vector<unsigned char>*>(png_get_io_ptr(png));
  out->insert(out->end(), data, data + length);
}
extern "C" inline void png_no_flush(png_structp /*png*/) {}

// Packs one row of samples as the PNG stores them (big-endian 16-bit, MSB-first low depths).
inline std::vector<unsigned char> pack_row(png_picture const& p, int y) {
  auto const n =
      static_cast<std::size_t>(p.width) * static_cast<std::size_t>(png_channels(p.color_type));
  auto const depth = static_cast<std::size_t>(p.bit_depth);
  std::vector<unsigned char> row((n * depth + 7) / 8, 0);
  for (std::size_t i = 0; i < n; ++i) {
    unsigned const v = p.samples[static_cast<std::size_t>(y) * n + i];
    if (depth == 16) {
      row[2 * i] = static_cast<unsigned char>(v >> 8U);
      row[2 * i + 1] = static_cast<unsigned char>(v & 0xFFU);
    } else if (depth == 8) {
      row[i] = static_cast<unsigned char>(v);
    } else {
      std::size_t const bit = i * depth;
      row[bit / 8] |= static_cast<unsigned char>(v << (8U - depth - bit % 8));
    }
  }
  return row;
}

// The setjmp frame owns nothing with a destructor.
inline bool write_png(png_structp png, png_infop info, png_picture const* p, png_bytepp rows) {
  if (setjmp(png_jmpbuf(png)) != 0) return false;  // NOLINT(cert-err52-cpp)
  png_set_IHDR(png, info, static_cast<png_uint_32>(p->width), static_cast<png_uint_32>(p->height),
               p->bit_depth, p->color_type,
               p->interlaced ? PNG_INTERLACE_ADAM7 : PNG_INTERLACE_NONE,
               PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
  if (!p->palette.empty()) {
    png_set_PLTE(png, info, p->palette.data(), static_cast<int>(p->palette.size()));
  }
  if (!p->transparency.empty()) {
    png_set_tRNS(png, info, p->transparency.data(), static_cast<int>(p->transparency.size()),
                 nullptr);
  }
  png_write_info(png, info);
  png_write_image(png, rows);
  png_write_end(png, info);
  return true;
}

}  // namespace detail_writers

// The PNG file of `p`.
inline std::vector<unsigned char> encode_png(png_picture const& p) {
  std::vector<std::vector<unsigned char>> packed(static_cast<std::size_t>(p.height));
  std::vector<png_bytep> rows(packed.size());
  for (std::size_t y = 0; y < packed.size(); ++y) {
    packed[y] = detail_writers::pack_row(p, static_cast<int>(y));
    rows[y] = packed[y].data();
  }
  std::vector<unsigned char> out;
  png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, nullptr, nullptr, nullptr);
  png_infop info = png != nullptr ? png_create_info_struct(png) : nullptr;
  if (info == nullptr) throw std::runtime_error("libpng: cannot create a writer");
  png_set_write_fn(png, &out, detail_writers::png_append, detail_writers::png_no_flush);
  bool const ok = detail_writers::write_png(png, info, &p, rows.data());
  png_destroy_write_struct(&png, &info);
  if (!ok) throw std::runtime_error("libpng could not write the test PNG");
  return out;
}

// A baseline JPEG (4:2:0, quality 90) of RGB pixels, HWC.
inline std::vector<unsigned char> encode_jpeg_rgb(std::span<std::uint8_t const> rgb, int width,
                                                  int height) {
  jpeg_compress_struct info{};
  jpeg_error_mgr errors{};
  info.err = jpeg_std_error(&errors);  // exit()s on error: the input here is always valid
  jpeg_create_compress(&info);
  unsigned char* buffer = nullptr;
  unsigned long size = 0;  // NOLINT(google-runtime-int): libjpeg's type
  jpeg_mem_dest(&info, &buffer, &size);
  info.image_width = static_cast<JDIMENSION>(width);
  info.image_height = static_cast<JDIMENSION>(height);
  info.input_components = 3;
  info.in_color_space = JCS_RGB;
  jpeg_set_defaults(&info);
  jpeg_set_quality(&info, 90, TRUE);
  jpeg_start_compress(&info, TRUE);
  while (info.next_scanline < info.image_height) {
    auto* row = const_cast<JSAMPROW>(rgb.data() + std::size_t{info.next_scanline} *
                                                      static_cast<std::size_t>(width) * 3);
    jpeg_write_scanlines(&info, &row, 1);
  }
  jpeg_finish_compress(&info);
  jpeg_destroy_compress(&info);
  std::vector<unsigned char> out(buffer, buffer + size);
  std::free(buffer);  // NOLINT(cppcoreguidelines-no-malloc): jpeg_mem_dest's buffer
  return out;
}

// An uncompressed 24-bit BMP of RGB pixels, HWC (BMP stores BGR rows bottom-up, each padded to
// four bytes).
inline std::vector<unsigned char> encode_bmp_rgb(std::span<std::uint8_t const> rgb, int width,
                                                 int height) {
  std::size_t const stride = (static_cast<std::size_t>(width) * 3 + 3) / 4 * 4;
  std::size_t const data = stride * static_cast<std::size_t>(height);
  std::vector<unsigned char> out(54 + data, 0);
  auto put32 = [&](std::size_t at, std::uint32_t v) {
    for (unsigned b = 0; b < 4; ++b) out[at + b] = static_cast<unsigned char>(v >> (8U * b));
  };
  out[0] = 'B';
  out[1] = 'M';
  put32(2, static_cast<std::uint32_t>(out.size()));
  put32(10, 54);
  put32(14, 40);
  put32(18, static_cast<std::uint32_t>(width));
  put32(22, static_cast<std::uint32_t>(height));
  out[26] = 1;   // planes
  out[28] = 24;  // bits per pixel
  put32(34, static_cast<std::uint32_t>(data));
  auto const w = static_cast<std::size_t>(width);
  auto const h = static_cast<std::size_t>(height);
  for (std::size_t y = 0; y < h; ++y) {
    unsigned char* row = out.data() + 54 + stride * (h - 1 - y);
    for (std::size_t x = 0; x < w; ++x) {
      std::uint8_t const* p = rgb.data() + (y * w + x) * 3;
      row[3 * x] = p[2];
      row[3 * x + 1] = p[1];
      row[3 * x + 2] = p[0];
    }
  }
  return out;
}

inline void write_file(std::filesystem::path const& path, std::span<unsigned char const> bytes) {
  std::filesystem::create_directories(path.parent_path());
  std::ofstream out{path, std::ios::binary};
  out.write(reinterpret_cast<char const*>(bytes.data()),
            static_cast<std::streamsize>(bytes.size()));
}

}  // namespace gpufeed::test
