# hw_tests/: the shared scenarios (emu_tests/scenarios/) against a ConnectX.
# Label hw; each exits 77 (skipped) without an mlx5 device.  Host threads play
# the device, so the backend must hand out host addresses even on a GPU
# machine: GDAK_HW_NO_GPU_MAP=1.
gdak_add_test(NAME gdak.hw.scenarios SOURCES hw_scenarios.c
              LIBS gdak_scenarios LABELS hw TIMEOUT 300
              ENV GDAK_HW_NO_GPU_MAP=1)
