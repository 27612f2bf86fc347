/* SPDX-License-Identifier: MIT */
/*
 * tr_verbs_map.c - verbs <-> mlx5 vocabulary for the verbs transport: one
 * table of completion statuses, one of send opcodes.
 */
#include <errno.h>
#include <stddef.h>

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
