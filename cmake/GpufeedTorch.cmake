# Finds libtorch for the gpufeed::torch adapter and declares GPUFEED_WITH_TORCH (ON when found).
# Included from the top-level CMakeLists.txt after the CUDA part, in its scope: TORCH_* and
# Torch_* are set there as find_package(Torch) sets them.
#
# A CUDA libtorch's config (torch 2.x) finds the toolkit with the old FindCUDA, which looks for
# nvcc on PATH: it is pointed at the toolkit gpufeed builds with. In this scope, that config also
# sets CMAKE_CUDA_ARCHITECTURES to OFF and appends its nvcc flags to CMAKE_CUDA_FLAGS (-gencode
# for TORCH_CUDA_ARCH_LIST, or without a GPU for sm_50 to sm_120, which nvcc 13 refuses);
# gpufeed's kernels include no torch header and keep gpufeed's own, restored after the search.
if(GPUFEED_WITH_CUDA AND NOT DEFINED CUDA_TOOLKIT_ROOT_DIR AND CUDAToolkit_BIN_DIR)
  cmake_path(GET CUDAToolkit_BIN_DIR PARENT_PATH CUDA_TOOLKIT_ROOT_DIR)
endif()
set(gpufeed_cuda_flags "${CMAKE_CUDA_FLAGS}")
set(gpufeed_cuda_architectures_defined OFF)
if(DEFINED CMAKE_CUDA_ARCHITECTURES)
  set(gpufeed_cuda_architectures_defined ON)
  set(gpufeed_cuda_architectures "${CMAKE_CUDA_ARCHITECTURES}")
endif()
find_package(Torch QUIET)
# libtorch's config finds some of its own libraries (c10, kineto, c10_cuda) with
# find_library(... PATHS <its prefix>/lib), which looks in the system's directories first: a pip
# torch's config (torch.utils.cmake_prefix_path) on a machine that also has Debian's libtorch
# takes Debian's libc10 beside pip's libtorch. Torch_ROOT, the config's own prefix, is searched
# before them; what was found elsewhere is forgotten and found again.
if(Torch_FOUND AND NOT DEFINED Torch_ROOT AND DEFINED TORCH_INSTALL_PREFIX)
  set(Torch_ROOT "${TORCH_INSTALL_PREFIX}")
  set(gpufeed_torch_refind OFF)
  foreach(library IN ITEMS TORCH_LIBRARY c10_LIBRARY kineto_LIBRARY C10_CUDA_LIBRARY)
    if(${library})
      cmake_path(IS_PREFIX Torch_ROOT "${${library}}" NORMALIZE gpufeed_torch_own)
      if(NOT gpufeed_torch_own)
        message(STATUS "gpufeed: ${library} (${${library}}) is not libtorch's at ${Torch_ROOT}: "
                       "looking there")
        unset(${library} CACHE)
        set(gpufeed_torch_refind ON)
      endif()
    endif()
  endforeach()
  if(gpufeed_torch_refind)
    find_package(Torch QUIET)
  endif()
endif()
option(GPUFEED_WITH_TORCH "Build the libtorch adapter gpufeed::torch (needs libtorch)" ${Torch_FOUND})
if(GPUFEED_WITH_TORCH AND NOT Torch_FOUND)
  find_package(Torch REQUIRED)  # says why it is not found
endif()
set(CMAKE_CUDA_FLAGS "${gpufeed_cuda_flags}")
if(gpufeed_cuda_architectures_defined)
  set(CMAKE_CUDA_ARCHITECTURES "${gpufeed_cuda_architectures}")
else()
  unset(CMAKE_CUDA_ARCHITECTURES)
endif()
