#include "decode_limit.hpp"

#include <algorithm>
#include <atomic>
#include <barrier>
#include <csetjmp>
#include <cstddef>
#include <cstdio>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

// After <cstddef> and <cstdio>: jpeglib.h uses size_t and FILE without declaring them.
#include <jpeglib.h>

#include "bench_clock.hpp"

namespace gpufeed::bench {
namespace {

// libjpeg's error manager, leaving libjpeg by longjmp (never exit(), never an exception
// through its C frames).
struct failure {
  jpeg_error_mgr mgr;
  std::jmp_buf jump;
};

extern "C" void decode_limit_error_exit(j_common_ptr info) {
  std::longjmp(reinterpret_cast<failure*>(info->err)->jump, 1);
}

// Decodes `bytes` whole into `pixels` (grown as needed); false if libjpeg fails. Only trivially
// destructible locals live across the setjmp.
bool decode_whole(jpeg_decompress_struct& info, failure& err,
                  std::vector<unsigned char> const& bytes, J_DCT_METHOD dct,
                  std::vector<unsigned char>& pixels, std::uint64_t& decoded_pixels) noexcept {
  if (setjmp(err.jump) != 0) {
    jpeg_abort_decompress(&info);
    return false;
  }
  jpeg_mem_src(&info, bytes.data(), static_cast<unsigned long>(bytes.size()));
  (void)jpeg_read_header(&info, TRUE);
  info.out_color_space = JCS_RGB;
  info.dct_method = dct;
  (void)jpeg_start_decompress(&info);
  std::size_t const stride =
      std::size_t{info.output_width} * static_cast<std::size_t>(info.output_components);
  std::size_t const need = stride * info.output_height;
  if (pixels.size() < need) return false;  // the caller sized it for the largest image
  while (info.output_scanline < info.output_height) {
    JSAMPROW row = pixels.data() + stride * info.output_scanline;
    (void)jpeg_read_scanlines(&info, &row, 1);
  }
  (void)jpeg_finish_decompress(&info);
  decoded_pixels += std::uint64_t{info.output_width} * info.output_height;
  return true;
}

// One libjpeg decompressor with its error manager, reused for many images.
struct decompressor {
  failure err{};
  jpeg_decompress_struct info{};
  decompressor() noexcept {
    info.err = jpeg_std_error(&err.mgr);
    err.mgr.error_exit = decode_limit_error_exit;
    jpeg_create_decompress(&info);
  }
  ~decompressor() { jpeg_destroy_decompress(&info); }
  decompressor(decompressor const&) = delete;
  decompressor& operator=(decompressor const&) = delete;
};

// The decoded size of `bytes` in bytes (RGB) into `size`; false if libjpeg fails.
bool decoded_bytes(jpeg_decompress_struct& info, failure& err,
                   std::vector<unsigned char> const& bytes, std::size_t& size) noexcept {
  if (setjmp(err.jump) != 0) return false;
  jpeg_mem_src(&info, bytes.data(), static_cast<unsigned long>(bytes.size()));
  (void)jpeg_read_header(&info, TRUE);
  size = std::size_t{info.image_width} * info.image_height * 3;
  jpeg_abort_decompress(&info);
  return true;
}

// The largest decoded size among `files`, in bytes (RGB): each thread's buffer.
std::size_t largest_image_bytes(jpeg_files const& files) {
  decompressor d;
  std::size_t largest = 0;
  bool readable = true;
  for (auto const& bytes : files) {
    std::size_t size = 0;
    readable = decoded_bytes(d.info, d.err, bytes, size);
    if (!readable) break;
    largest = std::max(largest, size);
  }
  if (!readable) throw std::runtime_error{"decode limit: a file is not a readable JPEG"};
  return largest;
}

}  // namespace

decode_limit_run measure_decode_limit(jpeg_files const& files, unsigned threads,
                                      std::uint64_t images, limit_dct dct) {
  if (files.empty() || threads == 0) throw std::invalid_argument{"decode limit: nothing to decode"};
  std::size_t const buffer_bytes = largest_image_bytes(files);
  J_DCT_METHOD const method = dct == limit_dct::fast ? JDCT_IFAST : JDCT_ISLOW;
  std::atomic<std::uint64_t> pixels{0};
  std::atomic<bool> failed{false};
  std::barrier start{static_cast<std::ptrdiff_t>(threads) + 1};
  std::vector<std::jthread> pool;
  pool.reserve(threads);
  for (unsigned t = 0; t < threads; ++t) {
    // Thread t decodes images t, t + threads, ... of the run: `images` in all.
    pool.emplace_back([&, t] {
      std::vector<unsigned char> buffer(buffer_bytes);
      decompressor d;
      std::uint64_t mine = 0;
      start.arrive_and_wait();
      for (std::uint64_t i = t; i < images; i += threads) {
        if (!decode_whole(d.info, d.err, files[i % files.size()], method, buffer, mine)) {
          failed = true;
          break;
        }
      }
      pixels += mine;
    });
  }
  start.arrive_and_wait();
  auto const begin = bench_clock::now();
  for (auto& thread : pool) thread.join();
  decode_limit_run run;
  run.seconds = seconds_between(begin, bench_clock::now());
  if (failed) throw std::runtime_error{"decode limit: a file did not decode"};
  run.images = images;
  run.pixels = pixels;
  return run;
}

}  // namespace gpufeed::bench
