# gdak-run: runs an unmodified rdma-core program on the emulated NIC with
# gdak's libibverbs.so.1 / libmlx5.so.1 (lib/gdak/) first on the library
# path (docs/VERBS.md).  It finds lib/gdak from its own location: the build
# tree's ../lib/gdak, or <prefix>/lib/gdak (where nic_model/ibv and
# nic_model/ibv/mlx5 install the libraries) relative to the installed bindir.
file(RELATIVE_PATH _gdak_run_rel ${CMAKE_INSTALL_FULL_BINDIR} ${CMAKE_INSTALL_PREFIX}/lib/gdak)
add_library(gdak_tool_libdir OBJECT ${CMAKE_CURRENT_LIST_DIR}/gdak_libdir.c)
target_compile_definitions(gdak_tool_libdir PRIVATE GDAK_RUN_REL_LIBDIR="${_gdak_run_rel}")
gdak_set_warnings(gdak_tool_libdir)
add_executable(gdak-run ${CMAKE_CURRENT_LIST_DIR}/gdak-run.c $<TARGET_OBJECTS:gdak_tool_libdir>)
# roce_fault_parse (nic_model/roce/roce.h): --faults is checked by the
# parser the library itself uses
target_include_directories(gdak-run PRIVATE ${PROJECT_SOURCE_DIR}/nic_model)
target_link_libraries(gdak-run PRIVATE gdak)
set_target_properties(gdak-run PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${PROJECT_BINARY_DIR}/tools)
gdak_set_warnings(gdak-run)
install(TARGETS gdak-run RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
# gdak-info shows the devices gdak-run would (it finds lib/gdak the same way)
if(TARGET gdak-info)
  target_sources(gdak-info PRIVATE $<TARGET_OBJECTS:gdak_tool_libdir>)
  target_link_libraries(gdak-info PRIVATE ${CMAKE_DL_LIBS})
endif()
