/* SPDX-License-Identifier: MIT */
/*
 * trace_golden.c - a fixed synthetic scenario written through gdak/trace.h
 * with the fake clock, printed by gdak-trace (text, JSON, summary, filters)
 * and compared with the files in emu_tests/data/trace/ line by line.
 *
 * usage: gdak_trace_golden GDAK_TRACE_BINARY DATA_DIR
 * GDAK_TRACE_REGEN=1 rewrites the golden files (review the diff!).
 */
#include <arpa/inet.h>
#include <sys/wait.h>

#include <gdak/mlx5.h>
#include "gdak_test.h"
#include "trace_util.h"

#define QP_A 0x000100
#define QP_B 0x000101

static uint32_t sip, dip;

static void ctrl(uint8_t *w, uint8_t op, uint16_t idx, uint32_t qpn, uint8_t ds, uint8_t fm_ce_se,
		 uint32_t imm_be)
{
	struct gdak_mlx5_ctrl c = {.opcode = op, .wqe_index = idx, .qpn = qpn, .ds = ds,
				   .fm_ce_se = fm_ce_se, .imm = imm_be};
	gdak_mlx5_ctrl_encode((struct mlx5_wqe_ctrl_seg *)(void *)w, &c);
}

static void cqe_ok(uint8_t *c, uint8_t op, uint16_t wqe_counter, uint32_t qpn, uint32_t bytes,
		   uint8_t owner)
{
	struct mlx5_cqe64 *q = (struct mlx5_cqe64 *)(void *)c;

	memset(c, 0, 64);
	q->wqe_counter = gdak_htobe16(wqe_counter);
	q->byte_cnt = gdak_htobe32(bytes);
	q->sop_drop_qpn = gdak_htobe32(qpn);
	q->op_own = (uint8_t)(op << 4 | owner);
}

static void cqe_err(uint8_t *c, uint8_t synd, uint8_t wqe_op, uint16_t wqe_counter, uint32_t qpn,
		    uint8_t owner)
{
	struct gdak_mlx5_err_cqe *e = (struct gdak_mlx5_err_cqe *)(void *)c;

	memset(c, 0, 64);
	e->syndrome = synd;
	e->vendor_err_synd = 0x51;
	e->s_wqe_opcode_qpn = gdak_htobe32((uint32_t)wqe_op << 24 | qpn);
	e->wqe_counter = gdak_htobe16(wqe_counter);
	e->op_own = (uint8_t)(MLX5_CQE_REQ_ERR << 4 | owner);
}

/* The scenario: QP A writes, an atomic fails with a remote access error and
 * the rest is flushed; QP B receives; a second NIC thread runs a NOP. */
