# gdak-demo: the README's main job on the emulated NIC (tools/demo/).
set(_demo_src demo/demo_main.c demo/demo_device.c demo/demo_pair.c demo/demo_show.c)
if(GDAK_HAVE_CUDA AND EXISTS ${CMAKE_CURRENT_SOURCE_DIR}/demo/demo_cuda.cu)
  list(APPEND _demo_src demo/demo_cuda.cu)
else()
  list(APPEND _demo_src demo/demo_cuda_stub.c)
endif()
list(TRANSFORM _demo_src PREPEND ${CMAKE_CURRENT_SOURCE_DIR}/)
add_executable(gdak-demo ${_demo_src})
target_link_libraries(gdak-demo PRIVATE gdak)
gdak_set_warnings(gdak-demo)
# nvcc's own warnings count too (demo_cuda.cu), as for the CUDA tests
target_compile_options(gdak-demo PRIVATE
  "$<$<AND:$<COMPILE_LANGUAGE:CUDA>,$<BOOL:${GDAK_WERROR}>>:SHELL:-Werror all-warnings>")
# It shows its trace through gdak-trace, found next to it; tools/*.cmake are
# read in name order, so look for that target once the directory is done.
function(_gdak_demo_needs_trace)
  if(TARGET gdak-trace)
    add_dependencies(gdak-demo gdak-trace)
  endif()
endfunction()
cmake_language(DEFER CALL _gdak_demo_needs_trace)
install(TARGETS gdak-demo RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
