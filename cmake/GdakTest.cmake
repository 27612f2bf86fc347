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
  if(T_MEMCHECK)
    math(EXPR mt "${T_TIMEOUT} * 10")
    gdak_add_memcheck(${T_NAME} ${tgt} ${mt} ARGS ${T_ARGS} ENV ${T_ENV})
  endif()
endfunction()

# gdak_add_memcheck(NAME TARGET TIMEOUT [ARGS ...] [ENV ...]): the test
# NAME.memcheck (label memcheck), TARGET run under Valgrind's memcheck with
# ENV and GDAK_UNDER_VALGRIND=1; nothing without Valgrind or in a sanitized
# build.
function(gdak_add_memcheck name tgt timeout)
  cmake_parse_arguments(M "" "" "ARGS;ENV" ${ARGN})
  if(NOT GDAK_VALGRIND OR GDAK_SANITIZED)
    return()
  endif()
  list(APPEND M_ENV GDAK_UNDER_VALGRIND=1)
  add_test(NAME ${name}.memcheck
    COMMAND ${GDAK_VALGRIND} --tool=memcheck --error-exitcode=99 --leak-check=full
            --errors-for-leak-kinds=definite --track-origins=yes --quiet
            $<TARGET_FILE:${tgt}> ${M_ARGS})
  set_tests_properties(${name}.memcheck PROPERTIES TIMEOUT ${timeout}
    SKIP_RETURN_CODE 77 LABELS "memcheck" ENVIRONMENT "${M_ENV}")
endfunction()

# gdak_add_fake_cuda_test(NAME TARGET [ARGS ...] ENV ...): TARGET run again
# as the unit test NAME with ENV (a stand-in driver's folder on
# LD_LIBRARY_PATH, the engine's mode).
function(gdak_add_fake_cuda_test name tgt)
  cmake_parse_arguments(F "" "" "ARGS;ENV" ${ARGN})
  add_test(NAME ${name} COMMAND ${tgt} ${F_ARGS})
  set_tests_properties(${name} PROPERTIES TIMEOUT 300 SKIP_RETURN_CODE 77 LABELS unit
    ENVIRONMENT "${F_ENV}")
endfunction()

# gdak_add_fake_libcuda(TARGET SOURCE DIR): a stand-in libcuda.so.1 built
# from SOURCE into DIR of this folder's build tree, where a test's
# LD_LIBRARY_PATH finds it before the real driver.
function(gdak_add_fake_libcuda tgt src dir)
  add_library(${tgt} SHARED ${src})
  set_target_properties(${tgt} PROPERTIES PREFIX "" OUTPUT_NAME "libcuda"
    SUFFIX ".so.1" LIBRARY_OUTPUT_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR}/${dir})
  # the stand-ins share emu_tests/cuda/fake_cuda_mem.h
  target_include_directories(${tgt} PRIVATE ${PROJECT_SOURCE_DIR}/emu_tests/cuda)
  gdak_set_warnings(${tgt})
endfunction()
