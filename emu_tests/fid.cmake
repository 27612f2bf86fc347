# Fidelity tests (issue 17): host threads drive the emulated NIC exactly as
# DOCA GPUNetIO, NVSHMEM IBGDA and NCCL GIN's GDAKI backend drive a ConnectX
# (emu_tests/fid_util.h spells out their bytes); strict checks on.  The
# fid_*.cu twins do the same from CUDA kernels (label cuda, 77 without a GPU).
gdak_add_test(NAME gdak.fid.doorbell SOURCES fid_doorbell.c LIBS gdak_nic_util LABELS emu TIMEOUT 120)
gdak_add_test(NAME gdak.fid.cq SOURCES fid_cq.c LIBS gdak_nic_util LABELS emu TIMEOUT 60)
gdak_add_test(NAME gdak.fid.nodbr SOURCES fid_nodbr.c LIBS gdak_nic_util LABELS emu TIMEOUT 60)
gdak_add_test(NAME gdak.fid.flags SOURCES fid_flags.c LIBS gdak_nic_util LABELS emu TIMEOUT 30 MEMCHECK)
gdak_add_test(NAME gdak.fid.wait SOURCES fid_wait.c LIBS gdak_nic_util LABELS emu TIMEOUT 60)
gdak_add_test(NAME gdak.fid.atomic SOURCES fid_atomic.c LIBS gdak_nic_util LABELS emu TIMEOUT 60 MEMCHECK)
gdak_add_test(NAME gdak.fid.reset SOURCES fid_reset.c LIBS gdak_nic_util LABELS emu TIMEOUT 60)
gdak_add_test(NAME gdak.fid.rules SOURCES fid_rules.c LIBS gdak_nic_util LABELS emu TIMEOUT 60 MEMCHECK)
