# gdak's libibverbs.so.1 (nic_model/ibv/): tests that link it through
# rdma-core's headers, as a verbs program does.  Not through
# gdak_add_test(): that links libgdak, whose verbs transport brings the
# system libibverbs, which must not be in these processes.
function(gdak_add_verbs_lib_test name src)
  set(labels ${ARGN})
  if(NOT labels)
    set(labels emu net)
  endif()
  string(REPLACE "." "_" tgt "${name}")
  add_executable(${tgt} ${src})
  target_link_libraries(${tgt} PRIVATE gdak_testlib_verbs gdak_ibverbs ${CMAKE_DL_LIBS})
  gdak_set_warnings(${tgt})
  add_test(NAME ${name} COMMAND ${tgt})
  set_tests_properties(${name} PROPERTIES TIMEOUT 120 SKIP_RETURN_CODE 77
    LABELS "${labels}")
endfunction()

gdak_add_verbs_lib_test(gdak.verbs.lib ${CMAKE_CURRENT_SOURCE_DIR}/verbs/verbs_lib.c)
gdak_add_verbs_lib_test(gdak.verbs.lib_2proc ${CMAKE_CURRENT_SOURCE_DIR}/verbs/verbs_lib_2proc.c)
target_include_directories(gdak_verbs_lib_2proc PRIVATE ${PROJECT_SOURCE_DIR}/nic_model/ibv)
# the same with both NIC threads parked: the programs' calls alone move it
add_test(NAME gdak.verbs.lib_2proc_parked COMMAND gdak_verbs_lib_2proc)
set_tests_properties(gdak.verbs.lib_2proc_parked PROPERTIES TIMEOUT 120 SKIP_RETURN_CODE 77
  LABELS "emu;net" ENVIRONMENT "VERBS_TEST_PARK=1;GDAK_IBV_INLINE=1")
# an idle verbs process's NIC thread blocks (switches and CPU time counted),
# and a passive target (no verbs calls) still takes WRITEs, byte for byte
# the direct path between two processes (tr_udp_direct.c): WRITEs done by
# the sender, the bytes and counters checked; a bad rkey, a WRITE past the
# MR and one into a deregistered MR still get REM_ACCESS_ERR over UDP; a
# WRITE to a QP its owner moved to ERR lands nowhere (RETRY_EXC_ERR); off
# (GDAK_IBV_DIRECT=0) every count is 0; a bad value fails the open
gdak_add_verbs_lib_test(gdak.verbs.direct ${CMAKE_CURRENT_SOURCE_DIR}/verbs/verbs_direct.c)
target_include_directories(gdak_verbs_direct PRIVATE ${PROJECT_SOURCE_DIR}/nic_model/ibv
  ${PROJECT_SOURCE_DIR}/nic_model ${PROJECT_SOURCE_DIR}/core/include)
set_tests_properties(gdak.verbs.direct PROPERTIES ENVIRONMENT "GDAK_IBV_DIRECT=1")
# segments a sender must refuse - group-readable (mode), another user's
# (uid, as root), a dead pid's (deadpid), a pid that exec'd (exec) - and
# the kernel refusing the copy (eperm), a trace started after connect by
# the owner (trace) or the sender (trace_tx), which then holds every
# request's packets: all of it over UDP, the counts 0;
# sweep: opening a device removes killed and exec'd owners' segments only
foreach(m range dereg race err mode uid deadpid exec eperm trace trace_tx sweep)
  add_test(NAME gdak.verbs.direct_${m} COMMAND gdak_verbs_direct ${m})
  set_tests_properties(gdak.verbs.direct_${m} PROPERTIES TIMEOUT 120 SKIP_RETURN_CODE 77
    LABELS "emu;net" ENVIRONMENT "GDAK_IBV_DIRECT=1")
endforeach()
# a direct-path test whose probe finds process_vm_writev refused skips (77)
add_test(NAME gdak.verbs.direct_denied COMMAND sh -c "\"$0\" rkey; test $? -eq 77"
  $<TARGET_FILE:gdak_verbs_direct>)
