# The image datasets' suites (image_folder, file_list and their shared decode pipeline). Included
# from tests/CMakeLists.txt when GPUFEED_WITH_OPENCV is ON; the fixtures are written with OpenCV.
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
# The colour jitter operations against double-precision references.
gpufeed_add_suite(image_jitter)

# libFuzzer target for the decode pipeline (clang only; not a CTest test: scripts/test runs it for
# a fixed number of runs in build-fuzz/, where the whole tree is instrumented for coverage);
# ThreadSanitizer builds skip it (it brings its own AddressSanitizer).
if(CMAKE_CXX_COMPILER_ID MATCHES "Clang" AND NOT GPUFEED_SANITIZE STREQUAL "thread")
  add_executable(image_decode_fuzz fuzz/image_decode_fuzz.cpp)
  target_compile_options(image_decode_fuzz PRIVATE -fsanitize=fuzzer,address,undefined)
  target_link_options(image_decode_fuzz PRIVATE -fsanitize=fuzzer,address,undefined)
  target_link_libraries(image_decode_fuzz PRIVATE gpufeed::gpufeed gpufeed_internals opencv_core opencv_imgcodecs
                                                  opencv_imgproc)
  gpufeed_set_warnings(image_decode_fuzz)
endif()
