#include "gpufeed/build_info.hpp"

#include "gpufeed_left_out.hpp"  // generated: why a part is left out

#include <string>
#include <vector>

#if GPUFEED_WITH_HDF5
#include <hdf5.h>
#endif
#if GPUFEED_WITH_IMAGES
#include <png.h>
#include <zlib.h>

#include <cstdio>  // jpeglib.h needs FILE

#include <jpeglib.h>
#endif
#if GPUFEED_WITH_OPENCV
#include <opencv2/core/version.hpp>
#endif
#if GPUFEED_WITH_CUDA
#include <cuda_runtime_api.h>

#include "gpufeed/cuda/device.hpp"
#endif

namespace gpufeed {

namespace {

[[maybe_unused]] std::string dotted(int major, int minor, int patch) {
  return std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(patch);
}

build_part hdf5_part() {
#if GPUFEED_WITH_HDF5
  unsigned major = 0, minor = 0, release = 0;
  H5get_libversion(&major, &minor, &release);
  return {"hdf5", true,
          "HDF5 " +
              dotted(static_cast<int>(major), static_cast<int>(minor), static_cast<int>(release))};
#else
  return {"hdf5", false, GPUFEED_HDF5_LEFT_OUT};
#endif
}

build_part images_part() {
#if GPUFEED_WITH_IMAGES
#ifdef LIBJPEG_TURBO_VERSION_NUMBER
  int const turbo = LIBJPEG_TURBO_VERSION_NUMBER;  // 2001005 is 2.1.5
  std::string const jpeg =
      "libjpeg-turbo " + dotted(turbo / 1000000, turbo / 1000 % 1000, turbo % 1000);
#else
  std::string const jpeg = "libjpeg " + std::to_string(JPEG_LIB_VERSION);
#endif
  return {"images", true,
          jpeg + ", libpng " + png_get_libpng_ver(nullptr) + ", zlib " + zlibVersion()};
#else
  return {"images", false, GPUFEED_IMAGES_LEFT_OUT};
#endif
}

build_part opencv_part() {
#if GPUFEED_WITH_OPENCV
  return {"opencv", true, std::string{"OpenCV "} + CV_VERSION};
#else
  return {"opencv", false, GPUFEED_OPENCV_LEFT_OUT};
#endif
}

build_part cuda_part() {
#if GPUFEED_WITH_CUDA
  int runtime = 0;
  (void)cudaRuntimeGetVersion(&runtime);  // 13000 is 13.0
  std::string detail =
      "CUDA runtime " + std::to_string(runtime / 1000) + "." + std::to_string(runtime % 1000 / 10);
  int const devices = cuda::device_count();
  if (devices > 0) {
    int driver = 0;
    (void)cudaDriverGetVersion(&driver);
    detail += ", driver " + std::to_string(driver / 1000) + "." +
              std::to_string(driver % 1000 / 10) + ", " + std::to_string(devices) +
              (devices == 1 ? " device" : " devices");
  } else {
    detail += "; off on this machine: " + std::string{cuda::unavailable_reason()};
  }
  return {"cuda", true, detail};
#else
  return {"cuda", false, GPUFEED_CUDA_LEFT_OUT};
#endif
}

}  // namespace

std::vector<build_part> build_parts() {
  return {hdf5_part(), images_part(), opencv_part(), cuda_part()};
}

}  // namespace gpufeed
