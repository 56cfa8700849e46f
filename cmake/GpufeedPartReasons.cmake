# Why each optional part is left out of this build, for gpufeed::build_parts() (and
# gpufeed.build_info(), `python -m gpufeed`): written into the generated header
# gpufeed_left_out.hpp that src/build_info.cpp includes. Included after src/ (the target gpufeed)
# is defined; a part that is built gets an empty reason.

# gpufeed_part_reason(PART OPTION FOUND_VARIABLES WHAT INSTALL): the reason for PART (hdf5, images,
# opencv, cuda) when OPTION is off: turned off by the builder when every one of FOUND_VARIABLES is
# true (what the find_package calls found), else WHAT was not found, and INSTALL says what to add.
function(gpufeed_part_reason part option found_variables what install)
  set(found ON)
  foreach(variable IN LISTS found_variables)
    if(NOT ${variable})
      set(found OFF)
    endif()
  endforeach()
  if(${option})
    set(reason "")
  elseif(GPUFEED_STATIC_DEPENDENCIES AND part STREQUAL "opencv")
    string(CONCAT reason "left out of the self-contained build (OpenCV's codecs bring a tree "
                  "of libraries): BMP, TIFF, WebP and the other formats only OpenCV reads need a "
                  "build from source with OpenCV")
  elseif(found)
    set(reason "turned off when gpufeed was built (${option}=OFF)")
  else()
    set(reason "${what} not found when gpufeed was built (${install}, then build it again)")
  endif()
  string(TOUPPER "${part}" upper)
  string(REPLACE "\"" "'" reason "${reason}")
  set(GPUFEED_${upper}_LEFT_OUT "${reason}" PARENT_SCOPE)
endfunction()

gpufeed_part_reason(hdf5 GPUFEED_WITH_HDF5 "HDF5_FOUND;ZLIB_FOUND"
                    "HDF5's C library or zlib was" "Debian: apt-get install libhdf5-dev")
gpufeed_part_reason(images GPUFEED_WITH_IMAGES "JPEG_FOUND;PNG_FOUND" "libjpeg or libpng was"
                    "Debian: apt-get install libjpeg-dev libpng-dev")
gpufeed_part_reason(opencv GPUFEED_WITH_OPENCV "OpenCV_FOUND" "OpenCV was"
                    "Debian: apt-get install libopencv-dev")
gpufeed_part_reason(cuda GPUFEED_WITH_CUDA "CMAKE_CUDA_COMPILER" "a CUDA compiler (nvcc) was"
                    "install the CUDA toolkit, or put nvcc on PATH")

configure_file("${CMAKE_CURRENT_LIST_DIR}/gpufeed_left_out.hpp.in"
               "${PROJECT_BINARY_DIR}/generated/gpufeed_left_out.hpp" @ONLY)
target_include_directories(gpufeed PRIVATE "${PROJECT_BINARY_DIR}/generated")
