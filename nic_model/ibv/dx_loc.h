/* SPDX-License-Identifier: MIT */
/*
 * dx_loc.h - DEVX inside gdak's libibverbs.so.1: ConnectX PRM commands
 * parsed from their mailbox bytes and executed on the NIC model, for the
 * mlx5dv_devx_* entry points of gdak's libmlx5.so.1 (gm_devx.c), which
 * reach them through the private version node GDAK_PRIVATE_1.
 *
 *   dx_field.c  the PRM field table: every field the parser reads or
 *               writes, as (bit offset, width) in its mailbox; accessors
 *   dx_cmd.c    the command layer: opcode table, lengths, status and
 *               syndrome, the queries (HCA caps, RoCE address, vport)
 *   dx_obj.c    objects: umem, UAR, PD, the dispatch of CQ, QP, DCT, RMP, MKEY
 *   dx_queue.c  CQs and QPs over nm_ext; dx_dct.c DCTs; dx_rmp.c RMP rings;
 *   dx_mkey.c   MTT mkeys over umem; dx_verbs.c commands on verbs objects
 *   dx_api.c    the private entry points (what libmlx5 calls)
 *
 * Field positions use the PRM's numbering: bit 0 is the most significant
 * bit of the first big-endian dword; an offset is from the start of the
 * command's input (in.*, *_in.*) or output (out.*, *_out.*) mailbox.  The
 * table is written from the PRM structure layouts (mlx5_ifc.h) and is
 * pinned by emu_tests/verbs/verbs_devx_fields.c, which holds its own copy of the
 * numbers; hw_mlx5/hw_devx.c keeps a third, separate one.
 */
#ifndef DX_LOC_H
#define DX_LOC_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* ---- dx_field.c ---------------------------------------------------------------- */

