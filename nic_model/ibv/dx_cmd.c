/* SPDX-License-Identifier: MIT */
/*
 * dx_cmd.c - the DEVX command layer: lengths, status and syndrome as
 * ConnectX writes them, and the commands that create nothing (the
 * queries mlx5dv_devx_general_cmd carries).
 *
 * Statuses are ConnectX's (PRM "Command Interface Status").  Syndromes are
 * firmware-internal on ConnectX and not published, so gdak's are its own:
 * 0x6d000000 | the PRM field's index in dx_fields << 8 | status, which the
 * log line spells out; programs compare status, and log the syndrome.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include <gdak/gdak.h>

#include "dx_loc.h"
#include "gdak_log.h"

struct op_name {
	unsigned op;
	const char *name;
};

static const struct op_name op_names[] = {
	{ DX_OP_QUERY_HCA_CAP, "QUERY_HCA_CAP" },
	{ DX_OP_QUERY_ADAPTER, "QUERY_ADAPTER" },
	{ DX_OP_QUERY_ISSI, "QUERY_ISSI" },
	{ DX_OP_CREATE_MKEY, "CREATE_MKEY" },
	{ DX_OP_QUERY_MKEY, "QUERY_MKEY" },
	{ DX_OP_DESTROY_MKEY, "DESTROY_MKEY" },
	{ DX_OP_CREATE_EQ, "CREATE_EQ" },
	{ DX_OP_CREATE_CQ, "CREATE_CQ" },
	{ DX_OP_DESTROY_CQ, "DESTROY_CQ" },
	{ DX_OP_QUERY_CQ, "QUERY_CQ" },
	{ DX_OP_MODIFY_CQ, "MODIFY_CQ" },
	{ DX_OP_CREATE_QP, "CREATE_QP" },
	{ DX_OP_DESTROY_QP, "DESTROY_QP" },
	{ DX_OP_RST2INIT_QP, "RST2INIT_QP" },
	{ DX_OP_INIT2RTR_QP, "INIT2RTR_QP" },
	{ DX_OP_RTR2RTS_QP, "RTR2RTS_QP" },
	{ DX_OP_RTS2RTS_QP, "RTS2RTS_QP" },
	{ DX_OP_SQERR2RTS_QP, "SQERR2RTS_QP" },
	{ DX_OP_2ERR_QP, "2ERR_QP" },
	{ DX_OP_2RST_QP, "2RST_QP" },
	{ DX_OP_QUERY_QP, "QUERY_QP" },
	{ DX_OP_SQD_RTS_QP, "SQD_RTS_QP" },
	{ DX_OP_INIT2INIT_QP, "INIT2INIT_QP" },
	{ DX_OP_CREATE_SRQ, "CREATE_SRQ" },
	{ DX_OP_DESTROY_SRQ, "DESTROY_SRQ" },
	{ DX_OP_QUERY_SRQ, "QUERY_SRQ" },
	{ DX_OP_CREATE_DCT, "CREATE_DCT" },
	{ DX_OP_DESTROY_DCT, "DESTROY_DCT" },
	{ DX_OP_DRAIN_DCT, "DRAIN_DCT" },
	{ DX_OP_QUERY_DCT, "QUERY_DCT" },
	{ DX_OP_ARM_DCT_FOR_KEY_VIOLATION, "ARM_DCT_FOR_KEY_VIOLATION" },
	{ DX_OP_QUERY_VPORT_STATE, "QUERY_VPORT_STATE" },
	{ DX_OP_QUERY_NIC_VPORT_CONTEXT, "QUERY_NIC_VPORT_CONTEXT" },
	{ DX_OP_QUERY_ROCE_ADDRESS, "QUERY_ROCE_ADDRESS" },
	{ DX_OP_QUERY_HCA_VPORT_CONTEXT, "QUERY_HCA_VPORT_CONTEXT" },
	{ DX_OP_QUERY_HCA_VPORT_GID, "QUERY_HCA_VPORT_GID" },
	{ DX_OP_ALLOC_PD, "ALLOC_PD" },
	{ DX_OP_DEALLOC_PD, "DEALLOC_PD" },
	{ DX_OP_ALLOC_UAR, "ALLOC_UAR" },
	{ DX_OP_DEALLOC_UAR, "DEALLOC_UAR" },
	{ DX_OP_ACCESS_REG, "ACCESS_REG" },
	{ DX_OP_NOP, "NOP" },
	{ DX_OP_ALLOC_TRANSPORT_DOMAIN, "ALLOC_TRANSPORT_DOMAIN" },
	{ DX_OP_CREATE_RMP, "CREATE_RMP" },
	{ DX_OP_MODIFY_RMP, "MODIFY_RMP" },
	{ DX_OP_DESTROY_RMP, "DESTROY_RMP" },
	{ DX_OP_QUERY_RMP, "QUERY_RMP" },
	{ DX_OP_CREATE_GENERAL_OBJECT, "CREATE_GENERAL_OBJECT" },
};

const char *dx_op_name(unsigned opcode)
{
	for (size_t i = 0; i < sizeof(op_names) / sizeof(op_names[0]); i++)
		if (op_names[i].op == opcode)
			return op_names[i].name;
	return "unknown";
}

static enum dx_field_id field_id(const char *field)
{
	for (unsigned i = 0; field && i < DXF_COUNT; i++)
		if (!strcmp(dx_fields[i].name, field))
			return (enum dx_field_id)i;
	return DXF_COUNT;
}

int dx_fail(void *out, size_t outlen, const void *in, size_t inlen, enum dx_status st,
	    uint32_t syndrome, const char *field, const char *fmt, ...)
{
	unsigned op = dx_get(in, inlen, DXF_IN_OPCODE);
	char why[160];
	va_list ap;

	if (st == DX_ST_OK)
		return 0;
	if (!syndrome)
		syndrome = 0x6d000000u | (uint32_t)field_id(field) << 8 | st;
	if (outlen >= DX_HDR_OUT_LEN) {
		memset(out, 0, DX_HDR_OUT_LEN);
		dx_set(out, outlen, DXF_OUT_STATUS, st);
		dx_set(out, outlen, DXF_OUT_SYNDROME, syndrome);
	}
	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	GDAK_INFO("devx", op, "%s (0x%x): status 0x%x syndrome 0x%08x: %s%s%s", dx_op_name(op), op,
		  st, syndrome, field ? field : "", field ? ": " : "", why);
	return -DX_ERR_FW;
}

int dx_refused(void *out, size_t outlen, const void *in, size_t inlen, int ret, const char *what)
{
	return dx_fail(out, outlen, in, inlen,
		       ret == -ENOMEM || ret == -ENOSPC ? DX_ST_NO_RES : DX_ST_BAD_PARAM, 0, NULL,
		       "the NIC model refused the %s: %s", what, gdak_strerror(ret));
}

int dx_out_begin(void *out, size_t outlen, size_t need, const void *in, size_t inlen)
{
	if (outlen < need)
		return dx_fail(out, outlen, in, inlen, DX_ST_BAD_OUTPUT_LEN, 0, NULL,
			       "output mailbox %zu bytes, the command writes %zu", outlen, need);
	memset(out, 0, need);
	return 0;
}

int dx_cmd_begin(const void *in, size_t inlen, size_t need_in, void *out, size_t outlen,
		 dx_fields_fn *fields)
{
	int ret;

	if (inlen < need_in)
		return dx_fail(out, outlen, in, inlen, DX_ST_BAD_INPUT_LEN, 0, NULL,
			       "input mailbox %zu bytes, %s reads %zu", inlen,
			       dx_op_name(dx_get(in, inlen, DXF_IN_OPCODE)), need_in);
	ret = dx_out_begin(out, outlen, DX_HDR_OUT_LEN, in, inlen);
	if (ret || !fields)
		return ret;
	return fields(in, inlen, out, outlen);
}

/* What the kernel's devx_is_general_cmd() lets through
 * mlx5dv_devx_general_cmd: queries and the general range. */
