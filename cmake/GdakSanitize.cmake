# GDAK_SANITIZE=address,undefined | thread: applied to every target.
if(GDAK_SANITIZE)
  string(REPLACE "," ";" _gdak_san "${GDAK_SANITIZE}")
  foreach(s IN LISTS _gdak_san)
    if(NOT s MATCHES "^(address|undefined|thread|leak)$")
      message(FATAL_ERROR "GDAK_SANITIZE: unknown sanitizer '${s}' (address, undefined, thread, leak)")
    endif()
  endforeach()
  if("thread" IN_LIST _gdak_san AND "address" IN_LIST _gdak_san)
    message(FATAL_ERROR "GDAK_SANITIZE: thread and address cannot be combined")
  endif()
  string(REPLACE ";" "," _gdak_san_flag "${_gdak_san}")
  add_compile_options($<$<COMPILE_LANGUAGE:C,CXX>:-fsanitize=${_gdak_san_flag}>
                      $<$<COMPILE_LANGUAGE:C,CXX>:-fno-omit-frame-pointer>
                      $<$<COMPILE_LANGUAGE:C,CXX>:-fno-sanitize-recover=all>)
  add_link_options(-fsanitize=${_gdak_san_flag})
  set(GDAK_SANITIZED ON)
endif()