static void write_scenario(const char *path)
{
	struct gdak_trace_opts o = {.fake_clock = 1};
	struct gdak_trace *t;
	struct gdak_trace_buf *b0, *b1;
	uint8_t w[64 * 2], c[64], pkt[512], ext[32], pay[256];
	size_t n;

	REQUIRE_EQ(gdak_trace_open_opts(path, &o, &t), 0);
	b0 = gdak_trace_thread_buf(t, 0);
	b1 = gdak_trace_thread_buf(t, 1);
	REQUIRE(b0 && b1);

	gdak_trace_qp(b0, QP_A, QP_B, "loop", "RTS");
	gdak_trace_qp(b0, QP_B, QP_A, "loop", "RTS");

	/* WQE 0: RDMA_WRITE, one SGE, signalled */
	memset(w, 0, sizeof(w));
	ctrl(w, MLX5_OPCODE_RDMA_WRITE, 0, QP_A, 3, MLX5_WQE_CTRL_CQ_UPDATE, 0);
	gdak_mlx5_raddr_encode((struct mlx5_wqe_raddr_seg *)(w + 16), 0x7f0000010000ull, 0x2002);
	gdak_mlx5_data_encode((struct mlx5_wqe_data_seg *)(w + 32), 0x7f0000020000ull, 256, 0x1001);
	gdak_trace_doorbell(b0, QP_A, 0 /* DB */, 1, w, 8);
	gdak_trace_wqe(b0, QP_A, 0, w, 1);

	gdak_test_fill(pay, sizeof(pay), 42);
	tt_reth(ext, 0x7f0000010000ull, 0x2002, 256);
	n = tt_roce_build(pkt, 0x0a, QP_B, 0, 1, ext, 16, pay, 256, sip, dip, 49152, 4791);
	gdak_trace_packet(b0, 0, sip, dip, 49152, 4791, pkt, (uint32_t)n);
	ext[0] = 0x1f;	/* AETH: ACK, credits 31 */
	ext[1] = ext[2] = 0;
	ext[3] = 1;	/* MSN 1 */
	n = tt_roce_build(pkt, 0x11, QP_A, 0, 0, ext, 4, NULL, 0, dip, sip, 49153, 4791);
	gdak_trace_packet(b0, 1, dip, sip, 49153, 4791, pkt, (uint32_t)n);

	cqe_ok(c, MLX5_CQE_REQ, 0, QP_A, 256, 0);
	gdak_trace_cqe(b0, QP_A, 0x80, 0, c);

	/* WQE 1: RDMA_WRITE with 12 inline bytes, fence, solicited */
	memset(w, 0, sizeof(w));
	ctrl(w, MLX5_OPCODE_RDMA_WRITE, 1, QP_A, 3,
	     MLX5_WQE_CTRL_CQ_UPDATE | MLX5_WQE_CTRL_SOLICITED | GDAK_MLX5_FENCE_SMALL_AND_FENCE, 0);
	gdak_mlx5_raddr_encode((struct mlx5_wqe_raddr_seg *)(w + 16), 0x7f0000010100ull, 0x2002);
	gdak_mlx5_inline_encode((struct mlx5_wqe_inl_data_seg *)(w + 32), 12);
	memcpy(w + 36, "inline bytes", 12);
	gdak_trace_wqe(b0, QP_A, 1, w, 1);

	/* WQE 2: ATOMIC_FA of 1, unsignalled */
	memset(w, 0, sizeof(w));
	ctrl(w, MLX5_OPCODE_ATOMIC_FA, 2, QP_A, 4, 0, 0);
	gdak_mlx5_raddr_encode((struct mlx5_wqe_raddr_seg *)(w + 16), 0x7f0000010008ull, 0x2003);
	gdak_mlx5_atomic_encode((struct mlx5_wqe_atomic_seg *)(w + 32), 1, 0);
	gdak_mlx5_data_encode((struct mlx5_wqe_data_seg *)(w + 48), 0x7f0000020100ull, 8, 0x1001);
	gdak_trace_wqe(b0, QP_A, 2, w, 1);

	/* WQE 3: RDMA_WRITE_IMM spanning two WQEBBs (two SGEs + padding DS) */
	memset(w, 0, sizeof(w));
	ctrl(w, MLX5_OPCODE_RDMA_WRITE_IMM, 3, QP_A, 5, MLX5_WQE_CTRL_CQ_UPDATE,
	     gdak_htobe32(0xdeadbeef));
	gdak_mlx5_raddr_encode((struct mlx5_wqe_raddr_seg *)(w + 16), 0x7f0000010200ull, 0x2002);
	gdak_mlx5_data_encode((struct mlx5_wqe_data_seg *)(w + 32), 0x7f0000020200ull, 64, 0x1001);
	gdak_mlx5_data_encode((struct mlx5_wqe_data_seg *)(w + 48), 0x7f0000020300ull, 32, 0x1001);
	gdak_mlx5_data_encode((struct mlx5_wqe_data_seg *)(w + 64), 0x7f0000020400ull, 16, 0x1001);
	gdak_trace_wqe(b0, QP_A, 3, w, 2);
	gdak_trace_doorbell(b0, QP_A, 1 /* BF */, 5, w, 64);

	/* the atomic's rkey is refused: NAK, error CQE, the rest flushed */
	tt_be64(ext, 0x7f0000010008ull);
	tt_be32(ext + 8, 0x2003);
	tt_be64(ext + 12, 1);
	tt_be64(ext + 20, 0);
	n = tt_roce_build(pkt, 0x14, QP_B, 2, 1, ext, 28, NULL, 0, sip, dip, 49152, 4791);
	gdak_trace_packet(b0, 0, sip, dip, 49152, 4791, pkt, (uint32_t)n);
	ext[0] = 0x62;	/* AETH: NAK, remote access error */
	ext[1] = ext[2] = 0;
	ext[3] = 1;
	n = tt_roce_build(pkt, 0x11, QP_A, 2, 0, ext, 4, NULL, 0, dip, sip, 49153, 4791);
	gdak_trace_packet(b0, 1, dip, sip, 49153, 4791, pkt, (uint32_t)n);
	cqe_err(c, MLX5_CQE_SYNDROME_REMOTE_ACCESS_ERR, MLX5_OPCODE_ATOMIC_FA, 2, QP_A, 0);
	gdak_trace_cqe(b0, QP_A, 0x80, 1, c);
	cqe_err(c, MLX5_CQE_SYNDROME_WR_FLUSH_ERR, MLX5_OPCODE_RDMA_WRITE_IMM, 3, QP_A, 0);
	gdak_trace_cqe(b0, QP_A, 0x80, 2, c);

	/* a check and an injected fault */
	gdak_trace_violation(b0, QP_A, 4, "pi_jump", MLX5_CQE_SYNDROME_LOCAL_QP_OP_ERR,
			     "producer index 300 is more than 256 ahead of 4");
	gdak_trace_fault(b0, QP_B, 0, "delay", "completion delayed 5 us");

	/* QP B: a receive WQE (one SGE, then the terminator) and its CQE */
	memset(w, 0, sizeof(w));
	gdak_mlx5_data_encode((struct mlx5_wqe_data_seg *)w, 0x7f0000030000ull, 4096, 0x3001);
	gdak_mlx5_data_encode((struct mlx5_wqe_data_seg *)(w + 16), 0, 0, MLX5_INVALID_LKEY);
	gdak_trace_recv_wqe(b0, QP_B, 0, w, 32);
	cqe_ok(c, MLX5_CQE_RESP_SEND, 0, QP_B, 100, 0);
	gdak_trace_cqe(b0, QP_B, 0x81, 0, c);

	/* QP 0x102 as the NIC model records a pass (one BATCH block, one
	 * timestamp): doorbell, three 64-byte writes (delta-coded), the CQE */
	gdak_trace_batch_begin(b0);
	memset(w, 0, sizeof(w));
	for (uint16_t i = 0; i < 3; i++) {
		ctrl(w, MLX5_OPCODE_RDMA_WRITE, i, 0x102, 3, i == 2 ? MLX5_WQE_CTRL_CQ_UPDATE : 0, 0);
		gdak_mlx5_raddr_encode((struct mlx5_wqe_raddr_seg *)(w + 16),
				       0x7f0000040000ull + 64u * i, 0x2004);
		gdak_mlx5_data_encode((struct mlx5_wqe_data_seg *)(w + 32),
				      0x7f0000050000ull + 64u * i, 64, 0x1004);
		if (i == 0) {
			uint8_t reg[16];	/* the ctrl segment; its first 8 bytes ring */

			ctrl(reg, MLX5_OPCODE_RDMA_WRITE, 2, 0x102, 3, MLX5_WQE_CTRL_CQ_UPDATE, 0);
			gdak_trace_doorbell(b0, 0x102, 0 /* DB */, 3, reg, 8);
		}
		gdak_trace_wqe(b0, 0x102, i, w, 1);
	}
	cqe_ok(c, MLX5_CQE_REQ, 2, 0x102, 64, 0);
	gdak_trace_cqe(b0, 0x102, 0x82, 0, c);
	gdak_trace_batch_end(b0);

	/* thread 1: a NOP on another QP */
	memset(w, 0, sizeof(w));
	ctrl(w, MLX5_OPCODE_NOP, 0, 0x200, 1, MLX5_WQE_CTRL_CQ_UPDATE, 0);
	gdak_trace_wqe(b1, 0x200, 0, w, 1);
	gdak_trace_note(b1, "scenario end\n");
	gdak_trace_close(t);
}

