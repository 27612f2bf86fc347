# Soft-RoCE (label rxe).  The host kernel has no rdma_rxe, so two kinds:
#  * host side (labels rxe;rxe-host): boot the qemu guest of tools/rxe/gdak-rxe-vm;
#    they skip (77) where qemu or a Debian package source is missing;
#  * guest side (label rxe): need a verbs device (rxe0, rxe1); they skip on the
#    host and run inside the guest, which gdak.rxe.guest_suite boots for them.
# The guest is one qemu at a time (RESOURCE_LOCK): two TCG guests on a 2-core
# machine would only slow each other down.
set(GDAK_RXE_VM ${PROJECT_SOURCE_DIR}/tools/rxe/gdak-rxe-vm)

add_test(NAME gdak.rxe.harness
  COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/rxe_harness.sh ${PROJECT_SOURCE_DIR}
          ${CMAKE_CURRENT_BINARY_DIR})
set_tests_properties(gdak.rxe.harness PROPERTIES LABELS "rxe;rxe-host" TIMEOUT 400
  SKIP_RETURN_CODE 77 RESOURCE_LOCK gdak_rxe_vm)

# Every guest-side rxe test, run inside one boot of the guest.
add_test(NAME gdak.rxe.guest_suite
  COMMAND ${GDAK_RXE_VM} --timeout 500 ctest ${PROJECT_BINARY_DIR} -L rxe -LE rxe-host)
set_tests_properties(gdak.rxe.guest_suite PROPERTIES LABELS "rxe;rxe-host" TIMEOUT 600
  SKIP_RETURN_CODE 77 RESOURCE_LOCK gdak_rxe_vm)

# Guest side: kernel rxe on its own (the reference the NIC model is held to).
add_test(NAME gdak.rxe.peer_selftest COMMAND gdak-rxe-peer -d rxe0 selftest)
set_tests_properties(gdak.rxe.peer_selftest PROPERTIES LABELS rxe TIMEOUT 120
  SKIP_RETURN_CODE 77)

# The verbs transport's tables (runs anywhere).
gdak_add_test(NAME gdak.rxe.verbs_map SOURCES rxe/rxe_verbs_map.c LABELS "unit;rxe" TIMEOUT 30 MEMCHECK)
target_include_directories(gdak_rxe_verbs_map PRIVATE ${PROJECT_SOURCE_DIR}/nic_model)

# Guest side: the scenario library over emu:verbs:rxe0.
gdak_add_test(NAME gdak.rxe.verbs_scenarios SOURCES rxe/rxe_verbs_scenarios.c
              LIBS gdak_scenarios LABELS rxe TIMEOUT 300)

# Guest side: wire interop, gdak's udp transport (netns gdakns) <-> kernel rxe1
# (gdak-rxe-peer, plain verbs), traffic both ways, data verified.
gdak_add_test(NAME gdak.rxe.interop SOURCES rxe/rxe_interop.c LABELS rxe TIMEOUT 180
              ARGS $<TARGET_FILE:gdak-rxe-peer>)

# Guest side: the bounce-buffer path GPU memory takes without dma-buf, with
# host memory forced through it (GDAK_VERBS_STAGE=all, a test hook).
gdak_add_test(NAME gdak.rxe.verbs_stage SOURCES rxe/rxe_verbs_stage.c LABELS rxe TIMEOUT 180)

# Guest side: two processes, each its own NIC model on emu:verbs:rxe0, RDMA
# each other with the device rkeys gdak_mr_rkey hands out.
gdak_add_test(NAME gdak.rxe.verbs_2proc SOURCES rxe/rxe_verbs_2proc.c LABELS rxe TIMEOUT 180)
