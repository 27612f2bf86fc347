# RoCEv2 over UDP (nic_model/roce, nic_model/tr_udp*): unit tests of the
# protocol engine with a fake wire, and (label net) processes on loopback.
set(_gdak_roce_inc ${PROJECT_SOURCE_DIR}/nic_model/roce)

gdak_add_test(NAME gdak.net.roce_wire SOURCES net/net_roce_wire.c LABELS unit net TIMEOUT 60)
target_include_directories(gdak_net_roce_wire PRIVATE ${_gdak_roce_inc})

gdak_add_test(NAME gdak.net.roce_engine SOURCES net/net_roce_engine.c LABELS unit net TIMEOUT 120)
target_include_directories(gdak_net_roce_engine PRIVATE ${_gdak_roce_inc})

# Two processes on loopback through the udp transport and the TCP bootstrap.
foreach(_m ops xatomic mtu retry env)
  gdak_add_test(NAME gdak.net.udp_${_m} SOURCES net/net_udp_2proc.c LIBS gdak_nic_util
                ARGS ${_m} LABELS net TIMEOUT 120)
  target_include_directories(gdak_net_udp_${_m} PRIVATE ${PROJECT_SOURCE_DIR}/nic_model)
endforeach()
foreach(_p 1 5 20)
  gdak_add_test(NAME gdak.net.udp_loss${_p} SOURCES net/net_udp_2proc.c LIBS gdak_nic_util
                ARGS loss ${_p} LABELS net TIMEOUT 120)
  target_include_directories(gdak_net_udp_loss${_p} PRIVATE ${PROJECT_SOURCE_DIR}/nic_model)
endforeach()

# DC over UDP (docs/UDP.md "DC"): one DCI in one process, three DCTs in another.
foreach(_m ops errors)
  gdak_add_test(NAME gdak.net.udp_dc_${_m} SOURCES net/net_udp_dc.c LIBS gdak_nic_util ARGS ${_m}
                LABELS net TIMEOUT 180)
endforeach()
foreach(_p 1 5 20)
  gdak_add_test(NAME gdak.net.udp_dc_loss${_p} SOURCES net/net_udp_dc.c LIBS gdak_nic_util
                ARGS loss ${_p} LABELS net TIMEOUT 180)
endforeach()
# A DCI with four streams in flight to three DCTs (net/net_dc_streams.c):
# in one process, over emu:udp between two, and with loss.
gdak_add_test(NAME gdak.net.dc_streams SOURCES net/net_dc_streams.c LIBS gdak_nic_util ARGS udp
              LABELS net TIMEOUT 180)
add_test(NAME gdak.net.dc_streams_loop COMMAND gdak_net_dc_streams loop)
add_test(NAME gdak.net.dc_streams_loss5 COMMAND gdak_net_dc_streams udp 5)
set_tests_properties(gdak.net.dc_streams_loop gdak.net.dc_streams_loss5 PROPERTIES LABELS net
                     TIMEOUT 180)

# Two network namespaces joined by a veth pair (creates and removes them; 77
# without the rights): every operation across them, traced; tc netem where the
# kernel has it; a dumpcap/tshark capture of the live session.
gdak_add_test(NAME gdak.net.netns SOURCES net/net_netns.c LABELS net TIMEOUT 180
              ARGS $<TARGET_FILE:gdak_net_udp_ops> $<TARGET_FILE:gdak-trace>)
add_dependencies(gdak_net_netns gdak_net_udp_ops gdak-trace)

# MPI bootstrap: 2 and 4 ranks under mpirun on this machine (77 without MPI
# or mpirun).  The test re-runs itself under mpirun.
find_program(GDAK_MPIEXEC NAMES mpirun mpiexec)
if(GDAK_HAVE_MPI)
  set(_gdak_mpi_libs gdak_mpi gdak_nic_util)
else()
  set(_gdak_mpi_libs gdak_nic_util)
endif()
foreach(_np 2 4)
  gdak_add_test(NAME gdak.net.mpi${_np} SOURCES net/net_mpi.c LIBS ${_gdak_mpi_libs}
                ARGS "${GDAK_MPIEXEC}" ${_np} LABELS net TIMEOUT 120)
  if(GDAK_HAVE_MPI)
    target_compile_definitions(gdak_net_mpi${_np} PRIVATE GDAK_HAVE_MPI=1)
  endif()
endforeach()

# Two QPs of one process: packets through the in-process inbox (tr_udp_local.c),
# and through the kernel with GDAK_UDP_LOCAL=0; faults, a full inbox, a peer gone.
gdak_add_test(NAME gdak.net.udp_local SOURCES net/net_local.c LIBS gdak_nic_util LABELS net
              TIMEOUT 120)