/* Compare the output of gdak-trace ARGS FILE with DIR/NAME. */
static void golden(const char *bin, const char *dir, const char *file, const char *args,
		   const char *name, int want_rc)
{
	char cmd[2048], gpath[1024], *got = NULL, *want = NULL;
	size_t glen = 0, wlen = 0, line = 1;
	FILE *p;
	int st;

	snprintf(cmd, sizeof(cmd), "'%s' %s '%s'", bin, args, file);
	snprintf(gpath, sizeof(gpath), "%s/%s", dir, name);
	p = popen(cmd, "r");
	REQUIRE(p);
	{
		FILE *m = open_memstream(&got, &glen);
		char buf[4096];
		size_t r;
		REQUIRE(m);
		while ((r = fread(buf, 1, sizeof(buf), p)) > 0)
			fwrite(buf, 1, r, m);
		fclose(m);
	}
	st = pclose(p);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == want_rc);
	if (getenv("GDAK_TRACE_REGEN")) {
		CHECK_EQ(tt_write(gpath, got, glen), 0);
		printf("regenerated %s\n", gpath);
		free(got);
		return;
	}
	want = (char *)tt_slurp(gpath, &wlen);
	if (!want) {
		gdak_test_fail(__FILE__, __LINE__, "cannot read golden file %s", gpath);
		free(got);
		return;
	}
	for (size_t i = 0; i < glen && i < wlen; i++) {
		if (got[i] != want[i]) {
			size_t s = i;
			while (s > 0 && got[s - 1] != '\n')
				s--;
			gdak_test_fail(__FILE__, __LINE__, "%s: line %zu differs:\n got: %.*s\nwant: %.*s",
				       name, line, (int)strcspn(got + s, "\n"), got + s,
				       (int)strcspn(want + s, "\n"), want + s);
			break;
		}
		if (got[i] == '\n')
			line++;
	}
	CHECK_EQ(glen, wlen);
	free(got);
	free(want);
}

