# Why each optional part is left out of this build, for gpufeed::build_parts() (and
# gpufeed.build_info(), `python -m gpufeed`): written into the generated header
# gpufeed_left_out.hpp that src/build_info.cpp includes. Included after src/ (the target gpufeed)
# is defined; a part that is built gets an empty reason.

# gpufeed_part_reason(PART OPTION FOUND WHAT): the reason for PART (hdf5, images, opencv, cuda)
# when OPTION is off: turned off by the builder when FOUND is true, else WHAT was not found.
function(gpufeed_part_reason part option found what)
  if(${option})
    set(reason "")
  elseif(GPUFEED_STATIC_DEPENDENCIES AND part STREQUAL "opencv")
    string(CONCAT reason "left out of the self-contained build (OpenCV's codecs bring a tree "
                  "of libraries): BMP, TIFF, WebP and the other formats only OpenCV reads need a "
                  "build from source with OpenCV")
  elseif(found)
    set(reason "turned off when gpufeed was built (${option}=OFF)")
  else()
    set(reason "${what} not found when gpufeed was built")
  endif()
  string(TOUPPER "${part}" upper)
  string(REPLACE "\"" "'" reason "${reason}")
  set(GPUFEED_${upper}_LEFT_OUT "${reason}" PARENT_SCOPE)
endfunction()

set(gpufeed_found_hdf5 OFF)
if(HDF5_FOUND AND ZLIB_FOUND)
  set(gpufeed_found_hdf5 ON)
endif()
gpufeed_part_reason(hdf5 GPUFEED_WITH_HDF5 ${gpufeed_found_hdf5}
                    "HDF5's C library or zlib was (Debian: libhdf5-dev)")
set(gpufeed_found_images OFF)
if(JPEG_FOUND AND PNG_FOUND)
  set(gpufeed_found_images ON)
endif()
gpufeed_part_reason(images GPUFEED_WITH_IMAGES ${gpufeed_found_images}
                    "libjpeg or libpng was (Debian: libjpeg-dev, libpng-dev)")
set(gpufeed_found_opencv OFF)
if(OpenCV_FOUND)
  set(gpufeed_found_opencv ON)
endif()
gpufeed_part_reason(opencv GPUFEED_WITH_OPENCV ${gpufeed_found_opencv}
                    "OpenCV (core, imgcodecs) was (Debian: libopencv-dev)")
set(gpufeed_found_cuda OFF)
if(CMAKE_CUDA_COMPILER)
  set(gpufeed_found_cuda ON)
endif()
gpufeed_part_reason(cuda GPUFEED_WITH_CUDA ${gpufeed_found_cuda}
                    "a CUDA compiler (nvcc, or /usr/local/cuda) was")

configure_file("${CMAKE_CURRENT_LIST_DIR}/gpufeed_left_out.hpp.in"
               "${PROJECT_BINARY_DIR}/generated/gpufeed_left_out.hpp" @ONLY)
target_include_directories(gpufeed PRIVATE "${PROJECT_BINARY_DIR}/generated")
