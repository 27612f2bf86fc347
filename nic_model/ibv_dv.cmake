# The provider libraries that programs link next to libibverbs.so.1
# (perftest: libmlx5.so.1 and libefa.so.1), gdak's own so that they load
# against gdak's libibverbs (nic_model/ibv/mlx5/, nic_model/ibv/efa/,
# docs/VERBS.md).  Kept out of nic_model/ibv's own list: separate libraries,
# separate lists.
add_subdirectory(${CMAKE_CURRENT_LIST_DIR}/ibv/mlx5 ${CMAKE_CURRENT_BINARY_DIR}/ibv_mlx5)
add_subdirectory(${CMAKE_CURRENT_LIST_DIR}/ibv/efa ${CMAKE_CURRENT_BINARY_DIR}/ibv_efa)
