/* SPDX-License-Identifier: MIT */
/*
 * fid_wait.c - the cross-channel WAIT and the DUMP WQE, on the in-process
 * and the RoCEv2/UDP transport, strict on:
 *   WAIT (opcode 0x0f, DS 2: ctrl + be32 max_index + be32 CQ number), the
 *     counter/signal companion-QP pattern of GPUNetIO's put_signal_counter:
 *     the companion QP waits on the main QP's send CQ for the CQE of the
 *     signal, then its ATOMIC_FA bumps the counter.  Posted first, the
 *     companion runs nothing until the main QP completes; then the WAIT
 *     and the FA complete, in order, counter 1.  A WAIT naming no CQ:
 *     LOCAL_QP_OP_ERR, rule wait_bad_cq.  The WAIT, decoded again on every
 *     pass while it waits, is in the trace once (so is every other WQE).
 *     A WAIT more than a ring ahead waits and is flagged once
 *     (wait_index_ahead); an unknown WAIT mode fails (wait_opmod).
 *   DUMP (opcode 0x23, ctrl + data segment): NVSHMEM's get-with-ordering,
 *     RDMA_READ then a fenced DUMP of one byte of the landing buffer: the
 *     DUMP completes after the READ, whose data is there.  A DUMP with an
 *     unknown lkey: LOCAL_PROT_ERR, rule bad_lkey.
 */
#include <stdio.h>
#include <unistd.h>

#include <gdak/trace_format.h>

#include "fid_util.h"

static struct gdak_ctx *ctx;
static uint8_t src[4096], dst[4096];
static uint64_t counter, fetched[4];
static struct gdak_mr *ms, *md, *mc, *mf;

static uint64_t post_wait(struct nu_qp *q, uint32_t cqn, uint32_t max_index, uint8_t fm_ce_se)
{
	uint8_t w[64];

	/* doca_gpu_dev_verbs_wqe_prepare_wait: ctrl, then 8 reserved bytes,
	 * be32 max_index, be32 qpn_cqn */
	fid_ctrl(w, 0, (uint16_t)q->pi, GDAK_MLX5_OPCODE_WAIT, q->qpn, 2, fm_ce_se, 0);
	memset(w + 16, 0, 8);
	fid_be32(w + 24, max_index);
	fid_be32(w + 28, cqn);
	return fid_put(q, w, 2);
}

static uint64_t post_dump(struct nu_qp *q, const void *laddr, uint32_t len, uint32_t lkey,
			  uint8_t fm_ce_se)
{
	uint8_t w[64];

	/* ibgda_write_dump_wqe: ctrl (DS 2) + one data segment */
	fid_ctrl(w, 0, (uint16_t)q->pi, GDAK_MLX5_OPCODE_DUMP, q->qpn, 2, fm_ce_se, 0);
	fid_data(w + 16, len, lkey, laddr);
	return fid_put(q, w, 2);
}

/* Every WQE record of qpn in the trace at path: counts per WQE index. */
static void trace_count(const char *path, uint32_t qpn, unsigned *per_idx, unsigned n)
{
	struct gdak_trace_reader *r;
	struct gdak_trace_item it;
	size_t len, off = 0, used;
	uint8_t *buf = gdak_test_slurp(path, &len);

	REQUIRE(buf && len > 0);
	REQUIRE_EQ(gdak_trace_reader_new(&r), 0);
	for (;;) {
		int rc = gdak_trace_reader_next(r, buf + off, len - off, off, &it, &used);

		if (rc <= 0) {
			CHECK_EQ(rc, 0);
			break;
		}
		off += used;
		if (it.kind == GDAK_TITEM_RECORD && it.hdr.type == GDAK_TREC_WQE &&
		    it.hdr.qpn == qpn && it.u.wqe.wqe_index < n)
			per_idx[it.u.wqe.wqe_index]++;
	}
	gdak_trace_reader_free(r);
	free(buf);
}

