/* SPDX-License-Identifier: MIT */
/*
 * net_dc_streams.c - a DCI with several streams (gdak_qp_attr.dci_streams,
 * the ctrl segment's dci_stream_channel_id) in flight to several DCTs at
 * once, host threads playing the device.
 *
 *   net_dc_streams loop      DCI and DCTs in one process (two contexts)
 *   net_dc_streams udp       the DCTs in another process over emu:udp
 *   net_dc_streams udp P     the same with GDAK_FAULTS drop/dup/reorder at
 *                            P% on both sides, more rounds, no error cases
 *
 * Rounds: four streams (0 -> DCT 0, 1 -> DCT 1, 2 -> DCT 2, 3 -> DCT 0)
 * each get a three-packet WRITE, then a READ of the same bytes, then a
 * fetch-add on a word of their own, all posted before any completes: each
 * READ returns its own stream's WRITE (per-stream order), each fetch-add
 * applies once; the streams stay open (one connect each, no disconnect)
 * until a WQE on stream 1 names DCT 0 (a turn: one close, one open).
 *
 * Errors (ConnectX with log_num_errored 0, the only setting gdak's DCIs
 * have: the first stream in error moves the DCI to ERR): a bad rkey on
 * stream 1 among good WRITEs on the others - the WRITEs before it land, it
 * completes with REMOTE_ACCESS_ERR (wqe_opcode, wqe_index checked), the
 * DCI is in ERR with every stream closed, the WRITEs after it are flushed
 * and do not land (read back by a fresh DCI); a wrong access key on
 * stream 2: TRANSPORT_RETRY_EXC_ERR, counted by that DCT only.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gdak/bootstrap.h>
#include <gdak/dev/dev.h>
#include <gdak/gdak.h>
#include <gdak/nic.h>

#include "gdak_test.h"
#include "nic_util.h"
#include "gdak_test_bs.h"

#define NDCT 3
#define NST 4
#define T_NS 30000000000ull
#define LEN 3000  /* three packets at MTU 1024 */
#define REG 65536 /* per DCT: data slots, then words, then the error phase's slots */
#define SLOT(s, r) ((uint64_t)((s)*2 + ((r)&1)) * 4096)
#define WORD(s) (40960 + (uint64_t)(s)*8)
#define ESLOT(j) (49152 + (uint64_t)(j)*1024)
#define ELEN 512

static const uint64_t keys[NDCT] = { 0x5eed000000000001ull, 0x77, 0 };
static const int target_of[NST] = { 0, 1, 2, 0 };

static int udp;
static unsigned loss_pct;

struct remote {
	uint64_t addr;
	uint32_t rkey, pad;
};

static uint64_t va(const void *p)
{
	return (uint64_t)(uintptr_t)p;
}

/* ---- posting on a stream ------------------------------------------------------------ */

enum op {
	OP_WRITE,
	OP_READ,
	OP_FA
};

/* The device API's builders, then the ctrl segment's dci_stream_channel_id
 * (bytes 9..10, big-endian) set before the doorbell. */
static int post(struct gdak_dev_qp *d, const struct gdak_dev_av *av, unsigned stream, enum op op,
		const struct gdak_dev_sge *l, uint64_t raddr, uint32_t rkey, uint64_t add,
		uint32_t flags, uint64_t *t)
{
	uint32_t nbb = op == OP_FA ? gdak_dev_dc_bbs_atomic(av) : gdak_dev_dc_bbs_sge(av, 1, 1);
	uint32_t bbs, f, nds = (op == OP_FA ? 4u : 3u) + av->ds;
	uint8_t opc;
	uint8_t *w;
	uint64_t s;
	int rc = gdak_dev_sq_acquire(d, nbb, &s);

	if (rc)
		return rc;
	f = gdak_dev_sq_flags(d, s, s + nbb, flags);
	if (op == OP_WRITE) {
		bbs = gdak_dev_dc_wqe_write(d, s, av, f, raddr, rkey, l, 1);
		opc = MLX5_OPCODE_RDMA_WRITE;
	} else if (op == OP_READ) {
		bbs = gdak_dev_dc_wqe_read(d, s, av, f, raddr, rkey, l, 1);
		opc = MLX5_OPCODE_RDMA_READ;
	} else {
		bbs = gdak_dev_dc_wqe_fetch_add(d, s, av, f, raddr, rkey, add, l->addr, l->lkey);
		opc = MLX5_OPCODE_ATOMIC_FA;
	}
	w = gdak_dev_wqe_ptr(d, s);
	w[9] = (uint8_t)(stream >> 8);
	w[10] = (uint8_t)stream;
	return gdak_dev_sq_finish(d, s, nbb, bbs, f, t, opc, nds);
}

