/* SPDX-License-Identifier: MIT */
/*
 * nic_trace.c - the NIC model's trace records, read back with the public
 * reader (gdak/trace_format.h):
 *   - the trace is switched to a new file several times while a device
 *     thread keeps writing, then turned off and on again: every file
 *     parses cleanly to its closing statistics, every WQE lands in exactly
 *     one file, and no NIC thread writes through the buffer of a closed
 *     trace (a stale buffer loses the records and, under ASan or Valgrind,
 *     is a use after free); each of those WQEs decodes to exactly what the
 *     device posted at its index (opcode, flags, addresses, keys, length);
 *   - QP life-cycle records (created, connected with the peer's QPN,
 *     destroyed), written by the QP's NIC thread for the control path;
 *   - a violation found by the responder (unaligned atomic target) names
 *     the requester's WQE index, not 0.
 */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <unistd.h>

#include <gdak/trace_format.h>

#include "gdak_test.h"
#include "nic_util.h"

#define NFILES 6		/* switched under traffic; then the last one */
#define NOFF 4			/* trace off and on again, one burst each */
#define NPATHS (NFILES + 1 + NOFF)
#define ROUNDS 1000

static struct gdak_ctx *ctx;
static uint8_t *src, *dst;
static struct gdak_mr *msrc, *mdst;
static struct nu_qp a, b;
static _Atomic unsigned done_rounds, dev_fail;
static _Atomic int dev_stop;

struct tally {
	unsigned wqe, cqe, stats, viol, qp;
	unsigned wqe_bad;	/* QP a's WQEs that are not what the device posted */
	unsigned bad;		/* reader errors */
	int viol_found;		/* the expected responder violation */
	int created_a, created_b, conn_a, conn_b, destroyed;
};

static char paths[NPATHS][256];
static uint64_t src_va, dst_va;	/* what the WQEs name (read after the MRs are gone) */
static uint32_t src_lkey, dst_rkey;
static uint32_t viol_qpn;
static uint16_t viol_wqe;

static int text_has(const struct gdak_trace_str *s, const char *needle)
{
	size_t n = strlen(needle);
	for (uint32_t i = 0; i + n <= s->len; i++)
		if (!memcmp(s->s + i, needle, n))
			return 1;
	return 0;
}

/* One of QP a's WQEs as recorded: what device() / the bursts posted at that
 * index - RDMA_WRITE of 64 bytes from src + 64k to dst + 64k, k the index's
 * place in its group of 16, the 16th signalled - every field decoded. */
static int wqe_ok(const struct gdak_trace_item *it)
{
	const uint8_t *w = it->u.wqe.bytes;
	unsigned k = it->u.wqe.wqe_index % 16;
	struct gdak_mlx5_ctrl c;
	uint64_t raddr, laddr;
	uint32_t rkey, len, lkey;

	if (it->u.wqe.len != 64)
		return 0;
	gdak_mlx5_ctrl_decode((const struct mlx5_wqe_ctrl_seg *)(const void *)w, &c);
	gdak_mlx5_raddr_decode((const struct mlx5_wqe_raddr_seg *)(const void *)(w + 16), &raddr,
			       &rkey);
	gdak_mlx5_data_decode((const struct mlx5_wqe_data_seg *)(const void *)(w + 32), &laddr, &len,
			      &lkey);
	return c.opcode == MLX5_OPCODE_RDMA_WRITE && c.wqe_index == it->u.wqe.wqe_index &&
	       c.qpn == a.qpn && c.ds == 3 &&
	       !!(c.fm_ce_se & MLX5_WQE_CTRL_CQ_UPDATE) == (k == 15) &&
	       raddr == dst_va + 64 * k && rkey == dst_rkey && laddr == src_va + 64 * k &&
	       len == 64 && lkey == src_lkey;
}

