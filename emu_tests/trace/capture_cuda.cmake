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

# The same binary against a stand-in libcuda.so.1 (trace/capture_cuda_fake.c:
# device memory the host cannot touch, contexts and streams checked), so the
# dlopen / context / stream / copy code runs on machines without a GPU too.
gdak_add_fake_libcuda(gdak_fake_libcuda ${CMAKE_CURRENT_LIST_DIR}/capture_cuda_fake.c fakecuda)
set_target_properties(gdak_fake_libcuda PROPERTIES C_VISIBILITY_PRESET hidden)
add_dependencies(gdak_capture_cuda gdak_fake_libcuda)
gdak_add_fake_cuda_test(gdak.capture.cuda_fake gdak_capture_cuda ARGS $<TARGET_FILE:gdak-trace>
  ENV LD_LIBRARY_PATH=${CMAKE_CURRENT_BINARY_DIR}/fakecuda)
gdak_add_memcheck(gdak.capture.cuda_fake gdak_capture_cuda 600 ARGS $<TARGET_FILE:gdak-trace>
  ENV LD_LIBRARY_PATH=${CMAKE_CURRENT_BINARY_DIR}/fakecuda)
