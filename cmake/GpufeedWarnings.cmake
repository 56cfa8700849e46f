# gpufeed_set_warnings(target): strict warnings on gpufeed's own targets only (never on users').
function(gpufeed_set_warnings target)
  target_compile_options(${target} PRIVATE
    $<$<COMPILE_LANGUAGE:CXX>:-Wall -Wextra -Wpedantic -Wshadow -Wconversion -Wsign-conversion
      -Wnon-virtual-dtor -Wold-style-cast -Woverloaded-virtual -Wnull-dereference>)
  if(GPUFEED_WARNINGS_AS_ERRORS)
    target_compile_options(${target} PRIVATE $<$<COMPILE_LANGUAGE:CXX>:-Werror>)
  endif()
endfunction()

# gpufeed_set_torch_warnings(target): the same for targets that include libtorch's headers, less
# -Wnull-dereference, which GCC 12 raises inside libtorch's inlined intrusive_ptr moves and
# attributes to the calling code (system-header status does not silence it there).
function(gpufeed_set_torch_warnings target)
  gpufeed_set_warnings(${target})
  target_compile_options(${target} PRIVATE $<$<COMPILE_LANGUAGE:CXX>:-Wno-null-dereference>)
endfunction()
