# gdak's libibverbs.so.1 (nic_model/ibv/): tests that link it through
# rdma-core's headers, as a verbs program does.  Not through
# gdak_add_test(): that links libgdak, whose verbs transport brings the
# system libibverbs, which must not be in these processes.
function(gdak_add_verbs_lib_test name src)
  string(REPLACE "." "_" tgt "${name}")
  add_executable(${tgt} ${src})
  target_link_libraries(${tgt} PRIVATE gdak_ibverbs gdak_testlib)
  gdak_set_warnings(${tgt})
  add_test(NAME ${name} COMMAND ${tgt})
  set_tests_properties(${name} PROPERTIES TIMEOUT 120 SKIP_RETURN_CODE 77
    LABELS "emu;net")
endfunction()

gdak_add_verbs_lib_test(gdak.verbs.lib ${CMAKE_CURRENT_SOURCE_DIR}/verbs_lib.c)