target_include_directories(gdak_net_udp_local PRIVATE ${PROJECT_SOURCE_DIR}/nic_model)

# The direct path's sender match: a request is taken only from the
# responder's peer - address, UDP port and QPN - not from another QP of the
# same number on that address (tr_udp_direct.c)
gdak_add_test(NAME gdak.net.udp_direct_port SOURCES net/net_direct_port.c LABELS net
              TIMEOUT 60)
target_include_directories(gdak_net_udp_direct_port PRIVATE ${PROJECT_SOURCE_DIR}/nic_model
                           ${_gdak_roce_inc})

# A hostile sender on this host (net/net_forge.c: its own address 127.0.0.2, or
# with raw sockets the peer's address): every case leaves guards, data, the
# connected pair and a bystander pair intact (net/net_hostile.c says what each
# one sends and asserts).
foreach(_c random trunc fields wrongqpn stranger sweep idle_nak errors reset xatomic ids engine)
  gdak_add_test(NAME gdak.net.hostile_${_c} SOURCES net/net_hostile.c net/net_forge.c
                LIBS gdak_nic_util ARGS ${_c} LABELS net TIMEOUT 180)
  target_include_directories(gdak_net_hostile_${_c} PRIVATE ${PROJECT_SOURCE_DIR}/nic_model
                             ${_gdak_roce_inc})
endforeach()
# Forged DC packets at a DCT (docs/UDP.md "DC"): dropped and counted, memory intact.
gdak_add_test(NAME gdak.net.hostile_dc SOURCES net/net_hostile_dc.c net/net_forge.c LIBS gdak_nic_util
              LABELS net TIMEOUT 120)
target_include_directories(gdak_net_hostile_dc PRIVATE ${PROJECT_SOURCE_DIR}/nic_model
                           ${_gdak_roce_inc})
# The spoofing cases again without the raw socket (as where the tests do not
# run as root): the peer's source through the target's in-process inbox.
foreach(_c random trunc fields wrongqpn sweep idle_nak reset xatomic)
  add_test(NAME gdak.net.hostile_${_c}_noraw COMMAND gdak_net_hostile_${_c} ${_c})
  set_tests_properties(gdak.net.hostile_${_c}_noraw PROPERTIES TIMEOUT 180 SKIP_RETURN_CODE 77
                       LABELS net ENVIRONMENT GDAK_FORGE_NO_RAW=1)
endforeach()

# The TCP bootstrap and strangers: refusals, the shared secret, a waiting client.
gdak_add_test(NAME gdak.net.hostile_bootstrap SOURCES net/net_hostile_bs.c LABELS net TIMEOUT 120)

# Tools that cannot write what they were asked to: the file's errno, exit 1.
if(TARGET gdak-perf AND TARGET gdak-demo)
  gdak_add_test(NAME gdak.tools.file_errors SOURCES core/tools_errors.c LABELS emu TIMEOUT 120
                ARGS $<TARGET_FILE:gdak-perf> $<TARGET_FILE:gdak-demo>)
  add_dependencies(gdak_tools_file_errors gdak-perf gdak-demo)
endif()

# "emu:udp": every QP on a 127.0.0.N of its own at port 4791 (Wireshark
# decodes it as RoCE as it is), across contexts and processes.
gdak_add_test(NAME gdak.net.udp_4791 SOURCES net/net_udp4791.c LIBS gdak_nic_util LABELS net
              TIMEOUT 120)

# gdak's extended atomics on the wire (docs/UDP.md "Extended atomics"): in a
# trace, decoded by gdak-trace and (with tools/gdak-trace.lua) by tshark.
if(TARGET gdak-trace)
  add_test(NAME gdak.net.xatomic_trace COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/net_xatomic_trace.sh
    $<TARGET_FILE:gdak_fid_atomic> $<TARGET_FILE:gdak-trace> ${PROJECT_SOURCE_DIR}/tools/gdak-trace.lua)
  set_tests_properties(gdak.net.xatomic_trace PROPERTIES LABELS net TIMEOUT 120)
  # gdak's DC encoding (docs/UDP.md "DC") the same way
  add_test(NAME gdak.net.dc_trace COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/net_dc_trace.sh
    $<TARGET_FILE:gdak_net_udp_dc_ops> $<TARGET_FILE:gdak-trace> ${PROJECT_SOURCE_DIR}/tools/gdak-trace.lua)
  set_tests_properties(gdak.net.dc_trace PROPERTIES LABELS net TIMEOUT 180)
endif()