int dx_is_general(unsigned op)
{
	switch (op) {
	case DX_OP_QUERY_HCA_CAP:
	case DX_OP_QUERY_ADAPTER:
	case DX_OP_QUERY_ISSI:
	case DX_OP_QUERY_VPORT_STATE:
	case DX_OP_QUERY_NIC_VPORT_CONTEXT:
	case DX_OP_QUERY_ROCE_ADDRESS:
	case DX_OP_QUERY_HCA_VPORT_CONTEXT:
	case DX_OP_QUERY_HCA_VPORT_GID:
	case DX_OP_ACCESS_REG:
	case DX_OP_NOP:
		return 1;
	default:
		return op >= 0xb00 && op < 0xd00;
	}
}

/* ---- QUERY_HCA_CAP ---------------------------------------------------------------- */

/* The NIC model's limits, in the PRM's log2 encodings (nic_model/ibv/README.md
 * lists the verbs view of the same numbers). */
static void cap_general(void *o, size_t n)
{
	dx_set(o, n, DXF_CAP_LOG_MAX_SRQ_SZ, 15);
	dx_set(o, n, DXF_CAP_LOG_MAX_QP_SZ, 15); /* 32768 WQEs */
	dx_set(o, n, DXF_CAP_LOG_MAX_QP, 17);
	dx_set(o, n, DXF_CAP_LOG_MAX_SRQ, 16);
	dx_set(o, n, DXF_CAP_LOG_MAX_CQ_SZ, 22);
	dx_set(o, n, DXF_CAP_LOG_MAX_CQ, 17);
	dx_set(o, n, DXF_CAP_LOG_MAX_EQ_SZ, 22);
	dx_set(o, n, DXF_CAP_LOG_MAX_MKEY, 24);
	dx_set(o, n, DXF_CAP_LOG_MAX_EQ, 4);
	dx_set(o, n, DXF_CAP_LOG_MAX_MRW_SZ, 64);
	dx_set(o, n, DXF_CAP_LOG_MAX_RA_REQ_QP, 4); /* 16 outstanding READs/atomics */
	dx_set(o, n, DXF_CAP_LOG_MAX_RA_RES_QP, 4);
	dx_set(o, n, DXF_CAP_RTS2RTS_QP_DSCP, 1);
	dx_set(o, n, DXF_CAP_GID_TABLE_SIZE, 255);
	dx_set(o, n, DXF_CAP_PORT_TYPE, 1); /* Ethernet (RoCE) */
	dx_set(o, n, DXF_CAP_NUM_PORTS, 1);
	dx_set(o, n, DXF_CAP_LOG_MAX_MSG, 30);
	dx_set(o, n, DXF_CAP_CQE_VERSION, 1);
	dx_set(o, n, DXF_CAP_COMPACT_AV, 1);
	/* DC (nm_dc.c): DCTs, DCIs of up to 16 streams; an error fails the
	 * whole DCI (no errored streams of their own); the requester never
	 * scatters READ / atomic responses to the CQE */
	dx_set(o, n, DXF_CAP_DCT, 1);
	dx_set(o, n, DXF_CAP_DC_REQ_SCAT_CQE, 0);
	dx_set(o, n, DXF_CAP_LOG_MAX_DCI_STREAMS, 4);
	dx_set(o, n, DXF_CAP_LOG_MAX_DCI_ERRORED, 0);
	dx_set(o, n, DXF_CAP_ROCE, 1);
	dx_set(o, n, DXF_CAP_ATOMIC, 1);
	dx_set(o, n, DXF_CAP_CQ_OI, 1);
	dx_set(o, n, DXF_CAP_RC, 1);
	dx_set(o, n, DXF_CAP_UAR_4K, 1);
	dx_set(o, n, DXF_CAP_LOG_PG_SZ, 12);
	dx_set(o, n, DXF_CAP_BF, 1);
	/* 512-byte BlueFlame register: two 256-byte halves at 0x800 / 0x900 */
	dx_set(o, n, DXF_CAP_LOG_BF_REG_SIZE, 9);
	dx_set(o, n, DXF_CAP_MAX_WQE_SZ_SQ, 1024);
	/* receive WQEs of the NIC model hold 16 data segments */
	dx_set(o, n, DXF_CAP_MAX_WQE_SZ_RQ, 256);
	dx_set(o, n, DXF_CAP_LOG_MAX_PD, 23);
	dx_set(o, n, DXF_CAP_LOG_MAX_UCTX, 8);
}

