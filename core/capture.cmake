# The ring capture (docs/CAPTURE.md): the WQE/CQE stream read back from the
# rings by a capture thread, for any backend; GDAK_TRACE on hw_mlx5 uses it.
target_sources(gdak_core PRIVATE
  ${CMAKE_CURRENT_LIST_DIR}/src/trace_capture.c
  ${CMAKE_CURRENT_LIST_DIR}/src/capture_cuda.c)
