// Two levers for the planar path, timed with libjpeg-turbo alone (one thread, from memory, one
// reused decompressor, the accurate inverse DCT the pipeline uses) against what
// jpeg_reader::decode_planes does at 68141a5 for a 224 x 224 centre copy:
//   margin   the centre's iMCUs and those of its chroma context (2 pixels each side, as
//            planes_read asks for a copy), every block of them transformed: decode_planes today;
//   y-under  the same iMCUs, but the luma blocks outside the centre not transformed (a wrapper
//            around libjpeg's luma inverse-DCT pointer that returns early for them): the lever
//            the closing note of stop 20 left ("about 8 us, 3 %");
//   whole    the raw planes of the whole image, and at DCT scales 7/8, 6/8 and 5/8 (the
//            "whole" case resizes 320 x 256 to 224 x 224: 7/8 and 6/8 still cover it);
//   limit    gpufeed-bench decode's limit: fast-DCT RGB of the whole image.
// Each round times every variant over all files (10 passes), in a rotated order; printed: the
// median per variant and the median over rounds of each variant's time / margin's.
// Build: g++ -O2 -std=c++20 libjpeg-levers.cpp -ljpeg -o libjpeg-levers (libjpeg-turbo 2.1.5).
// Run: ./libjpeg-levers FOLDER [ROUNDS] (the 320 x 256 set gpufeed-bench decode generates).
#include <cstddef>  // jpeglib.h uses size_t and FILE without declaring them
#include <cstdio>

#include <jpeglib.h>
// After jpeglib.h, which it needs.
#include <jpegint.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

