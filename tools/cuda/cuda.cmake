# gdak-perf-cuda: CUDA kernels drive the NIC model (tools/cuda/perf_cuda*.cu).
# A separate binary from gdak-perf: its baselines (GPU<->CPU ping-pong,
# cudaMemcpy D2D) and its shapes (CTAs x QPs) are CUDA's own.
if(GDAK_HAVE_CUDA AND NOT TARGET gdak-perf-cuda)
  add_executable(gdak-perf-cuda
    ${CMAKE_CURRENT_LIST_DIR}/perf_cuda_main.cu
    ${CMAKE_CURRENT_LIST_DIR}/perf_cuda_lat.cu
    ${CMAKE_CURRENT_LIST_DIR}/perf_cuda_bw.cu
    ${CMAKE_CURRENT_LIST_DIR}/perf_cuda_dc.cu)
  target_link_libraries(gdak-perf-cuda PRIVATE gdak)
  set_target_properties(gdak-perf-cuda PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${PROJECT_BINARY_DIR}/tools)
  target_compile_options(gdak-perf-cuda PRIVATE
    "$<$<COMPILE_LANGUAGE:CUDA>:SHELL:-Werror all-warnings>")
  install(TARGETS gdak-perf-cuda RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
endif()
