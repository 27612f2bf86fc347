# The CUDA memory engine (nm_cuda.c): always built, because it loads the
# driver API at run time (dlopen libcuda.so.1) and needs no CUDA toolkit to
# compile; without a GPU it steps aside for nm_dma_host.c.  Its presence
# defines NM_HAVE_CUDA_DMA (nic_model/CMakeLists.txt).
target_sources(gdak_nic PRIVATE ${CMAKE_CURRENT_LIST_DIR}/nm_cuda.c)
