# The ring capture (docs/CAPTURE.md): hand-built rings (exact cases, no
# threads), the NIC model with the capture thread running (against what was
# posted and polled, and against the NIC model's own trace), and a capture
# made to fall behind with the pause hook (exact loss counts).  gdak-trace
# decodes every file.
gdak_add_test(NAME gdak.capture.rings SOURCES ${CMAKE_CURRENT_LIST_DIR}/capture_rings.c
  LABELS unit MEMCHECK ARGS $<TARGET_FILE:gdak-trace>)
add_dependencies(gdak_capture_rings gdak-trace)
gdak_add_test(NAME gdak.capture.emu SOURCES ${CMAKE_CURRENT_LIST_DIR}/capture_emu.c
  LIBS gdak_nic_util LABELS emu TIMEOUT 120 ARGS $<TARGET_FILE:gdak-trace>)
add_dependencies(gdak_capture_emu gdak-trace)
gdak_add_test(NAME gdak.capture.loss SOURCES ${CMAKE_CURRENT_LIST_DIR}/capture_loss.c
  LIBS gdak_nic_util LABELS emu TIMEOUT 120 ARGS $<TARGET_FILE:gdak-trace>)
add_dependencies(gdak_capture_loss gdak-trace)
# The backend hooks: last pass on QP destroy, captures stopped on context
# close, GDAK_TRACE's process-wide capture (complete after exit).
gdak_add_test(NAME gdak.capture.hooks SOURCES ${CMAKE_CURRENT_LIST_DIR}/capture_hooks.c
  LIBS gdak_nic_util LABELS emu TIMEOUT 120)
# What a pass costs, and the idle thread's CPU (prints numbers).
gdak_add_test(NAME gdak.capture.bench SOURCES ${CMAKE_CURRENT_LIST_DIR}/capture_bench.c
  LABELS unit TIMEOUT 120)
