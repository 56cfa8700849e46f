// Shared by crop-costs.cpp, row-address.cpp and reader-center.cpp (experiments, not part of the
// project).
#pragma once
#include <cstddef>
#include <cstdio>  // jpeglib.h needs size_t and FILE first

#include <jpeglib.h>

#include <opencv2/imgcodecs.hpp>
#include <vector>

#include "support/synthetic_photo.hpp"

// gpufeed-bench decode's default set: 200 photograph-like JPEGs of 320x256, quality 90, seed 1.
inline std::vector<std::vector<unsigned char>> generated_set() {
  std::vector<std::vector<unsigned char>> files;
  std::vector<int> const params{cv::IMWRITE_JPEG_QUALITY, 90};
  for (std::size_t i = 0; i < 200; ++i) {
    cv::RNG rng{1 * 0x9E3779B97F4A7C15ULL + i};
    std::vector<unsigned char> b;
    cv::imencode(".jpg", gpufeed::test::photo(320, 256, rng), b, params);
    files.push_back(std::move(b));
  }
  return files;
}

// Reads the header of `b` into a fresh `info` (errors: libjpeg's default, exit).
inline void open_jpeg(jpeg_decompress_struct& info, jpeg_error_mgr& err,
                      std::vector<unsigned char> const& b) {
  info.err = jpeg_std_error(&err);
  jpeg_create_decompress(&info);
  jpeg_mem_src(&info, b.data(), b.size());
  jpeg_read_header(&info, TRUE);
}
