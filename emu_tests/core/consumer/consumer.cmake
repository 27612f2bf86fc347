# gdak.core.consumer: cmake --install into a temporary prefix, then build and
# run emu_tests/core/consumer/ against it with find_package(gdak) and with
# pkg-config (run.sh).  Reads the build tree, so it runs after the build.
add_test(NAME gdak.core.consumer
  COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/run.sh ${PROJECT_BINARY_DIR} ${CMAKE_CURRENT_LIST_DIR}
          ${CMAKE_COMMAND} ${CMAKE_C_COMPILER} ${CMAKE_GENERATOR} "${GDAK_SANITIZE}"
          "${GDAK_HAVE_MPI}")
set_tests_properties(gdak.core.consumer PROPERTIES LABELS unit TIMEOUT 300)
