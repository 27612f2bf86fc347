# Smoke tests of gdak-perf and gdak-demo: they run the tools and check
# correctness (exit codes, verified data, parseable output), never timing.
if(TARGET gdak-perf)
  gdak_add_test(NAME gdak.tools.perf_smoke SOURCES perf_smoke.c
                ARGS $<TARGET_FILE:gdak-perf> LABELS emu TIMEOUT 120)
  add_dependencies(gdak_tools_perf_smoke gdak-perf)
endif()
if(TARGET gdak-demo)
  gdak_add_test(NAME gdak.tools.demo SOURCES perf_demo.c
                ARGS $<TARGET_FILE:gdak-demo> LABELS emu TIMEOUT 120)
  add_dependencies(gdak_tools_demo gdak-demo)
endif()
if(TARGET gdak-perf)
  gdak_add_test(NAME gdak.tools.perf_net SOURCES perf_net.c
                ARGS $<TARGET_FILE:gdak-perf> LABELS net TIMEOUT 180)
  add_dependencies(gdak_tools_perf_net gdak-perf)
endif()
