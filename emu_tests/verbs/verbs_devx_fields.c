/* SPDX-License-Identifier: MIT */
/*
 * verbs_devx_fields.c - every PRM field gdak's DEVX parser reads or writes
 * (nic_model/ibv/dx_loc.h) sits at the bit offset and width the PRM gives.
 *
 * The reference table below is this test's own: offsets were computed from
 * rdma-core's published layouts (providers/mlx5/mlx5_ifc.h and the PRM
 * structures of tests/mlx5_prm_structs.py; the roce_cap fields from the
 * Linux kernel's include/linux/mlx5/mlx5_ifc.h), written as "where the
 * structure starts in its mailbox + where the field starts in the
 * structure".  It is independent of dx_loc.h and of hw_mlx5/hw_devx.c's
 * table, so a mistake made twice cannot hide.  Also: every parser field is
 * in the reference (nothing read unpinned), fields of 32 bits or less stay
 * inside one dword, the accessors set exactly the field's bits, and a
 * mailbox too short for a field neither reads nor writes it.
 */
#include <stdint.h>
#include <string.h>

#include "dx_loc.h"
#include "gdak_test.h"

struct ref {
	const char *name;
	unsigned bit, width;
};

static const struct ref refs[] = {
	{ "in.opcode", 0x0 + 0x0, 16 },
	{ "in.uid", 0x0 + 0x10, 16 },
	{ "in.op_mod", 0x0 + 0x30, 16 },
	{ "in.qpn/cqn/pd/srqn/rmpn", 0x0 + 0x48, 24 },
	{ "out.status", 0x0 + 0x0, 8 },
	{ "out.syndrome", 0x0 + 0x20, 32 },
	{ "create_*_out.qpn/cqn/pd/srqn/rmpn", 0x0 + 0x48, 24 },
	{ "cmd_hca_cap.log_max_srq_sz", 0x80 + 0x80, 8 },
	{ "cmd_hca_cap.log_max_qp_sz", 0x80 + 0x88, 8 },
	{ "cmd_hca_cap.log_max_qp", 0x80 + 0x9b, 5 },
	{ "cmd_hca_cap.log_max_srq", 0x80 + 0xab, 5 },
	{ "cmd_hca_cap.log_max_cq_sz", 0x80 + 0xc8, 8 },
	{ "cmd_hca_cap.log_max_cq", 0x80 + 0xdb, 5 },
	{ "cmd_hca_cap.log_max_eq_sz", 0x80 + 0xe0, 8 },
	{ "cmd_hca_cap.log_max_mkey", 0x80 + 0xea, 6 },
	{ "cmd_hca_cap.log_max_eq", 0x80 + 0xfc, 4 },
	{ "cmd_hca_cap.log_max_mrw_sz", 0x80 + 0x109, 7 },
	{ "cmd_hca_cap.log_max_ra_req_qp", 0x80 + 0x14a, 6 },
	{ "cmd_hca_cap.log_max_ra_res_qp", 0x80 + 0x15a, 6 },
	{ "cmd_hca_cap.rts2rts_qp_dscp", 0x80 + 0x16a, 1 },
	{ "cmd_hca_cap.gid_table_size", 0x80 + 0x170, 16 },
	{ "cmd_hca_cap.pkey_table_size", 0x80 + 0x190, 16 },
	{ "cmd_hca_cap.port_type", 0x80 + 0x1b6, 2 },
	{ "cmd_hca_cap.num_ports", 0x80 + 0x1b8, 8 },
	{ "cmd_hca_cap.log_max_msg", 0x80 + 0x1c3, 5 },
	{ "cmd_hca_cap.cqe_version", 0x80 + 0x1fc, 4 },
	{ "cmd_hca_cap.compact_address_vector", 0x80 + 0x200, 1 },
	/* umr_fence[2] at 0x20a, then dc_req_scat_data_cqe; rf at 0x219, then dct */
	{ "cmd_hca_cap.dc_req_scat_data_cqe", 0x80 + 0x20c, 1 },
	/* query_vport_state_in / query_hca_vport_context_in: other_vport is the
	 * first bit after the header; port_num after reserved_at_41[0xb] */
	{ "query_*vport*_in.other_vport", 0x40, 1 },
	{ "query_hca_vport_context_in.port_num", 0x40 + 0x1 + 0xb, 4 },
	{ "query_*vport*_in.vport_number", 0x40 + 0x10, 16 },
	/* query_vport_state_out: admin_state, state at the end of dword 3 */
	{ "query_vport_state_out.admin_state", 0x60 + 0x18, 4 },
	{ "query_vport_state_out.state", 0x60 + 0x1c, 4 },
	/* hca_vport_context after the 0x80-bit header: field_select[0x20],
	 * reserved[0xe0], four flags, reserved[0xc], then the states */
	{ "hca_vport_context.port_physical_state", 0x80 + 0x100 + 0x4 + 0xc, 4 },
	{ "hca_vport_context.port_state", 0x80 + 0x100 + 0x18, 4 },
	{ "hca_vport_context.vport_state", 0x80 + 0x100 + 0x1c, 4 },
	{ "hca_vport_context.system_image_guid", 0x80 + 0x140, 64 },
	{ "hca_vport_context.port_guid", 0x80 + 0x180, 64 },
	{ "hca_vport_context.node_guid", 0x80 + 0x1c0, 64 },
	/* after cap_mask1/2 and their selects (4 x 0x20 from 0x200), reserved[0x80] */
	{ "hca_vport_context.lid", 0x80 + 0x200 + 0x80 + 0x80, 16 },
	{ "cmd_hca_cap.dct", 0x80 + 0x21a, 1 },
	/* after reserved_at_580[0xb] and reserved_at_590[0x3] */
	{ "cmd_hca_cap.log_max_dci_stream_channels", 0x80 + 0x580 + 0xb, 5 },
	{ "cmd_hca_cap.log_max_dci_errored_streams", 0x80 + 0x590 + 0x3, 5 },
	{ "cmd_hca_cap.roce", 0x80 + 0x21d, 1 },
	{ "cmd_hca_cap.atomic", 0x80 + 0x21e, 1 },
	{ "cmd_hca_cap.cq_oi", 0x80 + 0x220, 1 },
	{ "cmd_hca_cap.rc", 0x80 + 0x23f, 1 },
	{ "cmd_hca_cap.uar_4k", 0x80 + 0x240, 1 },
	{ "cmd_hca_cap.log_pg_sz", 0x80 + 0x258, 8 },
	{ "cmd_hca_cap.bf", 0x80 + 0x260, 1 },
	{ "cmd_hca_cap.log_bf_reg_size", 0x80 + 0x26b, 5 },
	{ "cmd_hca_cap.max_wqe_sz_sq", 0x80 + 0x290, 16 },
	{ "cmd_hca_cap.max_wqe_sz_rq", 0x80 + 0x2b0, 16 },
	{ "cmd_hca_cap.log_max_pd", 0x80 + 0x32b, 5 },
	{ "cmd_hca_cap.log_max_uctx", 0x80 + 0x463, 5 },
	{ "atomic_caps.atomic_req_8B_endianness_mode", 0x80 + 0x40, 2 },
	{ "atomic_caps.supported_atomic_req_8B_endianness_mode_1", 0x80 + 0x46, 1 },
	{ "atomic_caps.atomic_operations", 0x80 + 0x90, 16 },
	{ "atomic_caps.atomic_size_qp", 0x80 + 0xb0, 16 },
	{ "atomic_caps.atomic_size_dc", 0x80 + 0xd0, 16 },
	{ "cmd_hca_cap_2.send_dbr_mode_no_dbr_int", 0x80 + 0x2e0, 1 },
	{ "cmd_hca_cap_2.send_dbr_mode_no_dbr_ext", 0x80 + 0x2e1, 1 },
	{ "cmd_hca_cap_2.log_max_send_dbr_less_qp_sq", 0x80 + 0x2e3, 5 },
	{ "roce_addr_layout.source_l3_address", 0x80 + 0x0, 128 },
	{ "roce_addr_layout.source_mac_47_32", 0x80 + 0x90, 16 },
	{ "roce_addr_layout.source_mac_31_0", 0x80 + 0xa0, 32 },
	{ "roce_addr_layout.roce_l3_type", 0x80 + 0xd4, 4 },
	{ "roce_addr_layout.roce_version", 0x80 + 0xd8, 8 },
	{ "query_roce_address_in.roce_address_index", 0x0 + 0x40, 16 },
	{ "query_roce_address_in.vhca_port_num", 0x0 + 0x5c, 4 },
	{ "nic_vport_context.roce_en", 0x80 + 0x1f, 1 },
	{ "cqc.status", 0x80 + 0x0, 4 },
	{ "cqc.dbr_umem_valid", 0x80 + 0x6, 1 },
	{ "cqc.cqe_sz", 0x80 + 0x8, 3 },
	{ "cqc.cc", 0x80 + 0xb, 1 },
	{ "cqc.oi", 0x80 + 0xe, 1 },
	{ "cqc.cqe_compression_en", 0x80 + 0x11, 1 },
	{ "cqc.st", 0x80 + 0x14, 4 },
	{ "cqc.dbr_umem_id", 0x80 + 0x20, 32 },
	{ "cqc.page_offset", 0x80 + 0x54, 6 },
	{ "cqc.log_cq_size", 0x80 + 0x63, 5 },
	{ "cqc.uar_page", 0x80 + 0x68, 24 },
	{ "cqc.c_eqn", 0x80 + 0xb8, 8 },
	{ "cqc.log_page_size", 0x80 + 0xc3, 5 },
	{ "cqc.producer_counter", 0x80 + 0x168, 24 },
	{ "cqc.dbr_addr", 0x80 + 0x1c0, 64 },
	{ "create_cq_in.cq_umem_offset", 0x0 + 0x280, 64 },
	{ "create_cq_in.cq_umem_id", 0x0 + 0x2c0, 32 },
	{ "create_cq_in.cq_umem_valid", 0x0 + 0x2e0, 1 },
	{ "create_qp_in.opt_param_mask", 0x0 + 0x80, 32 },
	{ "qpc.state", 0xc0 + 0x0, 4 },
	{ "qpc.st", 0xc0 + 0x8, 8 },
	{ "qpc.pm_state", 0xc0 + 0x13, 2 },
	{ "qpc.pd", 0xc0 + 0x28, 24 },
	{ "qpc.mtu", 0xc0 + 0x40, 3 },
	{ "qpc.log_msg_max", 0xc0 + 0x43, 5 },
	{ "qpc.log_rq_size", 0xc0 + 0x49, 4 },
	{ "qpc.log_rq_stride", 0xc0 + 0x4d, 3 },
	{ "qpc.no_sq", 0xc0 + 0x50, 1 },
	{ "qpc.log_sq_size", 0xc0 + 0x51, 4 },
	{ "qpc.ts_format", 0xc0 + 0x58, 2 },
	{ "qpc.uar_page", 0xc0 + 0x68, 24 },
	{ "qpc.send_dbr_mode", 0xc0 + 0x80, 2 },
	{ "qpc.log_page_size", 0xc0 + 0xa3, 5 },
	{ "qpc.remote_qpn", 0xc0 + 0xa8, 24 },
	{ "qpc.log_sra_max", 0xc0 + 0x388, 3 },
	{ "qpc.retry_count", 0xc0 + 0x38d, 3 },
	{ "qpc.rnr_retry", 0xc0 + 0x390, 3 },
	{ "qpc.next_send_psn", 0xc0 + 0x3c8, 24 },
	{ "qpc.cqn_snd", 0xc0 + 0x3e8, 24 },
	{ "qpc.log_rra_max", 0xc0 + 0x488, 3 },
	{ "qpc.atomic_mode", 0xc0 + 0x48c, 4 },
	{ "qpc.rre", 0xc0 + 0x490, 1 },
	{ "qpc.rwe", 0xc0 + 0x491, 1 },
	{ "qpc.rae", 0xc0 + 0x492, 1 },
	{ "qpc.page_offset", 0xc0 + 0x494, 6 },
	{ "qpc.min_rnr_nak", 0xc0 + 0x4a3, 5 },
	{ "qpc.next_rcv_psn", 0xc0 + 0x4a8, 24 },
	{ "qpc.cqn_rcv", 0xc0 + 0x4e8, 24 },
	{ "qpc.dbr_addr", 0xc0 + 0x500, 64 },
	{ "qpc.rq_type", 0xc0 + 0x565, 3 },
	{ "qpc.srqn_rmpn_xrqn", 0xc0 + 0x568, 24 },
	{ "qpc.hw_sq_wqebb_counter", 0xc0 + 0x5a0, 16 },
	{ "qpc.sw_sq_wqebb_counter", 0xc0 + 0x5b0, 16 },
	/* reserved_at_620[0xf], cgs, cs_req[8], cs_res[8], then the key */
	{ "qpc.dc_access_key", 0xc0 + 0x620 + 0x20, 64 },
	{ "qpc.dbr_umem_valid", 0xc0 + 0x683, 1 },
	{ "qpc.dbr_umem_id", 0xc0 + 0x720, 32 },
	{ "qpc.primary_address_path.pkey_index", 0x180 + 0x10, 16 },
	{ "qpc.primary_address_path.grh", 0x180 + 0x28, 1 },
	{ "qpc.primary_address_path.rlid", 0x180 + 0x30, 16 },
	{ "qpc.primary_address_path.ack_timeout", 0x180 + 0x40, 5 },
	{ "qpc.primary_address_path.src_addr_index", 0x180 + 0x48, 8 },
	{ "qpc.primary_address_path.hop_limit", 0x180 + 0x58, 8 },
	{ "qpc.primary_address_path.tclass", 0x180 + 0x64, 8 },
	{ "qpc.primary_address_path.flow_label", 0x180 + 0x6c, 20 },
	{ "qpc.primary_address_path.rgid_rip", 0x180 + 0x80, 128 },
	{ "qpc.primary_address_path.dscp", 0x180 + 0x10a, 6 },
	{ "qpc.primary_address_path.udp_sport", 0x180 + 0x110, 16 },
	{ "qpc.primary_address_path.sl", 0x180 + 0x124, 4 },
	{ "qpc.primary_address_path.vhca_port_num", 0x180 + 0x128, 8 },
	{ "qpc.primary_address_path.rmac_47_32", 0x180 + 0x130, 16 },
	{ "qpc.primary_address_path.rmac_31_0", 0x180 + 0x140, 32 },
	{ "create_qp_in.wq_umem_offset", 0x0 + 0x800, 64 },
	{ "create_qp_in.wq_umem_id", 0x0 + 0x840, 32 },
	{ "create_qp_in.wq_umem_valid", 0x0 + 0x860, 1 },
	/* create_dct_in / query_dct_out: the dctc after 0x80 bits of header */
	{ "dctc.state", 0x80 + 0x0 + 0x4, 4 },
	{ "dctc.user_index", 0x80 + 0x20 + 0x8, 24 },
	{ "dctc.cqn", 0x80 + 0x40 + 0x8, 24 },
	{ "dctc.atomic_mode", 0x80 + 0x60 + 0x8, 4 },
	{ "dctc.rre", 0x80 + 0x60 + 0xc, 1 },
	{ "dctc.rwe", 0x80 + 0x60 + 0xd, 1 },
	{ "dctc.rae", 0x80 + 0x60 + 0xe, 1 },
	{ "dctc.cs_res", 0x80 + 0x80 + 0x8, 8 },
	{ "dctc.min_rnr_nak", 0x80 + 0x80 + 0x13, 5 },
	{ "dctc.srqn_xrqn", 0x80 + 0xa0 + 0x8, 24 },
	{ "dctc.pd", 0x80 + 0xc0 + 0x8, 24 },
	{ "dctc.tclass", 0x80 + 0xe0, 8 },
	{ "dctc.flow_label", 0x80 + 0xe0 + 0xc, 20 },
	{ "dctc.dc_access_key", 0x80 + 0x100, 64 },
	{ "dctc.mtu", 0x80 + 0x140 + 0x5, 3 },
	{ "dctc.port", 0x80 + 0x140 + 0x8, 8 },
	{ "dctc.pkey_index", 0x80 + 0x140 + 0x10, 16 },
	{ "dctc.my_addr_index", 0x80 + 0x160 + 0x8, 8 },
	{ "dctc.hop_limit", 0x80 + 0x160 + 0x18, 8 },
	{ "dctc.dc_access_key_violation_count", 0x80 + 0x180, 32 },
	{ "dctc.dscp", 0x80 + 0x1a0 + 0x1a, 6 },
	/* create_rmp_in / query_rmp_out: 0x40 of header, 0xc0 reserved, then
	 * rmpc; the wq after rmpc's 0x180 bits (kernel mlx5_ifc.h rmpc, wq) */
	{ "modify_rmp_in.rmp_state", 0x40 + 0x0, 4 },
	{ "modify_rmp_in.bitmask[63:32]", 0x80 + 0x0, 32 },
	{ "modify_rmp_in.bitmask[31:0]", 0x80 + 0x20, 32 },
	{ "modify_rmp_in.bitmask.lwm", 0x80 + 0x20 + 0x1f, 1 },
	{ "rmpc.state", 0x40 + 0xc0 + 0x8, 4 },
	{ "rmpc.basic_cyclic_rcv_wqe", 0x40 + 0xc0 + 0x20, 1 },
	{ "rmpc.wq.wq_type", 0x100 + 0x180 + 0x0, 4 },
	{ "rmpc.wq.wq_signature", 0x100 + 0x180 + 0x4, 1 },
	{ "rmpc.wq.page_offset", 0x100 + 0x180 + 0x20 + 0xb, 5 },
	{ "rmpc.wq.lwm", 0x100 + 0x180 + 0x20 + 0x10, 16 },
	{ "rmpc.wq.pd", 0x100 + 0x180 + 0x40 + 0x8, 24 },
	{ "rmpc.wq.dbr_addr", 0x100 + 0x180 + 0x80, 64 },
	{ "rmpc.wq.hw_counter", 0x100 + 0x180 + 0xc0, 32 },
	{ "rmpc.wq.sw_counter", 0x100 + 0x180 + 0xe0, 32 },
	{ "rmpc.wq.log_wq_stride", 0x100 + 0x180 + 0x100 + 0xc, 4 },
	{ "rmpc.wq.log_wq_pg_sz", 0x100 + 0x180 + 0x100 + 0x13, 5 },
	{ "rmpc.wq.log_wq_sz", 0x100 + 0x180 + 0x100 + 0x1b, 5 },
	{ "rmpc.wq.dbr_umem_valid", 0x100 + 0x180 + 0x120, 1 },
	{ "rmpc.wq.wq_umem_valid", 0x100 + 0x180 + 0x121, 1 },
	{ "rmpc.wq.dbr_umem_id", 0x100 + 0x180 + 0x140, 32 },
	{ "rmpc.wq.wq_umem_id", 0x100 + 0x180 + 0x160, 32 },
	{ "rmpc.wq.wq_umem_offset", 0x100 + 0x180 + 0x180, 64 },
	/* create_mkey_in (rdma-core mlx5_ifc.h; mkey_umem_id / _offset after
	 * translations_octword_actual_size, as the kernel's and DPDK's
	 * layouts have them): mkc at 0x80 */
	{ "create_mkey_in.pg_access", 0x40 + 0x20, 1 },
	{ "create_mkey_in.mkey_umem_valid", 0x40 + 0x21, 1 },
	{ "mkc.free", 0x80 + 0x1, 1 },
	{ "mkc.access_mode_4_2", 0x80 + 0x3, 3 },
	{ "mkc.umr_en", 0x80 + 0x10, 1 },
	{ "mkc.a", 0x80 + 0x11, 1 },
	{ "mkc.rw", 0x80 + 0x12, 1 },
	{ "mkc.rr", 0x80 + 0x13, 1 },
	{ "mkc.lw", 0x80 + 0x14, 1 },
	{ "mkc.lr", 0x80 + 0x15, 1 },
	{ "mkc.access_mode_1_0", 0x80 + 0x16, 2 },
	{ "mkc.qpn", 0x80 + 0x20, 24 },
	{ "mkc.mkey_7_0", 0x80 + 0x20 + 0x18, 8 },
	{ "mkc.length64", 0x80 + 0x60, 1 },
	{ "mkc.bsf_en", 0x80 + 0x61, 1 },
	{ "mkc.pd", 0x80 + 0x60 + 0x8, 24 },
	{ "mkc.start_addr", 0x80 + 0x80, 64 },
	{ "mkc.len", 0x80 + 0xc0, 64 },
	{ "mkc.translations_octword_size", 0x80 + 0x120 + 0x80, 32 },
	{ "mkc.log_page_size", 0x80 + 0x1c0 + 0x1b, 5 },
	{ "mkc.crypto_en", 0x80 + 0x1e0 + 0x3, 2 },
	{ "create_mkey_in.mkey_umem_id", 0x80 + 0x200 + 0x80 + 0x20, 32 },
	{ "create_mkey_in.mkey_umem_offset", 0x80 + 0x200 + 0x80 + 0x40, 64 },
	{ "roce_cap.r_roce_dest_udp_port", 0x80 + 0xb0, 16 },
	{ "roce_cap.r_roce_max_src_udp_port", 0x80 + 0xc0, 16 },
	{ "roce_cap.r_roce_min_src_udp_port", 0x80 + 0xd0, 16 },
	{ "roce_cap.roce_address_table_size", 0x80 + 0xf0, 16 },
};

