# gdak-perf: perftest-like benchmarks with their baselines (tools/perf/).
set(_perf_src
  perf/perf_main.c perf/perf_cli.c perf/perf_run.c perf/perf_exec.c perf/perf_base.c
  perf/perf_util.c perf/perf_output.c perf/perf_emu.c perf/perf_emu_rate.c perf/perf_emu_lat.c perf/perf_emu_dc.c
  perf/perf_net.c)
# --cuda runs gdak-perf-cuda (tools/cuda/), not a kernel of its own (perf_main.c)
list(TRANSFORM _perf_src PREPEND ${CMAKE_CURRENT_SOURCE_DIR}/)
add_executable(gdak-perf ${_perf_src})
target_link_libraries(gdak-perf PRIVATE gdak m)
# under mpirun, rank 0 serves and rank 1 measures (perf_mpi.c)
target_sources(gdak-perf PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}/perf/perf_mpi.c)
if(GDAK_HAVE_MPI)
  target_link_libraries(gdak-perf PRIVATE gdak_mpi)
  target_compile_definitions(gdak-perf PRIVATE GDAK_PERF_MPI=1)
endif()
gdak_set_warnings(gdak-perf)
install(TARGETS gdak-perf RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
