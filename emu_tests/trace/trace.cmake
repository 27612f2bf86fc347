# Trace writer/reader and gdak-trace (docs/TRACE.md).
gdak_add_test(NAME gdak.trace.roundtrip SOURCES ${CMAKE_CURRENT_LIST_DIR}/trace_roundtrip.c
  LIBS gdak_trace_tool LABELS unit MEMCHECK)
# tshark decodes the packet records as InfiniBand; skips without tshark.
gdak_add_test(NAME gdak.trace.tshark SOURCES ${CMAKE_CURRENT_LIST_DIR}/trace_tshark.c
  LIBS gdak_trace_tool LABELS unit TIMEOUT 120
  ARGS ${PROJECT_SOURCE_DIR}/tools/gdak-trace.lua)
# Golden decoded output of a fixed synthetic scenario (fake clock), through
# the gdak-trace binary: text, JSON, summary, filters.
gdak_add_test(NAME gdak.trace.golden SOURCES ${CMAKE_CURRENT_LIST_DIR}/trace_golden.c
  LIBS gdak_trace_tool LABELS unit
  ARGS $<TARGET_FILE:gdak-trace> ${CMAKE_CURRENT_LIST_DIR}/../data/trace)
add_dependencies(gdak_trace_golden gdak-trace)
# Truncated (every prefix) and corrupt (every byte flipped) traces, specific
# damage with specific messages, the command line, --follow.
gdak_add_test(NAME gdak.trace.corrupt SOURCES ${CMAKE_CURRENT_LIST_DIR}/trace_corrupt.c
  LIBS gdak_trace_tool LABELS unit TIMEOUT 300
  ARGS $<TARGET_FILE:gdak-trace>)
add_dependencies(gdak_trace_corrupt gdak-trace)
# Records/s of the writer (prints numbers, asserts only completeness).
gdak_add_test(NAME gdak.trace.bench SOURCES ${CMAKE_CURRENT_LIST_DIR}/trace_bench.c
  LIBS gdak_trace_tool LABELS unit)
# The NIC model with tracing on, read back with gdak-trace.
gdak_add_test(NAME gdak.trace.emu SOURCES ${CMAKE_CURRENT_LIST_DIR}/trace_emu.c
  LIBS gdak_nic_util gdak_trace_tool LABELS emu TIMEOUT 120
  ARGS $<TARGET_FILE:gdak-trace>)
add_dependencies(gdak_trace_emu gdak-trace)
# BATCH records read back exactly as the records written one by one.
gdak_add_test(NAME gdak.trace.batch SOURCES ${CMAKE_CURRENT_LIST_DIR}/trace_batch.c
  LIBS gdak_trace_tool LABELS unit MEMCHECK)
# A file slower than the records: wait (counted, nothing lost) or, in the
# lossy mode, drop (counted, LOST record, sequence gap, STATS).
gdak_add_test(NAME gdak.trace.full SOURCES ${CMAKE_CURRENT_LIST_DIR}/trace_full.c
  LIBS gdak_trace_tool LABELS unit MEMCHECK TIMEOUT 120)
# tools/gdak-trace.lua rebuilds gdak-demo's and gdak-perf's traces' WQEs and
# CQEs byte for byte as the C reader does; skips without a Lua-enabled tshark.
gdak_add_test(NAME gdak.trace.lua SOURCES ${CMAKE_CURRENT_LIST_DIR}/trace_lua.c
  LIBS gdak_trace_tool LABELS unit TIMEOUT 180
  ARGS $<TARGET_FILE:gdak-demo> $<TARGET_FILE:gdak-perf> ${PROJECT_SOURCE_DIR}/tools/gdak-trace.lua)
add_dependencies(gdak_trace_lua gdak-demo gdak-perf)
# gdak-trace on another tool's capture (no STATS: exit 0), and --relative.
gdak_add_test(NAME gdak.trace.plain SOURCES ${CMAKE_CURRENT_LIST_DIR}/trace_plain.c
  LIBS gdak_trace_tool LABELS unit ARGS $<TARGET_FILE:gdak-trace>)
add_dependencies(gdak_trace_plain gdak-trace)
# The dissector's opcode/syndrome names are gdak's one table (mlx5_names.c).
gdak_add_test(NAME gdak.trace.lua_names SOURCES ${CMAKE_CURRENT_LIST_DIR}/trace_lua_names.c
  LABELS unit ARGS ${PROJECT_SOURCE_DIR}/tools/gdak-trace.lua)
# The DC transport in a trace: stream records and WQEs decoded with their AV.
gdak_add_test(NAME gdak.trace.dc SOURCES ${CMAKE_CURRENT_LIST_DIR}/trace_dc.c
  LIBS gdak_trace_tool LABELS emu TIMEOUT 120)