/* X(id, "struct.field", bit offset in the mailbox, width) */
#define DX_FIELDS(X)                                                                               \
	/* every command: the header (general_obj_in_cmd_hdr / *_out) */                           \
	X(IN_OPCODE, "in.opcode", 0x00, 16)                                                        \
	X(IN_UID, "in.uid", 0x10, 16)                                                              \
	X(IN_OP_MOD, "in.op_mod", 0x30, 16)                                                        \
	X(IN_OBJ, "in.qpn/cqn/pd/srqn/rmpn", 0x48, 24)                                             \
	X(OUT_STATUS, "out.status", 0x00, 8)                                                       \
	X(OUT_SYNDROME, "out.syndrome", 0x20, 32)                                                  \
	X(OUT_OBJ, "create_*_out.qpn/cqn/pd/srqn/rmpn", 0x48, 24)                                  \
	/* QUERY_HCA_CAP: query_hca_cap_out.capability at 0x80 */                                  \
	X(CAP_LOG_MAX_SRQ_SZ, "cmd_hca_cap.log_max_srq_sz", 0x80 + 0x80, 8)                        \
	X(CAP_LOG_MAX_QP_SZ, "cmd_hca_cap.log_max_qp_sz", 0x80 + 0x88, 8)                          \
	X(CAP_LOG_MAX_QP, "cmd_hca_cap.log_max_qp", 0x80 + 0x9b, 5)                                \
	X(CAP_LOG_MAX_SRQ, "cmd_hca_cap.log_max_srq", 0x80 + 0xab, 5)                              \
	X(CAP_LOG_MAX_CQ_SZ, "cmd_hca_cap.log_max_cq_sz", 0x80 + 0xc8, 8)                          \
	X(CAP_LOG_MAX_CQ, "cmd_hca_cap.log_max_cq", 0x80 + 0xdb, 5)                                \
	X(CAP_LOG_MAX_EQ_SZ, "cmd_hca_cap.log_max_eq_sz", 0x80 + 0xe0, 8)                          \
	X(CAP_LOG_MAX_MKEY, "cmd_hca_cap.log_max_mkey", 0x80 + 0xea, 6)                            \
	X(CAP_LOG_MAX_EQ, "cmd_hca_cap.log_max_eq", 0x80 + 0xfc, 4)                                \
	X(CAP_LOG_MAX_MRW_SZ, "cmd_hca_cap.log_max_mrw_sz", 0x80 + 0x109, 7)                       \
	X(CAP_LOG_MAX_RA_REQ_QP, "cmd_hca_cap.log_max_ra_req_qp", 0x80 + 0x14a, 6)                 \
	X(CAP_LOG_MAX_RA_RES_QP, "cmd_hca_cap.log_max_ra_res_qp", 0x80 + 0x15a, 6)                 \
	X(CAP_RTS2RTS_QP_DSCP, "cmd_hca_cap.rts2rts_qp_dscp", 0x80 + 0x16a, 1)                     \
	X(CAP_GID_TABLE_SIZE, "cmd_hca_cap.gid_table_size", 0x80 + 0x170, 16)                      \
	X(CAP_PKEY_TABLE_SIZE, "cmd_hca_cap.pkey_table_size", 0x80 + 0x190, 16)                    \
	X(CAP_PORT_TYPE, "cmd_hca_cap.port_type", 0x80 + 0x1b6, 2)                                 \
	X(CAP_NUM_PORTS, "cmd_hca_cap.num_ports", 0x80 + 0x1b8, 8)                                 \
	X(CAP_LOG_MAX_MSG, "cmd_hca_cap.log_max_msg", 0x80 + 0x1c3, 5)                             \
	X(CAP_CQE_VERSION, "cmd_hca_cap.cqe_version", 0x80 + 0x1fc, 4)                             \
	X(CAP_COMPACT_AV, "cmd_hca_cap.compact_address_vector", 0x80 + 0x200, 1)                   \
	X(CAP_DC_REQ_SCAT_CQE, "cmd_hca_cap.dc_req_scat_data_cqe", 0x80 + 0x20c, 1)                \
	X(CAP_DCT, "cmd_hca_cap.dct", 0x80 + 0x21a, 1)                                             \
	X(CAP_ROCE, "cmd_hca_cap.roce", 0x80 + 0x21d, 1)                                           \
	X(CAP_ATOMIC, "cmd_hca_cap.atomic", 0x80 + 0x21e, 1)                                       \
	X(CAP_CQ_OI, "cmd_hca_cap.cq_oi", 0x80 + 0x220, 1)                                         \
	X(CAP_RC, "cmd_hca_cap.rc", 0x80 + 0x23f, 1)                                               \
	X(CAP_UAR_4K, "cmd_hca_cap.uar_4k", 0x80 + 0x240, 1)                                       \
	X(CAP_LOG_PG_SZ, "cmd_hca_cap.log_pg_sz", 0x80 + 0x258, 8)                                 \
	X(CAP_BF, "cmd_hca_cap.bf", 0x80 + 0x260, 1)                                               \
	X(CAP_LOG_BF_REG_SIZE, "cmd_hca_cap.log_bf_reg_size", 0x80 + 0x26b, 5)                     \
	X(CAP_MAX_WQE_SZ_SQ, "cmd_hca_cap.max_wqe_sz_sq", 0x80 + 0x290, 16)                        \
	X(CAP_MAX_WQE_SZ_RQ, "cmd_hca_cap.max_wqe_sz_rq", 0x80 + 0x2b0, 16)                        \
	X(CAP_LOG_MAX_PD, "cmd_hca_cap.log_max_pd", 0x80 + 0x32b, 5)                               \
	X(CAP_LOG_MAX_UCTX, "cmd_hca_cap.log_max_uctx", 0x80 + 0x463, 5)                           \
	X(CAP_LOG_MAX_DCI_STREAMS, "cmd_hca_cap.log_max_dci_stream_channels", 0x80 + 0x58b, 5)     \
	X(CAP_LOG_MAX_DCI_ERRORED, "cmd_hca_cap.log_max_dci_errored_streams", 0x80 + 0x593, 5)     \
	X(ATOM_8B_ENDIANNESS, "atomic_caps.atomic_req_8B_endianness_mode", 0x80 + 0x40, 2)         \
	X(ATOM_8B_MODE1_SUP, "atomic_caps.supported_atomic_req_8B_endianness_mode_1", 0x80 + 0x46, \
	  1)                                                                                       \
	X(ATOM_OPERATIONS, "atomic_caps.atomic_operations", 0x80 + 0x90, 16)                       \
	X(ATOM_SIZE_QP, "atomic_caps.atomic_size_qp", 0x80 + 0xb0, 16)                             \
	X(ATOM_SIZE_DC, "atomic_caps.atomic_size_dc", 0x80 + 0xd0, 16)                             \
	X(ROCE_DEST_UDP_PORT, "roce_cap.r_roce_dest_udp_port", 0x80 + 0xb0, 16)                    \
	X(ROCE_MAX_SRC_UDP_PORT, "roce_cap.r_roce_max_src_udp_port", 0x80 + 0xc0, 16)              \
	X(ROCE_MIN_SRC_UDP_PORT, "roce_cap.r_roce_min_src_udp_port", 0x80 + 0xd0, 16)              \
	X(ROCE_ADDR_TABLE_SIZE, "roce_cap.roce_address_table_size", 0x80 + 0xf0, 16)               \
	X(CAP2_NO_DBR_INT, "cmd_hca_cap_2.send_dbr_mode_no_dbr_int", 0x80 + 0x2e0, 1)              \
	X(CAP2_NO_DBR_EXT, "cmd_hca_cap_2.send_dbr_mode_no_dbr_ext", 0x80 + 0x2e1, 1)              \
	X(CAP2_LOG_MAX_DBRLESS_SQ, "cmd_hca_cap_2.log_max_send_dbr_less_qp_sq", 0x80 + 0x2e3, 5)   \
	/* QUERY_ROCE_ADDRESS */                                                                   \
	X(RA_IN_INDEX, "query_roce_address_in.roce_address_index", 0x40, 16)                       \
	X(RA_IN_PORT, "query_roce_address_in.vhca_port_num", 0x5c, 4)                              \
	X(RA_OUT_L3_ADDR, "roce_addr_layout.source_l3_address", 0x80 + 0x00, 128)                  \
	X(RA_OUT_MAC_47_32, "roce_addr_layout.source_mac_47_32", 0x80 + 0x90, 16)                  \
	X(RA_OUT_MAC_31_0, "roce_addr_layout.source_mac_31_0", 0x80 + 0xa0, 32)                    \
	X(RA_OUT_L3_TYPE, "roce_addr_layout.roce_l3_type", 0x80 + 0xd4, 4)                         \
	X(RA_OUT_VERSION, "roce_addr_layout.roce_version", 0x80 + 0xd8, 8)                         \
	/* QUERY_NIC_VPORT_CONTEXT */                                                              \
	X(NVC_ROCE_EN, "nic_vport_context.roce_en", 0x80 + 0x1f, 1)                                \
	/* QUERY_VPORT_STATE / QUERY_HCA_VPORT_CONTEXT */                                          \
	X(VP_IN_OTHER_VPORT, "query_*vport*_in.other_vport", 0x40, 1)                              \
	X(VP_IN_PORT_NUM, "query_hca_vport_context_in.port_num", 0x4c, 4)                          \
	X(VP_IN_VPORT_NUMBER, "query_*vport*_in.vport_number", 0x50, 16)                           \
	X(VPS_ADMIN_STATE, "query_vport_state_out.admin_state", 0x78, 4)                           \
	X(VPS_STATE, "query_vport_state_out.state", 0x7c, 4)                                       \
	X(HVC_PORT_PHYS_STATE, "hca_vport_context.port_physical_state", 0x80 + 0x110, 4)           \
	X(HVC_PORT_STATE, "hca_vport_context.port_state", 0x80 + 0x118, 4)                         \
	X(HVC_VPORT_STATE, "hca_vport_context.vport_state", 0x80 + 0x11c, 4)                       \
	X(HVC_SYS_IMAGE_GUID, "hca_vport_context.system_image_guid", 0x80 + 0x140, 64)             \
	X(HVC_PORT_GUID, "hca_vport_context.port_guid", 0x80 + 0x180, 64)                          \
	X(HVC_NODE_GUID, "hca_vport_context.node_guid", 0x80 + 0x1c0, 64)                          \
	X(HVC_LID, "hca_vport_context.lid", 0x80 + 0x300, 16)                                      \
	/* CREATE_CQ: cq_context at 0x80 */                                                        \
	X(CQC_STATUS, "cqc.status", 0x80 + 0x00, 4)                                                \
	X(CQC_DBR_UMEM_VALID, "cqc.dbr_umem_valid", 0x80 + 0x06, 1)                                \
	X(CQC_CQE_SZ, "cqc.cqe_sz", 0x80 + 0x08, 3)                                                \
	X(CQC_CC, "cqc.cc", 0x80 + 0x0b, 1)                                                        \
	X(CQC_OI, "cqc.oi", 0x80 + 0x0e, 1)                                                        \
	X(CQC_CQE_COMP_EN, "cqc.cqe_compression_en", 0x80 + 0x11, 1)                               \
	X(CQC_ST, "cqc.st", 0x80 + 0x14, 4)                                                        \
	X(CQC_DBR_UMEM_ID, "cqc.dbr_umem_id", 0x80 + 0x20, 32)                                     \
	X(CQC_PAGE_OFFSET, "cqc.page_offset", 0x80 + 0x54, 6)                                      \
	X(CQC_LOG_CQ_SIZE, "cqc.log_cq_size", 0x80 + 0x63, 5)                                      \
	X(CQC_UAR_PAGE, "cqc.uar_page", 0x80 + 0x68, 24)                                           \
	X(CQC_C_EQN, "cqc.c_eqn", 0x80 + 0xb8, 8)                                                  \
	X(CQC_LOG_PAGE_SIZE, "cqc.log_page_size", 0x80 + 0xc3, 5)                                  \
	X(CQC_PRODUCER_COUNTER, "cqc.producer_counter", 0x80 + 0x168, 24)                          \
	X(CQC_DBR_ADDR, "cqc.dbr_addr", 0x80 + 0x1c0, 64)                                          \
	X(CQ_UMEM_OFFSET, "create_cq_in.cq_umem_offset", 0x280, 64)                                \
	X(CQ_UMEM_ID, "create_cq_in.cq_umem_id", 0x2c0, 32)                                        \
	X(CQ_UMEM_VALID, "create_cq_in.cq_umem_valid", 0x2e0, 1)                                   \
	/* QP commands: opt_param_mask at 0x80, qpc at 0xc0 (create, modify, query) */             \
	X(QP_OPT_PARAM_MASK, "create_qp_in.opt_param_mask", 0x80, 32)                              \
	X(QPC_STATE, "qpc.state", 0xc0 + 0x00, 4)                                                  \
	X(QPC_ST, "qpc.st", 0xc0 + 0x08, 8)                                                        \
	X(QPC_PM_STATE, "qpc.pm_state", 0xc0 + 0x13, 2)                                            \
	X(QPC_PD, "qpc.pd", 0xc0 + 0x28, 24)                                                       \
	X(QPC_MTU, "qpc.mtu", 0xc0 + 0x40, 3)                                                      \
	X(QPC_LOG_MSG_MAX, "qpc.log_msg_max", 0xc0 + 0x43, 5)                                      \
	X(QPC_LOG_RQ_SIZE, "qpc.log_rq_size", 0xc0 + 0x49, 4)                                      \
	X(QPC_LOG_RQ_STRIDE, "qpc.log_rq_stride", 0xc0 + 0x4d, 3)                                  \
	X(QPC_NO_SQ, "qpc.no_sq", 0xc0 + 0x50, 1)                                                  \
	X(QPC_LOG_SQ_SIZE, "qpc.log_sq_size", 0xc0 + 0x51, 4)                                      \
	X(QPC_TS_FORMAT, "qpc.ts_format", 0xc0 + 0x58, 2)                                          \
	X(QPC_UAR_PAGE, "qpc.uar_page", 0xc0 + 0x68, 24)                                           \
	X(QPC_SEND_DBR_MODE, "qpc.send_dbr_mode", 0xc0 + 0x80, 2)                                  \
	X(QPC_LOG_PAGE_SIZE, "qpc.log_page_size", 0xc0 + 0xa3, 5)                                  \
	X(QPC_REMOTE_QPN, "qpc.remote_qpn", 0xc0 + 0xa8, 24)                                       \
	X(ADS_PKEY_INDEX, "qpc.primary_address_path.pkey_index", 0xc0 + 0xc0 + 0x10, 16)           \
	X(ADS_GRH, "qpc.primary_address_path.grh", 0xc0 + 0xc0 + 0x28, 1)                          \
	X(ADS_RLID, "qpc.primary_address_path.rlid", 0xc0 + 0xc0 + 0x30, 16)                       \
	X(ADS_ACK_TIMEOUT, "qpc.primary_address_path.ack_timeout", 0xc0 + 0xc0 + 0x40, 5)          \
	X(ADS_SRC_ADDR_INDEX, "qpc.primary_address_path.src_addr_index", 0xc0 + 0xc0 + 0x48, 8)    \
	X(ADS_HOP_LIMIT, "qpc.primary_address_path.hop_limit", 0xc0 + 0xc0 + 0x58, 8)              \
	X(ADS_TCLASS, "qpc.primary_address_path.tclass", 0xc0 + 0xc0 + 0x64, 8)                    \
	X(ADS_FLOW_LABEL, "qpc.primary_address_path.flow_label", 0xc0 + 0xc0 + 0x6c, 20)           \
	X(ADS_RGID, "qpc.primary_address_path.rgid_rip", 0xc0 + 0xc0 + 0x80, 128)                  \
	X(ADS_DSCP, "qpc.primary_address_path.dscp", 0xc0 + 0xc0 + 0x10a, 6)                       \
	X(ADS_UDP_SPORT, "qpc.primary_address_path.udp_sport", 0xc0 + 0xc0 + 0x110, 16)            \
	X(ADS_SL, "qpc.primary_address_path.sl", 0xc0 + 0xc0 + 0x124, 4)                           \
	X(ADS_VHCA_PORT_NUM, "qpc.primary_address_path.vhca_port_num", 0xc0 + 0xc0 + 0x128, 8)     \
	X(ADS_RMAC_47_32, "qpc.primary_address_path.rmac_47_32", 0xc0 + 0xc0 + 0x130, 16)          \
	X(ADS_RMAC_31_0, "qpc.primary_address_path.rmac_31_0", 0xc0 + 0xc0 + 0x140, 32)            \
	X(QPC_LOG_SRA_MAX, "qpc.log_sra_max", 0xc0 + 0x388, 3)                                     \
	X(QPC_RETRY_COUNT, "qpc.retry_count", 0xc0 + 0x38d, 3)                                     \
	X(QPC_RNR_RETRY, "qpc.rnr_retry", 0xc0 + 0x390, 3)                                         \
	X(QPC_NEXT_SEND_PSN, "qpc.next_send_psn", 0xc0 + 0x3c8, 24)                                \
	X(QPC_CQN_SND, "qpc.cqn_snd", 0xc0 + 0x3e8, 24)                                            \
	X(QPC_LOG_RRA_MAX, "qpc.log_rra_max", 0xc0 + 0x488, 3)                                     \
	X(QPC_ATOMIC_MODE, "qpc.atomic_mode", 0xc0 + 0x48c, 4)                                     \
	X(QPC_RRE, "qpc.rre", 0xc0 + 0x490, 1)                                                     \
	X(QPC_RWE, "qpc.rwe", 0xc0 + 0x491, 1)                                                     \
	X(QPC_RAE, "qpc.rae", 0xc0 + 0x492, 1)                                                     \
	X(QPC_PAGE_OFFSET, "qpc.page_offset", 0xc0 + 0x494, 6)                                     \
	X(QPC_MIN_RNR_NAK, "qpc.min_rnr_nak", 0xc0 + 0x4a3, 5)                                     \
	X(QPC_NEXT_RCV_PSN, "qpc.next_rcv_psn", 0xc0 + 0x4a8, 24)                                  \
	X(QPC_CQN_RCV, "qpc.cqn_rcv", 0xc0 + 0x4e8, 24)                                            \
	X(QPC_DBR_ADDR, "qpc.dbr_addr", 0xc0 + 0x500, 64)                                          \
	X(QPC_RQ_TYPE, "qpc.rq_type", 0xc0 + 0x565, 3)                                             \
	X(QPC_SRQN, "qpc.srqn_rmpn_xrqn", 0xc0 + 0x568, 24)                                        \
	X(QPC_HW_SQ_WQEBB_COUNTER, "qpc.hw_sq_wqebb_counter", 0xc0 + 0x5a0, 16)                    \
	X(QPC_SW_SQ_WQEBB_COUNTER, "qpc.sw_sq_wqebb_counter", 0xc0 + 0x5b0, 16)                    \
	X(QPC_DC_ACCESS_KEY, "qpc.dc_access_key", 0xc0 + 0x640, 64)                                \
	X(QPC_DBR_UMEM_VALID, "qpc.dbr_umem_valid", 0xc0 + 0x683, 1)                               \
	X(QPC_DBR_UMEM_ID, "qpc.dbr_umem_id", 0xc0 + 0x720, 32)                                    \
	X(QP_WQ_UMEM_OFFSET, "create_qp_in.wq_umem_offset", 0x800, 64)                             \
	X(QP_WQ_UMEM_ID, "create_qp_in.wq_umem_id", 0x840, 32)                                     \
	X(QP_WQ_UMEM_VALID, "create_qp_in.wq_umem_valid", 0x860, 1)                                \
	/* CREATE_DCT / QUERY_DCT: dct_context_entry (dctc) at 0x80 */                             \
	X(DCTC_STATE, "dctc.state", 0x80 + 0x04, 4)                                                \
	X(DCTC_USER_INDEX, "dctc.user_index", 0x80 + 0x28, 24)                                     \
	X(DCTC_CQN, "dctc.cqn", 0x80 + 0x48, 24)                                                   \
	X(DCTC_ATOMIC_MODE, "dctc.atomic_mode", 0x80 + 0x68, 4)                                    \
	X(DCTC_RRE, "dctc.rre", 0x80 + 0x6c, 1)                                                    \
	X(DCTC_RWE, "dctc.rwe", 0x80 + 0x6d, 1)                                                    \
	X(DCTC_RAE, "dctc.rae", 0x80 + 0x6e, 1)                                                    \
	X(DCTC_CS_RES, "dctc.cs_res", 0x80 + 0x88, 8)                                              \
	X(DCTC_MIN_RNR_NAK, "dctc.min_rnr_nak", 0x80 + 0x93, 5)                                    \
	X(DCTC_SRQN, "dctc.srqn_xrqn", 0x80 + 0xa8, 24)                                            \
	X(DCTC_PD, "dctc.pd", 0x80 + 0xc8, 24)                                                     \
	X(DCTC_TCLASS, "dctc.tclass", 0x80 + 0xe0, 8)                                              \
	X(DCTC_FLOW_LABEL, "dctc.flow_label", 0x80 + 0xec, 20)                                     \
	X(DCTC_DC_ACCESS_KEY, "dctc.dc_access_key", 0x80 + 0x100, 64)                              \
	X(DCTC_MTU, "dctc.mtu", 0x80 + 0x145, 3)                                                   \
	X(DCTC_PORT, "dctc.port", 0x80 + 0x148, 8)                                                 \
	X(DCTC_PKEY_INDEX, "dctc.pkey_index", 0x80 + 0x150, 16)                                    \
	X(DCTC_MY_ADDR_INDEX, "dctc.my_addr_index", 0x80 + 0x168, 8)                               \
	X(DCTC_HOP_LIMIT, "dctc.hop_limit", 0x80 + 0x178, 8)                                       \
	X(DCTC_KEY_VIOLATIONS, "dctc.dc_access_key_violation_count", 0x80 + 0x180, 32)             \
	X(DCTC_DSCP, "dctc.dscp", 0x80 + 0x1ba, 6)                                                 \
	/* CREATE_RMP / QUERY_RMP / MODIFY_RMP: rmpc at 0x100, its wq at rmpc + 0x180 */           \
	X(RMP_IN_STATE, "modify_rmp_in.rmp_state", 0x40, 4)                                        \
	X(RMP_BITMASK_LWM, "modify_rmp_in.bitmask.lwm", 0x80 + 0x3f, 1)                            \
	X(RMP_BITMASK_HI, "modify_rmp_in.bitmask[63:32]", 0x80, 32)                                \
	X(RMP_BITMASK_LO, "modify_rmp_in.bitmask[31:0]", 0xa0, 32)                                 \
	X(RMPC_STATE, "rmpc.state", 0x100 + 0x08, 4)                                               \
	X(RMPC_BASIC_CYCLIC, "rmpc.basic_cyclic_rcv_wqe", 0x100 + 0x20, 1)                         \
	X(WQ_TYPE, "rmpc.wq.wq_type", 0x280 + 0x00, 4)                                             \
	X(WQ_SIGNATURE, "rmpc.wq.wq_signature", 0x280 + 0x04, 1)                                   \
	X(WQ_PAGE_OFFSET, "rmpc.wq.page_offset", 0x280 + 0x2b, 5)                                  \
	X(WQ_LWM, "rmpc.wq.lwm", 0x280 + 0x30, 16)                                                 \
	X(WQ_PD, "rmpc.wq.pd", 0x280 + 0x48, 24)                                                   \
	X(WQ_DBR_ADDR, "rmpc.wq.dbr_addr", 0x280 + 0x80, 64)                                       \
	X(WQ_HW_COUNTER, "rmpc.wq.hw_counter", 0x280 + 0xc0, 32)                                   \
	X(WQ_SW_COUNTER, "rmpc.wq.sw_counter", 0x280 + 0xe0, 32)                                   \
	X(WQ_LOG_STRIDE, "rmpc.wq.log_wq_stride", 0x280 + 0x10c, 4)                                \
	X(WQ_LOG_PG_SZ, "rmpc.wq.log_wq_pg_sz", 0x280 + 0x113, 5)                                  \
	X(WQ_LOG_SZ, "rmpc.wq.log_wq_sz", 0x280 + 0x11b, 5)                                        \
	X(WQ_DBR_UMEM_VALID, "rmpc.wq.dbr_umem_valid", 0x280 + 0x120, 1)                           \
	X(WQ_WQ_UMEM_VALID, "rmpc.wq.wq_umem_valid", 0x280 + 0x121, 1)                             \
	X(WQ_DBR_UMEM_ID, "rmpc.wq.dbr_umem_id", 0x280 + 0x140, 32)                                \
	X(WQ_WQ_UMEM_ID, "rmpc.wq.wq_umem_id", 0x280 + 0x160, 32)                                  \
	X(WQ_WQ_UMEM_OFFSET, "rmpc.wq.wq_umem_offset", 0x280 + 0x180, 64)                          \
	/* CREATE_MKEY: mkc at 0x80 (QUERY_MKEY: the same offset in its output) */                 \
	X(MKEY_PG_ACCESS, "create_mkey_in.pg_access", 0x60, 1)                                     \
	X(MKEY_UMEM_VALID, "create_mkey_in.mkey_umem_valid", 0x61, 1)                              \
	X(MKC_FREE, "mkc.free", 0x80 + 0x01, 1)                                                    \
	X(MKC_ACCESS_MODE_4_2, "mkc.access_mode_4_2", 0x80 + 0x03, 3)                              \
	X(MKC_UMR_EN, "mkc.umr_en", 0x80 + 0x10, 1)                                                \
	X(MKC_A, "mkc.a", 0x80 + 0x11, 1)                                                          \
	X(MKC_RW, "mkc.rw", 0x80 + 0x12, 1)                                                        \
	X(MKC_RR, "mkc.rr", 0x80 + 0x13, 1)                                                        \
	X(MKC_LW, "mkc.lw", 0x80 + 0x14, 1)                                                        \
	X(MKC_LR, "mkc.lr", 0x80 + 0x15, 1)                                                        \
	X(MKC_ACCESS_MODE_1_0, "mkc.access_mode_1_0", 0x80 + 0x16, 2)                              \
	X(MKC_QPN, "mkc.qpn", 0x80 + 0x20, 24)                                                     \
	X(MKC_MKEY_7_0, "mkc.mkey_7_0", 0x80 + 0x38, 8)                                            \
	X(MKC_LENGTH64, "mkc.length64", 0x80 + 0x60, 1)                                            \
	X(MKC_BSF_EN, "mkc.bsf_en", 0x80 + 0x61, 1)                                                \
	X(MKC_PD, "mkc.pd", 0x80 + 0x68, 24)                                                       \
	X(MKC_START_ADDR, "mkc.start_addr", 0x80 + 0x80, 64)                                       \
	X(MKC_LEN, "mkc.len", 0x80 + 0xc0, 64)                                                     \
	X(MKC_TRANSLATIONS_SIZE, "mkc.translations_octword_size", 0x80 + 0x1a0, 32)                \
	X(MKC_LOG_PAGE_SIZE, "mkc.log_page_size", 0x80 + 0x1db, 5)                                 \
	X(MKC_CRYPTO_EN, "mkc.crypto_en", 0x80 + 0x1e3, 2)                                         \
	X(MKEY_UMEM_ID, "create_mkey_in.mkey_umem_id", 0x320, 32)                                  \
	X(MKEY_UMEM_OFFSET, "create_mkey_in.mkey_umem_offset", 0x340, 64)

