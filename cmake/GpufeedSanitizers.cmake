# GPUFEED_SANITIZE=thread | address: instruments everything built in this tree.
if(GPUFEED_SANITIZE STREQUAL "thread")
  add_compile_options($<$<COMPILE_LANGUAGE:C,CXX>:-fsanitize=thread> $<$<COMPILE_LANGUAGE:C,CXX>:-fno-omit-frame-pointer>)
  add_link_options(-fsanitize=thread)
elseif(GPUFEED_SANITIZE STREQUAL "address")
  add_compile_options($<$<COMPILE_LANGUAGE:C,CXX>:-fsanitize=address,undefined>
                      $<$<COMPILE_LANGUAGE:C,CXX>:-fno-sanitize-recover=undefined>
                      $<$<COMPILE_LANGUAGE:C,CXX>:-fno-omit-frame-pointer>)
  add_link_options(-fsanitize=address,undefined)
elseif(NOT GPUFEED_SANITIZE STREQUAL "")
  message(FATAL_ERROR "GPUFEED_SANITIZE must be '', 'thread' or 'address', not '${GPUFEED_SANITIZE}'")
endif()
