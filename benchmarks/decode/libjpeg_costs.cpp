// Where a JPEG's decode time goes, with libjpeg-turbo alone: one thread, the files decoded from
// memory by one reused decompressor, in four ways: the decode limit `gpufeed-bench decode`
// compares with (fast-DCT RGB of the whole image), the planar path's raw planes of the whole
// image, the same for a 224 x 224 centre's iMCUs only (rows above and below entropy-decoded,
// columns beside not transformed, as the planar path decodes a crop), and entropy decoding alone.
// It shows the part of the limit that no crop avoids (docs/benchmarks/decode/README.md).
//
// Usage: gpufeed-libjpeg-costs FOLDER, the JPEGs under FOLDER (up to 4096 pixels wide), e.g. the
// photographs scripts/bench-python writes to build/bench-python-data/images.
#include <cstddef>  // jpeglib.h uses size_t and FILE without declaring them
#include <cstdio>

#include <jpeglib.h>
// libjpeg-turbo's internal header (after jpeglib.h, which it needs): the entropy decoder's
// decode_mcu and the master's iMCU columns, which the partial decode drives.
#if __has_include(<jpegint.h>)
#include <jpegint.h>
#define GPUFEED_HAS_JPEGINT 1
#endif

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <vector>

#if GPUFEED_HAS_JPEGINT
namespace {

std::vector<std::vector<unsigned char>> files;
std::vector<unsigned char> out(3 * 16 * 4096);

void skip_rows(jpeg_decompress_struct& info, JDIMENSION count, JDIMENSION lines) {
  for (JDIMENSION r = 0; r < count; ++r) {
    for (JDIMENSION x = 0; x < info.MCUs_per_row; ++x) (*info.entropy->decode_mcu)(&info, nullptr);
    ++info.input_iMCU_row;
    ++info.output_iMCU_row;
    info.output_scanline += lines;
    if (info.input_iMCU_row == info.total_iMCU_rows) (*info.inputctl->finish_input_pass)(&info);
  }
}

// Planes of pixels [x0, x1) x [y0, y1) (all of them unless `part`), read to the end of the image.
void raw(jpeg_decompress_struct& info, JDIMENSION x0, JDIMENSION x1, JDIMENSION y0, JDIMENSION y1,
         bool part) {
  info.raw_data_out = TRUE;
  jpeg_start_decompress(&info);
  auto const lines = static_cast<JDIMENSION>(info.max_v_samp_factor * info.min_DCT_scaled_size);
  auto const width = static_cast<JDIMENSION>(info.max_h_samp_factor * info.min_DCT_scaled_size);
  JSAMPROW rows[3][16];
  JSAMPARRAY planes[3] = {rows[0], rows[1], rows[2]};
  for (int c = 0; c < 3; ++c) {
    for (int i = 0; i < 16; ++i) rows[c][i] = out.data() + (c * 16 + i) * 4096;
  }
  JDIMENSION const first = part ? y0 / lines : 0;
  JDIMENSION const end = part ? (y1 + lines - 1) / lines : info.total_iMCU_rows;
  if (part) {
    info.master->first_iMCU_col = x0 / width;
    info.master->last_iMCU_col = (x1 - 1) / width;
  }
  skip_rows(info, first, lines);
  for (JDIMENSION r = first; r < end; ++r) jpeg_read_raw_data(&info, planes, lines);
  skip_rows(info, info.total_iMCU_rows - info.input_iMCU_row, lines);
  jpeg_finish_decompress(&info);
}

double run(int mode, int repeats) {
  jpeg_decompress_struct info;
  jpeg_error_mgr err;
  info.err = jpeg_std_error(&err);
  jpeg_create_decompress(&info);
  long n = 0;
  auto const start = std::chrono::steady_clock::now();
  for (int r = 0; r < repeats; ++r) {
    for (auto& f : files) {
      jpeg_mem_src(&info, f.data(), f.size());
      jpeg_read_header(&info, TRUE);
      ++n;
      JDIMENSION const w = info.image_width;
      JDIMENSION const h = info.image_height;
      if (mode == 0) {  // the decode limit
        info.dct_method = JDCT_IFAST;
        info.out_color_space = JCS_RGB;
        jpeg_start_decompress(&info);
        while (info.output_scanline < info.output_height) {
          JSAMPROW row = out.data();
          jpeg_read_scanlines(&info, &row, 1);
        }
        jpeg_finish_decompress(&info);
      } else if (mode == 1) {
        raw(info, 0, w, 0, h, false);
      } else if (mode == 2) {
        JDIMENSION const cw =
            std::min<JDIMENSION>(w, 224);  // a smaller image's centre is all of it
        JDIMENSION const ch = std::min<JDIMENSION>(h, 224);
        raw(info, (w - cw) / 2, (w + cw) / 2, (h - ch) / 2, (h + ch) / 2, true);
      } else {  // entropy decoding alone, and the last row
        jpeg_start_decompress(&info);
        jpeg_skip_scanlines(&info, info.output_height - 1);
        JSAMPROW row = out.data();
        jpeg_read_scanlines(&info, &row, 1);
        jpeg_finish_decompress(&info);
      }
    }
  }
  double const us =
      std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count();
  jpeg_destroy_decompress(&info);
  return us / static_cast<double>(n);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fputs("usage: gpufeed-libjpeg-costs FOLDER (of JPEGs)\n", stderr);
    return 2;
  }
  for (auto const& e : std::filesystem::recursive_directory_iterator(argv[1])) {
    auto const extension = e.path().extension();
    if (extension != ".jpg" && extension != ".jpeg") continue;
    std::ifstream in(e.path(), std::ios::binary);
    files.emplace_back(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  if (files.empty()) {
    std::fprintf(stderr, "no .jpg or .jpeg file under %s\n", argv[1]);
    return 1;
  }
  char const* const names[] = {"limit: fast-DCT RGB, whole", "raw planes, whole",
                               "raw planes, centre 224 iMCUs", "entropy decoding alone"};
  std::printf("%zu JPEGs, us per image, 3 rounds of 10 passes each\n", files.size());
  for (int round = 0; round < 3; ++round) {
    for (int mode = 0; mode < 4; ++mode) std::printf("%-30s %7.1f\n", names[mode], run(mode, 10));
  }
  return EXIT_SUCCESS;
}
#else
int main() {
  std::fputs("gpufeed-libjpeg-costs needs libjpeg-turbo's internal header jpegint.h\n", stderr);
  return 1;
}
#endif
