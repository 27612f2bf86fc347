# The trace writer and reader (docs/TRACE.md).
target_sources(gdak_core PRIVATE
  ${CMAKE_CURRENT_LIST_DIR}/src/trace_write.c
  ${CMAKE_CURRENT_LIST_DIR}/src/trace_read.c
  ${CMAKE_CURRENT_LIST_DIR}/src/trace_names.c)
