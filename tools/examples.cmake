# tools/examples/: short, commented first programs (README "Examples"), each
# built here and run by CTest as gdak.examples.<name> through run.sh, which
# checks the exit status and the line the example prints when it worked.
set(_ex ${CMAKE_CURRENT_LIST_DIR}/examples)
function(_gdak_example name)
  add_executable(${name} ${_ex}/${name}.c)
  target_link_libraries(${name} PRIVATE gdak ${ARGN})
  gdak_set_warnings(${name})
endfunction()
function(_gdak_example_test name labels)
  if(GDAK_TESTS)
    add_test(NAME gdak.examples.${name} COMMAND bash ${_ex}/run.sh ${ARGN})
    set_tests_properties(gdak.examples.${name} PROPERTIES LABELS "${labels}" TIMEOUT 120
                         SKIP_RETURN_CODE 77)
  endif()
endfunction()

_gdak_example(ex_write)
_gdak_example_test(write emu "^ex_write: 64 bytes written and checked" $<TARGET_FILE:ex_write>)
_gdak_example(ex_put_signal)
_gdak_example_test(put_signal net "^ex_put_signal: ok$" $<TARGET_FILE:ex_put_signal>)
_gdak_example(ex_strict)
_gdak_example_test(strict emu --trace $<TARGET_FILE:gdak-trace> "VIOLATION.*wqe_index_mismatch"
                   $<TARGET_FILE:ex_strict>)
if(GDAK_HAVE_MPI)
  _gdak_example(ex_put_signal_mpi gdak_mpi)
  find_program(GDAK_EX_MPIEXEC NAMES mpirun mpiexec)
  _gdak_example_test(put_signal_mpi net --mpi "${GDAK_EX_MPIEXEC}" "ex_put_signal_mpi: ok$"
                     $<TARGET_FILE:ex_put_signal_mpi>)
endif()
if(GDAK_HAVE_CUDA)
  add_executable(ex_write_cuda ${_ex}/ex_write_cuda.cu)
  target_link_libraries(ex_write_cuda PRIVATE gdak)
  target_compile_options(ex_write_cuda PRIVATE
    "$<$<AND:$<COMPILE_LANGUAGE:CUDA>,$<BOOL:${GDAK_WERROR}>>:SHELL:-Werror all-warnings>")
  _gdak_example_test(write_cuda cuda "^ex_write_cuda: 64 bytes written by the GPU"
                     $<TARGET_FILE:ex_write_cuda>)
endif()