static void case_wait(const char *trace)
{
	struct gdak_qp_attr attr = { .sq_depth = 32,
				     .cq_depth = 32,
				     .flags = GDAK_QP_F_SCQ_OVERRUN_IGNORE };
	struct nu_qp a, b, c, d;
	struct gdak_nic_stats st;
	uint64_t wait_idx, fa_idx, sig_idx;
	const uint8_t *e;

	counter = 0;
	memset(dst, 0, sizeof(dst));
	REQUIRE_EQ(nu_pair(ctx, &attr, &a, &b), 0);
	REQUIRE_EQ(nu_pair(ctx, &attr, &c, &d), 0);
	if (trace)
		REQUIRE_EQ(gdak_nic_set_trace(trace), 0);

	/* companion: WAIT for CQE 1 of the main QP's send CQ (its signal),
	 * then counter += 1 */
	wait_idx = post_wait(&c, a.d->scq.cqn, 1, FID_CQ_UPDATE);
	fa_idx = fid_fadd(&c, &fetched[0], gdak_mr_lkey(mf), (uintptr_t)&counter, gdak_mr_rkey(mc),
			  1, FID_CQ_UPDATE);
	fid_submit_doca(&c);
	CHECK(FID_UNTIL(fid_doorbells(&c) >= 1, 5000));
	usleep(50000); /* many NIC passes: the WAIT must hold */
	CHECK_EQ(__atomic_load_n(&counter, __ATOMIC_ACQUIRE), 0);
	CHECK(!nu_cqe_ready(&c, 0));
	REQUIRE_EQ(gdak_nic_qp_stats(c.qp, &st), 0);
	CHECK_EQ(st.wqes, 0);

	/* main: data, then the signal (both signalled: CQE 0 and CQE 1) */
	fid_write(&a, src, 256, gdak_mr_lkey(ms), (uintptr_t)dst, gdak_mr_rkey(md), FID_CQ_UPDATE);
	sig_idx = fid_fadd(&a, &fetched[1], gdak_mr_lkey(mf), (uintptr_t)&dst[512],
			   gdak_mr_rkey(md), 7, FID_CQ_UPDATE);
	fid_submit_doca(&a);
	REQUIRE(fid_cqe_at(&a.d->scq, 1, 5000) != NULL);
	e = fid_cqe_at(&c.d->scq, 0, 5000);
	REQUIRE(e != NULL);
	CHECK_EQ(e[63] >> 4, MLX5_CQE_REQ);
	CHECK_EQ(fid_get_be16(e + 60), (uint16_t)wait_idx);
	e = fid_cqe_at(&c.d->scq, 1, 5000);
	REQUIRE(e != NULL);
	CHECK_EQ(e[63] >> 4, MLX5_CQE_REQ);
	CHECK_EQ(fid_get_be16(e + 60), (uint16_t)fa_idx);
	CHECK_EQ(__atomic_load_n(&counter, __ATOMIC_ACQUIRE), 1);
	CHECK_EQ(fetched[0], 0); /* big-endian 0 */
	CHECK_MEM(dst, src, 256);
	CHECK_EQ(dst[512], 7);
	(void)sig_idx;

	/* a WAIT whose index has passed goes straight through */
	post_wait(&c, a.d->scq.cqn, 0, FID_CQ_UPDATE);
	fid_submit_nvshmem(&c);
	REQUIRE(fid_cqe_at(&c.d->scq, 2, 5000) != NULL);
	CHECK_EQ(fid_violations(&a) + fid_violations(&c), 0);
	CHECK_EQ(gdak_qp_state(c.qp), GDAK_QPS_RTS);

	if (trace) {
		unsigned pc[4] = { 0 }, pa[2] = { 0 };

		REQUIRE_EQ(gdak_nic_set_trace(NULL), 0);
		trace_count(trace, c.qpn, pc, 4);
		trace_count(trace, a.qpn, pa, 2);
		/* WAIT, FA, WAIT: once each, however many passes the WAIT waited */
		CHECK_EQ(pc[0], 1);
		CHECK_EQ(pc[1], 1);
		CHECK_EQ(pc[2], 1);
		CHECK_EQ(pc[3], 0);
		CHECK_EQ(pa[0], 1);
		CHECK_EQ(pa[1], 1);
	}
	/* negative twin: a CQ number nobody has */
	post_wait(&c, 0xfffff0, 0, FID_CQ_UPDATE);
	fid_submit_doca(&c);
	e = fid_cqe_at(&c.d->scq, 3, 5000);
	REQUIRE(e != NULL);
	CHECK_EQ(e[63] >> 4, MLX5_CQE_REQ_ERR);
	CHECK_EQ(e[55], MLX5_CQE_SYNDROME_LOCAL_QP_OP_ERR);
	CHECK_EQ(e[56], GDAK_MLX5_OPCODE_WAIT);
	FID_EXPECT_ERROR(&c, "wait_bad_cq", MLX5_CQE_SYNDROME_LOCAL_QP_OP_ERR);
	nu_destroy(&a);
	nu_destroy(&b);
	nu_destroy(&c);
	nu_destroy(&d);
}

