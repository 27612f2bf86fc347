/* SPDX-License-Identifier: MIT */
/*
 * rxe_verbs_map.c - gdak.rxe.verbs_map: the verbs transport's vocabulary
 * tables (nic_model/tr_verbs_map.c): every verbs completion status maps to
 * the mlx5 syndrome a ConnectX reports for it, every mlx5 send opcode the
 * transport takes to its work request, and the rest are refused.
 */
#include <errno.h>
#include <stdbool.h>

#include <gdak/gdak.h>
#include <gdak/mlx5.h>

#include "gdak_test.h"
#include "tr_verbs.h"

/* tv_mem_plan over kind x access x stage_all x dmabuf. */
static void plan_cases(void)
{
	static const struct {
		uint8_t kind;
		unsigned access;
		bool stage_all, dmabuf;
		int ret;
		enum tv_reg reg;
		bool staged;
	} c[] = {
		/* host memory: registered as it is */
		{ GDAK_MEM_HOST, GDAK_ACCESS_ALL, false, false, 0, TV_REG_HOST, false },
		{ GDAK_MEM_HOST, GDAK_ACCESS_LOCAL_WRITE, false, false, 0, TV_REG_HOST, false },
		{ GDAK_MEM_HOST, 0, false, true, 0, TV_REG_HOST, false },
		/* GPU memory with dma-buf: registered, never staged, any access */
		{ GDAK_MEM_GPU, GDAK_ACCESS_ALL, false, true, 0, TV_REG_DMABUF, false },
		{ GDAK_MEM_GPU, GDAK_ACCESS_LOCAL_WRITE, false, true, 0, TV_REG_DMABUF, false },
		{ GDAK_MEM_GPU, GDAK_ACCESS_ALL, true, true, 0, TV_REG_DMABUF, false },
		/* GPU memory without: local buffers staged, remote rights refused */
		{ GDAK_MEM_GPU, GDAK_ACCESS_LOCAL_WRITE, false, false, 0, TV_REG_NONE, true },
		{ GDAK_MEM_GPU, 0, false, false, 0, TV_REG_NONE, true },
		{ GDAK_MEM_GPU, GDAK_ACCESS_ALL, false, false, -EOPNOTSUPP, TV_REG_NONE, false },
		{ GDAK_MEM_GPU, GDAK_ACCESS_REMOTE_READ, false, false, -EOPNOTSUPP, TV_REG_NONE, false },
		{ GDAK_MEM_GPU, GDAK_ACCESS_LOCAL_WRITE | GDAK_ACCESS_REMOTE_WRITE, false, false,
		  -EOPNOTSUPP, TV_REG_NONE, false },
		{ GDAK_MEM_GPU, GDAK_ACCESS_REMOTE_ATOMIC, false, false, -EOPNOTSUPP, TV_REG_NONE,
		  false },
		/* GDAK_VERBS_STAGE=all: host memory as GPU memory without dma-buf */
		{ GDAK_MEM_HOST, GDAK_ACCESS_LOCAL_WRITE, true, false, 0, TV_REG_NONE, true },
		{ GDAK_MEM_HOST, GDAK_ACCESS_LOCAL_WRITE, true, true, 0, TV_REG_NONE, true },
		{ GDAK_MEM_HOST, GDAK_ACCESS_ALL, true, false, -EOPNOTSUPP, TV_REG_NONE, false },
	};

	for (size_t i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
		struct tv_mem_plan p = { .reg = (enum tv_reg)99, .stage_local = false };
		const char *why = "unset";
		int r = tv_mem_plan(c[i].kind, c[i].access, c[i].stage_all, c[i].dmabuf, &p, &why);

		CHECK_EQ(r, c[i].ret);
		if (r) {
			/* the message names the remedy */
			CHECK(why && strstr(why, "remote"));
			continue;
		}
		CHECK(why == NULL);
		CHECK_EQ(p.reg, c[i].reg);
		CHECK_EQ(p.stage_local, c[i].staged);
	}
}

static void ring_cases(void)
{
	struct tv_ring r = { .size = 4096 };
	uint64_t off = 77, end = 0;

	CHECK_EQ(tv_ring_take(&r, 1500, &off, &end), 0);
	CHECK_EQ(off, 0);
	CHECK_EQ(tv_ring_take(&r, 1500, &off, &end), 0);
	CHECK_EQ(off, 1500);
	CHECK_EQ(end, 3000);
	CHECK_EQ(tv_ring_take(&r, 1500, &off, &end), 1); /* 1096 left at the end */
	tv_ring_put(&r, 1500);
	CHECK_EQ(tv_ring_take(&r, 1500, &off, &end), 0); /* skips the end: wraps */
	CHECK_EQ(off, 0);
	CHECK_EQ(end, 4096 + 1500);
	CHECK_EQ(tv_ring_take(&r, 100, &off, &end), 1);	 /* [1500, 3000) still live */
	tv_ring_put(&r, 99999);				 /* past the head: ignored */
	CHECK_EQ(tv_ring_take(&r, 100, &off, &end), 1);
	tv_ring_put(&r, 3000);
	CHECK_EQ(tv_ring_take(&r, 100, &off, &end), 0);
	CHECK_EQ(off, 1500);
	tv_ring_put(&r, end);				 /* all free */
	CHECK_EQ(tv_ring_take(&r, 4096, &off, &end), 0); /* the whole ring, from 0 */
	CHECK_EQ(off, 0);
	CHECK_EQ(tv_ring_take(&r, 1, &off, &end), 1);
	tv_ring_put(&r, end);
	CHECK_EQ(tv_ring_take(&r, 4097, &off, &end), -E2BIG);

	/* random sizes, freed oldest first (completion order), against a model */
	{
		struct { uint64_t off, len, end; } live[64];
		unsigned head = 0, n = 0, bad = 0;
		uint64_t st = 12345;
		struct tv_ring q = { .size = 5000 };

		for (int it = 0; it < 20000; it++) {
			uint32_t len = 1 + (uint32_t)(gdak_test_rand(&st) % 2600);
			int rc = n < 64 ? tv_ring_take(&q, len, &off, &end) : 1;

			if (rc == 1) {
				bad += n == 0; /* full with nothing live: a leak */
				if (n) {
					tv_ring_put(&q, live[head].end);
					head = (head + 1) % 64;
					n--;
				}
				continue;
			}
			bad += rc != 0 || off + len > q.size;
			for (unsigned k = 0; k < n; k++) {
				unsigned j = (head + k) % 64;
				bad += off < live[j].off + live[j].len && live[j].off < off + len;
			}
			live[(head + n) % 64].off = off;
			live[(head + n) % 64].len = len;
			live[(head + n) % 64].end = end;
			n++;
			if (gdak_test_rand(&st) % 3 == 0 && n) { /* a completion */
				tv_ring_put(&q, live[head].end);
				head = (head + 1) % 64;
				n--;
			}
		}
		CHECK_EQ(bad, 0);
	}
}

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

	plan_cases();
	ring_cases();
	CHECK_EQ(tv_parse_stage(NULL), 0);
	CHECK_EQ(tv_parse_stage(""), 0);
	CHECK_EQ(tv_parse_stage("0"), 0);
	CHECK_EQ(tv_parse_stage("off"), 0);
	CHECK_EQ(tv_parse_stage("all"), 1);
	CHECK_EQ(tv_parse_stage("gpu"), -EINVAL);
	CHECK_EQ(tv_parse_stage("ALL "), -EINVAL);
	return gdak_test_end();
}
