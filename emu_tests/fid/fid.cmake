# Fidelity tests (issue 17): host threads drive the emulated NIC exactly as
# DOCA GPUNetIO, NVSHMEM IBGDA and NCCL GIN's GDAKI backend drive a ConnectX
# (emu_tests/fid/fid_util.h spells out their bytes); strict checks on.  The
# fid_*.cu twins do the same from CUDA kernels (label cuda, 77 without a GPU).
gdak_add_test(NAME gdak.fid.doorbell SOURCES fid/fid_doorbell.c LIBS gdak_nic_util LABELS emu TIMEOUT 120)
gdak_add_test(NAME gdak.fid.cq SOURCES fid/fid_cq.c LIBS gdak_nic_util LABELS emu TIMEOUT 60)
gdak_add_test(NAME gdak.fid.nodbr SOURCES fid/fid_nodbr.c LIBS gdak_nic_util LABELS emu TIMEOUT 60)
gdak_add_test(NAME gdak.fid.flags SOURCES fid/fid_flags.c LIBS gdak_nic_util LABELS emu TIMEOUT 30 MEMCHECK)
gdak_add_test(NAME gdak.fid.wait SOURCES fid/fid_wait.c LIBS gdak_nic_util LABELS emu TIMEOUT 60)
gdak_add_test(NAME gdak.fid.atomic SOURCES fid/fid_atomic.c LIBS gdak_nic_util LABELS emu TIMEOUT 60 MEMCHECK)
# The same executable in the rxe guest (label rxe, gdak.rxe.guest_suite runs it):
# a 4-byte atomic on emu:verbs fails LOCAL_QP_OP_ERR, rule atomic_transport.
add_test(NAME gdak.rxe.fid_atomic COMMAND gdak_fid_atomic verbs)
set_tests_properties(gdak.rxe.fid_atomic PROPERTIES LABELS rxe TIMEOUT 60 SKIP_RETURN_CODE 77)
gdak_add_test(NAME gdak.fid.reset SOURCES fid/fid_reset.c LIBS gdak_nic_util LABELS emu TIMEOUT 60)
gdak_add_test(NAME gdak.fid.rules SOURCES fid/fid_rules.c LIBS gdak_nic_util LABELS emu TIMEOUT 60 MEMCHECK)
gdak_add_test(NAME gdak.fid.builders SOURCES fid/fid_builders.c LIBS gdak_nic_util LABELS emu TIMEOUT 60 MEMCHECK)
# the CUDA twin: kernels write the same bytes (label cuda, 77 without a GPU)
if(GDAK_HAVE_CUDA)
  gdak_add_test(NAME gdak.fid.cuda SOURCES fid/fid_cuda.cu LABELS cuda TIMEOUT 180)
  target_compile_options(gdak_fid_cuda PRIVATE "$<$<COMPILE_LANGUAGE:CUDA>:SHELL:-Werror all-warnings>")
  set_tests_properties(gdak.fid.cuda PROPERTIES RESOURCE_LOCK gdak_gpu)
endif()
gdak_add_test(NAME gdak.fid.trace SOURCES fid/fid_trace.c LIBS gdak_nic_util LABELS emu TIMEOUT 60
  ARGS $<TARGET_FILE:gdak-trace>)
add_dependencies(gdak_fid_trace gdak-trace)
gdak_add_test(NAME gdak.fid.bf SOURCES fid/fid_bf.c LIBS gdak_nic_util LABELS emu TIMEOUT 60)
