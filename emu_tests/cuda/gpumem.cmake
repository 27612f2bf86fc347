# GPU-memory WRITEs through the CUDA engine's batches (GDAK_CUDA_BATCH,
# docs/CUDA.md).  One binary, three runs: against the stand-in driver
# (cuda/gpumem_fake.c, built as libcuda.so.1 in its own folder; label unit, runs
# everywhere) with batching on and off, and against the real driver (label
# cuda: skips without a GPU; tools/cuda/gpumem-check.sh runs it on the H200).
gdak_add_test(NAME gdak.cuda.gpu_batch SOURCES ${CMAKE_CURRENT_LIST_DIR}/gpu_batch.c
  LIBS gdak_nic_util ${CMAKE_DL_LIBS} LABELS cuda TIMEOUT 300 ENV GDAK_CUDA_BATCH=kernel
  GDAK_CUDA_CQE=cpu)
target_include_directories(gdak_cuda_gpu_batch PRIVATE ${PROJECT_SOURCE_DIR}/nic_model)
set_tests_properties(gdak.cuda.gpu_batch PROPERTIES RESOURCE_LOCK gdak_gpu)
gdak_add_fake_libcuda(gdak_gpumem_fake_cuda ${CMAKE_CURRENT_LIST_DIR}/gpumem_fake.c gpumemfake)
target_include_directories(gdak_gpumem_fake_cuda PRIVATE ${PROJECT_SOURCE_DIR}/nic_model)
add_dependencies(gdak_cuda_gpu_batch gdak_gpumem_fake_cuda)
# A stand-in libgdrapi.so.2 (cuda/gdr_fake.c) in a folder of its own: the same
# test with GDRCopy mappings (gdak.nic.gpu_batch_gdr).
add_library(gdak_gdr_fake SHARED ${CMAKE_CURRENT_LIST_DIR}/gdr_fake.c)
set_target_properties(gdak_gdr_fake PROPERTIES PREFIX "" OUTPUT_NAME "libgdrapi"
  SUFFIX ".so.2" LIBRARY_OUTPUT_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR}/gdrfake)
target_link_libraries(gdak_gdr_fake PRIVATE ${CMAKE_DL_LIBS})
gdak_set_warnings(gdak_gdr_fake)
add_dependencies(gdak_cuda_gpu_batch gdak_gdr_fake)
gdak_add_fake_cuda_test(gdak.nic.gpu_batch_gdr gdak_cuda_gpu_batch ENV
  LD_LIBRARY_PATH=${CMAKE_CURRENT_BINARY_DIR}/gpumemfake:${CMAKE_CURRENT_BINARY_DIR}/gdrfake
  GDAK_CUDA_BATCH=kernel GDAK_CUDA_CQE=cpu GPU_BATCH_EXPECT_GDR=1)
# The stand-in driver without cuMemcpyBatchAsync (a driver before CUDA
# 12.8): copy mode then submits a cuMemcpyAsync per copy, still no kernel.
gdak_add_fake_libcuda(gdak_gpumem_fake_cuda_old ${CMAKE_CURRENT_LIST_DIR}/gpumem_fake.c
  gpumemfake_old)
target_include_directories(gdak_gpumem_fake_cuda_old PRIVATE ${PROJECT_SOURCE_DIR}/nic_model)
target_compile_definitions(gdak_gpumem_fake_cuda_old PRIVATE FAKE_NO_MEMCPY_BATCH=1)
add_dependencies(gdak_cuda_gpu_batch gdak_gpumem_fake_cuda_old)
gdak_add_fake_cuda_test(gdak.nic.gpu_batch_copy_old gdak_cuda_gpu_batch ENV
  LD_LIBRARY_PATH=${CMAKE_CURRENT_BINARY_DIR}/gpumemfake_old GDAK_CUDA_BATCH=copy GDAK_CUDA_CQE=cpu)
foreach(_m kernel off memop copy)
  set(_n gdak.nic.gpu_batch)
  if(NOT _m STREQUAL "kernel")
    set(_n gdak.nic.gpu_batch_${_m})
  endif()
  gdak_add_fake_cuda_test(${_n} gdak_cuda_gpu_batch ENV
    LD_LIBRARY_PATH=${CMAKE_CURRENT_BINARY_DIR}/gpumemfake GDAK_CUDA_BATCH=${_m} GDAK_CUDA_CQE=cpu)
