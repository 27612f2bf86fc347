# CUDA end to end (label cuda): kernels drive the NIC model through the
# device API.  Built wherever nvcc is (GDAK_HAVE_CUDA); each test exits 77
# (skipped) when no GPU is usable, so CI machines without one build them and
# report them as skipped.  tools/cuda/run-gpu.sh runs them on a GPU machine.
if(GDAK_HAVE_CUDA)
  function(gdak_cuda_test name src)
    gdak_add_test(NAME gdak.cuda.${name} SOURCES ${src} LABELS cuda ${ARGN})
    string(REPLACE "." "_" tgt "gdak.cuda.${name}")
    target_compile_options(${tgt} PRIVATE
      "$<$<COMPILE_LANGUAGE:CUDA>:SHELL:-Werror all-warnings>")
    # tests that wait on the NIC spin on host memory; a GPU machine may run
    # several at once (ctest -j), so give each one NIC thread of its own
    set_tests_properties(gdak.cuda.${name} PROPERTIES RESOURCE_LOCK gdak_gpu)
  endfunction()
  gdak_cuda_test(ops cuda/cuda_ops.cu TIMEOUT 180)
  gdak_cuda_test(scopes cuda/cuda_scopes.cu TIMEOUT 180)
  gdak_cuda_test(ctas cuda/cuda_ctas.cu TIMEOUT 180)
  gdak_cuda_test(errors cuda/cuda_errors.cu TIMEOUT 180)
  gdak_cuda_test(handlers cuda/cuda_handlers.cu TIMEOUT 180)
  gdak_cuda_test(dc cuda/cuda_dc.cu TIMEOUT 180)
  # DC between two processes over emu:udp, kernels on both sides
  gdak_cuda_test(udp_dc cuda/cuda_udp_dc.cu TIMEOUT 180)
  # the same kernels with their rings in GPU memory (GDAK_QP_F_QUEUES_GPU,
  # nic_model/nm_ring_gpu.c): every handler, SQ and CQ wrap-around, 64 CTAs,
  # every operation
  foreach(_t handlers ctas ops)
    add_test(NAME gdak.cuda.${_t}_gpurings COMMAND gdak_cuda_${_t})
    set_tests_properties(gdak.cuda.${_t}_gpurings PROPERTIES LABELS cuda TIMEOUT 180
      SKIP_RETURN_CODE 77 RESOURCE_LOCK gdak_gpu ENVIRONMENT "GDAK_TEST_QUEUES_GPU=1")
  endforeach()
endif()
# The engine alone (host threads post, data in GPU memory): a C test, built
# everywhere; it skips when the NIC model has no CUDA engine.
gdak_add_test(NAME gdak.cuda.dma SOURCES cuda/cuda_dma.c LIBS gdak_nic_util LABELS cuda TIMEOUT 180)
# it also drives the engine's asynchronous copies (nic_model/nm_cuda.h)
target_include_directories(gdak_cuda_dma PRIVATE ${PROJECT_SOURCE_DIR}/nic_model)
