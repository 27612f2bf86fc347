# gdak's ConnectX backend against the emulated mlx5 device: the programs and
# the scenario suite run under gdak-run, so hw_mlx5 opens lib/gdak's
# libibverbs.so.1 / libmlx5.so.1 (NIC-model queues) instead of a ConnectX.
# Label hw-emu (no hardware needed: these run in CI).  GDAK_HW_PATH picks
# hw_mlx5's QP path: devx = DEVX objects over host-memory umem.
if(NOT GDAK_HW_MLX5)
  return()
endif()
set(_hwe_env GDAK_DEVICE=mlx5_0 GDAK_HW_DEVICE=mlx5_0 GDAK_HW_NO_GPU_MAP=1 GDAK_LOG=warn)
set(_hwe_run $<TARGET_FILE:gdak-run> --)

function(gdak_hw_emu_test name path)
  cmake_parse_arguments(A "" "PASS" "CMD" ${ARGN})
  add_test(NAME gdak.hw_emu.${path}.${name} COMMAND ${_hwe_run} ${A_CMD})
  set_tests_properties(gdak.hw_emu.${path}.${name} PROPERTIES
    LABELS "hw-emu;emu" TIMEOUT 300 SKIP_RETURN_CODE 77
    ENVIRONMENT "${_hwe_env};GDAK_HW_PATH=${path}"
    PASS_REGULAR_EXPRESSION "${A_PASS}"
    FAIL_REGULAR_EXPRESSION "gdak E |FAILED|data verified: no")
endfunction()

foreach(path devx)
  # --no-trace: under gdak-run the program's libgdak and the NIC model inside
  # gdak's libibverbs would both write the GDAK_TRACE file
  gdak_hw_emu_test(demo ${path} CMD $<TARGET_FILE:gdak-demo> --no-trace PASS "gdak-demo: ALL OK")
  foreach(t write_bw write_lat atomic_rate send_bw)
    gdak_hw_emu_test(perf_${t} ${path} CMD $<TARGET_FILE:gdak-perf> ${t} -n 200 -r 1
                     PASS "data verified: yes")
  endforeach()
  gdak_hw_emu_test(scenarios ${path} CMD $<TARGET_FILE:gdak_hw_scenarios> mlx5_0
                   PASS "[1-9][0-9]* passed, 0 failed")
endforeach()

# The DEVX context flags hw_mlx5 sets (no-record doorbell, collapsed CQ)
add_executable(gdak_hw_emu_flags hw_emu_flags.c)
target_link_libraries(gdak_hw_emu_flags PRIVATE gdak gdak_testlib gdak_nic_util)
target_include_directories(gdak_hw_emu_flags PRIVATE ${PROJECT_SOURCE_DIR}/emu_tests)
gdak_set_warnings(gdak_hw_emu_flags)
gdak_hw_emu_test(flags devx CMD $<TARGET_FILE:gdak_hw_emu_flags> PASS "[1-9][0-9]* passed, 0 failed")

# The twin with a CUDA kernel as the device (label cuda; 77 without a GPU):
# rings in host memory mapped into the GPU; the UAR page is ordinary memory,
# cudaHostRegisterIoMemory refuses it, and the QPs fall back to the CPU
# proxy - the fallback every GPU stack takes here (docs/VERBS.md "DEVX").
if(GDAK_HAVE_CUDA)
  add_test(NAME gdak.hw_emu.devx.scenarios_cuda
           COMMAND ${_hwe_run} $<TARGET_FILE:gdak_hw_scenarios_cuda> --hw)
  set_tests_properties(gdak.hw_emu.devx.scenarios_cuda PROPERTIES
    LABELS "cuda;hw-emu" TIMEOUT 300 SKIP_RETURN_CODE 77
    ENVIRONMENT "GDAK_HW_DEVICE=mlx5_0;GDAK_HW_PATH=devx;GDAK_LOG=warn")
endif()
