# Device API (device/include/gdak/dev) unit tests: host threads play the
# device against fake descriptors in local memory; no NIC.
gdak_add_test(NAME gdak.dev.wqe SOURCES dev/dev_wqe.c LABELS unit MEMCHECK)
gdak_add_test(NAME gdak.dev.db SOURCES dev/dev_db.c LABELS unit MEMCHECK)
gdak_add_test(NAME gdak.dev.cq SOURCES dev/dev_cq.c LABELS unit MEMCHECK)
gdak_add_test(NAME gdak.dev.recv SOURCES dev/dev_recv.c LABELS unit MEMCHECK)
gdak_add_test(NAME gdak.dev.rma SOURCES dev/dev_rma.c LABELS unit TIMEOUT 120)
gdak_add_test(NAME gdak.dev.shared SOURCES dev/dev_shared.c LABELS unit TIMEOUT 300)

# The device headers under nvcc (sm_${GDAK_CUDA_ARCH}): every function
# instantiated in kernels, warp and block scopes included.  A compile
# failure breaks the build; the test records that the build happened.
if(GDAK_HAVE_CUDA)
  gdak_add_test(NAME gdak.dev.nvcc_compile SOURCES dev/dev_nvcc_compile.cu LABELS unit)
  target_compile_options(gdak_dev_nvcc_compile PRIVATE
    "$<$<COMPILE_LANGUAGE:CUDA>:SHELL:-Werror all-warnings>")
  # The same calls from CUDA kernels (thread, warp, block scopes) against a
  # loopback fake NIC thread; exits 77 without a GPU.
  gdak_add_test(NAME gdak.dev.cuda SOURCES dev/dev_cuda.cu LABELS cuda TIMEOUT 300)
  target_compile_options(gdak_dev_cuda PRIVATE
    "$<$<COMPILE_LANGUAGE:CUDA>:SHELL:-Werror all-warnings>")
endif()
