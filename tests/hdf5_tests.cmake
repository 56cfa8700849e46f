# The HDF5 dataset's suites: they write their own fixtures through the HDF5 C API
# (support/hdf5_files.hpp), and zlib tests the inflate step on its own.
foreach(suite hdf5 hdf5_fallback hdf5_errors hdf5_filters)
  gpufeed_add_suite(${suite} support/hdf5_files.hpp)
  target_link_libraries(${suite}_test PRIVATE HDF5::HDF5 ZLIB::ZLIB)
endforeach()

# libFuzzer target for opening and reading HDF5 files (clang only; not a CTest test: scripts/test
# runs it for a fixed number of runs in build-fuzz/, where the whole tree is instrumented).
if(CMAKE_CXX_COMPILER_ID MATCHES "Clang" AND NOT GPUFEED_SANITIZE STREQUAL "thread")
  add_executable(hdf5_open_fuzz fuzz/hdf5_open_fuzz.cpp)
  target_compile_options(hdf5_open_fuzz PRIVATE -fsanitize=fuzzer,address,undefined)
  target_link_options(hdf5_open_fuzz PRIVATE -fsanitize=fuzzer,address,undefined)
  target_link_libraries(hdf5_open_fuzz PRIVATE gpufeed::gpufeed gpufeed_internals HDF5::HDF5)
  gpufeed_set_warnings(hdf5_open_fuzz)
endif()

# The chunk cache on its own (a private header of src/datasets).
gpufeed_add_suite(hdf5_chunk_cache)
