# gdak's ConnectX backend against the emulated mlx5 device (label hwemu): no
# ConnectX, no GPU needed.  The programs run under gdak-run, which puts gdak's
# libibverbs.so.1 and libmlx5.so.1 first (nic_model/ibv/), and host threads
# play the device.  Named gdak.hw.emu.* so that CI's hw phase (.ci/run, the
# ^gdak[.]hw[.] tests of the hw preset) runs them; hwemu_run.sh checks what
# each program printed.  GDAK_HW_QP_PATH=verbs pins the mlx5dv_create_qp +
# mlx5dv_init_obj path.
if(TARGET gdak-run AND TARGET gdak_mlx5 AND TARGET gdak-demo AND TARGET gdak-perf
   AND TARGET gdak-trace)
  set(_hwemu_env "GDAK_RUN=$<TARGET_FILE:gdak-run>" "GDAK_TRACE_TOOL=$<TARGET_FILE:gdak-trace>"
    "HWEMU_DEMO=$<TARGET_FILE:gdak-demo>" "HWEMU_PERF=$<TARGET_FILE:gdak-perf>"
    "HWEMU_SCEN=$<TARGET_FILE:gdak_hw_scenarios>")
  function(gdak_hwemu_test name path)
    add_test(NAME gdak.hw.emu.${name}
      COMMAND bash ${CMAKE_CURRENT_FUNCTION_LIST_DIR}/hwemu_run.sh ${ARGN})
    set_tests_properties(gdak.hw.emu.${name} PROPERTIES LABELS hwemu TIMEOUT 300
      SKIP_RETURN_CODE 77 ENVIRONMENT "${_hwemu_env};GDAK_HW_QP_PATH=${path}")
  endfunction()
  # the demo, the perf tests and the scenarios (plain and traced) on one QP
  # path; PREFIX starts their names
  function(gdak_hwemu_suite prefix path)
    gdak_hwemu_test(${prefix}demo ${path} demo)
    foreach(t write_bw write_lat atomic_rate send_bw)
      gdak_hwemu_test(${prefix}perf_${t} ${path} perf ${t})
    endforeach()
    gdak_hwemu_test(${prefix}scenarios ${path} scenarios)
    gdak_hwemu_test(${prefix}scenarios_traced ${path} scenarios traced)
  endfunction()
  gdak_hwemu_suite("" verbs)
endif()

# hw_mlx5's DC path (verbs: mlx5dv_create_qp DCI / DCT) against the emulated
# device: the dc scenario (emu_tests/scenarios/scen_dc.c, gdak.nic.dc on the
# NIC model) - one DCI, two DCTs in two PDs, WRITE / READ / atomics /
# put+signal / inline puts checked byte for byte, a wrong access key retried
# out (TRANSPORT_RETRY_EXC_ERR), the backend's refusals.  PATH picks the QP
# path (hwemu_devx.cmake adds devx_dc).
if(TARGET gdak-run AND TARGET gdak_mlx5 AND TARGET gdak_hw_scenarios)
  function(gdak_hwemu_dc name path)
    add_test(NAME gdak.hw.emu.${name}
      COMMAND $<TARGET_FILE:gdak-run> -- $<TARGET_FILE:gdak_hw_scenarios> mlx5_0 dc)
    set_tests_properties(gdak.hw.emu.${name} PROPERTIES LABELS hwemu TIMEOUT 300
      SKIP_RETURN_CODE 77 PASS_REGULAR_EXPRESSION "scenario dc +DB +on mlx5_0: ok"
      FAIL_REGULAR_EXPRESSION "nm_violation|FAILED|[1-9][0-9]* failed"
      ENVIRONMENT "GDAK_HW_NO_GPU_MAP=1;GDAK_HW_QP_PATH=${path};GDAK_LOG=warn")
  endfunction()
  gdak_hwemu_dc(dc verbs)
endif()