static void cap_atomic(void *o, size_t n)
{
	/* host endianness for 8-byte atomics: what mlx5_core selects when the
	 * HCA offers it, and how the NIC model reads memory */
	dx_set(o, n, DXF_ATOM_8B_MODE1_SUP, 1);
	dx_set(o, n, DXF_ATOM_8B_ENDIANNESS, 1);
	/* CAS, FA, masked CAS, masked FA */
	dx_set(o, n, DXF_ATOM_OPERATIONS, 0xf);
	/* bit n: 2^n-byte operands - 4 and 8 bytes, on RC and on DC alike */
	dx_set(o, n, DXF_ATOM_SIZE_QP, 1u << 2 | 1u << 3);
	dx_set(o, n, DXF_ATOM_SIZE_DC, 1u << 2 | 1u << 3);
}

static void cap_roce(void *o, size_t n)
{
	dx_set(o, n, DXF_ROCE_DEST_UDP_PORT, 4791);
	dx_set(o, n, DXF_ROCE_MAX_SRC_UDP_PORT, 0xffff);
	dx_set(o, n, DXF_ROCE_MIN_SRC_UDP_PORT, 0xc000);
	dx_set(o, n, DXF_ROCE_ADDR_TABLE_SIZE, 255);
}

static void cap_general_2(void *o, size_t n)
{
	/* NIC-model QPs run without a send doorbell record (nm_ext's NO_DBREC) */
	dx_set(o, n, DXF_CAP2_NO_DBR_EXT, 1);
	dx_set(o, n, DXF_CAP2_LOG_MAX_DBRLESS_SQ, 17);
}