/* ---- targets: three DCTs in one context ------------------------------------------------ */

struct targets {
	struct gdak_ctx *ctx;
	uint8_t *mem;
	struct gdak_mr *mr;
	struct gdak_qp *dct[NDCT];
	struct gdak_qp_info info[NDCT];
	struct remote r[NDCT];
};

static void targets_new(struct targets *T, const char *dev)
{
	REQUIRE_EQ(gdak_open(dev, &T->ctx), 0);
	REQUIRE_EQ(gdak_mem_alloc(T->ctx, NDCT * REG, GDAK_MEM_HOST, (void **)&T->mem), 0);
	memset(T->mem, 0, NDCT * REG);
	REQUIRE_EQ(gdak_mr_reg(T->ctx, T->mem, NDCT * REG, GDAK_ACCESS_ALL, &T->mr), 0);
	for (int i = 0; i < NDCT; i++) {
		struct gdak_qp_attr a = { .type = GDAK_QPT_DCT, .dc_key = keys[i] };

		REQUIRE_EQ(gdak_qp_create(T->ctx, &a, &T->dct[i]), 0);
		REQUIRE_EQ(gdak_qp_connect(T->dct[i], NULL), 0);
		REQUIRE_EQ(gdak_qp_info(T->dct[i], &T->info[i]), 0);
		T->r[i] = (struct remote){ .addr = va(T->mem + i * REG),
					   .rkey = gdak_mr_rkey(T->mr) };
	}
}

/* After the initiator: every DCT still in RTR (a DCI's error is its own);
 * the wrong key counted by DCT 0 only (none in loss mode). */
static void targets_check(struct targets *T)
{
	for (int i = 0; i < NDCT; i++) {
		struct gdak_nic_dc_stats st;

		CHECK_EQ(gdak_qp_state(T->dct[i]), GDAK_QPS_RTR);
		CHECK_EQ(gdak_nic_dc_stats(T->dct[i], &st), 0);
		if (i == 0 && !loss_pct)
			CHECK(st.key_violations >= 1); /* every retry presents it again */
		else
			CHECK_EQ(st.key_violations, 0);
	}
}

static void targets_free(struct targets *T)
{
	for (int i = 0; i < NDCT; i++)
		CHECK_EQ(gdak_qp_destroy(T->dct[i]), 0);
	CHECK_EQ(gdak_mr_dereg(T->mr), 0);
	CHECK_EQ(gdak_mem_free(T->ctx, T->mem), 0);
	gdak_close(T->ctx);
}

/* ---- initiator --------------------------------------------------------------------------- */

static struct gdak_ctx *ictx;
static uint8_t *lmem; /* [0, 64K) sources, [64K, 128K) READ landing, [128K, +64) results */
static struct gdak_mr *lmr;
#define SRC(s, r) (lmem + ((uint64_t)(s)*2 + ((r)&1)) * 8192)
#define DST(s) (lmem + 65536 + (uint64_t)(s)*8192)
#define RES(s) ((uint64_t *)(void *)(lmem + 131072 + (uint64_t)(s)*8))

