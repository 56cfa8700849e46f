// Experiment (not part of the project): how much of a cropped decode is the entropy decoding of
// the rows below the crop? Decode each photo's crop (cropped RGBX path; raw planes path) reading
// to the end of the image (gpufeed's behaviour) or stopping after the crop's last row.
#include <jpeglib.h>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <random>
#include <vector>
namespace fs = std::filesystem;
struct file {
  std::vector<unsigned char> bytes;
};
static void rgb_crop(file const& f, double ax, double ay, double aw, double ah, bool to_end,
                     std::vector<unsigned char>& buf) {
  jpeg_decompress_struct info{};
  jpeg_error_mgr err{};
  info.err = jpeg_std_error(&err);
  jpeg_create_decompress(&info);
  jpeg_mem_src(&info, f.bytes.data(), f.bytes.size());
  jpeg_read_header(&info, TRUE);
  info.out_color_space = JCS_EXT_RGBX;
  jpeg_start_decompress(&info);
  JDIMENSION x0 = (JDIMENSION)(ax * info.output_width),
             w = std::max<JDIMENSION>(1, (JDIMENSION)(aw * info.output_width));
  if (x0 + w > info.output_width) w = info.output_width - x0;
  JDIMENSION y0 = (JDIMENSION)(ay * info.output_height),
             y1 = std::min<JDIMENSION>(
                 info.output_height,
                 y0 + std::max<JDIMENSION>(1, (JDIMENSION)(ah * info.output_height)));
  jpeg_crop_scanline(&info, &x0, &w);
  buf.resize((size_t)info.output_width * 4 + 64);
  if (y0) jpeg_skip_scanlines(&info, y0);
  while (info.output_scanline < y1) {
    JSAMPROW r = buf.data();
    jpeg_read_scanlines(&info, &r, 1);
  }
  if (to_end) {
    if (info.output_scanline + 1 < info.output_height)
      jpeg_skip_scanlines(&info, info.output_height - 1 - info.output_scanline);
    while (info.output_scanline < info.output_height) {
      JSAMPROW r = buf.data();
      jpeg_read_scanlines(&info, &r, 1);
    }
    jpeg_finish_decompress(&info);
  } else {
    jpeg_abort_decompress(&info);
  }
  jpeg_destroy_decompress(&info);
}
static void raw_rows(file const& f, double y_end, bool to_end, std::vector<unsigned char>& buf) {
  jpeg_decompress_struct info{};
  jpeg_error_mgr err{};
  info.err = jpeg_std_error(&err);
  jpeg_create_decompress(&info);
  jpeg_mem_src(&info, f.bytes.data(), f.bytes.size());
  jpeg_read_header(&info, TRUE);
  info.raw_data_out = TRUE;
  jpeg_start_decompress(&info);
  JDIMENSION const stop =
      to_end ? info.output_height
             : std::min<JDIMENSION>(info.output_height,
                                    (JDIMENSION)std::ceil(y_end * info.output_height));
  int const lines = info.max_v_samp_factor * DCTSIZE;
  std::size_t stride = (std::size_t)info.comp_info[0].width_in_blocks * 8 + 32;
  buf.resize(stride * 16 * 3);
  JSAMPROW rows[3][16];
  JSAMPARRAY planes[3] = {rows[0], rows[1], rows[2]};
  for (int c = 0; c < 3; ++c)
    for (int r = 0; r < 16; ++r) rows[c][r] = buf.data() + (c * 16 + r) * stride;
  while (info.output_scanline < stop) jpeg_read_raw_data(&info, planes, lines);
  if (to_end)
    jpeg_finish_decompress(&info);
  else
    jpeg_abort_decompress(&info);
  jpeg_destroy_decompress(&info);
}
int main(int argc, char** argv) {
  std::vector<file> files;
  for (auto& e : fs::recursive_directory_iterator(argv[1]))
    if (e.path().extension() == ".jpg") {
      std::ifstream in(e.path(), std::ios::binary);
      files.push_back({{std::istreambuf_iterator<char>(in), {}}});
    }
  std::mt19937 rng{7};
  std::uniform_real_distribution<double> u{0, 1};
  struct crop {
    double x, y, w, h;
  };
  std::vector<crop> rnd, ctr;
  for (std::size_t i = 0; i < files.size(); ++i) {
    // random: area 0.08-0.5 of the image (the cropped path), aspect 3/4-4/3
    double a = 0.08 + 0.42 * u(rng),
           r = std::exp(std::log(0.75) + (std::log(4.0 / 3) - std::log(0.75)) * u(rng));
    double w = std::min(1.0, std::sqrt(a * r)), h = std::min(1.0, std::sqrt(a / r));
    rnd.push_back({(1 - w) * u(rng), (1 - h) * u(rng), w, h});
    ctr.push_back(
        {0.0625, 0.0625, 0.875, 0.875});  // the centre 87.5 %: about Resize(256) + CenterCrop(224)
  }
  std::vector<unsigned char> buf;
  auto run = [&](auto&& f) {
    double best = 1e30;
    for (int p = 0; p < 5; ++p) {
      auto t0 = std::chrono::steady_clock::now();
      for (std::size_t i = 0; i < files.size(); ++i) f(i);
      best = std::min(
          best,
          std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count() /
              files.size());
    }
    return best;
  };
  for (int round = 0; round < 2; ++round) {
    double a = run([&](std::size_t i) {
      rgb_crop(files[i], rnd[i].x, rnd[i].y, rnd[i].w, rnd[i].h, true, buf);
    });
    double b = run([&](std::size_t i) {
      rgb_crop(files[i], rnd[i].x, rnd[i].y, rnd[i].w, rnd[i].h, false, buf);
    });
    double c = run([&](std::size_t i) { raw_rows(files[i], ctr[i].y + ctr[i].h, true, buf); });
    double d = run([&](std::size_t i) { raw_rows(files[i], ctr[i].y + ctr[i].h, false, buf); });
    std::printf(
        "random crops (8-50 %% area), cropped RGBX: to the end %.0f us, stop after the crop %.0f "
        "us (%.2f)\n",
        a, b, b / a);
    std::printf(
        "centre 87.5 %%, raw planes: to the end %.0f us, stop after the crop %.0f us (%.2f)\n", c,
        d, d / c);
  }
}
