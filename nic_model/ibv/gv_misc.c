/* SPDX-License-Identifier: MIT */
/*
 * gv_misc.c - the verbs_context / ibv_context_ops tables, and the exported
 * names that need no device state: *_str helpers, rate conversions, fork
 * support, and the verbs the emulated device does not have (each answers as
 * rdma-core does for a device without them).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "gv_loc.h"

/* ---- strings ------------------------------------------------------------------ */

GV_EXPORT const char *ibv_node_type_str(enum ibv_node_type t)
{
	static const char *const n[] = {
		[IBV_NODE_CA] = "InfiniBand channel adapter",
		[IBV_NODE_SWITCH] = "InfiniBand switch",
		[IBV_NODE_ROUTER] = "InfiniBand router",
		[IBV_NODE_RNIC] = "iWARP NIC",
		[IBV_NODE_USNIC] = "usNIC",
		[IBV_NODE_USNIC_UDP] = "usNIC UDP",
		[IBV_NODE_UNSPECIFIED] = "unspecified",
	};
	if (t < IBV_NODE_CA || t > IBV_NODE_UNSPECIFIED || !n[t])
		return "unknown";
	return n[t];
}

GV_EXPORT const char *ibv_port_state_str(enum ibv_port_state s)
{
	static const char *const n[] = {
		[IBV_PORT_NOP] = "no state change (NOP)",
		[IBV_PORT_DOWN] = "down",
		[IBV_PORT_INIT] = "init",
		[IBV_PORT_ARMED] = "armed",
		[IBV_PORT_ACTIVE] = "active",
		[IBV_PORT_ACTIVE_DEFER] = "active defer",
	};
	if ((unsigned)s > IBV_PORT_ACTIVE_DEFER)
		return "unknown";
	return n[s];
}

GV_EXPORT const char *ibv_event_type_str(enum ibv_event_type e)
{
	static const char *const n[] = {
		[IBV_EVENT_CQ_ERR] = "CQ error",
		[IBV_EVENT_QP_FATAL] = "local work queue catastrophic error",
		[IBV_EVENT_QP_REQ_ERR] = "invalid request local work queue error",
		[IBV_EVENT_QP_ACCESS_ERR] = "local access violation work queue error",
		[IBV_EVENT_COMM_EST] = "communication established",
		[IBV_EVENT_SQ_DRAINED] = "send queue drained",
		[IBV_EVENT_PATH_MIG] = "path migrated",
		[IBV_EVENT_PATH_MIG_ERR] = "path migration request error",
		[IBV_EVENT_DEVICE_FATAL] = "local catastrophic error",
		[IBV_EVENT_PORT_ACTIVE] = "port active",
		[IBV_EVENT_PORT_ERR] = "port error",
		[IBV_EVENT_LID_CHANGE] = "LID change",
		[IBV_EVENT_PKEY_CHANGE] = "P_Key change",
		[IBV_EVENT_SM_CHANGE] = "SM change",
		[IBV_EVENT_SRQ_ERR] = "SRQ catastrophic error",
		[IBV_EVENT_SRQ_LIMIT_REACHED] = "SRQ limit reached",
		[IBV_EVENT_QP_LAST_WQE_REACHED] = "last WQE reached",
		[IBV_EVENT_CLIENT_REREGISTER] = "client reregistration",
		[IBV_EVENT_GID_CHANGE] = "GID table change",
		[IBV_EVENT_WQ_FATAL] = "WQ fatal",
	};
	if ((unsigned)e > IBV_EVENT_WQ_FATAL || !n[e])
		return "unknown";
	return n[e];
}