static void rounds(const struct gdak_dev_av *av, const struct remote *peer, int n)
{
	struct gdak_dev_qp *d;
	struct gdak_qp *q = nu_dci(ictx, NST, &d);
	struct gdak_nic_dc_stats st;
	uint32_t lk = gdak_mr_lkey(lmr);
	uint64_t t = 0;

	for (int r = 0; r < n; r++) {
		for (int s = 0; s < NST; s++) {
			const int i = target_of[s];
			struct gdak_dev_sge src = { va(SRC(s, r)), LEN, lk };

			gdak_test_fill(SRC(s, r), LEN, (uint64_t)(r * 16 + s + 1));
			CHECK_EQ(post(d, &av[i], (unsigned)s, OP_WRITE, &src,
				      peer[i].addr + SLOT(s, r), peer[i].rkey, 0, 0, &t),
				 0);
		}
		for (int s = 0; s < NST; s++) {
			const int i = target_of[s];
			struct gdak_dev_sge dst = { va(DST(s)), LEN, lk };

			memset(DST(s), 0, LEN);
			CHECK_EQ(post(d, &av[i], (unsigned)s, OP_READ, &dst,
				      peer[i].addr + SLOT(s, r), peer[i].rkey, 0, 0, &t),
				 0);
		}
		for (int s = 0; s < NST; s++) {
			const int i = target_of[s];
			struct gdak_dev_sge res = { va(RES(s)), 8, lk };

			*RES(s) = ~0ull;
			CHECK_EQ(post(d, &av[i], (unsigned)s, OP_FA, &res, peer[i].addr + WORD(s),
				      peer[i].rkey, (uint64_t)(s + 1),
				      s == NST - 1 ? GDAK_DEV_WQE_SIGNAL : 0, &t),
				 0);
		}
		CHECK_EQ(gdak_dev_wait_timeout(d, t, T_NS, NULL), 0);
		for (int s = 0; s < NST; s++) {
			/* the READ saw its own stream's WRITE */
			CHECK_MEM(DST(s), SRC(s, r), LEN);
			CHECK_EQ(*RES(s), gdak_htobe64((uint64_t)r * (uint64_t)(s + 1)));
		}
	}
	CHECK_EQ(gdak_nic_dc_stats(q, &st), 0);
	CHECK_EQ(st.connects, NST);
	CHECK_EQ(st.disconnects, 0);
	CHECK_EQ(st.open_streams, NST);
	/* stream 1 turns to DCT 0: it closes and opens, the others stay */
	{
		struct gdak_dev_sge src = { va(SRC(1, 0)), 64, lk };

		CHECK_EQ(post(d, &av[0], 1, OP_WRITE, &src, peer[0].addr + ESLOT(15), peer[0].rkey,
			      0, GDAK_DEV_WQE_SIGNAL, &t),
			 0);
		CHECK_EQ(gdak_dev_wait_timeout(d, t, T_NS, NULL), 0);
		CHECK_EQ(gdak_nic_dc_stats(q, &st), 0);
		CHECK_EQ(st.connects, NST + 1);
		CHECK_EQ(st.disconnects, 1);
		CHECK_EQ(st.open_streams, NST);
	}
	CHECK_EQ(gdak_qp_state(q), GDAK_QPS_RTS);
	CHECK_EQ(gdak_qp_destroy(q), 0);
}

/* One READ of len bytes at (i, off) on a fresh single-stream DCI, into
 * registered memory (out lies in lmem). */
static void read_back(const struct gdak_dev_av *av, const struct remote *peer, int i, uint64_t off,
		      uint8_t *out, uint32_t len)
{
	struct gdak_dev_qp *d;
	struct gdak_qp *q = nu_dci(ictx, 1, &d);
	struct gdak_dev_sge dst = { va(out), len, gdak_mr_lkey(lmr) };
	uint64_t t = 0;

	memset(out, 0xee, len);
	CHECK_EQ(gdak_dev_dc_get(d, &av[i], &dst, peer[i].addr + off, peer[i].rkey,
				 GDAK_DEV_WQE_SIGNAL, &t),
		 0);
	CHECK_EQ(gdak_dev_wait_timeout(d, t, T_NS, NULL), 0);
	CHECK_EQ(gdak_qp_destroy(q), 0);
}

/* Waiting for ticket t on DCI q (exported as d) fails with an error CQE of
 * syndrome synd for the WRITE at WQE index idx; the DCI is in ERR. */
