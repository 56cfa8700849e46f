# The image datasets' suite (image_folder, file_list and their shared decode pipeline). Included
# from tests/CMakeLists.txt when GPUFEED_WITH_OPENCV is ON; the fixtures are written with OpenCV.
gpufeed_add_suite(image_folder)
target_link_libraries(image_folder_test PRIVATE opencv_core opencv_imgcodecs opencv_imgproc)
# The decode shortcuts (cropped and reduced decoding) and the resize; it writes its JPEGs with
# libjpeg itself, for chroma samplings OpenCV cannot write.
gpufeed_add_suite(image_decode)
# The colour jitter operations against double-precision references.
gpufeed_add_suite(image_jitter)
target_link_libraries(image_decode_test PRIVATE opencv_core opencv_imgcodecs opencv_imgproc
                                                JPEG::JPEG)

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
