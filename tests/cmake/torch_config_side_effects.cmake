# Injected with -DCMAKE_PROJECT_TOP_LEVEL_INCLUDES by the torch.configure.* tests
# (tests/torch/torch_tests.cmake). find_package(Torch) finds the libtorch asked for, then does to
# the scope that called it what CUDA builds of torch 2.x's config do there, whichever libtorch
# this is:
# - torch 2.11's looks for FindPython's `Python` with the interpreter alone: Python_FOUND is set
#   and python_add_library, which pybind11 then calls, is not defined;
# - Caffe2/public/cuda.cmake sets CMAKE_CUDA_ARCHITECTURES to OFF and appends its nvcc flags to
#   CMAKE_CUDA_FLAGS: -gencode for its own architectures (sm_50, which nvcc 13 refuses, among
#   them when no GPU is seen) and more.
# gpufeed must still configure with the Python package, and build its own kernels with its own
# architectures and flags (tests/cmake/check_cuda_commands.cmake reads what it would run).
macro(gpufeed_test_torch_config_side_effects method package)
  find_package(${package} ${ARGN} BYPASS_PROVIDER)
  if("${package}" STREQUAL "Torch")
    find_package(Python COMPONENTS Interpreter)
    set(CMAKE_CUDA_ARCHITECTURES OFF)
    string(APPEND CMAKE_CUDA_FLAGS " -gencode arch=compute_50,code=sm_50 --expt-relaxed-constexpr")
  endif()
endmacro()
cmake_language(SET_DEPENDENCY_PROVIDER gpufeed_test_torch_config_side_effects
               SUPPORTED_METHODS FIND_PACKAGE)
