# GPU-memory WRITEs through the CUDA engine's batches (GDAK_CUDA_BATCH,
# docs/CUDA.md).  One binary, three runs: against the stand-in driver
# (gpumem_fake.c, built as libcuda.so.1 in its own folder; label unit, runs
# everywhere) with batching on and off, and against the real driver (label
# cuda: skips without a GPU; tools/cuda/gpumem-check.sh runs it on the H200).
gdak_add_test(NAME gdak.cuda.gpu_batch SOURCES ${CMAKE_CURRENT_LIST_DIR}/gpu_batch.c
  LIBS gdak_nic_util ${CMAKE_DL_LIBS} LABELS cuda TIMEOUT 300 ENV GDAK_CUDA_BATCH=kernel)
target_include_directories(gdak_cuda_gpu_batch PRIVATE ${PROJECT_SOURCE_DIR}/nic_model)
set_tests_properties(gdak.cuda.gpu_batch PROPERTIES RESOURCE_LOCK gdak_gpu)
add_library(gdak_gpumem_fake_cuda SHARED ${CMAKE_CURRENT_LIST_DIR}/gpumem_fake.c)
set_target_properties(gdak_gpumem_fake_cuda PROPERTIES PREFIX "" OUTPUT_NAME "libcuda"
  SUFFIX ".so.1" LIBRARY_OUTPUT_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR}/gpumemfake)
target_include_directories(gdak_gpumem_fake_cuda PRIVATE ${PROJECT_SOURCE_DIR}/nic_model)
gdak_set_warnings(gdak_gpumem_fake_cuda)
add_dependencies(gdak_cuda_gpu_batch gdak_gpumem_fake_cuda)
# A stand-in libgdrapi.so.2 (gdr_fake.c) in a folder of its own: the same
# test with GDRCopy mappings (gdak.nic.gpu_batch_gdr).
add_library(gdak_gdr_fake SHARED ${CMAKE_CURRENT_LIST_DIR}/gdr_fake.c)
set_target_properties(gdak_gdr_fake PROPERTIES PREFIX "" OUTPUT_NAME "libgdrapi"
  SUFFIX ".so.2" LIBRARY_OUTPUT_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR}/gdrfake)
target_link_libraries(gdak_gdr_fake PRIVATE ${CMAKE_DL_LIBS})
gdak_set_warnings(gdak_gdr_fake)
add_dependencies(gdak_cuda_gpu_batch gdak_gdr_fake)
add_test(NAME gdak.nic.gpu_batch_gdr COMMAND gdak_cuda_gpu_batch)
set_tests_properties(gdak.nic.gpu_batch_gdr PROPERTIES TIMEOUT 300 SKIP_RETURN_CODE 77
  LABELS unit ENVIRONMENT
  "LD_LIBRARY_PATH=${CMAKE_CURRENT_BINARY_DIR}/gpumemfake:${CMAKE_CURRENT_BINARY_DIR}/gdrfake;GDAK_CUDA_BATCH=kernel;GPU_BATCH_EXPECT_GDR=1")
# The stand-in driver without cuMemcpyBatchAsync (a driver before CUDA
# 12.8): copy mode then submits a cuMemcpyAsync per copy, still no kernel.
add_library(gdak_gpumem_fake_cuda_old SHARED ${CMAKE_CURRENT_LIST_DIR}/gpumem_fake.c)
set_target_properties(gdak_gpumem_fake_cuda_old PROPERTIES PREFIX "" OUTPUT_NAME "libcuda"
  SUFFIX ".so.1" LIBRARY_OUTPUT_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR}/gpumemfake_old)
target_include_directories(gdak_gpumem_fake_cuda_old PRIVATE ${PROJECT_SOURCE_DIR}/nic_model)
target_compile_definitions(gdak_gpumem_fake_cuda_old PRIVATE FAKE_NO_MEMCPY_BATCH=1)
gdak_set_warnings(gdak_gpumem_fake_cuda_old)
add_dependencies(gdak_cuda_gpu_batch gdak_gpumem_fake_cuda_old)
add_test(NAME gdak.nic.gpu_batch_copy_old COMMAND gdak_cuda_gpu_batch)
set_tests_properties(gdak.nic.gpu_batch_copy_old PROPERTIES TIMEOUT 300 SKIP_RETURN_CODE 77
  LABELS unit ENVIRONMENT
  "LD_LIBRARY_PATH=${CMAKE_CURRENT_BINARY_DIR}/gpumemfake_old;GDAK_CUDA_BATCH=copy")
