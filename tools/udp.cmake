# gdak-udp-baseline: raw UDP goodput between two processes (the reference
# the udp transport's bandwidth is compared with; docs/UDP.md).
add_executable(gdak-udp-baseline ${CMAKE_CURRENT_LIST_DIR}/udp_baseline.c)
gdak_set_warnings(gdak-udp-baseline)
