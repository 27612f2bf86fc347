# The provider libraries that programs link next to libibverbs.so.1
# (perftest: libmlx5.so.1 and libefa.so.1), gdak's own so that they load
# against gdak's libibverbs (nic_model/ibv/mlx5/, nic_model/ibv/efa/,
# docs/VERBS.md).  Kept out of nic_model/ibv's own list: separate libraries,
# separate lists.
# gdak_provider_library(<target> <name> <sources>...): lib<name>.so.1 in
# lib/gdak/ (next to gdak's libibverbs.so.1, where gdak-run looks), exporting
# what the calling folder's lib<name>.map lists, under rdma-core's soname.
# Only the .so.1 is built: no lib<name>.so link-time name in lib/gdak, so
# nothing links against it by accident instead of rdma-core's.
function(gdak_provider_library tgt name)
  set(map ${CMAKE_CURRENT_SOURCE_DIR}/lib${name}.map)
  add_library(${tgt} SHARED ${ARGN})
  set_target_properties(${tgt} PROPERTIES
    OUTPUT_NAME ${name}
    SUFFIX ".so.1"
    LIBRARY_OUTPUT_DIRECTORY ${PROJECT_BINARY_DIR}/lib/gdak
    C_VISIBILITY_PRESET default
    LINK_DEPENDS ${map})
  target_include_directories(${tgt} PRIVATE ${IBVERBS_INCLUDE_DIRS}
                             ${CMAKE_CURRENT_SOURCE_DIR}/..)
  target_link_options(${tgt} PRIVATE -Wl,--version-script=${map} -Wl,-soname,lib${name}.so.1)
  if(NOT GDAK_SANITIZE)
    # sanitizer runtimes come with the program, not with the library
    target_link_options(${tgt} PRIVATE -Wl,--no-undefined)
  endif()
  gdak_set_warnings(${tgt})
  install(TARGETS ${tgt} LIBRARY DESTINATION lib/gdak)
endfunction()

add_subdirectory(${CMAKE_CURRENT_LIST_DIR}/ibv/mlx5 ${CMAKE_CURRENT_BINARY_DIR}/ibv_mlx5)
add_subdirectory(${CMAKE_CURRENT_LIST_DIR}/ibv/efa ${CMAKE_CURRENT_BINARY_DIR}/ibv_efa)
