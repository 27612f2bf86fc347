# Unmodified rdma-core programs on the emulated NIC (docs/VERBS.md): gdak's
# libmlx5.so.1, gdak-run, and Debian's own binaries (ibverbs-utils, perftest,
# python3-pyverbs, tshark) run through gdak-run.  Tests whose binary is not
# installed exit 77.

# gdak's libmlx5.so.1, part 1: the map's every name@version resolves and the
# calls answer "not an mlx5 device" as rdma-core's do.
if(TARGET gdak_mlx5)
  gdak_add_test(NAME gdak.verbs_bin.mlx5 SOURCES ${CMAKE_CURRENT_LIST_DIR}/verbs_bin_mlx5.c
    LABELS unit ARGS $<TARGET_FILE:gdak_mlx5> ${PROJECT_SOURCE_DIR}/nic_model/ibv/mlx5/libmlx5.map
    TIMEOUT 30)
endif()
