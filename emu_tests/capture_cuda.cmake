# The ring capture's GPU path (core/trace/capture_cuda.c) for real: rings and
# doorbell records in GPU memory, written by the test through the driver API,
# read back by the capture's own copies (docs/CAPTURE.md, "GPU-resident
# rings").  A C test that loads libcuda.so.1 with dlopen, so it builds
# everywhere, needs no CUDA toolkit at run time, and exits 77 (skipped)
# without a driver or GPU.  On a GPU machine:
#   build/<dir>/emu_tests/gdak_capture_cuda build/<dir>/tools/gdak-trace
gdak_add_test(NAME gdak.capture.cuda SOURCES ${CMAKE_CURRENT_LIST_DIR}/capture_cuda.c
  LABELS cuda TIMEOUT 300 ARGS $<TARGET_FILE:gdak-trace>)
add_dependencies(gdak_capture_cuda gdak-trace)
target_link_libraries(gdak_capture_cuda PRIVATE ${CMAKE_DL_LIBS})

# The same binary against a stand-in libcuda.so.1 (capture_cuda_fake.c:
# device memory the host cannot touch, contexts and streams checked), so the
# dlopen / context / stream / copy code runs on machines without a GPU too.
add_library(gdak_fake_libcuda SHARED ${CMAKE_CURRENT_LIST_DIR}/capture_cuda_fake.c)
set_target_properties(gdak_fake_libcuda PROPERTIES PREFIX "" OUTPUT_NAME "libcuda"
  SUFFIX ".so.1" LIBRARY_OUTPUT_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR}/fakecuda
  C_VISIBILITY_PRESET hidden)
gdak_set_warnings(gdak_fake_libcuda)
add_dependencies(gdak_capture_cuda gdak_fake_libcuda)
add_test(NAME gdak.capture.cuda_fake COMMAND gdak_capture_cuda $<TARGET_FILE:gdak-trace>)
set_tests_properties(gdak.capture.cuda_fake PROPERTIES TIMEOUT 300 SKIP_RETURN_CODE 77
  LABELS unit ENVIRONMENT "LD_LIBRARY_PATH=${CMAKE_CURRENT_BINARY_DIR}/fakecuda")
if(GDAK_VALGRIND AND NOT GDAK_SANITIZED)
  add_test(NAME gdak.capture.cuda_fake.memcheck
    COMMAND ${GDAK_VALGRIND} --tool=memcheck --error-exitcode=99 --leak-check=full
            --errors-for-leak-kinds=definite --track-origins=yes --quiet
            $<TARGET_FILE:gdak_capture_cuda> $<TARGET_FILE:gdak-trace>)
  set_tests_properties(gdak.capture.cuda_fake.memcheck PROPERTIES TIMEOUT 600
    SKIP_RETURN_CODE 77 LABELS memcheck
    ENVIRONMENT "LD_LIBRARY_PATH=${CMAKE_CURRENT_BINARY_DIR}/fakecuda;GDAK_UNDER_VALGRIND=1")
endif()
