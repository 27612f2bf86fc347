/* SPDX-License-Identifier: MIT */
/*
 * rxe_verbs_map.c - gdak.rxe.verbs_map: the verbs transport's vocabulary
 * tables (nic_model/tr_verbs_map.c): every verbs completion status maps to
 * the mlx5 syndrome a ConnectX reports for it, every mlx5 send opcode the
 * transport takes to its work request, and the rest are refused.
 */
#include <errno.h>

#include <gdak/mlx5.h>

#include "gdak_test.h"
#include "tr_verbs.h"

int main(void)
{
	static const struct { enum ibv_wc_status st; uint8_t synd; } want[] = {
		{ IBV_WC_SUCCESS, 0 },
		{ IBV_WC_LOC_LEN_ERR, MLX5_CQE_SYNDROME_LOCAL_LENGTH_ERR },
		{ IBV_WC_LOC_QP_OP_ERR, MLX5_CQE_SYNDROME_LOCAL_QP_OP_ERR },
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
		{ IBV_WC_REM_ABORT_ERR, MLX5_CQE_SYNDROME_REMOTE_ABORTED_ERR },
		{ IBV_WC_RESP_TIMEOUT_ERR, MLX5_CQE_SYNDROME_TRANSPORT_RETRY_EXC_ERR },
		{ IBV_WC_GENERAL_ERR, MLX5_CQE_SYNDROME_LOCAL_QP_OP_ERR },
		{ (enum ibv_wc_status)200, MLX5_CQE_SYNDROME_LOCAL_QP_OP_ERR }, /* unknown */
	};
	static const struct { uint8_t op; enum ibv_wr_opcode wr; } ops[] = {
		{ MLX5_OPCODE_RDMA_WRITE, IBV_WR_RDMA_WRITE },
		{ MLX5_OPCODE_RDMA_WRITE_IMM, IBV_WR_RDMA_WRITE_WITH_IMM },
		{ MLX5_OPCODE_SEND, IBV_WR_SEND },
		{ MLX5_OPCODE_SEND_IMM, IBV_WR_SEND_WITH_IMM },
		{ MLX5_OPCODE_RDMA_READ, IBV_WR_RDMA_READ },
		{ MLX5_OPCODE_ATOMIC_CS, IBV_WR_ATOMIC_CMP_AND_SWP },
		{ MLX5_OPCODE_ATOMIC_FA, IBV_WR_ATOMIC_FETCH_AND_ADD },
	};
	static const uint8_t refused[] = { MLX5_OPCODE_NOP, MLX5_OPCODE_ATOMIC_MASKED_CS,
					   MLX5_OPCODE_ATOMIC_MASKED_FA, GDAK_MLX5_OPCODE_WAIT,
					   GDAK_MLX5_OPCODE_DUMP, 0xff };
	struct ibv_wc wc = { 0 };
	uint8_t cqe, req;

	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++)
		CHECK_EQ(tv_syndrome_of(want[i].st), want[i].synd);
	for (size_t i = 0; i < sizeof(ops) / sizeof(ops[0]); i++) {
		enum ibv_wr_opcode wr = (enum ibv_wr_opcode)-1;
		CHECK_EQ(tv_wr_opcode(ops[i].op, &wr), 0);
		CHECK_EQ(wr, ops[i].wr);
	}
	for (size_t i = 0; i < sizeof(refused); i++) {
		enum ibv_wr_opcode wr;
		CHECK_EQ(tv_wr_opcode(refused[i], &wr), -EOPNOTSUPP);
	}

	wc.opcode = IBV_WC_RECV;
	tv_recv_cqe_opcode(&wc, &cqe, &req);
	CHECK_EQ(cqe, MLX5_CQE_RESP_SEND);
	CHECK_EQ(req, MLX5_OPCODE_SEND);
	wc.wc_flags = IBV_WC_WITH_IMM;
	tv_recv_cqe_opcode(&wc, &cqe, &req);
	CHECK_EQ(cqe, MLX5_CQE_RESP_SEND_IMM);
	CHECK_EQ(req, MLX5_OPCODE_SEND_IMM);
	wc.opcode = IBV_WC_RECV_RDMA_WITH_IMM;
	tv_recv_cqe_opcode(&wc, &cqe, &req);
	CHECK_EQ(cqe, MLX5_CQE_RESP_WR_IMM);
	CHECK_EQ(req, MLX5_OPCODE_RDMA_WRITE_IMM);

	CHECK_EQ(gdak_ibv_mtu_enum(1500), IBV_MTU_1024);
	CHECK_EQ(gdak_ibv_mtu_enum(4096), IBV_MTU_4096);
	CHECK_EQ(gdak_ibv_mtu_enum(9000), IBV_MTU_4096);
	CHECK_EQ(gdak_ibv_mtu_enum(100), IBV_MTU_256);
	CHECK_EQ(tv_mtu_bytes(IBV_MTU_1024), 1024);
	CHECK_EQ(tv_mtu_bytes(IBV_MTU_256), 256);
	CHECK_EQ(tv_mtu_bytes(IBV_MTU_4096), 4096);
	return gdak_test_end();
}