endforeach()
# Stream-ordered CQEs (GDAK_CUDA_CQE=stream, docs/CUDA.md): every batch
# mode, the stand-in running its streams on a thread of its own as a GPU
# does (the NIC asks the driver nothing there).
foreach(_m kernel memop copy)
  gdak_add_fake_cuda_test(gdak.nic.gpu_batch_stream_${_m} gdak_cuda_gpu_batch ENV
    LD_LIBRARY_PATH=${CMAKE_CURRENT_BINARY_DIR}/gpumemfake GDAK_CUDA_BATCH=${_m}
    GDAK_CUDA_CQE=stream GDAK_FAKE_GPU_ASYNC=1)
endforeach()
gdak_add_fake_cuda_test(gdak.nic.gpu_batch_stream_old gdak_cuda_gpu_batch ENV
  LD_LIBRARY_PATH=${CMAKE_CURRENT_BINARY_DIR}/gpumemfake_old GDAK_CUDA_BATCH=copy
  GDAK_CUDA_CQE=stream GDAK_FAKE_GPU_ASYNC=1)
add_test(NAME gdak.cuda.gpu_batch_stream COMMAND gdak_cuda_gpu_batch)
set_tests_properties(gdak.cuda.gpu_batch_stream PROPERTIES TIMEOUT 300 SKIP_RETURN_CODE 77
  LABELS cuda RESOURCE_LOCK gdak_gpu ENVIRONMENT "GDAK_CUDA_BATCH=copy;GDAK_CUDA_CQE=stream")
# The wide copy kernel for large GPU->GPU WRITEs (GDAK_CUDA_BIG=kernel; auto
# takes it with kernel and memop) in copy mode, against the stand-in and
# the real driver.
gdak_add_fake_cuda_test(gdak.nic.gpu_batch_stream_big gdak_cuda_gpu_batch ENV
  LD_LIBRARY_PATH=${CMAKE_CURRENT_BINARY_DIR}/gpumemfake GDAK_CUDA_BATCH=copy
  GDAK_CUDA_CQE=stream GDAK_FAKE_GPU_ASYNC=1 GDAK_CUDA_BIG=kernel)
# gdak-info's gpu_copies / gpu_large_copies for each mode, and gpu_rings
# with and without the stand-in GDRCopy, on the stand-in.
add_test(NAME gdak.nic.info_gpu_paths COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/info_paths.sh
  $<TARGET_FILE:gdak-info> ${CMAKE_CURRENT_BINARY_DIR}/gpumemfake
  ${CMAKE_CURRENT_BINARY_DIR}/gdrfake)
set_tests_properties(gdak.nic.info_gpu_paths PROPERTIES LABELS unit TIMEOUT 60)
add_test(NAME gdak.cuda.gpu_batch_stream_big COMMAND gdak_cuda_gpu_batch)
set_tests_properties(gdak.cuda.gpu_batch_stream_big PROPERTIES TIMEOUT 300 SKIP_RETURN_CODE 77
  LABELS cuda RESOURCE_LOCK gdak_gpu
  ENVIRONMENT "GDAK_CUDA_BATCH=copy;GDAK_CUDA_CQE=stream;GDAK_CUDA_BIG=kernel")
# Kernels with their data in GPU memory (cuda/cuda_gpumem.cu), with the batches
# and with the per-copy path.
if(GDAK_HAVE_CUDA)
  gdak_add_test(NAME gdak.cuda.gpumem SOURCES ${CMAKE_CURRENT_LIST_DIR}/cuda_gpumem.cu
    LABELS cuda TIMEOUT 300 ENV GDAK_CUDA_BATCH=kernel GDAK_CUDA_CQE=cpu)
  target_compile_options(gdak_cuda_gpumem PRIVATE
    "$<$<COMPILE_LANGUAGE:CUDA>:SHELL:-Werror all-warnings>")
  add_test(NAME gdak.cuda.gpumem_off COMMAND gdak_cuda_gpumem)
  add_test(NAME gdak.cuda.gpumem_copy COMMAND gdak_cuda_gpumem)
  add_test(NAME gdak.cuda.gpumem_stream COMMAND gdak_cuda_gpumem)
  add_test(NAME gdak.cuda.gpumem_kstream COMMAND gdak_cuda_gpumem)
  set_tests_properties(gdak.cuda.gpumem gdak.cuda.gpumem_off gdak.cuda.gpumem_copy
    gdak.cuda.gpumem_stream gdak.cuda.gpumem_kstream PROPERTIES RESOURCE_LOCK gdak_gpu)
  set_tests_properties(gdak.cuda.gpumem_stream PROPERTIES TIMEOUT 300 SKIP_RETURN_CODE 77
    LABELS cuda ENVIRONMENT "GDAK_CUDA_BATCH=copy;GDAK_CUDA_CQE=stream")
  set_tests_properties(gdak.cuda.gpumem_kstream PROPERTIES TIMEOUT 300 SKIP_RETURN_CODE 77
    LABELS cuda ENVIRONMENT "GDAK_CUDA_BATCH=kernel;GDAK_CUDA_CQE=stream")
  set_tests_properties(gdak.cuda.gpumem_off PROPERTIES TIMEOUT 300 SKIP_RETURN_CODE 77
    LABELS cuda ENVIRONMENT "GDAK_CUDA_BATCH=off;GDAK_CUDA_CQE=cpu")
  set_tests_properties(gdak.cuda.gpumem_copy PROPERTIES TIMEOUT 300 SKIP_RETURN_CODE 77
    LABELS cuda ENVIRONMENT "GDAK_CUDA_BATCH=copy;GDAK_CUDA_CQE=cpu")