#define DX_ENUM(id, name, bit, w) DXF_##id,
enum dx_field_id {
	DX_FIELDS(DX_ENUM) DXF_COUNT
};
#undef DX_ENUM

struct dx_field {
	const char *name; /* "struct.field" as mlx5_ifc.h spells it */
	uint16_t bit;	  /* offset in its mailbox, PRM numbering */
	uint16_t width;	  /* bits: 1..32, 64, 128 */
};
extern const struct dx_field dx_fields[DXF_COUNT];

/* Read / write a field of a mailbox of len bytes.  A field that does not
 * fit reads as 0 and is not written: a short mailbox never makes the
 * parser read or write outside it. */
uint32_t dx_get(const void *mb, size_t len, enum dx_field_id f);
uint64_t dx_get64(const void *mb, size_t len, enum dx_field_id f);
void dx_set(void *mb, size_t len, enum dx_field_id f, uint32_t v);
void dx_set64(void *mb, size_t len, enum dx_field_id f, uint64_t v);
/* 128-bit fields (GIDs): 16 bytes in wire order */
int dx_get_bytes(const void *mb, size_t len, enum dx_field_id f, uint8_t out[16]);
void dx_set_bytes(void *mb, size_t len, enum dx_field_id f, const uint8_t in[16]);
/* 1 when the field lies inside a mailbox of len bytes */
int dx_fits(size_t len, enum dx_field_id f);

