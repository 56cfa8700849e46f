// What libjpeg-turbo's steps cost on a folder of JPEGs, one thread, from memory, one reused
// decompressor: the decode limit's work (fast-DCT RGB decode of the whole image), the planar
// path's raw decode of the whole image, the same for a 224 x 224 centre's iMCUs only (rows above
// and below entropy-decoded, columns beside not transformed: the steps jpeg_reader::decode_planes
// takes since 5286331), and entropy decoding alone (jpeg_skip_scanlines over the image).
// Build: g++ -O2 -std=c++20 libjpeg-costs.cpp -ljpeg -o libjpeg-costs (libjpeg-turbo 2.1.5).
// Run: ./libjpeg-costs FOLDER (the 320 x 256 set gpufeed-bench decode generates, copied from its
// temporary folder during a run).
#include <cstddef>  // jpeglib.h uses size_t and FILE without declaring them
#include <cstdio>

#include <jpeglib.h>
// After jpeglib.h, which it needs.
#include <jpegint.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <vector>

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
void raw(jpeg_decompress_struct& info, int x0, int x1, int y0, int y1, bool part) {
  info.raw_data_out = TRUE;
  jpeg_start_decompress(&info);
  JDIMENSION const lines = info.max_v_samp_factor * info.min_DCT_scaled_size;
  JDIMENSION const width = info.max_h_samp_factor * info.min_DCT_scaled_size;
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
      int const w = static_cast<int>(info.image_width);
      int const h = static_cast<int>(info.image_height);
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
        raw(info, (w - 224) / 2, (w + 224) / 2, (h - 224) / 2, (h + 224) / 2, true);
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
  if (argc != 2) return 2;
  for (auto const& e : std::filesystem::recursive_directory_iterator(argv[1])) {
    if (e.path().extension() != ".jpg") continue;
    std::ifstream in(e.path(), std::ios::binary);
    files.emplace_back(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  char const* const names[] = {"limit: fast-DCT RGB, whole", "raw planes, whole",
                               "raw planes, centre 224 iMCUs", "entropy decoding alone"};
  std::printf("%zu JPEGs, us per image, 3 rounds of 10 passes each\n", files.size());
  for (int round = 0; round < 3; ++round) {
    for (int mode = 0; mode < 4; ++mode) std::printf("%-30s %7.1f\n", names[mode], run(mode, 10));
  }
}