GV_EXPORT const char *ibv_wc_status_str(enum ibv_wc_status s)
{
	static const char *const n[] = {
		[IBV_WC_SUCCESS] = "success",
		[IBV_WC_LOC_LEN_ERR] = "local length error",
		[IBV_WC_LOC_QP_OP_ERR] = "local QP operation error",
		[IBV_WC_LOC_EEC_OP_ERR] = "local EE context operation error",
		[IBV_WC_LOC_PROT_ERR] = "local protection error",
		[IBV_WC_WR_FLUSH_ERR] = "Work Request Flushed Error",
		[IBV_WC_MW_BIND_ERR] = "memory management operation error",
		[IBV_WC_BAD_RESP_ERR] = "bad response error",
		[IBV_WC_LOC_ACCESS_ERR] = "local access error",
		[IBV_WC_REM_INV_REQ_ERR] = "remote invalid request error",
		[IBV_WC_REM_ACCESS_ERR] = "remote access error",
		[IBV_WC_REM_OP_ERR] = "remote operation error",
		[IBV_WC_RETRY_EXC_ERR] = "transport retry counter exceeded",
		[IBV_WC_RNR_RETRY_EXC_ERR] = "RNR retry counter exceeded",
		[IBV_WC_LOC_RDD_VIOL_ERR] = "local RDD violation error",
		[IBV_WC_REM_INV_RD_REQ_ERR] = "remote invalid RD request",
		[IBV_WC_REM_ABORT_ERR] = "aborted error",
		[IBV_WC_INV_EECN_ERR] = "invalid EE context number",
		[IBV_WC_INV_EEC_STATE_ERR] = "invalid EE context state",
		[IBV_WC_FATAL_ERR] = "fatal error",
		[IBV_WC_RESP_TIMEOUT_ERR] = "response timeout error",
		[IBV_WC_GENERAL_ERR] = "general error",
		[IBV_WC_TM_ERR] = "TM error",
		[IBV_WC_TM_RNDV_INCOMPLETE] = "TM software rendezvous",
	};
	if ((unsigned)s > IBV_WC_TM_RNDV_INCOMPLETE || !n[s])
		return "unknown";
	return n[s];
}

/* ---- rates (IBA 9.8 / the ibv_rate enum's own order) --------------------------------- */

static const struct {
	enum ibv_rate r;
	int mult, mbps;
} rates[] = {
	{ IBV_RATE_2_5_GBPS, 1, 2500 },	    { IBV_RATE_5_GBPS, 2, 5000 },
	{ IBV_RATE_10_GBPS, 4, 10000 },	    { IBV_RATE_20_GBPS, 8, 20000 },
	{ IBV_RATE_30_GBPS, 12, 30000 },    { IBV_RATE_40_GBPS, 16, 40000 },
	{ IBV_RATE_60_GBPS, 24, 60000 },    { IBV_RATE_80_GBPS, 32, 80000 },
	{ IBV_RATE_120_GBPS, 48, 120000 },  { IBV_RATE_14_GBPS, 5, 14062 },
	{ IBV_RATE_56_GBPS, 22, 56250 },    { IBV_RATE_112_GBPS, 45, 112500 },
	{ IBV_RATE_168_GBPS, 67, 168750 },  { IBV_RATE_25_GBPS, 10, 25781 },
	{ IBV_RATE_100_GBPS, 40, 103125 },  { IBV_RATE_200_GBPS, 80, 206250 },
	{ IBV_RATE_300_GBPS, 120, 309375 }, { IBV_RATE_28_GBPS, 11, 28125 },
	{ IBV_RATE_50_GBPS, 20, 53125 },    { IBV_RATE_400_GBPS, 160, 425000 },
	{ IBV_RATE_600_GBPS, 240, 637500 },
};

GV_EXPORT int ibv_rate_to_mult(enum ibv_rate r)
{
	for (size_t i = 0; i < sizeof(rates) / sizeof(rates[0]); i++)
		if (rates[i].r == r && rates[i].mult <= 48)
			return rates[i].mult;
	return -1;
}

GV_EXPORT enum ibv_rate mult_to_ibv_rate(int mult)
{
	for (size_t i = 0; i < 9; i++)
		if (rates[i].mult == mult)
			return rates[i].r;
	return IBV_RATE_MAX;
}

GV_EXPORT int ibv_rate_to_mbps(enum ibv_rate r)
{
	for (size_t i = 0; i < sizeof(rates) / sizeof(rates[0]); i++)
		if (rates[i].r == r)
			return rates[i].mbps;
	return -1;
}

GV_EXPORT enum ibv_rate mbps_to_ibv_rate(int mbps)
{
	for (size_t i = 0; i < sizeof(rates) / sizeof(rates[0]); i++)
		if (rates[i].mbps == mbps)
			return rates[i].r;
	return IBV_RATE_MAX;
}