set_tests_properties(gdak.verbs.direct_denied PROPERTIES TIMEOUT 120
  LABELS "emu;net" ENVIRONMENT "GDAK_IBV_DIRECT=1;GDAK_TEST_DIRECT_DENY=1")
add_test(NAME gdak.verbs.direct_off COMMAND gdak_verbs_direct rkey)
set_tests_properties(gdak.verbs.direct_off PROPERTIES TIMEOUT 120 SKIP_RETURN_CODE 77
  LABELS "emu;net" ENVIRONMENT "GDAK_IBV_DIRECT=0")
add_test(NAME gdak.verbs.direct_badenv COMMAND gdak_verbs_direct badenv)
set_tests_properties(gdak.verbs.direct_badenv PROPERTIES TIMEOUT 60 LABELS "emu;net")
gdak_add_verbs_lib_test(gdak.verbs.idle ${CMAKE_CURRENT_SOURCE_DIR}/verbs/verbs_idle.c)
# GDAK_NIC_SCHED: bad values refused at open, nice and real-time policies
# applied to the NIC thread (read back from the kernel) or refused with the
# reason logged; a real-time NIC thread blocks when idle, also under spin
gdak_add_verbs_lib_test(gdak.verbs.nic_sched ${CMAKE_CURRENT_SOURCE_DIR}/verbs/verbs_sched.c)
# the engine in the program's thread: post_send / poll_cq with the NIC
# thread parked (they do everything) and held (they fall back), threads
# contending; the twin runs with it turned off (GDAK_IBV_INLINE=0)
gdak_add_verbs_lib_test(gdak.verbs.inline ${CMAKE_CURRENT_SOURCE_DIR}/verbs/verbs_inline.c)
target_include_directories(gdak_verbs_inline PRIVATE ${PROJECT_SOURCE_DIR}/nic_model/ibv)
add_test(NAME gdak.verbs.inline_off COMMAND gdak_verbs_inline)
set_tests_properties(gdak.verbs.inline_off PROPERTIES TIMEOUT 120 SKIP_RETURN_CODE 77
  LABELS "emu;net" ENVIRONMENT GDAK_IBV_INLINE=0)
# fork() with the engine in the program's thread: a child runs none of the
# parent's copied engine (rdma-core: a child uses none of its parent's
# resources), the parent's connection is untouched
gdak_add_verbs_lib_test(gdak.verbs.fork ${CMAKE_CURRENT_SOURCE_DIR}/verbs/verbs_fork.c)
target_include_directories(gdak_verbs_fork PRIVATE ${PROJECT_SOURCE_DIR}/nic_model/ibv)
# gdak's libmlx5.so.1 on it: mlx5dv_init_obj'd rings driven by the program
if(TARGET gdak_mlx5)
  gdak_add_verbs_lib_test(gdak.verbs.dv ${CMAKE_CURRENT_SOURCE_DIR}/verbs/verbs_dv.c)
  target_link_libraries(gdak_verbs_dv PRIVATE gdak_mlx5)
endif()
# cudaMalloc'd memory as an MR (the CUDA driver API loaded at run time: builds
# everywhere, skips without a GPU)
gdak_add_verbs_lib_test(gdak.verbs.lib_cuda ${CMAKE_CURRENT_SOURCE_DIR}/verbs/verbs_lib_cuda.c cuda)
# Valgrind twin of the single-process test (label memcheck), as
# gdak_add_test(MEMCHECK) makes them.
gdak_add_memcheck(gdak.verbs.lib gdak_verbs_lib 1200)

# DEVX (nic_model/ibv/dx_*.c): the PRM field table pinned against the PRM's
# own offsets (a table of its own, independent of the parser's and of
# hw_mlx5/hw_devx.c's)
gdak_add_test(NAME gdak.verbs.devx_fields
  SOURCES verbs/verbs_devx_fields.c ${PROJECT_SOURCE_DIR}/nic_model/ibv/dx_field.c
  LABELS unit TIMEOUT 30 MEMCHECK)