static void read_trace(const char *path, struct tally *t)
{
	struct gdak_trace_reader *r;
	struct gdak_trace_item it;
	size_t len = 0, off = 0, used;
	uint8_t *buf = gdak_test_slurp(path, &len);

	memset(t, 0, sizeof(*t));
	REQUIRE(buf && len > 0);
	REQUIRE_EQ(gdak_trace_reader_new(&r), 0);
	for (;;) {
		int rc = gdak_trace_reader_next(r, buf + off, len - off, off, &it, &used);

		if (rc == 0)
			break;
		if (rc < 0) {
			fprintf(stderr, "%s: %s\n", path, gdak_trace_reader_error(r));
			t->bad++;
			if (rc == -EINVAL)
				break;
			off += used;
			continue;
		}
		off += used;
		if (it.kind != GDAK_TITEM_RECORD)
			continue;
		switch (it.hdr.type) {
		case GDAK_TREC_WQE:
			t->wqe++;
			if (it.hdr.qpn == a.qpn && !wqe_ok(&it))
				t->wqe_bad++;
			break;
		case GDAK_TREC_CQE: t->cqe++; break;
		case GDAK_TREC_STATS: t->stats++; break;
		case GDAK_TREC_VIOLATION:
			t->viol++;
			if (it.hdr.qpn == viol_qpn && it.u.viol.wqe_index == viol_wqe &&
			    it.u.viol.name.len == strlen("atomic_unaligned") &&
			    !memcmp(it.u.viol.name.s, "atomic_unaligned", it.u.viol.name.len))
				t->viol_found = 1;
			break;
		case GDAK_TREC_QP:
			t->qp++;
			if (text_has(&it.u.qp.text, "created")) {
				t->created_a |= it.hdr.qpn == a.qpn;
				t->created_b |= it.hdr.qpn == b.qpn;
			}
			if (text_has(&it.u.qp.text, "connected")) {
				t->conn_a |= it.hdr.qpn == a.qpn && it.u.qp.peer_qpn == b.qpn;
				t->conn_b |= it.hdr.qpn == b.qpn && it.u.qp.peer_qpn == a.qpn;
			}
			if (text_has(&it.u.qp.text, "destroyed"))
				t->destroyed++;
			break;
		}
	}
	CHECK_EQ(off, len); /* the whole file, no truncated block */
	gdak_trace_reader_free(r);
	free(buf);
}

/* The device: unsignalled 64-byte writes, a signalled one every 16. */
static void *device(void *arg)
{
	for (unsigned r = 0; r < ROUNDS && !atomic_load(&dev_stop); r++) {
		struct gdak_mlx5_cqe_fields f;

		for (unsigned k = 0; k < 16; k++)
			nu_post_rdma(&a, MLX5_OPCODE_RDMA_WRITE, src + 64 * k, 64, gdak_mr_lkey(msrc),
				     (uintptr_t)(dst + 64 * k), gdak_mr_rkey(mdst), 0,
				     k == 15 ? NU_SIG : 0);
		nu_ring(&a);
		if (nu_poll(&a, 0, &f, 10000) || f.opcode != MLX5_CQE_REQ) {
			atomic_fetch_add(&dev_fail, 1);
			break;
		}
		atomic_fetch_add(&done_rounds, 1);
	}
	return NULL;
}

static void wait_rounds(unsigned n)
{
	while (atomic_load(&done_rounds) < n && !atomic_load(&dev_fail)) {
		struct timespec ts = {0, 200000};
		nanosleep(&ts, NULL);
	}
}

/* A responder-side violation at a known, non-zero WQE index. */
static void unaligned_atomic(void)
{
	struct nu_qp c, d;
	struct gdak_mlx5_cqe_fields f;
	struct gdak_qp_attr attr = {.sq_depth = 64};
	struct gdak_qp_error err;

	REQUIRE_EQ(nu_pair(ctx, &attr, &c, &d), 0);
	for (int i = 0; i < 5; i++)
		nu_post_nop(&c, 0);
	viol_wqe = nu_post_atomic(&c, MLX5_OPCODE_ATOMIC_FA, src, gdak_mr_lkey(msrc),
				  (uintptr_t)(dst + 4), gdak_mr_rkey(mdst), 1, 0, NU_SIG);
	viol_qpn = d.qpn;
	CHECK_EQ(viol_wqe, 5);
	nu_ring(&c);
	REQUIRE_EQ(nu_poll(&c, 0, &f, 5000), 0);
	CHECK_EQ(f.opcode, MLX5_CQE_REQ_ERR);
	CHECK_EQ(f.syndrome, MLX5_CQE_SYNDROME_REMOTE_INVAL_REQ_ERR);
	CHECK_EQ(f.wqe_counter, 5);
	REQUIRE_EQ(gdak_qp_query_error(c.qp, &err), 0);
	CHECK_EQ(err.wqe_index, 5);
	nu_destroy(&c);
	nu_destroy(&d);
}