/* a WAIT more than a ring ahead of its CQ: legal (it just waits), flagged
 * once; a WAIT mode the model does not know: LOCAL_QP_OP_ERR, wait_opmod */
static void case_wait_odd(void)
{
	struct gdak_qp_attr attr = { .sq_depth = 32, .cq_depth = 32 };
	struct nu_qp a, b, c, d;
	struct gdak_nic_stats st;
	const uint8_t *e;
	uint8_t w[64];
	uint64_t i;

	REQUIRE_EQ(nu_pair(ctx, &attr, &a, &b), 0);
	REQUIRE_EQ(nu_pair(ctx, &attr, &c, &d), 0);
	post_wait(&c, a.d->scq.cqn, 1000, FID_CQ_UPDATE);
	fid_submit_doca(&c);
	CHECK(FID_UNTIL(fid_violations(&c) == 1, 5000));
	usleep(20000);
	CHECK_EQ(fid_violations(&c), 1); /* once, not once per pass */
	REQUIRE_EQ(gdak_nic_qp_stats(c.qp, &st), 0);
	CHECK_EQ(st.wqes, 0);
	CHECK_EQ(gdak_qp_state(c.qp), GDAK_QPS_RTS);
	CHECK(!nu_cqe_ready(&c, 0));
	nu_destroy(&c); /* with the WAIT still waiting */
	nu_destroy(&d);

	REQUIRE_EQ(nu_pair(ctx, &attr, &c, &d), 0);
	fid_ctrl(w, 1, 0, GDAK_MLX5_OPCODE_WAIT, c.qpn, 2, FID_CQ_UPDATE, 0); /* opmod 1 */
	memset(w + 16, 0, 16);
	i = fid_put(&c, w, 2);
	fid_submit_doca(&c);
	e = fid_cqe_at(&c.d->scq, 0, 5000);
	REQUIRE(e != NULL);
	CHECK_EQ(e[63] >> 4, MLX5_CQE_REQ_ERR);
	CHECK_EQ(fid_get_be16(e + 60), (uint16_t)i);
	FID_EXPECT_ERROR(&c, "wait_opmod", MLX5_CQE_SYNDROME_LOCAL_QP_OP_ERR);
	nu_destroy(&a);
	nu_destroy(&b);
	nu_destroy(&c);
	nu_destroy(&d);
}

