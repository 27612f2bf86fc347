# Smoke tests of gdak-perf and gdak-demo: they run the tools and check
# correctness (exit codes, verified data, parseable output), never timing.
# gdak.tools.NAME: the test program SRC given the tool TOOL's path.
function(gdak_add_tool_test name src tool labels timeout)
  if(TARGET ${tool})
    gdak_add_test(NAME gdak.tools.${name} SOURCES ${src}
                  ARGS $<TARGET_FILE:${tool}> LABELS ${labels} TIMEOUT ${timeout})
    add_dependencies(gdak_tools_${name} ${tool})
  endif()
endfunction()
gdak_add_tool_test(perf_smoke perf/perf_smoke.c gdak-perf emu 120)
gdak_add_tool_test(demo perf/perf_demo.c gdak-demo emu 120)
gdak_add_tool_test(perf_net perf/perf_net.c gdak-perf net 180)
# mpirun -np 2 gdak-perf -d emu:udp write_bw: rank 0 serves, rank 1 measures
if(TARGET gdak-perf)
  find_program(GDAK_PERF_MPIEXEC NAMES mpirun mpiexec)
  add_test(NAME gdak.tools.perf_mpi
    COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/perf_mpi.sh $<TARGET_FILE:gdak-perf>
            "${GDAK_PERF_MPIEXEC}" "${GDAK_HAVE_MPI}")
  set_tests_properties(gdak.tools.perf_mpi PROPERTIES LABELS net TIMEOUT 240
                       SKIP_RETURN_CODE 77)
endif()