/* ---- dx_cmd.c -------------------------------------------------------------------- */

/* Command status (PRM "Command Interface Status"): what ConnectX writes
 * in out.status */
enum dx_status {
	DX_ST_OK = 0x00,
	DX_ST_INT_ERR = 0x01,
	DX_ST_BAD_OP = 0x02,
	DX_ST_BAD_PARAM = 0x03,
	DX_ST_BAD_SYS_STATE = 0x04,
	DX_ST_BAD_RES = 0x05,
	DX_ST_RES_BUSY = 0x06,
	DX_ST_EXCEED_LIM = 0x08,
	DX_ST_BAD_RES_STATE = 0x09,
	DX_ST_BAD_INDEX = 0x0a,
	DX_ST_NO_RES = 0x0f,
	DX_ST_BAD_QP_STATE = 0x10,
	DX_ST_BAD_SIZE = 0x40,
	DX_ST_BAD_INPUT_LEN = 0x50,
	DX_ST_BAD_OUTPUT_LEN = 0x51,
};

/* PRM opcodes gdak knows by name (the rest are "unknown" to the log) */
enum dx_opcode {
	DX_OP_QUERY_HCA_CAP = 0x100,
	DX_OP_QUERY_ADAPTER = 0x101,
	DX_OP_QUERY_ISSI = 0x10a,
	DX_OP_CREATE_MKEY = 0x200,
	DX_OP_QUERY_MKEY = 0x201,
	DX_OP_DESTROY_MKEY = 0x202,
	DX_OP_CREATE_EQ = 0x301,
	DX_OP_CREATE_CQ = 0x400,
	DX_OP_DESTROY_CQ = 0x401,
	DX_OP_QUERY_CQ = 0x402,
	DX_OP_MODIFY_CQ = 0x403,
	DX_OP_CREATE_QP = 0x500,
	DX_OP_DESTROY_QP = 0x501,
	DX_OP_RST2INIT_QP = 0x502,
	DX_OP_INIT2RTR_QP = 0x503,
	DX_OP_RTR2RTS_QP = 0x504,
	DX_OP_RTS2RTS_QP = 0x505,
	DX_OP_SQERR2RTS_QP = 0x506,
	DX_OP_2ERR_QP = 0x507,
	DX_OP_2RST_QP = 0x50a,
	DX_OP_QUERY_QP = 0x50b,
	DX_OP_SQD_RTS_QP = 0x50c,
	DX_OP_INIT2INIT_QP = 0x50e,
	DX_OP_CREATE_SRQ = 0x700,
	DX_OP_DESTROY_SRQ = 0x701,
	DX_OP_QUERY_SRQ = 0x702,
	DX_OP_CREATE_DCT = 0x710,
	DX_OP_DESTROY_DCT = 0x711,
	DX_OP_DRAIN_DCT = 0x712,
	DX_OP_QUERY_DCT = 0x713,
	DX_OP_ARM_DCT_FOR_KEY_VIOLATION = 0x714,
	DX_OP_QUERY_VPORT_STATE = 0x750,
	DX_OP_QUERY_NIC_VPORT_CONTEXT = 0x754,
	DX_OP_QUERY_ROCE_ADDRESS = 0x760,
	DX_OP_QUERY_HCA_VPORT_CONTEXT = 0x762,
	DX_OP_QUERY_HCA_VPORT_GID = 0x764,
	DX_OP_ALLOC_PD = 0x800,
	DX_OP_DEALLOC_PD = 0x801,
	DX_OP_ALLOC_UAR = 0x802,
	DX_OP_DEALLOC_UAR = 0x803,
	DX_OP_ACCESS_REG = 0x805,
	DX_OP_NOP = 0x80d,
	DX_OP_ALLOC_TRANSPORT_DOMAIN = 0x816,
	DX_OP_CREATE_RMP = 0x90c,
	DX_OP_MODIFY_RMP = 0x90d,
	DX_OP_DESTROY_RMP = 0x90e,
	DX_OP_QUERY_RMP = 0x90f,
	DX_OP_CREATE_GENERAL_OBJECT = 0xa00,
};

