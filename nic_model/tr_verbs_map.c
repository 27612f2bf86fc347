/* SPDX-License-Identifier: MIT */
/*
 * tr_verbs_map.c - verbs <-> mlx5 vocabulary for the verbs transport: one
 * table of completion statuses, one of send opcodes; and the memory
 * registration decision.  Pure functions (no device needed): unit-tested
 * by gdak.rxe.verbs_map.
 */
#include <errno.h>
#include <stddef.h>
#include <string.h>

#include <gdak/gdak.h>
#include <gdak/mlx5.h>

#include "tr_verbs.h"

/*
 * Completion status -> CQE syndrome (mlx5 PRM "Completion Queue Entry
 * Format", error syndromes; libmlx5's mlx5_handle_error_cqe() is the same
 * map read the other way).  Statuses that only exist for other transports
 * (EEC, RDD) or that mlx5 reports through another syndrome map to the
 * syndrome a ConnectX would give for the same event.
 */
static const struct {
	enum ibv_wc_status st;
	uint8_t synd;
} status_map[] = {
	{ IBV_WC_SUCCESS, 0 },
	{ IBV_WC_LOC_LEN_ERR, MLX5_CQE_SYNDROME_LOCAL_LENGTH_ERR },
	{ IBV_WC_LOC_QP_OP_ERR, MLX5_CQE_SYNDROME_LOCAL_QP_OP_ERR },
	{ IBV_WC_LOC_EEC_OP_ERR, MLX5_CQE_SYNDROME_LOCAL_QP_OP_ERR },
	{ IBV_WC_LOC_PROT_ERR, MLX5_CQE_SYNDROME_LOCAL_PROT_ERR },
	{ IBV_WC_WR_FLUSH_ERR, MLX5_CQE_SYNDROME_WR_FLUSH_ERR },
	{ IBV_WC_MW_BIND_ERR, MLX5_CQE_SYNDROME_MW_BIND_ERR },
	{ IBV_WC_BAD_RESP_ERR, MLX5_CQE_SYNDROME_BAD_RESP_ERR },
	{ IBV_WC_LOC_ACCESS_ERR, MLX5_CQE_SYNDROME_LOCAL_ACCESS_ERR },
	{ IBV_WC_REM_INV_REQ_ERR, MLX5_CQE_SYNDROME_REMOTE_INVAL_REQ_ERR },
	{ IBV_WC_REM_ACCESS_ERR, MLX5_CQE_SYNDROME_REMOTE_ACCESS_ERR },
	{ IBV_WC_REM_OP_ERR, MLX5_CQE_SYNDROME_REMOTE_OP_ERR },
	{ IBV_WC_RETRY_EXC_ERR, MLX5_CQE_SYNDROME_TRANSPORT_RETRY_EXC_ERR },
	{ IBV_WC_RNR_RETRY_EXC_ERR, MLX5_CQE_SYNDROME_RNR_RETRY_EXC_ERR },
	{ IBV_WC_LOC_RDD_VIOL_ERR, MLX5_CQE_SYNDROME_LOCAL_PROT_ERR },
	{ IBV_WC_REM_INV_RD_REQ_ERR, MLX5_CQE_SYNDROME_REMOTE_INVAL_REQ_ERR },
	{ IBV_WC_REM_ABORT_ERR, MLX5_CQE_SYNDROME_REMOTE_ABORTED_ERR },
	{ IBV_WC_INV_EECN_ERR, MLX5_CQE_SYNDROME_LOCAL_QP_OP_ERR },
	{ IBV_WC_INV_EEC_STATE_ERR, MLX5_CQE_SYNDROME_LOCAL_QP_OP_ERR },
	{ IBV_WC_FATAL_ERR, MLX5_CQE_SYNDROME_LOCAL_QP_OP_ERR },
	/* no response within the transport timer: what retry exhaustion is */
	{ IBV_WC_RESP_TIMEOUT_ERR, MLX5_CQE_SYNDROME_TRANSPORT_RETRY_EXC_ERR },
	{ IBV_WC_GENERAL_ERR, MLX5_CQE_SYNDROME_LOCAL_QP_OP_ERR },
};

uint8_t tv_syndrome_of(enum ibv_wc_status st)
{
	for (size_t i = 0; i < sizeof(status_map) / sizeof(status_map[0]); i++)
		if (status_map[i].st == st)
			return status_map[i].synd;
	return MLX5_CQE_SYNDROME_LOCAL_QP_OP_ERR; /* a status newer than this table */
}