target_include_directories(gdak_verbs_devx_fields PRIVATE ${PROJECT_SOURCE_DIR}/nic_model/ibv)
# DEVX end to end through gdak's libmlx5.so.1: queues created and connected by
# raw PRM commands over umem, WQEs and CQEs checked byte for byte
gdak_add_verbs_lib_test(gdak.verbs.devx ${CMAKE_CURRENT_SOURCE_DIR}/verbs/verbs_devx.c)
target_link_libraries(gdak_verbs_devx PRIVATE gdak_mlx5)
# a DEVX RMP over umem feeding an RC QP: SENDs into its linked-list ring
# (receive CQEs name the RMP WQE), QUERY/MODIFY_RMP, RNR on an empty ring
gdak_add_verbs_lib_test(gdak.verbs.devx_rmp ${CMAKE_CURRENT_SOURCE_DIR}/verbs/verbs_devx_rmp.c)
target_link_libraries(gdak_verbs_devx_rmp PRIVATE gdak_mlx5)
# DEVX CREATE_MKEY over umem: the program's key as lkey / rkey, QUERY_MKEY,
# refusals, access errors
gdak_add_verbs_lib_test(gdak.verbs.devx_mkey ${CMAKE_CURRENT_SOURCE_DIR}/verbs/verbs_devx_mkey.c)
target_link_libraries(gdak_verbs_devx_mkey PRIVATE gdak_mlx5)
# the RMP hook and the mkey regions read program memory: Valgrind twins
gdak_add_memcheck(gdak.verbs.devx_rmp gdak_verbs_devx_rmp 600)
gdak_add_memcheck(gdak.verbs.devx_mkey gdak_verbs_devx_mkey 600)
# DC through gdak's libmlx5: DCTs and DCIs by mlx5dv_create_qp and by DEVX,
# DC WQEs posted by hand to several DCTs, the error syndromes
gdak_add_verbs_lib_test(gdak.verbs.dc ${CMAKE_CURRENT_SOURCE_DIR}/verbs/verbs_dc.c)
target_link_libraries(gdak_verbs_dc PRIVATE gdak_mlx5)
# the same with real-time NIC threads (GDAK_NIC_SCHED=fifo:1; where the
# kernel refuses it the threads keep their policy and say so): its DEVX
# QPs are rung in memory, which a real-time thread serves through short
# timer waits in its event loop, never a spin
add_test(NAME gdak.verbs.dc_rt COMMAND $<TARGET_FILE:gdak_verbs_dc>)
set_tests_properties(gdak.verbs.dc_rt PROPERTIES TIMEOUT 300 SKIP_RETURN_CODE 77
  LABELS "emu" ENVIRONMENT "GDAK_NIC_SCHED=fifo:1")
if(GDAK_VALGRIND AND NOT GDAK_SANITIZED)
  add_test(NAME gdak.verbs.dc.memcheck
    COMMAND ${GDAK_VALGRIND} --tool=memcheck --error-exitcode=99 --leak-check=full
            --errors-for-leak-kinds=definite --track-origins=yes --quiet
            $<TARGET_FILE:gdak_verbs_dc>)
  set_tests_properties(gdak.verbs.dc.memcheck PROPERTIES TIMEOUT 1200
    SKIP_RETURN_CODE 77 LABELS "memcheck" ENVIRONMENT "GDAK_UNDER_VALGRIND=1")
endif()
# its GPU twin: a CUDA thread writes the DC WQEs, rings and polls the CQE
# (exits 77 without a GPU; built wherever nvcc is)
if(GDAK_HAVE_CUDA)
  gdak_add_verbs_lib_test(gdak.verbs.dc_cuda ${CMAKE_CURRENT_SOURCE_DIR}/verbs/verbs_dc_cuda.cu cuda)
  target_link_libraries(gdak_verbs_dc_cuda PRIVATE gdak_mlx5)
  target_compile_options(gdak_verbs_dc_cuda PRIVATE
    "$<$<COMPILE_LANGUAGE:CUDA>:SHELL:-Werror all-warnings>")
  set_tests_properties(gdak.verbs.dc_cuda PROPERTIES RESOURCE_LOCK gdak_gpu)
