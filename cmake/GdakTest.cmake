# gdak_add_test(NAME gdak.<area>.<name> SOURCES ... [LABELS ...] [TIMEOUT s]
#               [LIBS ...] [ARGS ...] [ENV ...] [NO_MEMCHECK])
# One executable per test file (target name: the test name with '.' -> '_').
# Exit code 77 means "cannot run here" and is shown as skipped.
# Tests labelled memcheck also get a <name>.memcheck twin under Valgrind.
find_program(GDAK_VALGRIND valgrind)
function(gdak_add_test)
  cmake_parse_arguments(T "NO_MEMCHECK;MEMCHECK" "NAME;TIMEOUT" "SOURCES;LABELS;LIBS;ARGS;ENV" ${ARGN})
  string(REPLACE "." "_" tgt "${T_NAME}")
  if(NOT T_TIMEOUT)
    set(T_TIMEOUT 120)
  endif()
  add_executable(${tgt} ${T_SOURCES})
  target_link_libraries(${tgt} PRIVATE gdak gdak_testlib ${T_LIBS})
  gdak_set_warnings(${tgt})
  add_test(NAME ${T_NAME} COMMAND ${tgt} ${T_ARGS})
  set_tests_properties(${T_NAME} PROPERTIES TIMEOUT ${T_TIMEOUT}
    SKIP_RETURN_CODE 77 LABELS "${T_LABELS}" ENVIRONMENT "${T_ENV}")
  if(T_MEMCHECK AND GDAK_VALGRIND AND NOT GDAK_SANITIZED)
    math(EXPR mt "${T_TIMEOUT} * 10")
    add_test(NAME ${T_NAME}.memcheck
      COMMAND ${GDAK_VALGRIND} --tool=memcheck --error-exitcode=99 --leak-check=full
              --errors-for-leak-kinds=definite --track-origins=yes --quiet
              $<TARGET_FILE:${tgt}> ${T_ARGS})
    set_tests_properties(${T_NAME}.memcheck PROPERTIES TIMEOUT ${mt}
      SKIP_RETURN_CODE 77 LABELS "memcheck" ENVIRONMENT "${T_ENV};GDAK_UNDER_VALGRIND=1")
  endif()
endfunction()