static void expect_write_err(struct gdak_qp *q, struct gdak_dev_qp *d, uint64_t t, uint8_t synd,
			     uint64_t idx)
{
	struct gdak_dev_cqe c;
	struct gdak_qp_error e;

	memset(&c, 0, sizeof(c));
	CHECK_EQ(gdak_dev_wait_timeout(d, t, T_NS, &c), -EIO);
	CHECK_EQ(c.opcode, MLX5_CQE_REQ_ERR);
	CHECK_EQ(c.syndrome, synd);
	CHECK_EQ(c.wqe_opcode, MLX5_OPCODE_RDMA_WRITE);
	CHECK_EQ(c.wqe_index, idx);
	CHECK_EQ(c.qpn, gdak_qp_num(q));
	CHECK_EQ(gdak_qp_query_error(q, &e), 0);
	CHECK_EQ(e.state, GDAK_QPS_ERR);
}

static void stream_errors(const struct gdak_qp_info *info, const struct gdak_dev_av *av,
			  const struct remote *peer)
{
	/* (stream, DCT) of each WRITE; the third has a bad rkey */
	static const int ws[5] = { 0, 2, 1, 3, 0 }, wt[5] = { 0, 2, 1, 0, 0 };
	struct gdak_dev_qp *d;
	struct gdak_qp *q = nu_dci(ictx, NST, &d);
	struct gdak_nic_dc_stats st;
	struct gdak_qp_error e;
	uint32_t lk = gdak_mr_lkey(lmr);
	uint64_t t = 0, bad_idx = 0;
	uint8_t *got = DST(0), zero[ELEN];

	memset(zero, 0, sizeof(zero));
	for (int j = 0; j < 5; j++) {
		/* a source of its own: the NIC may read it after the next post */
		uint8_t *b = lmem + 196608 + (size_t)j * ELEN;
		struct gdak_dev_sge src = { va(b), ELEN, lk };
		uint32_t rkey = peer[wt[j]].rkey ^ (j == 2 ? 0x100u : 0u);

		gdak_test_fill(b, ELEN, (uint64_t)(900 + j));
		if (j == 2)
			bad_idx = t;
		CHECK_EQ(post(d, &av[wt[j]], (unsigned)ws[j], OP_WRITE, &src,
			      peer[wt[j]].addr + ESLOT(j), rkey, 0,
			      j == 4 ? GDAK_DEV_WQE_SIGNAL : 0, &t),
			 0);
	}
	expect_write_err(q, d, t, MLX5_CQE_SYNDROME_REMOTE_ACCESS_ERR, bad_idx);
	CHECK_EQ(gdak_qp_query_error(q, &e), 0);
	CHECK_EQ(e.syndrome, MLX5_CQE_SYNDROME_REMOTE_ACCESS_ERR);
	CHECK_EQ(e.wqe_index, (uint16_t)bad_idx);
	CHECK_EQ(gdak_nic_dc_stats(q, &st), 0);
	CHECK_EQ(st.open_streams, 0); /* ERR closes every stream */
	CHECK_EQ(st.disconnects, st.connects);
	CHECK_EQ(gdak_qp_destroy(q), 0);
	for (int j = 0; j < 5; j++) {
		read_back(av, peer, wt[j], ESLOT(j), got, ELEN);
		if (j < 2)
			CHECK_MEM(got, lmem + 196608 + (size_t)j * ELEN, ELEN);
		else
			CHECK_MEM(got, zero, ELEN); /* refused, or flushed: never executed */
	}

	/* a wrong key on stream 2 after a good WRITE on stream 0 */
	{
		struct gdak_qp_info bad = info[0];
		struct gdak_dev_av bav;
		struct gdak_dev_sge src = { va(SRC(0, 0)), 64, lk };
		uint64_t idx;

		bad.dc_key ^= 2;
		REQUIRE_EQ(gdak_dc_av(&bad, 0, &bav), 0);
		q = nu_dci(ictx, NST, &d);
		CHECK_EQ(post(d, &av[0], 0, OP_WRITE, &src, peer[0].addr + ESLOT(8), peer[0].rkey,
			      0, 0, &t),
			 0);
		idx = t;
		CHECK_EQ(post(d, &bav, 2, OP_WRITE, &src, peer[0].addr + ESLOT(9), peer[0].rkey, 0,
			      GDAK_DEV_WQE_SIGNAL, &t),
			 0);
		expect_write_err(q, d, t, MLX5_CQE_SYNDROME_TRANSPORT_RETRY_EXC_ERR, idx);
		CHECK_EQ(gdak_qp_destroy(q), 0);
		read_back(av, peer, 0, ESLOT(8), got, 64);
		CHECK_MEM(got, SRC(0, 0), 64);
	}
}

