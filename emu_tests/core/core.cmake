# core/ unit tests (label unit): formats, tables, host API edges, logging,
# header self-containment, install + consumer project, configure errors.

gdak_add_test(NAME gdak.core.layout SOURCES core/core_layout.c LABELS unit TIMEOUT 30)
gdak_add_test(NAME gdak.core.codec SOURCES core/core_codec.c LABELS unit TIMEOUT 30 MEMCHECK)
gdak_add_test(NAME gdak.core.wire SOURCES core/core_wire.c LABELS unit TIMEOUT 30 MEMCHECK)
gdak_add_test(NAME gdak.core.cqe_owner SOURCES core/core_cqe_owner.c LABELS unit TIMEOUT 60)
gdak_add_test(NAME gdak.core.qp_info SOURCES core/core_qp_info.c LABELS unit TIMEOUT 30 MEMCHECK)
gdak_add_test(NAME gdak.core.open SOURCES core/core_open.c LABELS unit TIMEOUT 60 MEMCHECK)
gdak_add_test(NAME gdak.core.log SOURCES core/core_log.c LABELS unit TIMEOUT 60)
gdak_add_test(NAME gdak.core.env SOURCES core/core_env.c LABELS unit TIMEOUT 60 MEMCHECK)

# The table test also parses the installed mlx5dv.h, so an opcode or syndrome
# a newer rdma-core adds shows up as a missing table entry.
find_file(GDAK_MLX5DV_H infiniband/mlx5dv.h HINTS ${IBVERBS_INCLUDE_DIRS})
mark_as_advanced(GDAK_MLX5DV_H)
gdak_add_test(NAME gdak.core.tables SOURCES core/core_tables.c LABELS unit TIMEOUT 30 MEMCHECK
              ARGS ${GDAK_MLX5DV_H})

include(${CMAKE_CURRENT_LIST_DIR}/headers/headers.cmake)
include(${CMAKE_CURRENT_LIST_DIR}/consumer/consumer.cmake)

# Configuring with libev / rdma-core hidden fails naming the package and the
# apt line (core/core_configure_errors.sh configures the source tree in a temp dir).
add_test(NAME gdak.core.configure_errors
  COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/core_configure_errors.sh ${PROJECT_SOURCE_DIR}
          ${CMAKE_COMMAND} ${CMAKE_GENERATOR})
set_tests_properties(gdak.core.configure_errors PROPERTIES LABELS unit TIMEOUT 300)

# gdak-info: text, --json (parsed), environment as read, bad flags.
if(TARGET gdak-info)
  add_test(NAME gdak.core.info
    COMMAND ${CMAKE_COMMAND} -DINFO=$<TARGET_FILE:gdak-info> -DVERSION=${PROJECT_VERSION}
            -P ${CMAKE_CURRENT_LIST_DIR}/scripts/info_check.cmake)
  set_tests_properties(gdak.core.info PROPERTIES LABELS unit TIMEOUT 60)
endif()
# The configuration table is the library's one getenv (a new one fails this).
add_test(NAME gdak.core.one_getenv
  COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/scripts/one_getenv.sh ${PROJECT_SOURCE_DIR})
set_tests_properties(gdak.core.one_getenv PROPERTIES LABELS unit TIMEOUT 60)
# run-demo.sh installs the build dependencies only, run-tests.sh the test
# tools as well (apt and dpkg faked: nothing is installed).
add_test(NAME gdak.core.deps_split
  COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/scripts/deps_split.sh ${PROJECT_SOURCE_DIR})
set_tests_properties(gdak.core.deps_split PROPERTIES LABELS unit TIMEOUT 60)
# Every command block of README.md and docs/*.md runs (or says what it needs):
# tools/doctest.sh.  Label doc: a label of its own, as the blocks it runs are
# whole programs, not unit checks.
add_test(NAME gdak.docs.commands
  COMMAND bash ${PROJECT_SOURCE_DIR}/tools/doctest.sh ${PROJECT_SOURCE_DIR} ${PROJECT_BINARY_DIR})
set_tests_properties(gdak.docs.commands PROPERTIES LABELS doc TIMEOUT 900)
# doctest.sh's own errors: its usage (exit 2), --help, an unmarked block.
add_test(NAME gdak.docs.doctest_usage
  COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/scripts/doctest_usage.sh ${PROJECT_SOURCE_DIR}
  ${PROJECT_BINARY_DIR})
set_tests_properties(gdak.docs.doctest_usage PROPERTIES LABELS unit TIMEOUT 60)