/* ---- fork -------------------------------------------------------------------------------- */

/* The NIC model reads registered memory from this process's own threads,
 * never through page pins, so copy-on-write after fork() cannot tear a
 * registration from what the NIC sees: fork is always safe for the parent.
 * The child, which rdma-core lets use none of the parent's resources, runs
 * none of the parent's engine (nm_thread.c: inherited threads): its posts
 * and polls on the parent's objects execute nothing. */
GV_EXPORT int ibv_fork_init(void)
{
	return 0;
}

GV_EXPORT enum ibv_fork_status ibv_is_fork_initialized(void)
{
	return IBV_FORK_UNNEEDED;
}

GV_EXPORT int ibv_dontfork_range(void *base, size_t size)
{
	return 0;
}

GV_EXPORT int ibv_dofork_range(void *base, size_t size)
{
	return 0;
}

/* ---- what the emulated device does not have ---------------------------------------------- */

GV_EXPORT void ibv_register_driver(const char *name, void *init_func)
{
	(void)name;
	(void)init_func;
}

GV_EXPORT int ibv_attach_mcast(struct ibv_qp *qp, const union ibv_gid *gid, uint16_t lid)
{
	return EOPNOTSUPP;
}

GV_EXPORT int ibv_detach_mcast(struct ibv_qp *qp, const union ibv_gid *gid, uint16_t lid)
{
	return EOPNOTSUPP;
}

GV_EXPORT struct ibv_context *ibv_import_device(int cmd_fd)
{
	errno = EOPNOTSUPP;
	return NULL;
}

GV_EXPORT struct ibv_pd *ibv_import_pd(struct ibv_context *context, uint32_t pd_handle)
{
	errno = EOPNOTSUPP;
	return NULL;
}

GV_EXPORT void ibv_unimport_pd(struct ibv_pd *pd) {}

GV_EXPORT struct ibv_mr *ibv_import_mr(struct ibv_pd *pd, uint32_t mr_handle)
{
	errno = EOPNOTSUPP;
	return NULL;
}

GV_EXPORT void ibv_unimport_mr(struct ibv_mr *mr) {}

GV_EXPORT struct ibv_dm *ibv_import_dm(struct ibv_context *context, uint32_t dm_handle)
{
	errno = EOPNOTSUPP;
	return NULL;
}

GV_EXPORT void ibv_unimport_dm(struct ibv_dm *dm) {}

/* RC on the NIC model places data in order (one responder, segment by
 * segment in PSN order). */
GV_EXPORT int ibv_query_qp_data_in_order(struct ibv_qp *qp, enum ibv_wr_opcode op, uint32_t flags)
{
	return qp && qp->qp_type == IBV_QPT_RC ? 1 : 0;
}

/* Ethernet L2 from a GID: the NIC model's wire is UDP, it needs no MAC; a
 * locally administered one made of the IPv4 address keeps callers happy. */
GV_EXPORT int ibv_resolve_eth_l2_from_gid(struct ibv_context *context, struct ibv_ah_attr *attr,
					  uint8_t eth_mac[6], uint16_t *vid)
{
	if (!attr || !attr->is_global)
		return EINVAL;
	eth_mac[0] = 0x02;
	eth_mac[1] = 0x00;
	memcpy(eth_mac + 2, &attr->grh.dgid.raw[12], 4);
	if (vid)
		*vid = 0xffff;
	return 0;
}

/* The kernel-ABI copy helpers librdmacm imports (it uses them for the
 * kernel's rdma_ucm answers, which never come here: there is no kernel
 * device). */
GV_EXPORT void ibv_copy_ah_attr_from_kern(struct ibv_ah_attr *dst, void *src)
{
	memset(dst, 0, sizeof(*dst));
}

GV_EXPORT void ibv_copy_qp_attr_from_kern(struct ibv_qp_attr *dst, void *src)
{
	memset(dst, 0, sizeof(*dst));
}

GV_EXPORT void ibv_copy_path_rec_from_kern(void *dst, void *src) {}

GV_EXPORT void ibv_copy_path_rec_to_kern(void *dst, void *src) {}