/* QUERY_HCA_CAP op_mod: capability type << 1 | current (1) / maximum (0) */
enum dx_cap_type {
	DX_CAP_GENERAL = 0x0,
	DX_CAP_ETHERNET = 0x1,
	DX_CAP_ODP = 0x2,
	DX_CAP_ATOMIC = 0x3,
	DX_CAP_ROCE = 0x4,
	DX_CAP_GENERAL_2 = 0x20,
};

/* Mailbox sizes ConnectX checks (bytes): the input a command needs and the
 * output it writes. */
#define DX_HDR_IN_LEN 16u
#define DX_HDR_OUT_LEN 16u
#define DX_QUERY_HCA_CAP_OUT_LEN (16u + 4096u)
#define DX_CREATE_CQ_IN_LEN (0x300u / 8)
#define DX_QUERY_CQ_OUT_LEN (0x80u / 8 + 0x200u / 8)
#define DX_QP_IN_LEN (0x880u / 8)     /* create_qp_in without pas, modify_qp_in */
#define DX_QP_MOD_IN_LEN (0x800u / 8) /* the transitions: qpc, no umem part */
#define DX_QUERY_QP_OUT_LEN (0x880u / 8)
#define DX_ROCE_ADDR_OUT_LEN (0x80u / 8 + 0x100u / 8)
#define DX_NIC_VPORT_OUT_LEN (0x80u / 8 + 0x800u / 8)
#define DX_VPORT_STATE_OUT_LEN (0x80u / 8)
/* query_hca_vport_context_out up to the end of the fields gdak fills
 * (lid and the SM words after it) */
