# The libtorch adapter's tests (label "torch"), built against whichever libtorch was found:
# GoogleTest suites, the programs written as libtorch's users write them and built twice,
# examples/train_ddp under torchrun, and checks of the build itself (one libtorch loaded; configure
# after a CUDA libtorch's config). Included from tests/CMakeLists.txt.
set(gpufeed_torch_tests_dir ${CMAKE_CURRENT_LIST_DIR})

# The suites read gpufeed's log through text_log_capture: spdlog's headers and a pip torch's
# bundled fmt do not compile in one unit, so the capture is built apart, without torch.
add_library(gpufeed_text_log_capture STATIC support/text_log_capture.cpp
                                            support/text_log_capture.hpp support/log_capture.hpp)
target_include_directories(gpufeed_text_log_capture PUBLIC ${CMAKE_CURRENT_SOURCE_DIR})
target_link_libraries(gpufeed_text_log_capture PUBLIC gpufeed::gpufeed PRIVATE spdlog::spdlog)
gpufeed_set_warnings(gpufeed_text_log_capture)

# Everything `ctest -L torch` runs, for builds that make only that:
#   cmake --build <build> --target gpufeed_torch_tests
add_custom_target(gpufeed_torch_tests)

foreach(suite torch_adapter torch_worker_reads torch_sampler torch_loader batch_size loader_iterator
              object_batches)
  add_executable(${suite}_test torch/${suite}_test.cpp torch/torch_test_datasets.hpp
                               support/test_datasets.hpp)
  target_include_directories(${suite}_test PRIVATE ${CMAKE_CURRENT_SOURCE_DIR})
  target_link_libraries(${suite}_test PRIVATE gpufeed::torch GTest::gtest_main
                                              gpufeed_text_log_capture)
  gpufeed_set_torch_warnings(${suite}_test)
  add_dependencies(gpufeed_torch_tests ${suite}_test)
  gtest_discover_tests(${suite}_test
    DISCOVERY_TIMEOUT 120
    PROPERTIES LABELS "torch" TIMEOUT ${GPUFEED_TEST_TIMEOUT})
endforeach()

# The suites load one libtorch: libtorch and libc10 from the folder of the libtorch found (a pip
# torch's config can otherwise hand Debian's libc10 to the link beside pip's libtorch).
find_program(GPUFEED_LDD ldd)
if(GPUFEED_LDD)
  add_test(NAME torch.loads_one_libtorch
           COMMAND sh ${gpufeed_torch_tests_dir}/check_one_libtorch.sh
                   $<TARGET_FILE:torch_adapter_test> ${TORCH_LIBRARY})
  set_tests_properties(torch.loads_one_libtorch PROPERTIES LABELS "torch" TIMEOUT 60)
endif()

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
    add_dependencies(gpufeed_torch_tests ${target})
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

# The datasets gpufeed refuses (stateful, chunk, stream, get_batch-only of another batch type) do
# not compile, and the first compiler error is gpufeed's static_assert naming the fix
# (check_refusals.py compiles each of refused/ with a torch suite's command, -fsyntax-only).
if(Python3_Interpreter_FOUND)
  set(gpufeed_refused ${gpufeed_torch_tests_dir}/refused)
  add_test(NAME torch.refuses_datasets_without_indices
           COMMAND ${Python3_EXECUTABLE} ${gpufeed_torch_tests_dir}/check_refusals.py
                   ${PROJECT_BINARY_DIR}/compile_commands.json torch/loader_iterator_test.cpp
                   "${gpufeed_refused}/stateful_dataset.cpp=stateful datasets"
                   "${gpufeed_refused}/chunk_dataset.cpp=stateful datasets"
                   "${gpufeed_refused}/stream_dataset.cpp=takes a batch size"
                   "${gpufeed_refused}/batch_only_dataset.cpp=has only get_batch(indices)")
  set_tests_properties(torch.refuses_datasets_without_indices PROPERTIES LABELS "torch"
                       TIMEOUT 600)
endif()