static int query_hca_cap(const void *in, size_t inlen, void *out, size_t outlen)
{
	unsigned op_mod = dx_get(in, inlen, DXF_IN_OP_MOD);
	int ret = dx_out_begin(out, outlen, DX_QUERY_HCA_CAP_OUT_LEN, in, inlen);

	if (ret)
		return ret;
	switch (op_mod >> 1) {
	case DX_CAP_GENERAL:
		cap_general(out, outlen);
		break;
	case DX_CAP_ATOMIC:
		cap_atomic(out, outlen);
		break;
	case DX_CAP_ROCE:
		cap_roce(out, outlen);
		break;
	case DX_CAP_GENERAL_2:
		cap_general_2(out, outlen);
		break;
	case DX_CAP_ETHERNET:
	case DX_CAP_ODP:
		/* offered by every ConnectX; gdak offloads none of it (all zero) */
		break;
	default:
		return dx_fail(out, outlen, in, inlen, DX_ST_BAD_PARAM, 0, "in.op_mod",
			       "capability type 0x%x is not one gdak's device has", op_mod >> 1);
	}
	return 0;
}

/* ---- QUERY_ROCE_ADDRESS / QUERY_NIC_VPORT_CONTEXT --------------------------------------------- */

static int query_roce_address(struct dx_ctx *c, const void *in, size_t inlen, void *out,
			      size_t outlen)
{
	unsigned idx = dx_get(in, inlen, DXF_RA_IN_INDEX);
	unsigned port = dx_get(in, inlen, DXF_RA_IN_PORT);
	int ret;

	if (port > 1)
		return dx_fail(out, outlen, in, inlen, DX_ST_BAD_PARAM, 0,
			       "query_roce_address_in.vhca_port_num", "port %u (the device has 1)",
			       port);
	if (idx >= 255)
		return dx_fail(out, outlen, in, inlen, DX_ST_BAD_PARAM, 0,
			       "query_roce_address_in.roce_address_index",
			       "index %u beyond the table (255)", idx);
	ret = dx_out_begin(out, outlen, DX_ROCE_ADDR_OUT_LEN, in, inlen);
	if (ret || idx)
		return ret; /* entries past the one GID are empty, as unset ones are */
	dx_set_bytes(out, outlen, DXF_RA_OUT_L3_ADDR, c->gid);
	dx_set(out, outlen, DXF_RA_OUT_MAC_47_32, (uint32_t)c->mac[0] << 8 | c->mac[1]);
	dx_set(out, outlen, DXF_RA_OUT_MAC_31_0,
	       (uint32_t)c->mac[2] << 24 | (uint32_t)c->mac[3] << 16 | (uint32_t)c->mac[4] << 8 |
		       c->mac[5]);
	dx_set(out, outlen, DXF_RA_OUT_L3_TYPE, 0); /* IPv4 (the GID is IPv4-mapped) */
	dx_set(out, outlen, DXF_RA_OUT_VERSION, 2); /* RoCE v2 */
	return 0;
}

