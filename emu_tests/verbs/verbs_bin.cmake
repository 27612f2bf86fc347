# Unmodified rdma-core programs on the emulated NIC (docs/VERBS.md): gdak's
# libmlx5.so.1, gdak-run, and Debian's own binaries (ibverbs-utils, perftest,
# python3-pyverbs, tshark) run through gdak-run.  Tests whose binary is not
# installed exit 77.

# gdak's libmlx5.so.1 (part 1) and libefa.so.1: the map's every name@version
# resolves, so do rdma-core's own exports, and the calls answer "not an mlx5
# device" / "not an EFA" as rdma-core's do.  One executable, two tests.
if(TARGET gdak_mlx5 AND TARGET gdak_efa)
  gdak_add_test(NAME gdak.verbs_bin.mlx5 SOURCES ${CMAKE_CURRENT_LIST_DIR}/verbs_bin_dv.c
    LABELS unit TIMEOUT 30
    ARGS mlx5 $<TARGET_FILE:gdak_mlx5> ${PROJECT_SOURCE_DIR}/nic_model/ibv/mlx5/libmlx5.map)
  add_test(NAME gdak.verbs_bin.efa COMMAND gdak_verbs_bin_mlx5 efa $<TARGET_FILE:gdak_efa>
    ${PROJECT_SOURCE_DIR}/nic_model/ibv/efa/libefa.map)
  set_tests_properties(gdak.verbs_bin.efa PROPERTIES LABELS unit TIMEOUT 30 SKIP_RETURN_CODE 77)
endif()

# Debian's binaries through gdak-run.  Each test has its own slot, and each
# build tree its own net: the test's devices live on 127.NET.SLOT.1 and .2
# (verbs_bin_lib.sh), so ctest -j runs them side by side, and two build
# trees on one machine run them at once.
if(TARGET gdak-run AND TARGET gdak_mlx5 AND TARGET gdak_efa)
  set(_vb_env "GDAK_RUN=$<TARGET_FILE:gdak-run>" "GDAK_TRACE_TOOL=$<TARGET_FILE:gdak-trace>"
    "GDAK_INFO_TOOL=$<TARGET_FILE:gdak-info>")
  # gdak's own programs, which must not load lib/gdak (verbs_bin_run.sh)
  set(_vb_native "")
  foreach(t gdak-perf gdak-demo)
    if(TARGET ${t})
      string(APPEND _vb_native "$<TARGET_FILE:${t}>:")
    endif()
  endforeach()
  list(APPEND _vb_env "GDAK_NATIVE_TOOLS=${_vb_native}")
  if(GDAK_SANITIZED)
    list(APPEND _vb_env VB_SANITIZED=1)
  endif()
  string(MD5 _vb_h "${PROJECT_BINARY_DIR}")
  string(SUBSTRING "${_vb_h}" 0 4 _vb_h)
  math(EXPR _vb_net "0x${_vb_h} % 254 + 1")
  list(APPEND _vb_env VB_NET=${_vb_net})
  set(_vb_slot 0)
  # gdak_vb_test(NAME SCRIPT [ARGS...]): one script run, the next slot
  function(gdak_vb_test name script)
    add_test(NAME gdak.verbs_bin.${name}
      COMMAND bash ${CMAKE_CURRENT_FUNCTION_LIST_DIR}/${script} ${ARGN})
    set_tests_properties(gdak.verbs_bin.${name} PROPERTIES LABELS net TIMEOUT 600
      SKIP_RETURN_CODE 77 ENVIRONMENT "${_vb_env};VB_SLOT=${_vb_slot}")
    math(EXPR s "${_vb_slot} + 1")
    set(_vb_slot ${s} PARENT_SCOPE)
  endfunction()

  gdak_vb_test(run verbs_bin_run.sh)
  gdak_vb_test(devices verbs_bin_devices.sh)
  gdak_vb_test(rc_pingpong verbs_bin_pingpong.sh rc)
  gdak_vb_test(srq_pingpong verbs_bin_pingpong.sh srq)
  gdak_vb_test(qp_types verbs_bin_qptypes.sh)
  foreach(p ib_write_bw ib_read_bw ib_send_bw ib_atomic_bw ib_write_lat ib_read_lat ib_send_lat)
    gdak_vb_test(${p} verbs_bin_perftest.sh ${p} plain)
  endforeach()
  foreach(p ib_write_bw ib_read_bw ib_send_bw ib_atomic_bw ib_write_lat ib_read_lat ib_send_lat)
    gdak_vb_test(${p}_trace verbs_bin_perftest.sh ${p} trace)
  endforeach()
  foreach(p ib_write_bw ib_read_bw ib_send_bw ib_atomic_bw ib_write_lat ib_read_lat ib_send_lat)
    gdak_vb_test(${p}_loss verbs_bin_perftest.sh ${p} faults)
  endforeach()
  gdak_vb_test(ib_write_bw_err verbs_bin_perftest.sh ib_write_bw wqe_err)
  gdak_vb_test(tshark verbs_bin_tshark.sh)
  gdak_vb_test(pyverbs verbs_bin_pyverbs.sh)
  gdak_vb_test(rdmacm verbs_bin_rdmacm.sh)
  gdak_vb_test(not_emulated verbs_bin_noemu.sh)
  gdak_vb_test(install verbs_bin_install.sh ${CMAKE_COMMAND} ${PROJECT_BINARY_DIR})
endif()