#define DX_HCA_VPORT_OUT_LEN (0x80u / 8 + 0x340u / 8)
#define DX_DCT_IN_LEN (0x280u / 8)	  /* create_dct_in up to the end of the dctc */
#define DX_QUERY_DCT_OUT_LEN (0x280u / 8) /* query_dct_out: header, dctc */
#define DX_DCTC_LEN (0x200u / 8)
/* create_rmp_in / modify_rmp_in / query_rmp_out: header, rmpc (with its wq,
 * no page list) */
#define DX_RMP_IN_LEN (0x880u / 8)
#define DX_RMPC_OFF (0x100u / 8)
#define DX_RMPC_LEN (0x780u / 8)
#define DX_MKEY_IN_LEN (0x880u / 8)	   /* create_mkey_in without its translations */
#define DX_QUERY_MKEY_OUT_LEN (0x280u / 8) /* query_mkey_out: header, mkc */
#define DX_MKC_LEN (0x200u / 8)

struct gdak_ctx;
struct dx_obj;

/* DEVX state of one device of this process (every ibv_context opened on
 * it shares it, as they share the NIC-model context). */
struct dx_ctx {
	pthread_mutex_t lock; /* the object list and every object's links */
	void *dev;	      /* struct gv_device */
	struct gdak_ctx *g;
	uint8_t gid[16]; /* GID index 0 */
	uint8_t mac[6];	 /* what the device's RoCE address reports */
	uint64_t guid;	 /* node / port / system image GUID (host order) */
	struct dx_obj *head;
	uint32_t next_id; /* PD numbers, umem ids, UAR page ids */
	unsigned nobj;
	/* the UAR pages' backing file: page id n at offset n << 12, what
	 * mlx5dv_devx_uar.mmap_off says and a program may mmap through the
	 * context's cmd_fd, as on a ConnectX (-1 until the first page) */
	int uar_fd;
};