static int query_nic_vport(const void *in, size_t inlen, void *out, size_t outlen)
{
	int ret = dx_out_begin(out, outlen, DX_NIC_VPORT_OUT_LEN, in, inlen);

	if (!ret)
		dx_set(out, outlen, DXF_NVC_ROCE_EN, 1);
	return ret;
}

/* The device's own vport only: no e-switch manager here to ask about
 * another function's. */
static int own_vport(const void *in, size_t inlen, void *out, size_t outlen)
{
	if (dx_get(in, inlen, DXF_VP_IN_OTHER_VPORT) || dx_get(in, inlen, DXF_VP_IN_VPORT_NUMBER))
		return dx_fail(out, outlen, in, inlen, DX_ST_BAD_PARAM, 0,
			       dx_get(in, inlen, DXF_VP_IN_OTHER_VPORT)
				       ? "query_*vport*_in.other_vport"
				       : "query_*vport*_in.vport_number",
			       "vport %u: gdak's device is one function, vport 0, and manages no "
			       "e-switch",
			       dx_get(in, inlen, DXF_VP_IN_VPORT_NUMBER));
	return 0;
}

/* the vNIC vport: up, administratively up */
static int query_vport_state(const void *in, size_t inlen, void *out, size_t outlen)
{
	int ret = own_vport(in, inlen, out, outlen);

	if (!ret)
		ret = dx_out_begin(out, outlen, DX_VPORT_STATE_OUT_LEN, in, inlen);
	if (ret)
		return ret;
	dx_set(out, outlen, DXF_VPS_ADMIN_STATE, 1);
	dx_set(out, outlen, DXF_VPS_STATE, 1);
	return 0;
}

/* the port as verbs reports it (gv_device.c): active, link up, the node
 * GUID for every GUID, no LID on Ethernet */
static int query_hca_vport(struct dx_ctx *c, const void *in, size_t inlen, void *out, size_t outlen)
{
	unsigned port = dx_get(in, inlen, DXF_VP_IN_PORT_NUM);
	int ret = own_vport(in, inlen, out, outlen);

	if (!ret && port > 1)
		ret = dx_fail(out, outlen, in, inlen, DX_ST_BAD_PARAM, 0,
			      "query_hca_vport_context_in.port_num", "port %u (the device has 1)",
			      port);
	if (!ret)
		ret = dx_out_begin(out, outlen, DX_HCA_VPORT_OUT_LEN, in, inlen);
	if (ret)
		return ret;
	dx_set(out, outlen, DXF_HVC_PORT_PHYS_STATE, 5); /* LinkUp */
	dx_set(out, outlen, DXF_HVC_PORT_STATE, 4);	 /* ACTIVE */
	dx_set(out, outlen, DXF_HVC_VPORT_STATE, 4);
	dx_set64(out, outlen, DXF_HVC_SYS_IMAGE_GUID, c->guid);
	dx_set64(out, outlen, DXF_HVC_PORT_GUID, c->guid);
	dx_set64(out, outlen, DXF_HVC_NODE_GUID, c->guid);
	dx_set(out, outlen, DXF_HVC_LID, 0);
	return 0;
}

int dx_general(struct dx_ctx *c, const void *in, size_t inlen, void *out, size_t outlen)
{
	unsigned op = dx_get(in, inlen, DXF_IN_OPCODE);

	switch (op) {
	case DX_OP_QUERY_HCA_CAP:
		return query_hca_cap(in, inlen, out, outlen);
	case DX_OP_QUERY_ROCE_ADDRESS:
		return query_roce_address(c, in, inlen, out, outlen);
	case DX_OP_QUERY_NIC_VPORT_CONTEXT:
		return query_nic_vport(in, inlen, out, outlen);
	case DX_OP_QUERY_VPORT_STATE:
		return query_vport_state(in, inlen, out, outlen);
	case DX_OP_QUERY_HCA_VPORT_CONTEXT:
		return query_hca_vport(c, in, inlen, out, outlen);
	case DX_OP_NOP:
		return dx_out_begin(out, outlen, DX_HDR_OUT_LEN, in, inlen);
	default:
		return dx_fail(out, outlen, in, inlen, DX_ST_BAD_OP, 0, "in.opcode",
			       "a command gdak's device does not execute");
	}
}