foreach(_m kernel off memop copy)
  set(_n gdak.nic.gpu_batch)
  if(NOT _m STREQUAL "kernel")
    set(_n gdak.nic.gpu_batch_${_m})
  endif()
  add_test(NAME ${_n} COMMAND gdak_cuda_gpu_batch)
  set_tests_properties(${_n} PROPERTIES TIMEOUT 300 SKIP_RETURN_CODE 77 LABELS unit
    ENVIRONMENT "LD_LIBRARY_PATH=${CMAKE_CURRENT_BINARY_DIR}/gpumemfake;GDAK_CUDA_BATCH=${_m}")
endforeach()
# Stream-ordered CQEs (GDAK_CUDA_CQE=stream, docs/CUDA.md): every batch
# mode, the stand-in running its streams on a thread of its own as a GPU
# does (the NIC asks the driver nothing there).
foreach(_m kernel memop copy)
  add_test(NAME gdak.nic.gpu_batch_stream_${_m} COMMAND gdak_cuda_gpu_batch)
  set_tests_properties(gdak.nic.gpu_batch_stream_${_m} PROPERTIES TIMEOUT 300
    SKIP_RETURN_CODE 77 LABELS unit ENVIRONMENT
    "LD_LIBRARY_PATH=${CMAKE_CURRENT_BINARY_DIR}/gpumemfake;GDAK_CUDA_BATCH=${_m};GDAK_CUDA_CQE=stream;GDAK_FAKE_GPU_ASYNC=1")
endforeach()
add_test(NAME gdak.nic.gpu_batch_stream_old COMMAND gdak_cuda_gpu_batch)
set_tests_properties(gdak.nic.gpu_batch_stream_old PROPERTIES TIMEOUT 300 SKIP_RETURN_CODE 77
  LABELS unit ENVIRONMENT
  "LD_LIBRARY_PATH=${CMAKE_CURRENT_BINARY_DIR}/gpumemfake_old;GDAK_CUDA_BATCH=copy;GDAK_CUDA_CQE=stream;GDAK_FAKE_GPU_ASYNC=1")
add_test(NAME gdak.cuda.gpu_batch_stream COMMAND gdak_cuda_gpu_batch)
set_tests_properties(gdak.cuda.gpu_batch_stream PROPERTIES TIMEOUT 300 SKIP_RETURN_CODE 77
  LABELS cuda RESOURCE_LOCK gdak_gpu ENVIRONMENT "GDAK_CUDA_BATCH=copy;GDAK_CUDA_CQE=stream")
# Kernels with their data in GPU memory (cuda_gpumem.cu), with the batches
# and with the per-copy path.
if(GDAK_HAVE_CUDA)
  gdak_add_test(NAME gdak.cuda.gpumem SOURCES ${CMAKE_CURRENT_LIST_DIR}/cuda_gpumem.cu
    LABELS cuda TIMEOUT 300 ENV GDAK_CUDA_BATCH=kernel)
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
    LABELS cuda ENVIRONMENT "GDAK_CUDA_BATCH=off")
  set_tests_properties(gdak.cuda.gpumem_copy PROPERTIES TIMEOUT 300 SKIP_RETURN_CODE 77
    LABELS cuda ENVIRONMENT "GDAK_CUDA_BATCH=copy")
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
# (nic.cmake defines gdak_nic_gpu_pipe after this file: add_test resolves
# target names at generation; the stand-in is part of the default build.)
foreach(_t cuda_dma nic_gpu_pipe)
  add_test(NAME gdak.nic.fake_${_t} COMMAND gdak_${_t})
  set_tests_properties(gdak.nic.fake_${_t} PROPERTIES TIMEOUT 300 SKIP_RETURN_CODE 77
    LABELS unit
    ENVIRONMENT "LD_LIBRARY_PATH=${CMAKE_CURRENT_BINARY_DIR}/gpumemfake;GDAK_CUDA_BATCH=kernel")
  add_test(NAME gdak.nic.fake_${_t}_stream COMMAND gdak_${_t})
  set_tests_properties(gdak.nic.fake_${_t}_stream PROPERTIES TIMEOUT 300 SKIP_RETURN_CODE 77
    LABELS unit ENVIRONMENT
    "LD_LIBRARY_PATH=${CMAKE_CURRENT_BINARY_DIR}/gpumemfake;GDAK_CUDA_BATCH=copy;GDAK_CUDA_CQE=stream;GDAK_FAKE_GPU_ASYNC=1")