endif()
# The copy kernel's PTX (nic_model/nm_cuda_copy_ptx.c) is generated from
# nm_cuda_copy.cu and committed: where nvcc is, check it is current.
if(GDAK_HAVE_CUDA)
  add_test(NAME gdak.nic.copy_ptx COMMAND sh ${PROJECT_SOURCE_DIR}/tools/cuda/gen-copy-ptx.sh
    --check ${CMAKE_CUDA_COMPILER})
  set_tests_properties(gdak.nic.copy_ptx PROPERTIES LABELS unit TIMEOUT 120)
endif()
# The older GPU-memory tests against the stand-in driver too, with the
# batches on: the engine alone (gdak_cuda_dma) and the loop transport's
# pipelined GPU WRITEs (gdak_nic_gpu_pipe).
# (nic/nic.cmake defines gdak_nic_gpu_pipe after this file: add_test resolves
# target names at generation; the stand-in is part of the default build.)
foreach(_t cuda_dma nic_gpu_pipe)
  gdak_add_fake_cuda_test(gdak.nic.fake_${_t} gdak_${_t} ENV
    LD_LIBRARY_PATH=${CMAKE_CURRENT_BINARY_DIR}/gpumemfake GDAK_CUDA_BATCH=kernel GDAK_CUDA_CQE=cpu)
  gdak_add_fake_cuda_test(gdak.nic.fake_${_t}_stream gdak_${_t} ENV
    LD_LIBRARY_PATH=${CMAKE_CURRENT_BINARY_DIR}/gpumemfake GDAK_CUDA_BATCH=copy
    GDAK_CUDA_CQE=stream GDAK_FAKE_GPU_ASYNC=1)
endforeach()
# The batch engine under memcheck (stand-in driver, batching on).
gdak_add_memcheck(gdak.nic.gpu_batch gdak_cuda_gpu_batch 600
  ENV LD_LIBRARY_PATH=${CMAKE_CURRENT_BINARY_DIR}/gpumemfake GDAK_CUDA_BATCH=kernel GDAK_CUDA_CQE=cpu)
gdak_add_memcheck(gdak.nic.gpu_batch_stream gdak_cuda_gpu_batch 600
  ENV LD_LIBRARY_PATH=${CMAKE_CURRENT_BINARY_DIR}/gpumemfake GDAK_CUDA_BATCH=copy
  GDAK_CUDA_CQE=stream GDAK_FAKE_GPU_ASYNC=1)
# Rings in GPU memory (GDAK_QP_F_QUEUES_GPU, nic_model/nm_ring_gpu.c): the
# stand-in driver (label unit: GPU memory the CPU cannot touch, the owner-
# byte write log) and a real GPU (label cuda; tools/cuda/gpumem-check.sh).
gdak_add_test(NAME gdak.cuda.gpu_rings SOURCES ${CMAKE_CURRENT_LIST_DIR}/gpu_rings.c
  LIBS gdak_nic_util ${CMAKE_DL_LIBS} LABELS cuda TIMEOUT 300)
target_include_directories(gdak_cuda_gpu_rings PRIVATE ${PROJECT_SOURCE_DIR}/nic_model)
set_tests_properties(gdak.cuda.gpu_rings PROPERTIES RESOURCE_LOCK gdak_gpu)
add_dependencies(gdak_cuda_gpu_rings gdak_gpumem_fake_cuda gdak_gpumem_fake_cuda_old)
gdak_add_fake_cuda_test(gdak.nic.gpu_rings gdak_cuda_gpu_rings ENV
  LD_LIBRARY_PATH=${CMAKE_CURRENT_BINARY_DIR}/gpumemfake)