int main(void)
{
	struct gdak_qp_attr attr = {.sq_depth = 256, .cq_depth = 256};
	struct tally t[NPATHS];
	unsigned total_wqe = 0;
	pthread_t dev;
	struct gdak_nic_stats st;
	const char *tmp = getenv("TMPDIR");

	gdak_set_log_level(GDAK_LOG_ERROR);
	for (int i = 0; i < NPATHS; i++) {
		int fd;
		snprintf(paths[i], sizeof(paths[i]), "%s/gdak-nic-trace-%d-XXXXXX",
			 tmp && *tmp ? tmp : "/tmp", i);
		fd = mkstemp(paths[i]);
		REQUIRE(fd >= 0);
		close(fd);
	}
	REQUIRE_EQ(gdak_nic_set_trace(paths[0]), 0);
	REQUIRE_EQ(gdak_open("emu", &ctx), 0);
	REQUIRE_EQ(gdak_mem_alloc(ctx, 8192, GDAK_MEM_HOST, (void **)&src), 0);
	REQUIRE_EQ(gdak_mem_alloc(ctx, 8192, GDAK_MEM_HOST, (void **)&dst), 0);
	REQUIRE_EQ(gdak_mr_reg(ctx, src, 8192, GDAK_ACCESS_ALL, &msrc), 0);
	REQUIRE_EQ(gdak_mr_reg(ctx, dst, 8192, GDAK_ACCESS_ALL, &mdst), 0);
	gdak_test_fill(src, 8192, 1);
	src_va = (uintptr_t)src;
	dst_va = (uintptr_t)dst;
	src_lkey = gdak_mr_lkey(msrc);
	dst_rkey = gdak_mr_rkey(mdst);
	REQUIRE_EQ(nu_pair(ctx, &attr, &a, &b), 0);

	/* switch traces under traffic: after a few rounds each */
	REQUIRE_EQ(pthread_create(&dev, NULL, device, NULL), 0);
	for (int i = 1; i < NFILES; i++) {
		wait_rounds((unsigned)i * (ROUNDS / (NFILES + 1)));
		REQUIRE_EQ(gdak_nic_set_trace(paths[i]), 0);
	}
	pthread_join(dev, NULL);
	CHECK_EQ(atomic_load(&dev_fail), 0);
	CHECK_EQ(atomic_load(&done_rounds), ROUNDS);
	CHECK_MEM(dst, src, 16 * 64);

	/* Off, then on again: the new trace may get the closed one's address
	 * (and its buffers' too), so only its generation tells the NIC thread
	 * that the buffer it cached is gone.  A burst of 16 WQEs in each. */
	for (int i = 0; i < NOFF; i++) {
		struct gdak_mlx5_cqe_fields f;

		REQUIRE_EQ(gdak_nic_set_trace(NULL), 0);
		REQUIRE_EQ(gdak_nic_set_trace(paths[NFILES + 1 + i]), 0);
		for (unsigned k = 0; k < 16; k++)
			nu_post_rdma(&a, MLX5_OPCODE_RDMA_WRITE, src + 64 * k, 64, gdak_mr_lkey(msrc),
				     (uintptr_t)(dst + 64 * k), gdak_mr_rkey(mdst), 0,
				     k == 15 ? NU_SIG : 0);
		nu_ring(&a);
		REQUIRE_EQ(nu_poll(&a, 0, &f, 5000), 0);
		CHECK_EQ(f.opcode, MLX5_CQE_REQ);
	}

	/* the last file: the violation, then the QPs go away */
	REQUIRE_EQ(gdak_nic_set_trace(paths[NFILES]), 0);
	unaligned_atomic();
	REQUIRE_EQ(gdak_nic_qp_stats(a.qp, &st), 0);
	CHECK_EQ(st.wqes, (uint64_t)ROUNDS * 16 + NOFF * 16);
	nu_destroy(&a);
	nu_destroy(&b);
	gdak_mr_dereg(msrc);
	gdak_mr_dereg(mdst);
	gdak_close(ctx);
	REQUIRE_EQ(gdak_nic_set_trace(NULL), 0);

	for (int i = 0; i < NPATHS; i++) {
		read_trace(paths[i], &t[i]);
		CHECK_EQ(t[i].bad, 0);
		CHECK_EQ(t[i].wqe_bad, 0);
		CHECK_EQ(t[i].stats, 1); /* closed properly, exactly once */
		if (i <= NFILES)
			total_wqe += t[i].wqe;
		else
			CHECK_EQ(t[i].wqe, 16); /* its burst, in its own buffer */
		unlink(paths[i]);
	}
	/* every WQE of the stream in exactly one file (the last adds 6 of its own) */
	CHECK_EQ(total_wqe, ROUNDS * 16 + 6);
	/* the first file saw the QPs created and connected, each with its peer */
	CHECK(t[0].created_a && t[0].created_b);
	CHECK(t[0].conn_a && t[0].conn_b);
	/* the last: the violation by the responder naming WQE 5 of the
	 * requester, and four QPs destroyed (the extra pair and a, b) */
	CHECK(t[NFILES].viol_found);
	CHECK_EQ(t[NFILES].destroyed, 4);
	return gdak_test_end();
}
