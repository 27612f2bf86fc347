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
# mpirun -np 2 gdak-perf -d emu:udp write_bw: rank 0 serves, rank 1 measures
if(TARGET gdak-perf)
  find_program(GDAK_PERF_MPIEXEC NAMES mpirun mpiexec)
  add_test(NAME gdak.tools.perf_mpi
    COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/perf_mpi.sh $<TARGET_FILE:gdak-perf>
            "${GDAK_PERF_MPIEXEC}" "${GDAK_HAVE_MPI}")
  set_tests_properties(gdak.tools.perf_mpi PROPERTIES LABELS net TIMEOUT 240
                       SKIP_RETURN_CODE 77)
endif()