# ... and a driver without cuStreamBatchMemOp-era extras is the same
# stand-in built without cuMemcpyBatchAsync: the CQE path does not need it
gdak_add_fake_cuda_test(gdak.nic.gpu_rings_old gdak_cuda_gpu_rings ENV
  LD_LIBRARY_PATH=${CMAKE_CURRENT_BINARY_DIR}/gpumemfake_old)
# ... and with the stand-in GDRCopy: the rings through its mappings
add_dependencies(gdak_cuda_gpu_rings gdak_gdr_fake)
gdak_add_fake_cuda_test(gdak.nic.gpu_rings_gdr gdak_cuda_gpu_rings ENV
  LD_LIBRARY_PATH=${CMAKE_CURRENT_BINARY_DIR}/gpumemfake:${CMAKE_CURRENT_BINARY_DIR}/gdrfake
  GPU_RINGS_EXPECT_GDR=1)
# The NIC thread's cost per WQE of gdak-perf-cuda's GPU-memory rate row, GPU
# memory against host-mapped memory in one process (cuda/gpu_batch_rate.c; a
# benchmark with --rounds, a short run as a test: the bytes are checked, the
# times only printed).
gdak_add_test(NAME gdak.cuda.gpu_batch_rate SOURCES ${CMAKE_CURRENT_LIST_DIR}/gpu_batch_rate.c
  LIBS gdak_nic_util LABELS cuda TIMEOUT 300 ARGS --rounds 2 ENV GDAK_CUDA_BATCH=memop
  GDAK_CUDA_CQE=stream)
target_include_directories(gdak_cuda_gpu_batch_rate PRIVATE ${PROJECT_SOURCE_DIR}/nic_model)
set_tests_properties(gdak.cuda.gpu_batch_rate PROPERTIES RESOURCE_LOCK gdak_gpu)
add_dependencies(gdak_cuda_gpu_batch_rate gdak_gpumem_fake_cuda)
foreach(_m memop copy)
  gdak_add_fake_cuda_test(gdak.nic.gpu_batch_rate_${_m} gdak_cuda_gpu_batch_rate ARGS --rounds 2
    ENV LD_LIBRARY_PATH=${CMAKE_CURRENT_BINARY_DIR}/gpumemfake GDAK_CUDA_BATCH=${_m}
    GDAK_CUDA_CQE=stream GDAK_FAKE_GPU_ASYNC=1)
endforeach()
# Equal large GPU->GPU WRITEs of a pass in one cuMemcpyBatchAsync
# (GDAK_CUDA_DIRECT_BATCH=1), with and without the batched copy.
gdak_add_fake_cuda_test(gdak.nic.gpu_batch_stream_dbatch gdak_cuda_gpu_batch ENV
  LD_LIBRARY_PATH=${CMAKE_CURRENT_BINARY_DIR}/gpumemfake GDAK_CUDA_BATCH=memop
  GDAK_CUDA_CQE=stream GDAK_FAKE_GPU_ASYNC=1 GDAK_CUDA_DIRECT_BATCH=1)
gdak_add_fake_cuda_test(gdak.nic.gpu_batch_stream_dbatch_old gdak_cuda_gpu_batch ENV
  LD_LIBRARY_PATH=${CMAKE_CURRENT_BINARY_DIR}/gpumemfake_old GDAK_CUDA_BATCH=copy
  GDAK_CUDA_CQE=stream GDAK_FAKE_GPU_ASYNC=1 GDAK_CUDA_DIRECT_BATCH=1)
# Batches kept open while two run (GDAK_CUDA_HOLD=2) and one barrier for a
# batch's CQE words (GDAK_CUDA_CQE_FENCES=0): both off by default.
gdak_add_fake_cuda_test(gdak.nic.gpu_batch_stream_hold gdak_cuda_gpu_batch ENV
  LD_LIBRARY_PATH=${CMAKE_CURRENT_BINARY_DIR}/gpumemfake GDAK_CUDA_BATCH=memop
  GDAK_CUDA_CQE=stream GDAK_FAKE_GPU_ASYNC=1 GDAK_CUDA_HOLD=2 GDAK_CUDA_CQE_FENCES=0)
