# NIC-model tests (label emu): host threads play the device through
# emu_tests/nic_util.[ch], which uses only the public headers.
add_library(gdak_nic_util STATIC nic/nic_util.c)
target_link_libraries(gdak_nic_util PUBLIC gdak gdak_testlib)
gdak_set_warnings(gdak_nic_util)

gdak_add_test(NAME gdak.nic.write SOURCES nic/nic_write.c LIBS gdak_nic_util LABELS emu TIMEOUT 60)
gdak_add_test(NAME gdak.nic.ops SOURCES nic/nic_ops.c LIBS gdak_nic_util LABELS emu TIMEOUT 60 MEMCHECK)
gdak_add_test(NAME gdak.nic.checks SOURCES nic/nic_checks.c LIBS gdak_nic_util LABELS emu TIMEOUT 60 MEMCHECK)
gdak_add_test(NAME gdak.nic.threads SOURCES nic/nic_threads.c LIBS gdak_nic_util LABELS emu TIMEOUT 120)
gdak_add_test(NAME gdak.nic.scale SOURCES nic/nic_scale.c LIBS gdak_nic_util LABELS emu TIMEOUT 120)
gdak_add_test(NAME gdak.nic.atomics SOURCES nic/nic_atomics.c LIBS gdak_nic_util LABELS emu TIMEOUT 60)
gdak_add_test(NAME gdak.nic.trace SOURCES nic/nic_trace.c LIBS gdak_nic_util LABELS emu TIMEOUT 120 MEMCHECK)
gdak_add_test(NAME gdak.nic.export SOURCES nic/nic_export.c LIBS gdak_nic_util LABELS emu TIMEOUT 60 MEMCHECK)
gdak_add_test(NAME gdak.nic.errtext SOURCES nic/nic_errtext.c LIBS gdak_nic_util LABELS emu TIMEOUT 60 MEMCHECK)
gdak_add_test(NAME gdak.nic.udp_resp SOURCES nic/nic_udp_resp.c LIBS gdak_nic_util LABELS net TIMEOUT 120)
# GPU copies in flight in the loop transport: skips (77) without a GPU
gdak_add_test(NAME gdak.nic.gpu_pipe SOURCES nic/nic_gpu_pipe.c LIBS gdak_nic_util LABELS cuda TIMEOUT 180)
gdak_add_test(NAME gdak.nic.stall SOURCES nic/nic_stall.c LIBS gdak_nic_util LABELS emu TIMEOUT 60)
# the dc scenario (scenarios/scen_dc.c) on the NIC model; hw_tests runs it
# through hw_mlx5 (gdak.hw.emu.dc)
gdak_add_test(NAME gdak.nic.dc SOURCES scenarios/emu_scenarios.c LIBS gdak_scenarios
              LABELS emu TIMEOUT 120 ARGS emu dc MEMCHECK)
# The NIC thread hands its CPU over after work (adaptive mode), not after a
# spin interval: the mechanism behind the demo's traced latency (counted,
# not timed).
gdak_add_test(NAME gdak.nic.yield SOURCES nic/nic_yield.c LIBS gdak_nic_util LABELS emu TIMEOUT 60)
target_include_directories(gdak_nic_yield PRIVATE ${PROJECT_SOURCE_DIR}/nic_model)

# queues on rings the device allocated, one CQ shared by two QPs (nic_model/nm_ext.h)
gdak_add_test(NAME gdak.nic.ext SOURCES nic/nic_ext.c LIBS gdak_nic_util LABELS emu TIMEOUT 120 MEMCHECK)
target_include_directories(gdak_nic_ext PRIVATE ${PROJECT_SOURCE_DIR}/nic_model)