static void initiator_open(const char *dev)
{
	REQUIRE_EQ(gdak_open(dev, &ictx), 0);
	REQUIRE_EQ(gdak_mem_alloc(ictx, 262144, GDAK_MEM_HOST, (void **)&lmem), 0);
	memset(lmem, 0, 262144);
	REQUIRE_EQ(gdak_mr_reg(ictx, lmem, 262144, GDAK_ACCESS_ALL, &lmr), 0);
}

static void initiator(const struct gdak_qp_info *info, const struct remote *peer)
{
	struct gdak_dev_av av[NDCT];

	for (int i = 0; i < NDCT; i++) {
		CHECK_EQ(info[i].qp_type, GDAK_QPT_DCT);
		REQUIRE_EQ(gdak_dc_av(&info[i], 0, &av[i]), 0);
	}
	rounds(av, peer, loss_pct ? 24 : 4);
	if (!loss_pct)
		stream_errors(info, av, peer);
	CHECK_EQ(gdak_mr_dereg(lmr), 0);
	CHECK_EQ(gdak_mem_free(ictx, lmem), 0);
	gdak_close(ictx);
}

/* ---- two processes over emu:udp ---------------------------------------------------------- */

static void set_env(int server)
{
	if (loss_pct)
		gdak_test_bs_lossy(loss_pct, 41 + server);
}

static void server(struct gdak_bootstrap *bs)
{
	struct targets T;
	struct gdak_qp_info dummy[NDCT];
	struct remote rd[NDCT];

	set_env(1);
	targets_new(&T, "emu:udp:127.0.0.1");
	REQUIRE_EQ(gdak_bootstrap_exchange_qp_info(bs, T.info, dummy, NDCT), 0);
	REQUIRE_EQ(gdak_bootstrap_exchange(bs, T.r, rd, sizeof(rd)), 0);
	REQUIRE_EQ(gdak_bootstrap_barrier(bs), 0); /* the client is done */
	targets_check(&T);
	REQUIRE_EQ(gdak_bootstrap_barrier(bs), 0);
	targets_free(&T);
}

static void client(struct gdak_bootstrap *bs)
{
	struct gdak_qp_info mine[NDCT], theirs[NDCT];
	struct remote me[NDCT], peer[NDCT];
	struct gdak_dev_qp *d;
	struct gdak_qp *q;

	set_env(0);
	initiator_open("emu:udp:127.0.0.1");
	/* the exchange wants equal counts; nobody reaches a DCI */
	q = nu_dci(ictx, 1, &d);
	REQUIRE_EQ(gdak_qp_info(q, &mine[0]), 0);
	for (int i = 0; i < NDCT; i++)
		mine[i] = mine[0];
	memset(me, 0, sizeof(me));
	REQUIRE_EQ(gdak_bootstrap_exchange_qp_info(bs, mine, theirs, NDCT), 0);
	REQUIRE_EQ(gdak_bootstrap_exchange(bs, me, peer, sizeof(me)), 0);
	CHECK_EQ(gdak_qp_destroy(q), 0);
	initiator(theirs, peer);
	REQUIRE_EQ(gdak_bootstrap_barrier(bs), 0);
	REQUIRE_EQ(gdak_bootstrap_barrier(bs), 0);
}

int main(int argc, char **argv)
{
	if (argc < 2 || (strcmp(argv[1], "loop") && strcmp(argv[1], "udp"))) {
		fprintf(stderr, "usage: %s loop | udp [loss%%]\n", argv[0]);
		return 2;
	}
	udp = !strcmp(argv[1], "udp");
	loss_pct = udp && argc > 2 ? (unsigned)atoi(argv[2]) : 0;
	alarm(170); /* a hang becomes a failure, not a stuck suite */
	if (!udp) {
		struct targets T;

		targets_new(&T, "emu");
		initiator_open("emu");
		initiator(T.info, T.r);
		targets_check(&T);
		targets_free(&T);
		return gdak_test_end();
	}
	return gdak_test_bs_2proc(client, server, 170);
}
