# gdak-trace: print a gdak trace (docs/TRACE.md).  The decoder is a small
# library so the trace tests can call it directly.
add_library(gdak_trace_tool STATIC
  ${CMAKE_CURRENT_LIST_DIR}/trace_decode.c
  ${CMAKE_CURRENT_LIST_DIR}/trace_roce.c
  ${CMAKE_CURRENT_LIST_DIR}/trace_filter.c
  ${CMAKE_CURRENT_LIST_DIR}/trace_summary.c)
target_include_directories(gdak_trace_tool PUBLIC ${CMAKE_CURRENT_LIST_DIR})
target_link_libraries(gdak_trace_tool PUBLIC gdak)
gdak_set_warnings(gdak_trace_tool)

add_executable(gdak-trace ${CMAKE_CURRENT_LIST_DIR}/gdak-trace.c)
target_link_libraries(gdak-trace PRIVATE gdak_trace_tool)
gdak_set_warnings(gdak-trace)
install(TARGETS gdak-trace RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(FILES ${CMAKE_CURRENT_LIST_DIR}/gdak-trace.lua
        DESTINATION ${CMAKE_INSTALL_DATADIR}/gdak OPTIONAL)