int main(int argc, char **argv)
{
	char *path;

	if (argc != 3) {
		fprintf(stderr, "usage: %s GDAK_TRACE_BINARY DATA_DIR\n", argv[0]);
		return 2;
	}
	sip = inet_addr("192.0.2.1");
	dip = inet_addr("192.0.2.2");
	path = tt_tmpname("golden");
	REQUIRE(path);
	write_scenario(path);

	golden(argv[1], argv[2], path, "", "scenario.txt", 0);
	golden(argv[1], argv[2], path, "--json", "scenario.jsonl", 0);
	golden(argv[1], argv[2], path, "--summary", "scenario_summary.txt", 0);
	golden(argv[1], argv[2], path, "--summary --json", "scenario_summary.jsonl", 0);
	golden(argv[1], argv[2], path, "--errors", "scenario_errors.txt", 0);
	golden(argv[1], argv[2], path, "--qp 0x101", "scenario_qp101.txt", 0);
	golden(argv[1], argv[2], path, "--opcode RDMA_WRITE", "scenario_op_write.txt", 0);
	golden(argv[1], argv[2], path, "--opcode REQ_ERR", "scenario_op_req_err.txt", 0);
	golden(argv[1], argv[2], path, "--opcode ACKNOWLEDGE", "scenario_op_ack.txt", 0);
	unlink(path);
	free(path);
	return gdak_test_end();
}
