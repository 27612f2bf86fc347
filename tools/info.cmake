# gdak-info: backends, build configuration, CUDA driver/GPUs (dlopen at run
# time), verbs devices, NIC-model configuration.
add_executable(gdak-info ${CMAKE_CURRENT_SOURCE_DIR}/gdak-info.c)
target_link_libraries(gdak-info PRIVATE gdak)
gdak_set_warnings(gdak-info)

# The NIC model's gdak_nic_* getters (gdak/nic.h) are used once a NIC-model
# source defines them; until then gdak-info shows the environment only.
set(_info_nic_api 0)
file(GLOB _info_nm_src ${PROJECT_SOURCE_DIR}/nic_model/*.c)
foreach(f IN LISTS _info_nm_src)
  file(STRINGS ${f} _hit REGEX "^[a-z].*[ *]gdak_nic_get_threads\\(void\\)")
  if(_hit)
    set(_info_nic_api 1)
  endif()
endforeach()
string(TOUPPER "${CMAKE_BUILD_TYPE}" _info_bt)
target_compile_definitions(gdak-info PRIVATE
  GDAK_INFO_NIC_API=${_info_nic_api}
  GDAK_INFO_BUILD_TYPE="${CMAKE_BUILD_TYPE}"
  GDAK_INFO_SANITIZE="${GDAK_SANITIZE}"
  GDAK_INFO_COMPILER="${CMAKE_C_COMPILER_ID} ${CMAKE_C_COMPILER_VERSION}")
install(TARGETS gdak-info RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
