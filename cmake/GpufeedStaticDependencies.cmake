# GPUFEED_STATIC_DEPENDENCIES: the build of the self-contained wheel (scripts/wheel). Every
# library gpufeed reads data with is linked in from its static archive (HDF5 with its deflate and
# szip filters, zlib, libaec, libjpeg-turbo, libpng), spdlog and fmt are compiled in from their
# headers, the CUDA runtime is cudart_static, and the Python extension carries its own C++ runtime
# with every symbol of those archives hidden (src/python/CMakeLists.txt). The extension then needs
# only the C library, and libcuda.so.1 where a GPU driver is installed (cudart_static opens it at
# run time and reports its absence as an error the CUDA path turns into a reason).
#
# OpenCV is left out: its codecs and their libraries are the tree the wheel must not drag in.
# Must be included before the find_package calls for those libraries.
option(GPUFEED_STATIC_DEPENDENCIES
       "Link gpufeed's dependencies statically (the self-contained wheel; needs their .a files)" OFF)
set(GPUFEED_STATIC_PREFIX "" CACHE PATH
    "Where the position-independent archives are (scripts/wheel-deps' prefix)")
if(NOT GPUFEED_STATIC_DEPENDENCIES)
  return()
endif()
# Debian's own libz.a, libpng16.a, libjpeg.a and libhdf5_serial.a are not position independent:
# the archives come from scripts/wheel-deps, searched first (and HDF5 only there).
if(NOT IS_DIRECTORY "${GPUFEED_STATIC_PREFIX}/lib")
  message(FATAL_ERROR "GPUFEED_STATIC_DEPENDENCIES needs GPUFEED_STATIC_PREFIX: the prefix "
                      "scripts/wheel-deps prints (not a folder: '${GPUFEED_STATIC_PREFIX}')")
endif()
foreach(package HDF5 ZLIB JPEG PNG)
  set(${package}_ROOT "${GPUFEED_STATIC_PREFIX}")
endforeach()
# What HDF5's own archive needs, which FindHDF5 does not know without HDF5's compiler wrapper:
# libaec's szip (Debian's archives are position independent), zlib, and the C library's parts.
find_library(GPUFEED_SZIP_ARCHIVE libsz.a REQUIRED)
find_library(GPUFEED_AEC_ARCHIVE libaec.a REQUIRED)
set(GPUFEED_HDF5_EXTRA_LIBRARIES "${GPUFEED_SZIP_ARCHIVE};${GPUFEED_AEC_ARCHIVE};dl;m")

# Every find_library from here on (FindHDF5's, FindZLIB's, FindJPEG's, FindPNG's) takes the
# archive where there is one; FindCUDAToolkit still finds the shared runtime it wants to know of.
# scripts/wheel checks that the extension needs no shared library beyond the C library's.
set(CMAKE_FIND_LIBRARY_SUFFIXES .a .so)
set(HDF5_USE_STATIC_LIBRARIES ON)
# FindCUDAToolkit's librt stays the C library's shared one (glibc's archives are not for shared
# objects).
set(CUDAToolkit_rt_LIBRARY rt CACHE STRING "linked as -lrt")
set(ZLIB_USE_STATIC_LIBS ON)
set(GPUFEED_WITH_OPENCV OFF CACHE BOOL "OpenCV is not linked into the self-contained build")
set(GPUFEED_WITH_TORCH OFF CACHE BOOL "the libtorch adapter is not part of the wheel")

# spdlog and fmt from their headers alone (Debian ships no archives of them): spdlog::spdlog is
# defined here, and the find_package(spdlog) of the top-level file is skipped.
find_path(GPUFEED_SPDLOG_INCLUDE_DIR spdlog/spdlog.h REQUIRED)
find_path(GPUFEED_FMT_INCLUDE_DIR fmt/format.h REQUIRED)
add_library(spdlog::spdlog INTERFACE IMPORTED)
set_target_properties(spdlog::spdlog PROPERTIES
  INTERFACE_INCLUDE_DIRECTORIES "${GPUFEED_SPDLOG_INCLUDE_DIR};${GPUFEED_FMT_INCLUDE_DIR}"
  INTERFACE_COMPILE_DEFINITIONS "SPDLOG_FMT_EXTERNAL;FMT_HEADER_ONLY")