/* The kernel's errno for a command ConnectX ran and failed: the output
 * mailbox carries status and syndrome (drivers/infiniband/hw/mlx5/devx.c
 * returns mlx5_cmd_do's -EREMOTEIO after copying it out). */
#define DX_ERR_FW EREMOTEIO

/* Write status and syndrome into out (when it holds the header), log a
 * line naming command and field, and return -DX_ERR_FW (0 for DX_ST_OK). */
int dx_fail(void *out, size_t outlen, const void *in, size_t inlen, enum dx_status st,
	    uint32_t syndrome, const char *field, const char *fmt, ...)
	__attribute__((format(printf, 8, 9)));
/* dx_fail for the NIC model's refusal ret (a negative errno) of the object
 * the command creates (what: "CQ", "QP" ...): out of resources for -ENOMEM
 * and -ENOSPC (a table full), else a bad parameter. */
int dx_refused(void *out, size_t outlen, const void *in, size_t inlen, int ret, const char *what);
const char *dx_op_name(unsigned opcode);
/* Begin an answer: out zeroed, status OK.  -DX_ERR_FW (BAD_OUTPUT_LEN)
 * when out cannot hold need bytes. */
int dx_out_begin(void *out, size_t outlen, size_t need, const void *in, size_t inlen);
/* A command's own field checks: 0, or dx_fail's answer for the first field
 * it does not execute. */
typedef int dx_fields_fn(const void *in, size_t inlen, void *out, size_t outlen);
/* Begin a command that reads need_in bytes of in and answers with the
 * header only: -DX_ERR_FW (BAD_INPUT_LEN, naming the command) when in is
 * shorter, else dx_out_begin's answer for DX_HDR_OUT_LEN, then (when not
 * NULL) fields' answer. */
int dx_cmd_begin(const void *in, size_t inlen, size_t need_in, void *out, size_t outlen,
		 dx_fields_fn *fields);

/* The commands that create nothing (mlx5dv_devx_general_cmd): 0, or -errno
 * with out filled as ConnectX fills it. */
int dx_general(struct dx_ctx *c, const void *in, size_t inlen, void *out, size_t outlen);
/* 1 when the kernel lets mlx5dv_devx_general_cmd carry this opcode */
int dx_is_general(unsigned opcode);

/* ---- dx_obj.c / dx_queue.c ----------------------------------------------------------- */

enum dx_obj_type {
	DX_OBJ_UMEM = 1,
	DX_OBJ_UAR,
	DX_OBJ_PD,
	DX_OBJ_TD,
	DX_OBJ_CQ,
	DX_OBJ_QP,
	DX_OBJ_DCT,
	DX_OBJ_RMP,
	DX_OBJ_MKEY,
};

#define DX_UAR_PAGE 4096u
#define DX_UAR_CQ_ARM 0x20u /* the CQ arm doorbell word in a UAR page */
/* the send doorbell register at GDAK_MLX5_DB_OFFSET: two BlueFlame halves of
 * 256 bytes (the NIC model's NM_BF_LOG_HALF) */
#define DX_UAR_DB_REGS 0x200u
#define DX_MAX_DEPS 8
/* completion vectors of the device (ibv_context.num_comp_vectors) and the
 * EQ number mlx5dv_devx_query_eqn reports for each */
#define DX_NUM_EQ 1u
#define DX_EQN_BASE 7u

struct nm_cq;
struct gdak_qp;

struct dx_obj {
	struct dx_obj *next;
	struct dx_ctx *c;
	enum dx_obj_type type;
	uint32_t id;	     /* pdn, cqn, qpn, umem id, UAR page id */
	unsigned users;	     /* objects whose deps[] name this one */
	unsigned destroy_op; /* what the kernel would send to destroy it */
	struct dx_obj *deps[DX_MAX_DEPS];
	union {
		struct {
			void *addr;
			size_t size;
			uint32_t access;
		} umem;
		struct {
			void *page;
			unsigned type; /* MLX5DV_UAR_ALLOC_TYPE_* */
			unsigned qps;  /* QPs ringing on it */
		} uar;
		struct {
			struct nm_cq *cq;
			uint8_t cqc[0x200 / 8]; /* the cq_context as created (QUERY_CQ) */
		} cq;
		struct {
			struct gdak_qp *qp;
			uint8_t *mb;	       /* a create_qp_in image: what QUERY_QP reports */
			unsigned state;	       /* PRM qpc.state as last moved by a command */
			unsigned st;	       /* qpc.st: RC or DCI */
			void *srq;	       /* the verbs SRQ it names (struct gv_srq), or NULL */
			struct dx_rq_att *att; /* its DEVX RMP (rq_type SRQ), or NULL */
		} qp;
		struct {
			struct gdak_qp *qp;
			uint8_t dctc[0x200 / 8]; /* as created: what QUERY_DCT reports */
			unsigned state;		 /* dctc.state: ACTIVE, DRAINED */
			void *srq;		 /* struct gv_srq */
			void *ring;		 /* the NIC-model QP's unrung send queue, record */
			struct dx_rq_att *att;	 /* on a DEVX RMP, or NULL */
		} dct;
		struct {
			pthread_mutex_t lock; /* the consumer state: QPs on any NIC thread */
			uint8_t *ring;	      /* umem: 1 << log_sz WQEs of stride bytes */
			uint32_t *dbrec;      /* umem: be32 [0] WQEs posted (16 bits) */
			uint32_t log_sz, stride;
			bool linked;		 /* linked list: follow next_wqe_index */
			bool next_seg;		 /* the WQE starts with the 16-byte next segment */
			uint32_t head;		 /* the WQE the next message takes */
			uint16_t taken;		 /* WQEs taken (hw_counter) */
			uint16_t lwm;		 /* limit (kept for QUERY_RMP: no event path) */
			bool overrun;		 /* reported once */
			bool ring_gpu, rec_gpu;	 /* in GPU memory: read through the driver */
			uint8_t rmpc[0x780 / 8]; /* as created: what QUERY_RMP reports */
		} rmp;
		struct {
			struct gdak_mr *mr;	/* the NIC model's region, key as the mkc asks */
			uint8_t mkc[0x200 / 8]; /* as created: what QUERY_MKEY reports */
		} mkey;
	} u;
};

struct ibv_context;
/* The DEVX state of the device of a gdak verbs context. */
struct dx_ctx *dx_ctx_of(struct ibv_context *ibctx);

