# ctest's example.train_classifier: runs `train_classifier --quick` and checks that it exits 0
# and prints the gpufeed / libtorch ratio line.
#   cmake -DPROGRAM=<train_classifier> -DCACHE_DIR=<dir> -P smoke_test.cmake
execute_process(COMMAND "${PROGRAM}" --quick --cache-dir "${CACHE_DIR}"
                RESULT_VARIABLE status OUTPUT_VARIABLE output ERROR_VARIABLE errors)
message("${output}${errors}")
if(NOT status EQUAL 0)
  message(FATAL_ERROR "train_classifier --quick exited with ${status}")
endif()
if(NOT output MATCHES "gpufeed / libtorch: [0-9.]+x samples/s")
  message(FATAL_ERROR "train_classifier --quick printed no 'gpufeed / libtorch' ratio line")
endif()