#define NREFS (sizeof(refs) / sizeof(refs[0]))

static const struct ref *ref_of(const char *name)
{
	for (size_t i = 0; i < NREFS; i++)
		if (!strcmp(refs[i].name, name))
			return &refs[i];
	return NULL;
}

static unsigned popcount(const uint8_t *b, size_t n)
{
	unsigned c = 0;

	for (size_t i = 0; i < n; i++)
		c += (unsigned)__builtin_popcount(b[i]);
	return c;
}

/* Set the field to all ones in a zero mailbox: exactly its bits change. */
static void check_accessors(enum dx_field_id f)
{
	const struct dx_field *d = &dx_fields[f];
	size_t len = (d->bit + d->width + 7) / 8 + 8;
	uint8_t mb[0x1100], zero[16];
	unsigned lo = d->bit, hi = d->bit + d->width;

	memset(mb, 0, sizeof(mb));
	if (d->width == 128) {
		memset(zero, 0xff, sizeof(zero));
		dx_set_bytes(mb, len, f, zero);
	} else if (d->width == 64) {
		dx_set64(mb, len, f, ~0ull);
		CHECK_EQ(dx_get64(mb, len, f), ~0ull);
	} else {
		dx_set(mb, len, f, 0xffffffffu);
		CHECK_EQ(dx_get(mb, len, f), d->width == 32 ? 0xffffffffu : (1u << d->width) - 1);
	}
	CHECK_EQ(popcount(mb, sizeof(mb)), d->width);
	/* the bits are the right ones: the first and the last of the field */
	CHECK(mb[lo / 8] & (0x80u >> (lo % 8)));
	CHECK(mb[(hi - 1) / 8] & (0x80u >> ((hi - 1) % 8)));
	/* a mailbox one byte short of the field: no read, no write */
	if (d->width <= 32) {
		uint8_t shortmb[0x1100];
		size_t slen = (hi + 7) / 8 - 1;

		memset(shortmb, 0xa5, sizeof(shortmb));
		CHECK_EQ(dx_get(shortmb, slen, f), 0);
		dx_set(shortmb, slen, f, 0);
		CHECK_EQ(popcount(shortmb, sizeof(shortmb)),
			 popcount((const uint8_t[]){ 0xa5 }, 1) * sizeof(shortmb));
	}
}

int main(void)
{
	unsigned pinned = 0;

	for (unsigned i = 0; i < DXF_COUNT; i++) {
		const struct dx_field *d = &dx_fields[i];
		const struct ref *r = ref_of(d->name);

		if (!r) {
			gdak_test_fail(__FILE__, __LINE__,
				       "%s: read by the parser, not pinned here", d->name);
			continue;
		}
		if (r->bit != d->bit || r->width != d->width) {
			gdak_test_fail(__FILE__, __LINE__,
				       "%s: parser has (0x%x, %u), the PRM (0x%x, %u)", d->name,
				       d->bit, d->width, r->bit, r->width);
			continue;
		}
		gdak_test_passed++;
		pinned++;
		if (d->width <= 32)
			CHECK(d->bit / 32 == (d->bit + d->width - 1) / 32);
		else
			CHECK(d->bit % 32 == 0);
		check_accessors((enum dx_field_id)i);
	}
	printf("%u PRM fields pinned (%zu in the reference)\n", pinned, NREFS);
	return gdak_test_end();
}
