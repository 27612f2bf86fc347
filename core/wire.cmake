# core/wire/: the RoCEv2 wire facts behind <gdak/roce.h> - the RC opcode
# table, the ICRC, the IPv4/UDP/Ethernet header builder - that the NIC
# model's RoCE engine, the trace writer, gdak-trace and the tests share.
# The mlx5 ones are header-only (<gdak/mlx5.h>, core/src/mlx5_names.c).
target_sources(gdak_core PRIVATE
  ${CMAKE_CURRENT_LIST_DIR}/wire/roce_opcode.c
  ${CMAKE_CURRENT_LIST_DIR}/wire/roce_icrc.c
  ${CMAKE_CURRENT_LIST_DIR}/wire/roce_frame.c)
