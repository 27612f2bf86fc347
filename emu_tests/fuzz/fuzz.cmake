# Fuzzers (emu_tests/fuzz/, docs/RELIABILITY.md).  Each target is built two
# ways:
#   gdak.fuzz.<t>  (every build) the target linked with fuzz/replay.c: runs
#                  each file of fuzz/corpus/<t>/ once; CTest label fuzz
#   gdak-fuzz-<t>  (-DGDAK_FUZZ=ON with clang, preset `fuzz`) the libFuzzer
#                  binary for long runs
# gdak-fuzz-seeds writes the generated part of the seed corpora.
set(_fz ${CMAKE_CURRENT_LIST_DIR})

# The replays also carry the label of the suite they belong to (unit / emu),
# so the asan and tsan presets (labels unit|emu|net) replay the corpora
# under the sanitizers too.
gdak_add_test(NAME gdak.fuzz.trace SOURCES ${_fz}/fuzz_trace.c ${_fz}/replay.c
  LIBS gdak_trace_tool LABELS fuzz unit TIMEOUT 120 MEMCHECK ARGS ${_fz}/corpus/trace)
gdak_add_test(NAME gdak.fuzz.roce SOURCES ${_fz}/fuzz_roce.c ${_fz}/replay.c
  LABELS fuzz unit TIMEOUT 120 MEMCHECK ARGS ${_fz}/corpus/roce)
target_include_directories(gdak_fuzz_roce PRIVATE ${PROJECT_SOURCE_DIR}/nic_model/roce)
gdak_add_test(NAME gdak.fuzz.wqe SOURCES ${_fz}/fuzz_wqe.c ${_fz}/replay.c
  LABELS fuzz emu TIMEOUT 300 MEMCHECK ARGS ${_fz}/corpus/wqe)

# DEVX mailboxes through gdak's libmlx5 + libibverbs (no libgdak in the
# process: its verbs transport would bring the system libibverbs)
add_executable(gdak_fuzz_devx ${_fz}/fuzz_devx.c ${_fz}/replay.c)
target_link_libraries(gdak_fuzz_devx PRIVATE gdak_mlx5 gdak_ibverbs)
gdak_set_warnings(gdak_fuzz_devx)
add_test(NAME gdak.fuzz.devx COMMAND gdak_fuzz_devx ${_fz}/corpus/devx)
set_tests_properties(gdak.fuzz.devx PROPERTIES LABELS "fuzz;emu" TIMEOUT 120
  SKIP_RETURN_CODE 77)

add_executable(gdak-fuzz-seeds ${_fz}/seeds.c)
target_link_libraries(gdak-fuzz-seeds PRIVATE gdak)
target_include_directories(gdak-fuzz-seeds PRIVATE ${PROJECT_SOURCE_DIR}/nic_model/roce)
gdak_set_warnings(gdak-fuzz-seeds)
add_test(NAME gdak.fuzz.seeds COMMAND bash ${_fz}/seeds_check.sh $<TARGET_FILE:gdak-fuzz-seeds>
  ${_fz}/corpus)
set_tests_properties(gdak.fuzz.seeds PROPERTIES LABELS "fuzz;unit" TIMEOUT 60)

if(GDAK_FUZZ)
  if(NOT CMAKE_C_COMPILER_ID MATCHES "Clang")
    message(FATAL_ERROR "GDAK_FUZZ=ON needs clang (libFuzzer): configure with the `fuzz` preset "
                        "or -DCMAKE_C_COMPILER=clang; the replay drivers build without it")
  endif()
  # libFuzzer steers by the coverage of the code under test: the library
  # objects get the coverage instrumentation too (without libFuzzer's main)
  foreach(lib gdak_core gdak_nic gdak_trace_tool gdak_ibverbs)
    if(TARGET ${lib})
      set_property(TARGET ${lib} APPEND PROPERTY COMPILE_OPTIONS -fsanitize=fuzzer-no-link)
    endif()
  endforeach()
  foreach(t trace roce wqe)
    add_executable(gdak-fuzz-${t} ${_fz}/fuzz_${t}.c)
    target_link_libraries(gdak-fuzz-${t} PRIVATE gdak)
    target_compile_options(gdak-fuzz-${t} PRIVATE -fsanitize=fuzzer)
    target_link_options(gdak-fuzz-${t} PRIVATE -fsanitize=fuzzer)
    gdak_set_warnings(gdak-fuzz-${t})
  endforeach()
  target_link_libraries(gdak-fuzz-trace PRIVATE gdak_trace_tool)
  add_executable(gdak-fuzz-devx ${_fz}/fuzz_devx.c)
  target_link_libraries(gdak-fuzz-devx PRIVATE gdak_mlx5 gdak_ibverbs)
  target_compile_options(gdak-fuzz-devx PRIVATE -fsanitize=fuzzer)
  target_link_options(gdak-fuzz-devx PRIVATE -fsanitize=fuzzer)
  gdak_set_warnings(gdak-fuzz-devx)
  target_include_directories(gdak-fuzz-roce PRIVATE ${PROJECT_SOURCE_DIR}/nic_model/roce)
endif()
