# hw_mlx5's DEVX path (path 2: CREATE_CQ / CREATE_QP over umem, rings and
# records in host memory) against the emulated mlx5 device, the same runs
# hwemu.cmake makes for the verbs path, plus the DEVX context flags, and the
# CUDA twin.  GDAK_HW_QP_PATH=devx; gdak's DEVX layer (nic_model/ibv/dx_*.c)
# parses every mailbox hw_devx.c sends.
if(COMMAND gdak_hwemu_suite)
  gdak_hwemu_suite(devx_ devx)
endif()

if(TARGET gdak-run AND TARGET gdak_mlx5)
  # no-record doorbell (send_dbr_mode NO_DBR_EXT) and collapsed CQs (cc)
  add_executable(gdak_hw_emu_flags hw_emu_flags.c)
  target_link_libraries(gdak_hw_emu_flags PRIVATE gdak gdak_testlib gdak_nic_util)
  target_include_directories(gdak_hw_emu_flags PRIVATE ${PROJECT_SOURCE_DIR}/emu_tests)
  gdak_set_warnings(gdak_hw_emu_flags)
  add_test(NAME gdak.hw.emu.devx_flags
    COMMAND $<TARGET_FILE:gdak-run> -- $<TARGET_FILE:gdak_hw_emu_flags>)
  set_tests_properties(gdak.hw.emu.devx_flags PROPERTIES LABELS hwemu TIMEOUT 300
    SKIP_RETURN_CODE 77 PASS_REGULAR_EXPRESSION "[1-9][0-9]* passed, 0 failed"
    FAIL_REGULAR_EXPRESSION "gdak E |nm_violation"
    ENVIRONMENT "GDAK_HW_DEVICE=mlx5_0;GDAK_HW_QP_PATH=devx;GDAK_LOG=warn")

  # A CUDA kernel as the device (label cuda; 77 without a GPU): host-memory
  # rings mapped into the GPU; the UAR page is ordinary memory, so
  # cudaHostRegisterIoMemory refuses it and the QPs fall back to the CPU
  # proxy - the fallback every GPU stack takes here (docs/VERBS.md "DEVX").
  if(GDAK_HAVE_CUDA AND TARGET gdak_hw_scenarios_cuda)
    add_test(NAME gdak.hw.emu.devx_scenarios_cuda
      COMMAND $<TARGET_FILE:gdak-run> -- $<TARGET_FILE:gdak_hw_scenarios_cuda> --hw)
    set_tests_properties(gdak.hw.emu.devx_scenarios_cuda PROPERTIES
      LABELS "cuda;hwemu" TIMEOUT 300 SKIP_RETURN_CODE 77
      ENVIRONMENT "GDAK_HW_DEVICE=mlx5_0;GDAK_HW_QP_PATH=devx;GDAK_LOG=warn")
    # ... and with the rings, CQs and records in GPU memory (queues-gpu:
    # GDAK_QP_F_QUEUES_GPU, hw_devx.c's cudaMalloc umem), which the emulated
    # device runs through its GPU-memory ring engine (nm_ring_gpu.c)
    add_test(NAME gdak.hw.emu.devx_scenarios_cuda_gpu
      COMMAND $<TARGET_FILE:gdak-run> -- $<TARGET_FILE:gdak_hw_scenarios_cuda> --hw queues-gpu)
    set_tests_properties(gdak.hw.emu.devx_scenarios_cuda_gpu PROPERTIES
      LABELS "cuda;hwemu" TIMEOUT 300 SKIP_RETURN_CODE 77 RESOURCE_LOCK gdak_gpu
      ENVIRONMENT "GDAK_HW_DEVICE=mlx5_0;GDAK_HW_QP_PATH=devx;GDAK_LOG=warn")
  endif()
endif()

# the dc scenario (hwemu.cmake) with its DCIs by DEVX CREATE_QP st=DCI
if(COMMAND gdak_hwemu_dc)
  gdak_hwemu_dc(devx_dc devx)
endif()

# The GPU twin of the dc scenario through hw_mlx5 (label cuda; 77 without a
# GPU): emu_tests/cuda/cuda_dc.cu given the emulated mlx5_0, a CUDA thread
# driving the DCI, data in GPU memory.  The DEVX path, as
# devx_scenarios_cuda: its rings map into the GPU, the UAR falls back to
# the CPU proxy.
if(GDAK_HAVE_CUDA AND TARGET gdak_cuda_dc AND COMMAND gdak_hwemu_dc)
  add_test(NAME gdak.hw.emu.devx_dc_cuda
    COMMAND $<TARGET_FILE:gdak-run> -- $<TARGET_FILE:gdak_cuda_dc> mlx5_0)
  set_tests_properties(gdak.hw.emu.devx_dc_cuda PROPERTIES
    LABELS "cuda;hwemu" TIMEOUT 300 SKIP_RETURN_CODE 77 RESOURCE_LOCK gdak_gpu
    FAIL_REGULAR_EXPRESSION "nm_violation"
    ENVIRONMENT "GDAK_HW_DEVICE=mlx5_0;GDAK_HW_QP_PATH=devx;GDAK_LOG=warn")
endif()