namespace {

std::vector<std::vector<unsigned char>> jpegs;
std::vector<unsigned char> sink(3 * 16 * 4096);

// The luma blocks y-under transforms: those meeting [x0, x1) x [y0, y1); the origin of the output
// column 0 and of the current iMCU row, in luma samples.
struct luma_filter {
  inverse_DCT_method_ptr transform = nullptr;
  JSAMPARRAY first_row = nullptr;
  int x_origin = 0, y_origin = 0;
  int x0 = 0, x1 = 0, y0 = 0, y1 = 0;
} filter;

extern "C" void luma_under_crop(j_decompress_ptr info, jpeg_component_info* comp, JCOEFPTR coef,
                                JSAMPARRAY rows, JDIMENSION column) {
  int const x = filter.x_origin + static_cast<int>(column);
  int const y = filter.y_origin + static_cast<int>(rows - filter.first_row);
  int const size = comp->DCT_scaled_size;
  if (x + size <= filter.x0 || x >= filter.x1 || y + size <= filter.y0 || y >= filter.y1) return;
  filter.transform(info, comp, coef, rows, column);
}

enum class variant { margin, y_under, whole, whole_7_8, whole_6_8, whole_5_8, limit };
char const* const names[] = {"margin",    "y-under",   "whole", "whole 7/8",
                             "whole 6/8", "whole 5/8", "limit"};
constexpr int variants = 7;

// Entropy-decodes `count` iMCU rows without output, as jpeg_skip_scanlines does inside.
void pass_rows(jpeg_decompress_struct& info, JDIMENSION count) {
  JDIMENSION const lines = info.max_v_samp_factor * info.min_DCT_scaled_size;
  while (count-- > 0) {
    for (JDIMENSION m = 0; m < info.MCUs_per_row; ++m) (*info.entropy->decode_mcu)(&info, nullptr);
    ++info.input_iMCU_row;
    ++info.output_iMCU_row;
    info.output_scanline += lines;
    if (info.input_iMCU_row == info.total_iMCU_rows) (*info.inputctl->finish_input_pass)(&info);
  }
}

void decode_one(jpeg_decompress_struct& info, variant v) {
  if (v == variant::limit) {
    info.dct_method = JDCT_IFAST;
    info.out_color_space = JCS_RGB;
    jpeg_start_decompress(&info);
    while (info.output_scanline < info.output_height) {
      JSAMPROW row = sink.data();
      jpeg_read_scanlines(&info, &row, 1);
    }
    jpeg_finish_decompress(&info);
    return;
  }
  int const eighths[] = {8, 8, 8, 7, 6, 5};
  info.scale_num = static_cast<unsigned>(eighths[static_cast<int>(v)]);
  info.scale_denom = 8;
  info.raw_data_out = TRUE;
  jpeg_start_decompress(&info);
  int const w = static_cast<int>(info.output_width);
  int const h = static_cast<int>(info.output_height);
  int const imcu_w = info.max_h_samp_factor * info.min_DCT_scaled_size;
  int const imcu_h = info.max_v_samp_factor * info.min_DCT_scaled_size;
  JSAMPROW rows[3][16];
  JSAMPARRAY planes[3] = {rows[0], rows[1], rows[2]};
  for (int c = 0; c < 3; ++c) {
    for (int i = 0; i < 16; ++i) rows[c][i] = sink.data() + (c * 16 + i) * 4096;
  }
  JDIMENSION first = 0;
  JDIMENSION end = info.total_iMCU_rows;
  bool const crop = v == variant::margin || v == variant::y_under;
  if (crop) {
    int const x0 = (w - 224) / 2, y0 = (h - 224) / 2;
    first = static_cast<JDIMENSION>((y0 - 2) / imcu_h);
    end = static_cast<JDIMENSION>((y0 + 224 + 2 + imcu_h - 1) / imcu_h);
    info.master->first_iMCU_col = static_cast<JDIMENSION>((x0 - 2) / imcu_w);
    info.master->last_iMCU_col = static_cast<JDIMENSION>((x0 + 224 + 2 - 1) / imcu_w);
    if (v == variant::y_under) {
      filter = {info.idct->inverse_DCT[0],
                rows[0],
                static_cast<int>(info.master->first_iMCU_col) * imcu_w,
                0,
                x0,
                x0 + 224,
                y0,
                y0 + 224};
      info.idct->inverse_DCT[0] = luma_under_crop;
    }
  }
  pass_rows(info, first);
  for (JDIMENSION r = first; r < end; ++r) {
    filter.y_origin = static_cast<int>(r) * imcu_h;
    jpeg_read_raw_data(&info, planes, static_cast<JDIMENSION>(imcu_h));
  }
  pass_rows(info, info.total_iMCU_rows - info.input_iMCU_row);
  jpeg_finish_decompress(&info);
}

// Microseconds per image of `v` over every file, `passes` times.
double time_variant(variant v, int passes) {
  jpeg_decompress_struct info;
  jpeg_error_mgr err;
  info.err = jpeg_std_error(&err);
  jpeg_create_decompress(&info);
  auto const start = std::chrono::steady_clock::now();
  for (int p = 0; p < passes; ++p) {
    for (auto& bytes : jpegs) {
      jpeg_mem_src(&info, bytes.data(), bytes.size());
      jpeg_read_header(&info, TRUE);
      decode_one(info, v);
    }
  }
  std::chrono::duration<double, std::micro> const took = std::chrono::steady_clock::now() - start;
  jpeg_destroy_decompress(&info);
  return took.count() / (static_cast<double>(passes) * static_cast<double>(jpegs.size()));
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.size() % 2 != 0 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) return 2;
  int const rounds = argc > 2 ? std::atoi(argv[2]) : 7;
  for (auto const& e : std::filesystem::recursive_directory_iterator(argv[1])) {
    if (e.path().extension() != ".jpg") continue;
    std::ifstream in(e.path(), std::ios::binary);
    jpegs.emplace_back(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  std::vector<std::vector<double>> us(variants), ratio(variants);
  for (int round = 0; round < rounds; ++round) {
    std::vector<double> t(variants);
    for (int i = 0; i < variants; ++i) {
      int const v = (i + round) % variants;
      t[v] = time_variant(static_cast<variant>(v), 10);
    }
    std::printf("round %d:", round + 1);
    for (int v = 0; v < variants; ++v) {
      std::printf(" %s %.1f", names[v], t[v]);
      us[v].push_back(t[v]);
      ratio[v].push_back(t[v] / t[0]);
    }
    std::printf("\n");
  }
  std::printf(
      "%zu JPEGs, %d rounds of 10 passes; us per image (median), and the median of\n"
      "time / margin's time in the same round\n",
      jpegs.size(), rounds);
  for (int v = 0; v < variants; ++v) {
    std::printf("%-10s %7.1f us  %.3f\n", names[v], median(us[v]), median(ratio[v]));
  }
}
