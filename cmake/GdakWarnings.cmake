# Warnings: everything useful, and errors with GDAK_WERROR.
function(gdak_set_warnings target)
  target_compile_options(${target} PRIVATE
    $<$<COMPILE_LANGUAGE:C,CXX>:-Wall -Wextra -Wshadow -Wpointer-arith -Wcast-align
      -Wwrite-strings -Wundef -Wformat=2 -Wmissing-declarations -Wno-unused-parameter>
    $<$<COMPILE_LANGUAGE:C>:-Wstrict-prototypes -Wmissing-prototypes -Wold-style-definition>
    $<$<AND:$<COMPILE_LANGUAGE:C,CXX>,$<BOOL:${GDAK_WERROR}>>:-Werror>)
endfunction()
