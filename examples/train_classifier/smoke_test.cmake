# ctest's example.train_classifier: runs `train_classifier --quick` and checks that it exits 0,
# prints the gpufeed / libtorch ratio line and the sentence on where the difference comes from,
# and writes its chart (an SVG with a line per series) and its JSON (with its date and ratio)
# next to its log.
#   cmake -DPROGRAM=<train_classifier> -DCACHE_DIR=<dir> -P smoke_test.cmake
set(out_dir "${CACHE_DIR}/out")
file(REMOVE_RECURSE "${out_dir}")
execute_process(COMMAND "${PROGRAM}" --quick --cache-dir "${CACHE_DIR}" --out-dir "${out_dir}"
                RESULT_VARIABLE status OUTPUT_VARIABLE output ERROR_VARIABLE errors)
message("${output}${errors}")
if(NOT status EQUAL 0)
  message(FATAL_ERROR "train_classifier --quick exited with ${status}")
endif()
if(NOT output MATCHES "gpufeed / libtorch: [0-9.]+x samples/s")
  message(FATAL_ERROR "train_classifier --quick printed no 'gpufeed / libtorch' ratio line")
endif()
if(NOT output MATCHES "Per sample, libtorch's input pipeline took [0-9.]+ ms")
  message(FATAL_ERROR "train_classifier --quick printed no stage comparison")
endif()
foreach(file train_classifier.svg train_classifier.json train_classifier.log)
  if(NOT EXISTS "${out_dir}/${file}")
    message(FATAL_ERROR "train_classifier --quick wrote no ${out_dir}/${file}")
  endif()
endforeach()
file(READ "${out_dir}/train_classifier.svg" svg)
string(REGEX MATCHALL "<polyline" lines "${svg}")
list(LENGTH lines line_count)
if(NOT svg MATCHES "^<svg xmlns=\"http://www.w3.org/2000/svg\"" OR NOT svg MATCHES "</svg>\n$"
   OR line_count LESS 4)
  message(FATAL_ERROR "train_classifier.svg is not the chart (${line_count} polylines)")
endif()
# The JSON is evidence only if it says when it ran and parses as JSON (string(JSON) fails the
# script on a syntax error).
file(READ "${out_dir}/train_classifier.json" json)
string(JSON date GET "${json}" date)
string(JSON ratio GET "${json}" samples_per_s_ratio)
if(NOT date MATCHES "^[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]T[0-9][0-9]:[0-9][0-9]:[0-9][0-9]Z$"
   OR NOT ratio MATCHES "^[0-9.e+-]+$")
  message(FATAL_ERROR "train_classifier.json: date '${date}', samples_per_s_ratio '${ratio}'")
endif()
