# Reliability (docs/RELIABILITY.md): bad input from a misbehaving device,
# object lifetimes, host API misuse, fault injection aimed at device code,
# soak.  Label emu.  Fuzzers: fuzz.cmake.
add_library(gdak_rel_util STATIC net/rel_util.c)
target_link_libraries(gdak_rel_util PUBLIC gdak_nic_util gdak gdak_testlib)
gdak_set_warnings(gdak_rel_util)

gdak_add_test(NAME gdak.rel.device SOURCES net/rel_device.c LIBS gdak_rel_util LABELS emu
  TIMEOUT 300 MEMCHECK)
gdak_add_test(NAME gdak.rel.api SOURCES net/rel_api.c LIBS gdak_rel_util LABELS emu TIMEOUT 120
  MEMCHECK)
gdak_add_test(NAME gdak.rel.life SOURCES net/rel_life.c LIBS gdak_rel_util LABELS emu TIMEOUT 300
  MEMCHECK)
gdak_add_test(NAME gdak.rel.faults SOURCES net/rel_faults.c LIBS gdak_rel_util LABELS emu
  TIMEOUT 300 MEMCHECK)
gdak_add_test(NAME gdak.rel.faults_env SOURCES net/rel_faults.c LIBS gdak_rel_util LABELS emu
  TIMEOUT 120 ARGS env ENV "GDAK_FAULTS=err:qp=*,wqe=1,syndrome=REMOTE_OP")
# Soak: short in CI (GDAK_SOAK_SECONDS and friends for long runs).
gdak_add_test(NAME gdak.rel.soak SOURCES net/rel_soak.c LIBS gdak_rel_util LABELS emu TIMEOUT 300
  MEMCHECK)
# Exposes nm_dma_copy's memcpy on overlapping ranges (fails under ASan until
# nic_model/nm_dma.h copies host memory with memmove).
gdak_add_test(NAME gdak.rel.overlap SOURCES net/rel_overlap.c LIBS gdak_rel_util LABELS emu
  TIMEOUT 60 MEMCHECK)
# gdak_close with QPs alive, then destroying them: works; its memcheck twin
# checks that nothing leaks once the last QP is gone.
gdak_add_test(NAME gdak.rel.close SOURCES net/rel_close.c LIBS gdak_rel_util LABELS emu TIMEOUT 60
  MEMCHECK)