static void case_dump(void)
{
	struct gdak_qp_attr attr = { .sq_depth = 32, .cq_depth = 32 };
	struct nu_qp a, b;
	uint64_t rd, dp;
	const uint8_t *e;

	memset(dst, 0, sizeof(dst));
	REQUIRE_EQ(nu_pair(ctx, &attr, &a, &b), 0);
	/* get: READ src into dst, then DUMP 1 byte of dst, fenced */
	rd = fid_read(&a, dst, 1024, gdak_mr_lkey(md), (uintptr_t)src, gdak_mr_rkey(ms), 0);
	dp = post_dump(&a, dst, 1, gdak_mr_lkey(md), FID_CQ_UPDATE | FID_FENCE_SMALL);
	fid_submit_nvshmem(&a);
	e = fid_cqe_at(&a.d->scq, 0, 5000);
	REQUIRE(e != NULL);
	CHECK_EQ(e[63] >> 4, MLX5_CQE_REQ);
	CHECK_EQ(fid_get_be16(e + 60), (uint16_t)dp);
	CHECK_MEM(dst, src, 1024);
	(void)rd;
	/* a DUMP without a fence completes in WQE order too */
	fid_write(&a, src + 1024, 64, gdak_mr_lkey(ms), (uintptr_t)(dst + 1024), gdak_mr_rkey(md),
		  0);
	dp = post_dump(&a, dst + 1024, 64, gdak_mr_lkey(md), FID_CQ_UPDATE);
	fid_submit_doca(&a);
	e = fid_cqe_at(&a.d->scq, 1, 5000);
	REQUIRE(e != NULL);
	CHECK_EQ(e[63] >> 4, MLX5_CQE_REQ);
	CHECK_EQ(fid_get_be16(e + 60), (uint16_t)dp);
	CHECK_MEM(dst + 1024, src + 1024, 64);
	fid_cq_consumed(&a.d->scq, 2);
	CHECK_EQ(fid_violations(&a), 0);
	CHECK_EQ(gdak_qp_state(a.qp), GDAK_QPS_RTS);

	/* negative twin: the DUMP's lkey is unknown */
	dp = post_dump(&a, dst, 1, 0x7fff00, FID_CQ_UPDATE);
	fid_submit_doca(&a);
	e = fid_cqe_at(&a.d->scq, 2, 5000);
	REQUIRE(e != NULL);
	CHECK_EQ(e[63] >> 4, MLX5_CQE_REQ_ERR);
	CHECK_EQ(e[55], MLX5_CQE_SYNDROME_LOCAL_PROT_ERR);
	CHECK_EQ(fid_get_be16(e + 60), (uint16_t)dp);
	FID_EXPECT_ERROR(&a, "bad_lkey", MLX5_CQE_SYNDROME_LOCAL_PROT_ERR);
	nu_destroy(&a);
	nu_destroy(&b);
}

int main(void)
{
	static const char *const devs[] = FID_DEVS;
	char path[64];

	snprintf(path, sizeof(path), "/tmp/gdak_fid_wait_%d.pcapng", (int)getpid());
	REQUIRE_EQ(gdak_nic_set_strict(1), 0);
	for (unsigned i = 0; i < 2; i++) {
		if (fid_open(devs[i], i, &ctx))
			break;
		gdak_test_fill(src, sizeof(src), 21 + i);
		REQUIRE_EQ(gdak_mr_reg(ctx, src, sizeof(src), GDAK_ACCESS_ALL, &ms), 0);
		REQUIRE_EQ(gdak_mr_reg(ctx, dst, sizeof(dst), GDAK_ACCESS_ALL, &md), 0);
		REQUIRE_EQ(gdak_mr_reg(ctx, &counter, 8, GDAK_ACCESS_ALL, &mc), 0);
		REQUIRE_EQ(gdak_mr_reg(ctx, fetched, sizeof(fetched), GDAK_ACCESS_ALL, &mf), 0);
		if (i == 0) {
			int tr = gdak_nic_set_trace(path);

			if (tr != -ENOTSUP) {
				REQUIRE_EQ(tr, 0);
				REQUIRE_EQ(gdak_nic_set_trace(NULL), 0);
			}
			case_wait(tr == -ENOTSUP ? NULL : path);
		} else {
			case_wait(NULL);
		}
		case_dump();
		if (i == 0)
			case_wait_odd();
		gdak_mr_dereg(ms);
		gdak_mr_dereg(md);
		gdak_mr_dereg(mc);
		gdak_mr_dereg(mf);
		gdak_close(ctx);
	}
	unlink(path);
	return gdak_test_end();
}
