# The scenario library (emu_tests/scenarios/): end-to-end scenarios written
# once against the public host API and the device API, run by
# gdak.emu.scenarios against the NIC model and by hw_tests' gdak.hw.scenarios
# against a ConnectX.
add_library(gdak_scenarios STATIC
  scenarios/scen_atomic.c
  scenarios/scen_dc.c
  scenarios/scen_env.c
  scenarios/scen_errors.c
  scenarios/scen_hl.c
  scenarios/scen_rma.c
  scenarios/scen_run.c
  scenarios/scen_twosided.c)
target_include_directories(gdak_scenarios PUBLIC ${CMAKE_CURRENT_LIST_DIR})
target_link_libraries(gdak_scenarios PUBLIC gdak gdak_testlib)
gdak_set_warnings(gdak_scenarios)

gdak_add_test(NAME gdak.emu.scenarios SOURCES scenarios/emu_scenarios.c
              LIBS gdak_scenarios LABELS emu TIMEOUT 300)

# The same scenarios with a GPU as the device (one CUDA thread); built where
# nvcc is, skipped (77) without a GPU.  hw_tests builds this source again
# against a ConnectX.
if(GDAK_HAVE_CUDA)
  gdak_add_test(NAME gdak.emu.scenarios_cuda SOURCES scenarios/scen_cuda.cu
                LABELS cuda TIMEOUT 180 ARGS emu)
  target_compile_options(gdak_emu_scenarios_cuda PRIVATE
    "$<$<COMPILE_LANGUAGE:CUDA>:SHELL:-Werror all-warnings>")
endif()
