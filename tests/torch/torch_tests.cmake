# The libtorch adapter's tests (label "torch"), built against whichever libtorch was found:
# GoogleTest suites, the programs written as libtorch's users write them and built twice, and
# examples/train_ddp under torchrun. Included from tests/CMakeLists.txt.
set(gpufeed_torch_tests_dir ${CMAKE_CURRENT_LIST_DIR})

foreach(suite torch_adapter torch_sampler torch_loader batch_size)
  add_executable(${suite}_test torch/${suite}_test.cpp torch/torch_test_datasets.hpp
                               support/test_datasets.hpp)
  target_include_directories(${suite}_test PRIVATE ${CMAKE_CURRENT_SOURCE_DIR})
  target_link_libraries(${suite}_test PRIVATE gpufeed::torch GTest::gtest_main spdlog::spdlog)
  gpufeed_set_torch_warnings(${suite}_test)
  gtest_discover_tests(${suite}_test
    DISCOVERY_TIMEOUT 120
    PROPERTIES LABELS "torch" TIMEOUT ${GPUFEED_TEST_TIMEOUT})
endforeach()

# gpufeed_add_twin_program(name order): tests/torch/programs/<name>.cpp, a program written as
# libtorch's documentation writes one, built once against torch::data (twin_<name>_libtorch) and
# once against gpufeed::torch (twin_<name>_gpufeed): programs/twin.hpp switches the include and
# the namespace, nothing else. torch.twin.<name> runs both and compares what they print:
# `exact` (the same batches in the same order) or `shuffled` (the same batches per epoch, in any
# order; see programs/compare_twins.py).
find_package(Python3 COMPONENTS Interpreter QUIET)
function(gpufeed_add_twin_program name order)
  foreach(feed IN ITEMS libtorch gpufeed)
    set(target twin_${name}_${feed})
    add_executable(${target} ${gpufeed_torch_tests_dir}/programs/${name}.cpp)
    if(feed STREQUAL "gpufeed")
      target_compile_definitions(${target} PRIVATE GPUFEED_TWIN_FEED=1)
      target_link_libraries(${target} PRIVATE gpufeed::torch)
    else()
      target_include_directories(${target} SYSTEM PRIVATE ${TORCH_INCLUDE_DIRS})
      target_link_libraries(${target} PRIVATE ${TORCH_LIBRARIES})
      target_compile_features(${target} PRIVATE cxx_std_20)
    endif()
    gpufeed_set_torch_warnings(${target})
  endforeach()
  if(Python3_Interpreter_FOUND)
    add_test(NAME torch.twin.${name}
             COMMAND ${Python3_EXECUTABLE} ${gpufeed_torch_tests_dir}/programs/compare_twins.py
                     --libtorch $<TARGET_FILE:twin_${name}_libtorch>
                     --gpufeed $<TARGET_FILE:twin_${name}_gpufeed> --order ${order})
    set_tests_properties(torch.twin.${name} PROPERTIES LABELS "torch" TIMEOUT 300)
  endif()
endfunction()
if(NOT Python3_Interpreter_FOUND)
  message(STATUS "gpufeed: no Python 3 found; the torch.twin.* comparisons are not run")
endif()
gpufeed_add_twin_program(stack_random shuffled)
gpufeed_add_twin_program(stack_sequential exact)
gpufeed_add_twin_program(random_sampler_instance exact)
gpufeed_add_twin_program(distributed exact)
gpufeed_add_twin_program(unstacked exact)
gpufeed_add_twin_program(tensor_dataset exact)
gpufeed_add_twin_program(custom_sampler exact)

# examples/train_ddp under torchrun, 2 ranks on the CPU over Gloo: disjoint shards that cover
# every epoch, and bitwise-equal weights on both ranks (ddp_check.py); once with the plain
# shuffle, once with the chunk-aware one. The examples are added after this directory, so
# whether train_ddp exists is decided at the end of the top-level directory.
find_program(GPUFEED_TORCHRUN torchrun)
if(GPUFEED_TORCHRUN AND Python3_Interpreter_FOUND)
  # The deferred call runs in the top directory's scope, where FindPython's result is not set.
  set(GPUFEED_DDP_PYTHON "${Python3_EXECUTABLE}" CACHE INTERNAL "Python for ddp_check.py")
  function(gpufeed_add_train_ddp_tests)
    if(NOT TARGET train_ddp)
      return()
    endif()
    foreach(variant IN ITEMS shuffle chunked)
      set(extra "")
      if(variant STREQUAL "chunked")
        set(extra --chunk 16 --chunk-window 2)
      endif()
      add_test(NAME torch.train_ddp.${variant}
               COMMAND ${GPUFEED_DDP_PYTHON} ${gpufeed_SOURCE_DIR}/tests/torch/ddp_check.py
                       --torchrun ${GPUFEED_TORCHRUN} --program $<TARGET_FILE:train_ddp>
                       --workdir ${gpufeed_BINARY_DIR}/tests/train_ddp.${variant} ${extra})
      set_tests_properties(torch.train_ddp.${variant} PROPERTIES
                           LABELS "torch" TIMEOUT 120 PROCESSORS 2)
    endforeach()
  endfunction()
  cmake_language(DEFER DIRECTORY ${gpufeed_SOURCE_DIR} CALL gpufeed_add_train_ddp_tests)
endif()