endforeach()
# The batch engine under memcheck (stand-in driver, batching on).
if(GDAK_VALGRIND AND NOT GDAK_SANITIZED)
  add_test(NAME gdak.nic.gpu_batch.memcheck
    COMMAND ${GDAK_VALGRIND} --tool=memcheck --error-exitcode=99 --leak-check=full
            --errors-for-leak-kinds=definite --track-origins=yes --quiet
            $<TARGET_FILE:gdak_cuda_gpu_batch>)
  set_tests_properties(gdak.nic.gpu_batch.memcheck PROPERTIES TIMEOUT 600
    SKIP_RETURN_CODE 77 LABELS memcheck
    ENVIRONMENT "LD_LIBRARY_PATH=${CMAKE_CURRENT_BINARY_DIR}/gpumemfake;GDAK_CUDA_BATCH=kernel;GDAK_UNDER_VALGRIND=1")
  add_test(NAME gdak.nic.gpu_batch_stream.memcheck
    COMMAND ${GDAK_VALGRIND} --tool=memcheck --error-exitcode=99 --leak-check=full
            --errors-for-leak-kinds=definite --track-origins=yes --quiet
            $<TARGET_FILE:gdak_cuda_gpu_batch>)
  set_tests_properties(gdak.nic.gpu_batch_stream.memcheck PROPERTIES TIMEOUT 600
    SKIP_RETURN_CODE 77 LABELS memcheck
    ENVIRONMENT "LD_LIBRARY_PATH=${CMAKE_CURRENT_BINARY_DIR}/gpumemfake;GDAK_CUDA_BATCH=copy;GDAK_CUDA_CQE=stream;GDAK_FAKE_GPU_ASYNC=1;GDAK_UNDER_VALGRIND=1")
endif()
# Rings in GPU memory (GDAK_QP_F_QUEUES_GPU, nic_model/nm_ring_gpu.c): the
# stand-in driver (label unit: GPU memory the CPU cannot touch, the owner-
# byte write log) and a real GPU (label cuda; tools/cuda/gpumem-check.sh).
gdak_add_test(NAME gdak.cuda.gpu_rings SOURCES ${CMAKE_CURRENT_LIST_DIR}/gpu_rings.c
  LIBS gdak_nic_util ${CMAKE_DL_LIBS} LABELS cuda TIMEOUT 300)
target_include_directories(gdak_cuda_gpu_rings PRIVATE ${PROJECT_SOURCE_DIR}/nic_model)
set_tests_properties(gdak.cuda.gpu_rings PROPERTIES RESOURCE_LOCK gdak_gpu)
add_dependencies(gdak_cuda_gpu_rings gdak_gpumem_fake_cuda gdak_gpumem_fake_cuda_old)
add_test(NAME gdak.nic.gpu_rings COMMAND gdak_cuda_gpu_rings)
set_tests_properties(gdak.nic.gpu_rings PROPERTIES TIMEOUT 300 SKIP_RETURN_CODE 77 LABELS unit
  ENVIRONMENT "LD_LIBRARY_PATH=${CMAKE_CURRENT_BINARY_DIR}/gpumemfake")
# ... and a driver without cuStreamBatchMemOp-era extras is the same
# stand-in built without cuMemcpyBatchAsync: the CQE path does not need it
add_test(NAME gdak.nic.gpu_rings_old COMMAND gdak_cuda_gpu_rings)
set_tests_properties(gdak.nic.gpu_rings_old PROPERTIES TIMEOUT 300 SKIP_RETURN_CODE 77
  LABELS unit ENVIRONMENT "LD_LIBRARY_PATH=${CMAKE_CURRENT_BINARY_DIR}/gpumemfake_old")