struct dx_obj *dx_obj_new(struct dx_ctx *c, enum dx_obj_type type);
/* under c->lock */
void dx_obj_link(struct dx_obj *o);
void dx_obj_unlink(struct dx_obj *o);
struct dx_obj *dx_find(struct dx_ctx *c, enum dx_obj_type type, uint32_t id);
void dx_obj_hold(struct dx_obj *o, struct dx_obj *dep);
/* Not under c->lock: link the created object o into c with a reference
 * on each of the n objects of deps (NULLs skipped), and answer its number
 * in out.  id_base != 0: the number is drawn here, id_base | 23 fresh bits
 * (RMPs); else o->id is already set. */
void dx_obj_publish(struct dx_ctx *c, struct dx_obj *o, uint32_t id_base,
		    struct dx_obj *const *deps, size_t n, void *out, size_t outlen);
uint32_t dx_new_id(struct dx_ctx *c);
void *dx_umem_at(struct dx_ctx *c, uint32_t id, uint64_t off, uint64_t len, struct dx_obj **umem);

int dx_umem_reg(struct dx_ctx *c, void *addr, size_t size, uint32_t access, struct dx_obj **out);
int dx_uar_alloc(struct dx_ctx *c, unsigned type, struct dx_obj **out);
void dx_uar_free_page(struct dx_obj *uar);
/* the UAR pages' file (-1: none yet) */
int dx_uar_fd(struct dx_ctx *c);

int dx_obj_create(struct dx_ctx *c, const void *in, size_t inlen, void *out, size_t outlen,
		  struct dx_obj **obj);
int dx_obj_modify(struct dx_obj *o, const void *in, size_t inlen, void *out, size_t outlen);
int dx_obj_query(struct dx_obj *o, const void *in, size_t inlen, void *out, size_t outlen);
/* 0, -EBUSY while another object uses it (nothing changes) */
int dx_obj_destroy(struct dx_obj *o);
uint32_t dx_obj_id(const struct dx_obj *o);

/* dx_queue.c: the NIC-model side (nm_ext.h).  create: called without
 * c->lock; destroy: under it. */
int dx_ring_kind(struct dx_ctx *c, const void *addr, size_t len, const char *what);
int dx_cq_create(struct dx_ctx *c, const void *in, size_t inlen, void *out, size_t outlen,
		 struct dx_obj **obj);
int dx_cq_query(struct dx_obj *o, const void *in, size_t inlen, void *out, size_t outlen);
int dx_cq_destroy(struct dx_obj *o);
int dx_qp_create(struct dx_ctx *c, const void *in, size_t inlen, void *out, size_t outlen,
		 struct dx_obj **obj);
int dx_qp_is_modify(unsigned opcode);
int dx_qp_modify(struct dx_obj *o, const void *in, size_t inlen, void *out, size_t outlen);
/* The field checks of RST2INIT / INIT2INIT, INIT2RTR and RTR2RTS, shared by
 * DEVX-created and verbs-created QPs: 0, or -DX_ERR_FW with the status in out. */
int dx_qp_init_ok(const void *in, size_t inlen, void *out, size_t outlen);
int dx_qp_rtr_ok(const void *in, size_t inlen, void *out, size_t outlen);
int dx_qp_rts_ok(const void *in, size_t inlen, void *out, size_t outlen);
/* opt_param_mask against the transition's optional parameters (the
 * _ok checks above include it; RTS2RTS has only it) */
int dx_qp_optpar_ok(const void *in, size_t inlen, void *out, size_t outlen);
int dx_qp_query(struct dx_obj *o, const void *in, size_t inlen, void *out, size_t outlen);
int dx_qp_destroy(struct dx_obj *o);

/* dx_dct.c: DC targets (CREATE_DCT, DRAIN_DCT, QUERY_DCT, DESTROY_DCT) on the
 * NIC model's DC (nm_dc.c through nm_ext.h).  create: without c->lock;
 * destroy: under it. */
int dx_dct_create(struct dx_ctx *c, const void *in, size_t inlen, void *out, size_t outlen,
		  struct dx_obj **obj);
int dx_dct_modify(struct dx_obj *o, const void *in, size_t inlen, void *out, size_t outlen);
int dx_dct_query(struct dx_obj *o, const void *in, size_t inlen, void *out, size_t outlen);
int dx_dct_destroy(struct dx_obj *o);
/* The verbs SRQ of this number on the context's device, counted as used by
 * a DEVX object (srq_put releases it); NULL when there is none. */
void *dx_srq_get(struct dx_ctx *c, uint32_t srqn);
void dx_srq_put(void *srq);

/* dx_rmp.c: RMPs with their receive ring in umem (CREATE / QUERY / MODIFY /
 * DESTROY_RMP), and the QPs and DCTs that take their receive WQEs from one.
 * create: without c->lock; destroy: under it. */
int dx_rmp_create(struct dx_ctx *c, const void *in, size_t inlen, void *out, size_t outlen,
		  struct dx_obj **obj);
int dx_rmp_modify(struct dx_obj *o, const void *in, size_t inlen, void *out, size_t outlen);
int dx_rmp_query(struct dx_obj *o, const void *in, size_t inlen, void *out, size_t outlen);
int dx_rmp_destroy(struct dx_obj *o);
/* A NIC-model QP (RC or DCT) is fed from rmp: the receive queue it is
 * created with is the attachment's (dx_rq_att_attr), and a message that
 * finds it empty takes the RMP's next WQE.  att_new before the QP exists
 * (fills the queue's attributes), att_bind once it does, att_free after
 * it is destroyed. */
struct dx_rq_att;
struct nm_ext_qp_attr;
struct dx_rq_att *dx_rq_att_new(struct dx_obj *rmp, struct nm_ext_qp_attr *a);
void dx_rq_att_bind(struct dx_rq_att *t, struct gdak_qp *qp);
/* after the QP went to RESET */
void dx_rq_att_reset(struct dx_rq_att *t);
void dx_rq_att_free(struct dx_rq_att *t);

/* dx_mkey.c: CREATE_MKEY / QUERY_MKEY / DESTROY_MKEY - MTT mkeys over a
 * umem, NIC-model memory regions whose key the mkc gives.  create:
 * without c->lock; destroy: under it. */
int dx_mkey_create(struct dx_ctx *c, const void *in, size_t inlen, void *out, size_t outlen,
		   struct dx_obj **obj);
int dx_mkey_query(struct dx_obj *o, const void *in, size_t inlen, void *out, size_t outlen);
int dx_mkey_destroy(struct dx_obj *o);

#endif /* DX_LOC_H */
