// Progressive JPEGs, libjpeg-turbo alone (one thread, from memory): the decode limit (fast-DCT
// RGB, whole), the raw planes whole, the raw planes of a 228 x 228 centre only (the crop's
// iMCU columns through the master's first/last_MCU_col, rows above skipped by advancing the
// output row, as jpeg_skip_scanlines does for multi-scan files), the cropped RGB decode
// (jpeg_crop_scanline + jpeg_skip_scanlines), and jpeg_start_decompress alone (which reads and
// entropy-decodes every scan of a progressive file). Build: g++ -O2 -std=c++20 progressive.cpp
// -ljpeg -o progressive. Run: progressive FOLDER (other-sets' progressive variant).
#include <cstddef>  // jpeglib.h uses size_t and FILE without declaring them
#include <cstdio>

#include <jpeglib.h>
// After jpeglib.h, which it needs.
#include <jpegint.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <vector>
std::vector<std::vector<unsigned char>> files;
std::vector<unsigned char> sink(3 * 16 * 4096);
// mode 0 limit, 1 raw whole, 2 raw centre partial (cols + rows), 3 rgb cropped centre
// (crop_scanline+skip), 4 entropy only (start_decompress + abort)
void one(jpeg_decompress_struct& info, int mode) {
  int w = info.image_width, h = info.image_height;
  int x0 = (w - 224) / 2 - 2, x1 = x0 + 228, y0 = (h - 224) / 2 - 2, y1 = y0 + 228;
  if (mode == 0) {
    info.dct_method = JDCT_IFAST;
    info.out_color_space = JCS_RGB;
    jpeg_start_decompress(&info);
    while (info.output_scanline < info.output_height) {
      JSAMPROW r = sink.data();
      jpeg_read_scanlines(&info, &r, 1);
    }
    jpeg_finish_decompress(&info);
    return;
  }
  if (mode == 4) {
    jpeg_start_decompress(&info);
    jpeg_abort_decompress(&info);
    return;
  }
  if (mode == 3) {
    info.out_color_space = JCS_RGB;
    jpeg_start_decompress(&info);
    JDIMENSION xo = x0, cw = x1 - x0;
    jpeg_crop_scanline(&info, &xo, &cw);
    jpeg_skip_scanlines(&info, y0);
    while (info.output_scanline < (JDIMENSION)y1) {
      JSAMPROW r = sink.data();
      jpeg_read_scanlines(&info, &r, 1);
    }
    jpeg_abort_decompress(&info);
    return;
  }
  info.raw_data_out = TRUE;
  jpeg_start_decompress(&info);
  JDIMENSION lines = info.max_v_samp_factor * info.min_DCT_scaled_size,
             iw = info.max_h_samp_factor * info.min_DCT_scaled_size;
  JSAMPROW rows[3][16];
  JSAMPARRAY planes[3] = {rows[0], rows[1], rows[2]};
  for (int c = 0; c < 3; ++c)
    for (int i = 0; i < 16; ++i) rows[c][i] = sink.data() + (c * 16 + i) * 4096;
  JDIMENSION first = 0, end = info.total_iMCU_rows;
  if (mode == 2) {
    first = y0 / lines;
    end = (y1 + lines - 1) / lines;
    JDIMENSION fc = x0 / iw, lc = (x1 - 1) / iw;
    for (int ci = 0; ci < info.num_components; ++ci) {
      int hsf = info.comp_info[ci].h_samp_factor;
      info.master->first_MCU_col[ci] = fc * hsf;
      info.master->last_MCU_col[ci] = (lc + 1) * hsf - 1;
    }
    info.output_iMCU_row += first;
    info.output_scanline += first * lines;
  }
  for (JDIMENSION r = first; r < end; ++r) jpeg_read_raw_data(&info, planes, lines);
  if (mode == 2)
    jpeg_abort_decompress(&info);
  else
    jpeg_finish_decompress(&info);
}
double run(int mode, int passes) {
  jpeg_decompress_struct info;
  jpeg_error_mgr err;
  info.err = jpeg_std_error(&err);
  jpeg_create_decompress(&info);
  auto t = std::chrono::steady_clock::now();
  for (int p = 0; p < passes; ++p)
    for (auto& f : files) {
      jpeg_mem_src(&info, f.data(), f.size());
      jpeg_read_header(&info, TRUE);
      one(info, mode);
    }
  double us =
      std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t).count();
  jpeg_destroy_decompress(&info);
  return us / (passes * files.size());
}
int main(int argc, char** argv) {
  for (auto const& e : std::filesystem::recursive_directory_iterator(argv[1])) {
    if (e.path().extension() != ".jpg") continue;
    std::ifstream in(e.path(), std::ios::binary);
    files.emplace_back(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  const char* names[] = {"limit", "raw whole", "raw centre partial", "rgb cropped centre",
                         "entropy (start+abort)"};
  for (int round = 0; round < 3; ++round) {
    for (int m = 0; m < 5; ++m) std::printf("%-22s %7.1f  ", names[m], run(m, 5));
    std::printf("\n");
  }
}
