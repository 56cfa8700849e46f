# The CUDA suite: runs on a machine with a CUDA device; elsewhere every case skips with the
# reason. Labelled "cuda" (not "core": the sanitizer builds are made without CUDA).
add_executable(cuda_loader_test cuda/cuda_loader_test.cpp cuda/test_kernels.cu
                                cuda/test_kernels.hpp support/test_datasets.hpp)
target_link_libraries(cuda_loader_test PRIVATE gpufeed::gpufeed gpufeed_internals GTest::gtest_main)
gpufeed_set_warnings(cuda_loader_test)
gtest_discover_tests(cuda_loader_test
  DISCOVERY_TIMEOUT 60
  PROPERTIES LABELS "cuda" TIMEOUT ${GPUFEED_TEST_TIMEOUT})
