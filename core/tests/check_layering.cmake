# gdak.core.layering: core's public headers stand without the device API.
# Core is below the device API (DESIGN.md "Components"): the device headers
# include core's wire facts (<gdak/mlx5.h>, <gdak/qp_modes.h>), so a core
# header that included <gdak/dev/...> would make the two include each other.
#
# Two checks, each able to fail:
#  1. no core/include/gdak/*.h names gdak/dev/ in an #include;
#  2. each of them compiles alone, first in a C11 translation unit, with
#     core's include directories only (no device/include on the path) --
#     and, so that check 2 is known to bite, a header that includes
#     <gdak/dev/types.h> must fail the same compile.
# -DSRC=<source dir> -DBIN=<build dir> -DCC=<C compiler> -DINCS=<;-list of
# extra include dirs (rdma-core)> -DWORK=<scratch dir>
foreach(v SRC BIN CC WORK)
  if(NOT DEFINED ${v})
    message(FATAL_ERROR "check_layering: -D${v}= missing")
  endif()
endforeach()

file(GLOB hdrs ${SRC}/core/include/gdak/*.h)
list(LENGTH hdrs n)
if(n LESS 5)
  message(FATAL_ERROR "check_layering: only ${n} headers under ${SRC}/core/include/gdak")
endif()

set(bad "")
foreach(h IN LISTS hdrs)
  file(STRINGS ${h} lines REGEX "^[ \t]*#[ \t]*include[ \t]*[<\"]gdak/dev/")
  foreach(l IN LISTS lines)
    string(APPEND bad "  ${h}: ${l}\n")
  endforeach()
endforeach()
if(bad)
  message(FATAL_ERROR "core headers include the device API:\n${bad}")
endif()

set(flags -std=c11 -fsyntax-only -Werror -I${SRC}/core/include -I${BIN}/core/include)
foreach(d IN LISTS INCS)
  list(APPEND flags -I${d})
endforeach()
file(MAKE_DIRECTORY ${WORK}/gdak)

function(compile_alone header out_rc out_err)
  file(WRITE ${WORK}/tu.c "#include <${header}>\nint gdak_layering_tu(void);\nint gdak_layering_tu(void) { return 0; }\n")
  execute_process(COMMAND ${CC} ${flags} -I${WORK} ${WORK}/tu.c
                  RESULT_VARIABLE rc ERROR_VARIABLE err OUTPUT_VARIABLE out)
  set(${out_rc} ${rc} PARENT_SCOPE)
  set(${out_err} "${err}${out}" PARENT_SCOPE)
endfunction()

foreach(h IN LISTS hdrs)
  get_filename_component(name ${h} NAME)
  compile_alone(gdak/${name} rc err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "gdak/${name} does not compile without device/include:\n${err}")
  endif()
endforeach()

# the negative control: the compile above must notice a device include
file(WRITE ${WORK}/gdak/layering_bad.h "#include <gdak/gdak.h>\n#include <gdak/dev/types.h>\n")
compile_alone(gdak/layering_bad.h rc err)
if(rc EQUAL 0)
  message(FATAL_ERROR "check_layering: a header including <gdak/dev/types.h> compiled "
                      "without device/include; the check cannot fail")
endif()
message(STATUS "check_layering: ${n} core headers, none includes gdak/dev/, each compiles alone")
