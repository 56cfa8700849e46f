# The image datasets' suites (image_folder, file_list and their shared decode pipeline). Included
# from tests/CMakeLists.txt when GPUFEED_WITH_IMAGES is ON.
#
# Suites that write their images with libpng and libjpeg, in every build; where OpenCV is built in
# they also compare with it (their OpenCV cases skip, saying so, where it is not).
set(gpufeed_image_opencv_libs)
if(GPUFEED_WITH_OPENCV)
  set(gpufeed_image_opencv_libs opencv_core opencv_imgcodecs opencv_imgproc)
endif()
# PNG decoding: every colour type, bit depth and interlacing; damaged, truncated, oversized files.
gpufeed_add_suite(image_png)
target_link_libraries(image_png_test PRIVATE PNG::PNG JPEG::JPEG ${gpufeed_image_opencv_libs})
# The hue jitter's HSV conversions, exhaustively, and against OpenCV's cvtColor.
gpufeed_add_suite(image_hue)
target_link_libraries(image_hue_test PRIVATE ${gpufeed_image_opencv_libs})
# Which formats a build reads (by content), and an image_folder of JPEGs and PNGs end to end.
gpufeed_add_suite(image_codecs)
target_link_libraries(image_codecs_test PRIVATE PNG::PNG JPEG::JPEG ${gpufeed_image_opencv_libs})
# The colour jitter operations against double-precision references.
gpufeed_add_suite(image_jitter)

# libFuzzer target for the decode pipeline (clang only; not a CTest test: scripts/test runs it for
# a fixed number of runs in build-fuzz/, where the whole tree is instrumented for coverage);
# ThreadSanitizer builds skip it (it brings its own AddressSanitizer).
if(CMAKE_CXX_COMPILER_ID MATCHES "Clang" AND NOT GPUFEED_SANITIZE STREQUAL "thread")
  add_executable(image_decode_fuzz fuzz/image_decode_fuzz.cpp)
  target_compile_options(image_decode_fuzz PRIVATE -fsanitize=fuzzer,address,undefined)
  target_link_options(image_decode_fuzz PRIVATE -fsanitize=fuzzer,address,undefined)
  target_link_libraries(image_decode_fuzz PRIVATE gpufeed::gpufeed gpufeed_internals PNG::PNG
                                                  JPEG::JPEG)
  target_include_directories(image_decode_fuzz PRIVATE ${CMAKE_CURRENT_SOURCE_DIR})  # support/
  gpufeed_set_warnings(image_decode_fuzz)
endif()

if(NOT GPUFEED_WITH_OPENCV)
  message(STATUS "gpufeed tests: image_folder, image_formats, image_errors, image_decode, "
                 "image_planar and image_resize are not built: their fixtures are written with "
                 "OpenCV (GPUFEED_WITH_OPENCV is OFF)")
  return()
endif()
# Suites whose fixtures are written (and compared) with OpenCV.
# The datasets' listing, construction errors, crop, flip and augmentation.
gpufeed_add_suite(image_folder)
target_link_libraries(image_folder_test PRIVATE opencv_core opencv_imgcodecs opencv_imgproc)
# What a file decodes to: by content, grey, CMYK and YCCK, reduced decodes against OpenCV's.
gpufeed_add_suite(image_formats)
target_link_libraries(image_formats_test PRIVATE opencv_core opencv_imgcodecs opencv_imgproc)
# Damaged, truncated and unreadable files, read directly and through the loader.
gpufeed_add_suite(image_errors)
target_link_libraries(image_errors_test PRIVATE opencv_core opencv_imgcodecs opencv_imgproc)
# The decode shortcuts (cropped and reduced decoding, the plan, check_whole_file), the planar path
# and the resize; they write their JPEGs with libjpeg itself, for chroma samplings OpenCV cannot
# write.
gpufeed_add_suite(image_decode)
target_link_libraries(image_decode_test PRIVATE opencv_core opencv_imgcodecs opencv_imgproc
                                                JPEG::JPEG)
gpufeed_add_suite(image_planar)
target_link_libraries(image_planar_test PRIVATE opencv_core opencv_imgcodecs opencv_imgproc
                                                JPEG::JPEG)
gpufeed_add_suite(image_resize)
target_link_libraries(image_resize_test PRIVATE opencv_core opencv_imgcodecs opencv_imgproc
                                                JPEG::JPEG)