/* Send opcodes.  The masked atomics (extended atomics, PRM "Masked Atomic
 * Operations") have no plain-verbs work request. */
static const struct {
	uint8_t mlx5;
	enum ibv_wr_opcode wr;
} opcode_map[] = {
	{ MLX5_OPCODE_RDMA_WRITE, IBV_WR_RDMA_WRITE },
	{ MLX5_OPCODE_RDMA_WRITE_IMM, IBV_WR_RDMA_WRITE_WITH_IMM },
	{ MLX5_OPCODE_SEND, IBV_WR_SEND },
	{ MLX5_OPCODE_SEND_IMM, IBV_WR_SEND_WITH_IMM },
	{ MLX5_OPCODE_RDMA_READ, IBV_WR_RDMA_READ },
	{ MLX5_OPCODE_ATOMIC_CS, IBV_WR_ATOMIC_CMP_AND_SWP },
	{ MLX5_OPCODE_ATOMIC_FA, IBV_WR_ATOMIC_FETCH_AND_ADD },
};

int tv_wr_opcode(uint8_t mlx5_opcode, enum ibv_wr_opcode *out)
{
	for (size_t i = 0; i < sizeof(opcode_map) / sizeof(opcode_map[0]); i++) {
		if (opcode_map[i].mlx5 == mlx5_opcode) {
			*out = opcode_map[i].wr;
			return 0;
		}
	}
	return -EOPNOTSUPP;
}

void tv_recv_cqe_opcode(const struct ibv_wc *wc, uint8_t *cqe_opcode, uint8_t *req_opcode)
{
	if (wc->opcode == IBV_WC_RECV_RDMA_WITH_IMM) {
		*cqe_opcode = MLX5_CQE_RESP_WR_IMM;
		*req_opcode = MLX5_OPCODE_RDMA_WRITE_IMM;
	} else if (wc->wc_flags & IBV_WC_WITH_IMM) {
		*cqe_opcode = MLX5_CQE_RESP_SEND_IMM;
		*req_opcode = MLX5_OPCODE_SEND_IMM;
	} else {
		*cqe_opcode = MLX5_CQE_RESP_SEND;
		*req_opcode = MLX5_OPCODE_SEND;
	}
}

uint32_t tv_mtu_bytes(enum ibv_mtu mtu)
{
	return mtu >= IBV_MTU_256 && mtu <= IBV_MTU_4096 ? 128u << mtu : 1024;
}

/*
 * The registration decision (tr_verbs.h).  GPU memory the device can map
 * through dma-buf is registered like host memory and needs nothing more.
 * Without it, the requester can still use it as a local buffer: the bytes
 * pass through registered host memory on their way (the transport sees the
 * WQE before posting and the completion before the CQE).  A remote target
 * is another matter: a peer's WRITE lands and its READ is served by the
 * device alone, so the model never learns when to copy; that is refused.
 */
int tv_mem_plan(uint8_t kind, unsigned access, bool stage_all, bool dmabuf,
		struct tv_mem_plan *out, const char **why)
{
	bool device_reach = kind != GDAK_MEM_GPU ? !stage_all : dmabuf;
	bool remote = access & (GDAK_ACCESS_REMOTE_WRITE | GDAK_ACCESS_REMOTE_READ |
				GDAK_ACCESS_REMOTE_ATOMIC);

	*why = NULL;
	if (device_reach) {
		out->reg = kind == GDAK_MEM_GPU ? TV_REG_DMABUF : TV_REG_HOST;
		out->stage_local = false;
		return 0;
	}
	if (remote) {
		*why = kind == GDAK_MEM_GPU ?
			"GPU memory with remote access needs a dma-buf registration, which "
			"this device or driver does not give; staged GPU memory serves local "
			"buffers only (register it without GDAK_ACCESS_REMOTE_*)" :
			"GDAK_VERBS_STAGE=all handles host memory as GPU memory without "
			"dma-buf: local buffers only, no remote access";
		return -EOPNOTSUPP;
	}
	out->reg = TV_REG_NONE;
	out->stage_local = true;
	return 0;
}

int tv_parse_stage(const char *s)
{
	if (!s || !*s || !strcmp(s, "0") || !strcmp(s, "off"))
		return 0;
	if (!strcmp(s, "all"))
		return 1;
	return -EINVAL;
}
