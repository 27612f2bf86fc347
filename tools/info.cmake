# gdak-info: backends, build configuration, CUDA driver/GPUs (dlopen at run
# time), verbs devices, NIC-model configuration.
add_executable(gdak-info ${CMAKE_CURRENT_SOURCE_DIR}/gdak-info.c)
target_link_libraries(gdak-info PRIVATE gdak)
gdak_set_warnings(gdak-info)
target_compile_definitions(gdak-info PRIVATE
  GDAK_INFO_BUILD_TYPE="${CMAKE_BUILD_TYPE}"
  GDAK_INFO_SANITIZE="${GDAK_SANITIZE}"
  GDAK_INFO_COMPILER="${CMAKE_C_COMPILER_ID} ${CMAKE_C_COMPILER_VERSION}")
install(TARGETS gdak-info RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