# Configure after a CUDA libtorch's config has changed the scope that found it (it finds Python's
# interpreter alone, turns CMAKE_CUDA_ARCHITECTURES off and adds its nvcc flags; see
# tests/cmake/torch_config_side_effects.cmake, which makes find_package(Torch) do so with any
# libtorch): a fresh configure of this tree with this build's libtorch, Python, pybind11 and CUDA
# succeeds (with the Python package where this build has it), and gpufeed's kernels keep
# gpufeed's architectures and flags.
set(gpufeed_configure_dir ${PROJECT_BINARY_DIR}/tests/configure-after-torch-config)
set(gpufeed_configure_args
  -DCMAKE_PROJECT_TOP_LEVEL_INCLUDES=${PROJECT_SOURCE_DIR}/tests/cmake/torch_config_side_effects.cmake
  -DCMAKE_C_COMPILER=${CMAKE_C_COMPILER} -DCMAKE_CXX_COMPILER=${CMAKE_CXX_COMPILER}
  "-DCMAKE_PREFIX_PATH=${CMAKE_PREFIX_PATH}" -DTorch_DIR=${Torch_DIR} -DGPUFEED_WITH_TORCH=ON
  -DGPUFEED_WITH_PYTHON=${GPUFEED_WITH_PYTHON} -DGPUFEED_WITH_CUDA=${GPUFEED_WITH_CUDA}
  -DGPUFEED_BUILD_TESTS=OFF -DGPUFEED_BUILD_BENCHMARKS=OFF -DGPUFEED_BUILD_EXAMPLES=OFF)
if(GPUFEED_WITH_PYTHON)
  list(APPEND gpufeed_configure_args -DPython3_EXECUTABLE=${Python3_EXECUTABLE}
                                     -Dpybind11_DIR=${pybind11_DIR})
endif()
if(GPUFEED_WITH_CUDA)
  list(APPEND gpufeed_configure_args -DCMAKE_CUDA_COMPILER=${CMAKE_CUDA_COMPILER})
endif()
add_test(NAME torch.configure.after_torch_config
         COMMAND ${CMAKE_COMMAND} --fresh -S ${PROJECT_SOURCE_DIR} -B ${gpufeed_configure_dir}
                 -G ${CMAKE_GENERATOR} ${gpufeed_configure_args})
set_tests_properties(torch.configure.after_torch_config PROPERTIES
                     LABELS "torch" TIMEOUT 300 FIXTURES_SETUP torch_configured_after_config)
if(GPUFEED_WITH_CUDA)
  add_test(NAME torch.configure.keeps_gpufeed_cuda_flags
           COMMAND ${CMAKE_COMMAND} -DCOMPILE_COMMANDS=${gpufeed_configure_dir}/compile_commands.json
                   -P ${PROJECT_SOURCE_DIR}/tests/cmake/check_cuda_commands.cmake)
  set_tests_properties(torch.configure.keeps_gpufeed_cuda_flags PROPERTIES
                       LABELS "torch" TIMEOUT 60 FIXTURES_REQUIRED torch_configured_after_config)
endif()

# examples/train_ddp under torchrun, 2 ranks on the CPU over Gloo: disjoint shards that cover
# every epoch, and bitwise-equal weights on both ranks (ddp_check.py); once with the plain
# shuffle, once with the chunk-aware one. The examples are added after this directory, so
# whether train_ddp exists is decided at the end of the top-level directory.
# The torchrun beside the tests' interpreter (a venv's, for a pip torch) comes before any on PATH:
# torchrun's rendezvous store and the program's c10d talk one torch's protocol (Debian's torchrun
# 1.13 resets a torch 2.x program's connection).
if(Python3_Interpreter_FOUND)
  get_filename_component(gpufeed_python_bin_dir "${Python3_EXECUTABLE}" DIRECTORY)
endif()
find_program(GPUFEED_TORCHRUN torchrun HINTS ${gpufeed_python_bin_dir})
if(GPUFEED_TORCHRUN AND Python3_Interpreter_FOUND)
  # The deferred call runs in the top directory's scope, where FindPython's result is not set.
  set(GPUFEED_DDP_PYTHON "${Python3_EXECUTABLE}" CACHE INTERNAL "Python for ddp_check.py")
  function(gpufeed_add_train_ddp_tests)
    if(NOT TARGET train_ddp)
      return()
    endif()
    add_dependencies(gpufeed_torch_tests train_ddp)
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