endif()
# DEVX umem on cudaMalloc'd memory: refused until GPU-memory rings exist
gdak_add_verbs_lib_test(gdak.verbs.devx_cuda ${CMAKE_CURRENT_SOURCE_DIR}/verbs/verbs_devx_cuda.c cuda)
target_link_libraries(gdak_verbs_devx_cuda PRIVATE gdak_mlx5)
# DEVX queues on GPU-memory umem (CQ, RC QP rings and records, an RMP's
# ring and record) executed through the GPU-memory ring engine
# (nic_model/nm_ring_gpu.c): against the stand-in driver (GPU memory the CPU
# cannot load from; the CQEs' owner bytes checked to land last), refused
# with the engine off, and on a real GPU (label cuda)
if(TARGET gdak_mlx5)
  gdak_add_verbs_lib_test(gdak.verbs.devx_gpu ${CMAKE_CURRENT_SOURCE_DIR}/verbs/verbs_devx_gpu.c
    cuda)
  target_link_libraries(gdak_verbs_devx_gpu PRIVATE gdak_mlx5)
  set_tests_properties(gdak.verbs.devx_gpu PROPERTIES RESOURCE_LOCK gdak_gpu)
  add_dependencies(gdak_verbs_devx_gpu gdak_gpumem_fake_cuda)
  add_test(NAME gdak.verbs.devx_gpu_fake COMMAND gdak_verbs_devx_gpu)
  set_tests_properties(gdak.verbs.devx_gpu_fake PROPERTIES TIMEOUT 120 SKIP_RETURN_CODE 77
    LABELS "emu;net" ENVIRONMENT "LD_LIBRARY_PATH=${CMAKE_CURRENT_BINARY_DIR}/gpumemfake")
  add_test(NAME gdak.verbs.devx_gpu_fake_async COMMAND gdak_verbs_devx_gpu)
  set_tests_properties(gdak.verbs.devx_gpu_fake_async PROPERTIES TIMEOUT 120
    SKIP_RETURN_CODE 77 LABELS "emu;net" ENVIRONMENT
    "LD_LIBRARY_PATH=${CMAKE_CURRENT_BINARY_DIR}/gpumemfake;GDAK_FAKE_GPU_ASYNC=1")
  add_test(NAME gdak.verbs.devx_gpu_refused COMMAND gdak_verbs_devx_gpu)
  set_tests_properties(gdak.verbs.devx_gpu_refused PROPERTIES TIMEOUT 120 SKIP_RETURN_CODE 77
    LABELS "emu;net" ENVIRONMENT
    "LD_LIBRARY_PATH=${CMAKE_CURRENT_BINARY_DIR}/gpumemfake;GDAK_CUDA_DMA=0;DEVX_GPU_EXPECT_REFUSAL=1")
endif()
# its CUDA twin: a kernel as the device of DEVX QPs on cudaMalloc umem
if(GDAK_HAVE_CUDA AND TARGET gdak_mlx5)
  gdak_add_verbs_lib_test(gdak.verbs.devx_gpu_cuda
    ${CMAKE_CURRENT_SOURCE_DIR}/verbs/verbs_devx_gpu_cuda.cu cuda)
  target_link_libraries(gdak_verbs_devx_gpu_cuda PRIVATE gdak_mlx5)
  target_compile_options(gdak_verbs_devx_gpu_cuda PRIVATE
    "$<$<COMPILE_LANGUAGE:CUDA>:SHELL:-Werror all-warnings>")
  set_tests_properties(gdak.verbs.devx_gpu_cuda PROPERTIES RESOURCE_LOCK gdak_gpu)
endif()
