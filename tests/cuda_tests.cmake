# The CUDA suites: they run on a machine with a CUDA device; elsewhere every case skips with the
# reason. Labelled "cuda" (not "core": the sanitizer builds are made without CUDA).
foreach(suite cuda_loader_test cuda_loader_lifetime_test)
  add_executable(${suite} cuda/${suite}.cpp cuda/cuda_loader_fixture.hpp cuda/test_kernels.cu
                          cuda/test_kernels.hpp support/test_datasets.hpp)
  target_link_libraries(${suite} PRIVATE gpufeed::gpufeed gpufeed_internals GTest::gtest_main)
  gpufeed_set_warnings(${suite})
  gtest_discover_tests(${suite}
    DISCOVERY_TIMEOUT 60
    PROPERTIES LABELS "cuda" TIMEOUT ${GPUFEED_TEST_TIMEOUT})
endforeach()
