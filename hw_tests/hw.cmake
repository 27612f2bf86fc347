# hw_tests/: the shared scenarios (emu_tests/scenarios/) against a ConnectX.
# Label hw; each exits 77 (skipped) without an mlx5 device.  Host threads play
# the device, so the backend must hand out host addresses even on a GPU
# machine: GDAK_HW_NO_GPU_MAP=1.
gdak_add_test(NAME gdak.hw.scenarios SOURCES hw_scenarios.c
              LIBS gdak_scenarios LABELS hw TIMEOUT 300
              ENV GDAK_HW_NO_GPU_MAP=1)

# The backend's CUDA plumbing on a real GPU (no ConnectX needed); exits 77
# without one.  It calls hw_mlx5's internal functions.
gdak_add_test(NAME gdak.hw.cuda SOURCES hw_cuda_test.c LABELS cuda TIMEOUT 120)
target_include_directories(gdak_hw_cuda PRIVATE ${PROJECT_SOURCE_DIR}/hw_mlx5)

# DEVX (path 2) PRM command encoding: no hardware needed.
gdak_add_test(NAME gdak.hw.prm SOURCES hw_prm_test.c LABELS unit)
target_include_directories(gdak_hw_prm PRIVATE ${PROJECT_SOURCE_DIR}/hw_mlx5)

# The GPU-as-the-device scenarios (emu_tests/scenarios/scen_cuda.cu) against
# a ConnectX: needs a GPU and an mlx5 device, skipped (77) otherwise.  Rings
# and the UAR are mapped into the GPU (no GDAK_HW_NO_GPU_MAP here).
if(GDAK_HAVE_CUDA)
  gdak_add_test(NAME gdak.hw.scenarios_cuda
                SOURCES ${PROJECT_SOURCE_DIR}/emu_tests/scenarios/scen_cuda.cu
                LABELS hw TIMEOUT 180 ARGS --hw)
  # the same with the rings in GPU memory (path 2, DEVX)
  gdak_add_test(NAME gdak.hw.scenarios_cuda_devx
                SOURCES ${PROJECT_SOURCE_DIR}/emu_tests/scenarios/scen_cuda.cu
                LABELS hw TIMEOUT 180 ARGS --hw queues-gpu)
endif()
