# RoCEv2 over UDP: the protocol engine (nic_model/roce/) and the transport
# adapter that plugs it into the NIC model (nic_model/tr_udp*.c).  Its
# opcode table and ICRC are core's wire facts (core/wire/, <gdak/roce.h>).
target_sources(gdak_nic PRIVATE
  ${CMAKE_CURRENT_LIST_DIR}/roce/roce_req.c
  ${CMAKE_CURRENT_LIST_DIR}/roce/roce_resp.c
  ${CMAKE_CURRENT_LIST_DIR}/roce/roce_qp.c
  ${CMAKE_CURRENT_LIST_DIR}/roce/roce_fault.c)
target_include_directories(gdak_nic PRIVATE ${CMAKE_CURRENT_LIST_DIR}/roce)
target_sources(gdak_nic PRIVATE ${CMAKE_CURRENT_LIST_DIR}/tr_udp.c
  ${CMAKE_CURRENT_LIST_DIR}/tr_udp_local.c
  ${CMAKE_CURRENT_LIST_DIR}/tr_udp_direct.c)
