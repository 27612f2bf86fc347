# gdak's libmlx5.so.1 for unmodified rdma-core programs (nic_model/ibv/mlx5/,
# docs/VERBS.md).  Kept out of nic_model/ibv's own list so that the two
# libraries of lib/gdak/ are built by separate lists.
add_subdirectory(${CMAKE_CURRENT_LIST_DIR}/ibv/mlx5 ${CMAKE_CURRENT_BINARY_DIR}/ibv_mlx5)
