# ctest's example.python_train_classifier: runs `train_classifier.py --quick` against the build's
# package and checks that it exits 0 and prints both loaders' result lines and their ratio.
# Skipped (the test's SKIP_REGULAR_EXPRESSION) where the interpreter lacks torch or torchvision.
#   cmake -DPYTHON=<python3> -DPYTHONPATH=<build>/python -DSCRIPT=<train_classifier.py>
#         -DCACHE_DIR=<dir> -DJSON=<file> -P smoke_test.cmake
execute_process(COMMAND "${PYTHON}" -c "import torch, torchvision"
                RESULT_VARIABLE status OUTPUT_QUIET ERROR_QUIET)
if(NOT status EQUAL 0)
  message("SKIPPED: ${PYTHON} cannot import torch and torchvision, which the example needs")
  return()
endif()
file(REMOVE "${JSON}")
execute_process(COMMAND "${CMAKE_COMMAND}" -E env "PYTHONPATH=${PYTHONPATH}"
                        "${PYTHON}" "${SCRIPT}" --quick --cache-dir "${CACHE_DIR}" --json "${JSON}"
                RESULT_VARIABLE status OUTPUT_VARIABLE output ERROR_VARIABLE errors)
message("${output}${errors}")
if(NOT status EQUAL 0)
  message(FATAL_ERROR "train_classifier.py --quick exited with ${status}")
endif()
foreach(loader torch gpufeed)
  if(NOT output MATCHES " ${loader}: +[0-9.]+ samples/s, data wait +[0-9.]+%")
    message(FATAL_ERROR "train_classifier.py --quick printed no result line for ${loader}")
  endif()
endforeach()
if(NOT output MATCHES "gpufeed / torch: [0-9.]+x samples/s")
  message(FATAL_ERROR "train_classifier.py --quick printed no 'gpufeed / torch' ratio line")
endif()
if(NOT EXISTS "${JSON}")
  message(FATAL_ERROR "train_classifier.py --quick --json ${JSON} wrote no file")
endif()
