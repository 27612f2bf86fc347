# Trace writer/reader and gdak-trace (docs/TRACE.md).
gdak_add_test(NAME gdak.trace.roundtrip SOURCES ${CMAKE_CURRENT_LIST_DIR}/trace_roundtrip.c
  LABELS unit MEMCHECK)
