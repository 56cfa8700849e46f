# gpufeed_set_warnings(target): strict warnings on gpufeed's own targets only (never on users').
function(gpufeed_set_warnings target)
  target_compile_options(${target} PRIVATE
    $<$<COMPILE_LANGUAGE:CXX>:-Wall -Wextra -Wpedantic -Wshadow -Wconversion -Wsign-conversion
      -Wnon-virtual-dtor -Wold-style-cast -Woverloaded-virtual -Wnull-dereference>)
  if(GPUFEED_WARNINGS_AS_ERRORS)
    target_compile_options(${target} PRIVATE $<$<COMPILE_LANGUAGE:CXX>:-Werror>)
  endif()
endfunction()

# gpufeed_set_torch_warnings(target): the same less -Wnull-dereference, for targets that include
# libtorch's or CLI11's headers. GCC 12 raises false "potential null pointer dereference" warnings
# inside both, inlined into the calling code and attributed to it (system-header status does not
# silence them there): in libtorch's intrusive_ptr moves, and in libstdc++'s std::string as
# inlined into CLI11 2.1.2's parser (CLI::detail::split). Applied after gpufeed_set_warnings on
# the same target it only adds the exception (CMake drops the repeated options).
function(gpufeed_set_torch_warnings target)
  gpufeed_set_warnings(${target})
  target_compile_options(${target} PRIVATE $<$<COMPILE_LANGUAGE:CXX>:-Wno-null-dereference>)
endfunction()
