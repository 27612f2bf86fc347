/* SPDX-License-Identifier: MIT */
/*
 * net_udp_dc.c - the Dynamically Connected transport between two processes
 * over emu:udp (gdak's DC wire encoding, docs/UDP.md "DC"): the client's one
 * DCI reaches the server's three DCTs, host threads playing the device
 * through gdak/dev/dc.h.
 *
 *   net_udp_dc ops       WRITE, READ, fetch-add, CAS (failing and
 *                        succeeding), SEND with a receive CQE, to the three
 *                        DCTs in turn (the stream turns at every call): data
 *                        byte for byte on both sides, CQE fields, the DCI's
 *                        connects counted, the DCTs undisturbed
 *   net_udp_dc errors    wrong access key (the DCT counts the violation), a
 *                        DCT number nobody has, the DCT in ERR: each
 *                        TRANSPORT_RETRY_EXC on the DCI as on the loop
 *                        transport; a bad rkey: REMOTE_ACCESS_ERR, the DCT
 *                        stays in RTR and serves the next DCI
 *   net_udp_dc loss P    GDAK_FAULTS drop/dup/reorder at P% on both sides:
 *                        rounds of WRITE, READ back and fetch-add over the
 *                        three DCTs, every fetch-add applied exactly once
 * With GDAK_TRACE=PATH each side traces to PATH.server / PATH.client.
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
#define T_NS 30000000000ull
#define LEN 3000  /* three packets at MTU 1024 */
#define REG 16384 /* server memory per DCT: [0, LEN) data, 8192 atomic word, 12288 receive */
#define WORD 8192
#define RECV 12288

static const char *mode;
static unsigned loss_pct;

struct remote {
	uint64_t addr;
	uint32_t rkey, pad;
};

struct srv {
	struct gdak_ctx *ctx;
	uint8_t *mem;
	struct gdak_mr *mr;
	struct gdak_qp *dct[NDCT];
	struct gdak_dev_qp *ddct[NDCT];
};

static const uint64_t keys[NDCT] = { 0x1111222233334444ull, 0xdc, 0 };

static uint64_t va(const void *p)
{
	return (uint64_t)(uintptr_t)p;
}

static void set_env(int server)
{
	const char *tr = getenv("GDAK_TRACE");

	if (tr) {
		/* one trace per process (net_dc_trace.sh reads both) */
		char t[512];

		snprintf(t, sizeof(t), "%s.%s", tr, server ? "server" : "client");
		setenv("GDAK_TRACE", t, 1);
	}
	if (!strcmp(mode, "errors")) {
		/* the retry errors come after a few short timeouts */
		setenv("GDAK_UDP_RTO_US", "20000", 1);
		setenv("GDAK_UDP_RETRY", "2", 1);
	}
	if (!strcmp(mode, "loss"))
		gdak_test_bs_lossy(loss_pct, 11 + server);
}

/* ---- server: three DCTs in one context (one PD) ------------------------------------ */

static void server(struct gdak_bootstrap *bs)
{
	struct srv s;
	struct gdak_qp_info mine[NDCT], theirs[NDCT];
	struct remote me[NDCT], peer[NDCT];
	struct gdak_nic_dc_stats st;
	struct gdak_dev_cqe c;

	set_env(1);
	REQUIRE_EQ(gdak_open("emu:udp:127.0.0.1", &s.ctx), 0);
	REQUIRE_EQ(gdak_mem_alloc(s.ctx, NDCT * REG, GDAK_MEM_HOST, (void **)&s.mem), 0);
	memset(s.mem, 0, NDCT * REG);
	REQUIRE_EQ(gdak_mr_reg(s.ctx, s.mem, NDCT * REG, GDAK_ACCESS_ALL, &s.mr), 0);
	for (int i = 0; i < NDCT; i++) {
		struct gdak_qp_attr a = { .type = GDAK_QPT_DCT,
					  .dc_key = keys[i],
					  .rq_depth = i == 2 ? 16 : 0 };

		REQUIRE_EQ(gdak_qp_create(s.ctx, &a, &s.dct[i]), 0);
		REQUIRE_EQ(gdak_qp_connect(s.dct[i], NULL), 0);
		CHECK_EQ(gdak_qp_state(s.dct[i]), GDAK_QPS_RTR);
		REQUIRE_EQ(gdak_qp_export(s.dct[i], &s.ddct[i]), 0);
		REQUIRE_EQ(gdak_qp_info(s.dct[i], &mine[i]), 0);
		CHECK_EQ(mine[i].transport, GDAK_QPI_UDP);
		CHECK_EQ(mine[i].qp_type, GDAK_QPT_DCT);
		CHECK_EQ(mine[i].dc_key, keys[i]);
		/* rlid carries the DCT's UDP port on RoCE (docs/UDP.md "DC") */
		CHECK_EQ(mine[i].lid, mine[i].udp_port);
		me[i] = (struct remote){ .addr = va(s.mem + i * REG), .rkey = gdak_mr_rkey(s.mr) };
	}
	{
		struct gdak_dev_sge rs = { va(s.mem + 2 * REG + RECV), 4096, gdak_mr_lkey(s.mr) };

		for (int k = 0; k < 4; k++)
			CHECK_EQ(gdak_dev_recv_post(s.ddct[2], &rs, 1), 0);
	}
	REQUIRE_EQ(gdak_bootstrap_exchange_qp_info(bs, mine, theirs, NDCT), 0);
	REQUIRE_EQ(gdak_bootstrap_exchange(bs, me, peer, sizeof(me)), 0);
	REQUIRE_EQ(gdak_bootstrap_barrier(bs), 0);

	if (!strcmp(mode, "ops")) {
		uint8_t want[LEN];

		REQUIRE_EQ(gdak_bootstrap_barrier(bs), 0); /* the client's SEND went */
		memset(&c, 0, sizeof(c));
		CHECK_EQ(gdak_dev_recv_wait_timeout(s.ddct[2], &c, T_NS), 0);
		CHECK_EQ(c.opcode, MLX5_CQE_RESP_SEND);
		CHECK_EQ(c.byte_cnt, LEN);
		CHECK_EQ(c.qpn, gdak_qp_num(s.dct[2]));
		CHECK_EQ(c.wqe_index, 0);
		gdak_test_fill(want, LEN, 777);
		CHECK_MEM(s.mem + 2 * REG + RECV, want, LEN);
		/* the last round's data, as the client wrote it */
		for (int i = 0; i < NDCT; i++) {
			gdak_test_fill(want, LEN, (uint64_t)(30 + i + 1));
			CHECK_MEM(s.mem + i * REG, want, LEN);
			CHECK_EQ(gdak_nic_dc_stats(s.dct[i], &st), 0);
			CHECK_EQ(st.key_violations, 0);
			CHECK_EQ(gdak_qp_state(s.dct[i]), GDAK_QPS_RTR);
		}
		REQUIRE_EQ(gdak_bootstrap_barrier(bs), 0);
	} else if (!strcmp(mode, "errors")) {
		uint64_t kv;

		REQUIRE_EQ(gdak_bootstrap_barrier(bs), 0); /* wrong key done */
		CHECK_EQ(gdak_nic_dc_stats(s.dct[0], &st), 0);
		CHECK(st.key_violations >= 1); /* every retry presents it again */
		kv = st.key_violations;
		REQUIRE_EQ(gdak_bootstrap_exchange(bs, &kv, &kv, sizeof(kv)), 0);
		CHECK_EQ(gdak_qp_state(s.dct[0]), GDAK_QPS_RTR);
		REQUIRE_EQ(gdak_bootstrap_barrier(bs), 0); /* bad rkey done */
		CHECK_EQ(gdak_qp_state(s.dct[0]), GDAK_QPS_RTR);
		CHECK_EQ(gdak_qp_modify(s.dct[0], GDAK_QPS_ERR, NULL), 0);
		REQUIRE_EQ(gdak_bootstrap_barrier(bs), 0); /* DCT 0 in ERR */
		REQUIRE_EQ(gdak_bootstrap_barrier(bs), 0); /* the client saw it */
		CHECK_EQ(gdak_qp_modify(s.dct[0], GDAK_QPS_RESET, NULL), 0);
		CHECK_EQ(gdak_qp_connect(s.dct[0], NULL), 0);
		REQUIRE_EQ(gdak_bootstrap_barrier(bs), 0); /* back in RTR */
		REQUIRE_EQ(gdak_bootstrap_barrier(bs), 0);
	} else {
		uint64_t n;

		REQUIRE_EQ(gdak_bootstrap_barrier(bs), 0);
		REQUIRE_EQ(gdak_bootstrap_exchange(bs, &n, &n, sizeof(n)), 0);
		for (int i = 0; i < NDCT; i++) {
			uint64_t w;

			memcpy(&w, s.mem + i * REG + WORD, 8);
			CHECK_EQ(w, n * (uint64_t)(i + 1)); /* each applied exactly once */
		}
		REQUIRE_EQ(gdak_bootstrap_barrier(bs), 0);
	}
	for (int i = 0; i < NDCT; i++)
		CHECK_EQ(gdak_qp_destroy(s.dct[i]), 0);
	CHECK_EQ(gdak_mr_dereg(s.mr), 0);
	CHECK_EQ(gdak_mem_free(s.ctx, s.mem), 0);
	gdak_close(s.ctx);
}

/* ---- client: one DCI ----------------------------------------------------------------- */

static struct gdak_ctx *cctx;
static uint8_t *lmem;
static struct gdak_mr *lmr;

/* One WRITE on a fresh DCI; expects an error CQE with synd, the DCI in ERR. */
static void expect_fail(const struct gdak_dev_av *av, const struct remote *r, uint32_t rkey,
			uint8_t synd)
{
	struct gdak_dev_qp *d;
	struct gdak_qp *q = nu_dci(cctx, 0, &d);
	struct gdak_dev_sge src = { va(lmem), 64, gdak_mr_lkey(lmr) };
	struct gdak_dev_cqe c;
	struct gdak_qp_error e;
	uint64_t t = 0;

	memset(&c, 0, sizeof(c));
	CHECK_EQ(gdak_dev_dc_put(d, av, &src, r->addr, rkey, GDAK_DEV_WQE_SIGNAL, &t), 0);
	CHECK_EQ(gdak_dev_wait_timeout(d, t, T_NS, &c), -EIO);
	CHECK_EQ(c.opcode, MLX5_CQE_REQ_ERR);
	CHECK_EQ(c.syndrome, synd);
	CHECK_EQ(c.wqe_opcode, MLX5_OPCODE_RDMA_WRITE);
	CHECK_EQ(c.wqe_index, 0);
	CHECK_EQ(c.qpn, gdak_qp_num(q));
	CHECK_EQ(gdak_qp_query_error(q, &e), 0);
	CHECK_EQ(e.state, GDAK_QPS_ERR);
	CHECK_EQ(e.syndrome, synd);
	CHECK_EQ(gdak_qp_destroy(q), 0);
}

static void client_ops(struct gdak_bootstrap *bs, const struct gdak_dev_av *av,
		       const struct remote *peer)
{
	struct gdak_dev_qp *d;
	struct gdak_qp *q = nu_dci(cctx, 0, &d);
	struct gdak_nic_dc_stats st;
	uint64_t t = 0, old = 0;

	for (int round = 0; round < 4; round++) {
		for (int i = 0; i < NDCT; i++) {
			struct gdak_dev_sge src = { va(lmem), LEN, gdak_mr_lkey(lmr) };
			struct gdak_dev_sge dst = { va(lmem + 8192), LEN, gdak_mr_lkey(lmr) };
			uint64_t *res = (uint64_t *)(void *)(lmem + 16384);
			uint64_t w = peer[i].addr + WORD, base = 1000u * (unsigned)i;
			struct gdak_dev_cqe c;

			gdak_test_fill(lmem, LEN, (uint64_t)(round * 10 + i + 1));
			CHECK_EQ(gdak_dev_dc_put(d, &av[i], &src, peer[i].addr, peer[i].rkey,
						 GDAK_DEV_WQE_SIGNAL, &t),
				 0);
			memset(&c, 0, sizeof(c));
			CHECK_EQ(gdak_dev_wait_timeout(d, t, T_NS, &c), 0);
			CHECK_EQ(c.opcode, MLX5_CQE_REQ);
			CHECK_EQ(c.syndrome, 0);
			/* READ back what the WRITE put there */
			memset(lmem + 8192, 0, LEN);
			CHECK_EQ(gdak_dev_dc_get(d, &av[i], &dst, peer[i].addr, peer[i].rkey,
						 GDAK_DEV_WQE_SIGNAL, &t),
				 0);
			CHECK_EQ(gdak_dev_wait_timeout(d, t, T_NS, &c), 0);
			CHECK_EQ(c.opcode, MLX5_CQE_REQ);
			CHECK_MEM(lmem + 8192, lmem, LEN);
			/* fetch-add from 0 (round 0) or the CAS's 77, then CAS that
			 * fails and one that succeeds */
			CHECK_EQ(gdak_dev_dc_fetch_add(d, &av[i], w, peer[i].rkey, base + 5, res,
						       gdak_mr_lkey(lmr), &old),
				 0);
			CHECK_EQ(old, round ? 77u : 0u);
			CHECK_EQ(*res, gdak_htobe64(old)); /* big-endian, as ConnectX */
			CHECK_EQ(gdak_dev_dc_compare_swap(d, &av[i], w, peer[i].rkey, 1, 99, res,
							  gdak_mr_lkey(lmr), &old),
				 0);
			CHECK_EQ(old, (round ? 77u : 0u) + base + 5);
			CHECK_EQ(gdak_dev_dc_compare_swap(d, &av[i], w, peer[i].rkey, old, 77, res,
							  gdak_mr_lkey(lmr), &old),
				 0);
			CHECK_EQ(old, (round ? 77u : 0u) + base + 5);
		}
	}
	CHECK_EQ(gdak_nic_dc_stats(q, &st), 0);
	CHECK_EQ(st.connects, 4 * NDCT);
	CHECK_EQ(st.disconnects, 4 * NDCT - 1);
	/* SEND to the DCT with a receive queue: three packets */
	{
		struct gdak_dev_sge src = { va(lmem), LEN, gdak_mr_lkey(lmr) };
		struct gdak_dev_cqe c;

		gdak_test_fill(lmem, LEN, 777);
		CHECK_EQ(gdak_dev_dc_send(d, &av[2], &src, GDAK_DEV_WQE_SIGNAL, &t), 0);
		memset(&c, 0, sizeof(c));
		CHECK_EQ(gdak_dev_wait_timeout(d, t, T_NS, &c), 0);
		CHECK_EQ(c.opcode, MLX5_CQE_REQ);
		CHECK_EQ(c.syndrome, 0);
	}
	/* the last round's data stays for the server to check */
	gdak_test_fill(lmem, LEN, 31);
	REQUIRE_EQ(gdak_bootstrap_barrier(bs), 0);
	REQUIRE_EQ(gdak_bootstrap_barrier(bs), 0);
	CHECK_EQ(gdak_qp_destroy(q), 0);
}

static void client_errors(struct gdak_bootstrap *bs, const struct gdak_qp_info *info,
			  const struct gdak_dev_av *av, const struct remote *peer)
{
	struct gdak_qp_info bad = info[0];
	struct gdak_dev_av bav;
	uint64_t kv = 0;

	/* wrong access key: the DCT drops the request and counts it */
	bad.dc_key ^= 1;
	REQUIRE_EQ(gdak_dc_av(&bad, 0, &bav), 0);
	expect_fail(&bav, &peer[0], peer[0].rkey, MLX5_CQE_SYNDROME_TRANSPORT_RETRY_EXC_ERR);
	REQUIRE_EQ(gdak_bootstrap_barrier(bs), 0);
	REQUIRE_EQ(gdak_bootstrap_exchange(bs, &kv, &kv, sizeof(kv)), 0);
	CHECK(kv >= 1);
	/* a DCT number nobody has, at DCT 0's address */
	bad = info[0];
	bad.qpn ^= 0x800000;
	REQUIRE_EQ(gdak_dc_av(&bad, 0, &bav), 0);
	expect_fail(&bav, &peer[0], peer[0].rkey, MLX5_CQE_SYNDROME_TRANSPORT_RETRY_EXC_ERR);
	/* a compact AV has no GRH: nothing to route by over RoCE */
	REQUIRE_EQ(gdak_dc_av(&info[0], 1, &bav), 0);
	expect_fail(&bav, &peer[0], peer[0].rkey, MLX5_CQE_SYNDROME_LOCAL_QP_OP_ERR);
	/* a bad rkey: REMOTE_ACCESS_ERR as on RC, the DCT stays up */
	expect_fail(&av[0], &peer[0], peer[0].rkey ^ 0x100, MLX5_CQE_SYNDROME_REMOTE_ACCESS_ERR);
	REQUIRE_EQ(gdak_bootstrap_barrier(bs), 0);
	/* the DCT in ERR answers nothing */
	REQUIRE_EQ(gdak_bootstrap_barrier(bs), 0);
	expect_fail(&av[0], &peer[0], peer[0].rkey, MLX5_CQE_SYNDROME_TRANSPORT_RETRY_EXC_ERR);
	REQUIRE_EQ(gdak_bootstrap_barrier(bs), 0);
	/* ... and serves again after RESET -> RTR */
	REQUIRE_EQ(gdak_bootstrap_barrier(bs), 0);
	{
		struct gdak_dev_qp *d;
		struct gdak_qp *q = nu_dci(cctx, 0, &d);
		struct gdak_dev_sge src = { va(lmem), 64, gdak_mr_lkey(lmr) };
		struct gdak_dev_sge dst = { va(lmem + 8192), 64, gdak_mr_lkey(lmr) };
		uint64_t t = 0;

		gdak_test_fill(lmem, 64, 4242);
		memset(lmem + 8192, 0, 64);
		CHECK_EQ(gdak_dev_dc_put(d, &av[0], &src, peer[0].addr, peer[0].rkey, 0, &t), 0);
		CHECK_EQ(gdak_dev_dc_get(d, &av[0], &dst, peer[0].addr, peer[0].rkey,
					 GDAK_DEV_WQE_SIGNAL, &t),
			 0);
		CHECK_EQ(gdak_dev_wait_timeout(d, t, T_NS, NULL), 0);
		CHECK_MEM(lmem + 8192, lmem, 64);
		CHECK_EQ(gdak_qp_destroy(q), 0);
	}
	REQUIRE_EQ(gdak_bootstrap_barrier(bs), 0);
}

static void client_loss(struct gdak_bootstrap *bs, const struct gdak_dev_av *av,
			const struct remote *peer)
{
	struct gdak_dev_qp *d;
	struct gdak_qp *q = nu_dci(cctx, 0, &d);
	uint64_t n = 40, t = 0;

	for (uint64_t k = 0; k < n; k++) {
		for (int i = 0; i < NDCT; i++) {
			struct gdak_dev_sge src = { va(lmem), LEN, gdak_mr_lkey(lmr) };
			struct gdak_dev_sge dst = { va(lmem + 8192), LEN, gdak_mr_lkey(lmr) };
			uint64_t *res = (uint64_t *)(void *)(lmem + 16384), old = 0;

			gdak_test_fill(lmem, LEN, k * 7 + (uint64_t)i);
			memset(lmem + 8192, 0, LEN);
			CHECK_EQ(
				gdak_dev_dc_put(d, &av[i], &src, peer[i].addr, peer[i].rkey, 0, &t),
				0);
			CHECK_EQ(gdak_dev_dc_get(d, &av[i], &dst, peer[i].addr, peer[i].rkey,
						 GDAK_DEV_WQE_SIGNAL, &t),
				 0);
			CHECK_EQ(gdak_dev_wait_timeout(d, t, T_NS, NULL), 0);
			CHECK_MEM(lmem + 8192, lmem, LEN);
			CHECK_EQ(gdak_dev_dc_fetch_add(d, &av[i], peer[i].addr + WORD, peer[i].rkey,
						       (uint64_t)(i + 1), res, gdak_mr_lkey(lmr),
						       &old),
				 0);
			CHECK_EQ(old, k * (uint64_t)(i + 1));
		}
	}
	REQUIRE_EQ(gdak_bootstrap_barrier(bs), 0);
	REQUIRE_EQ(gdak_bootstrap_exchange(bs, &n, &n, sizeof(n)), 0);
	REQUIRE_EQ(gdak_bootstrap_barrier(bs), 0);
	CHECK_EQ(gdak_qp_destroy(q), 0);
}

static void client(struct gdak_bootstrap *bs)
{
	struct gdak_qp_info mine[NDCT], theirs[NDCT];
	struct remote me[NDCT], peer[NDCT];
	struct gdak_dev_av av[NDCT];
	struct gdak_dev_qp *d;
	struct gdak_qp *q;

	set_env(0);
	REQUIRE_EQ(gdak_open("emu:udp:127.0.0.1", &cctx), 0);
	REQUIRE_EQ(gdak_mem_alloc(cctx, 32768, GDAK_MEM_HOST, (void **)&lmem), 0);
	REQUIRE_EQ(gdak_mr_reg(cctx, lmem, 32768, GDAK_ACCESS_ALL, &lmr), 0);
	/* what the server learns of us: nothing it needs (a DCI is reached by
	 * nobody); the exchange wants equal counts */
	q = nu_dci(cctx, 0, &d);
	REQUIRE_EQ(gdak_qp_info(q, &mine[0]), 0);
	for (int i = 0; i < NDCT; i++) {
		mine[i] = mine[0];
		me[i] = (struct remote){ 0 };
	}
	REQUIRE_EQ(gdak_bootstrap_exchange_qp_info(bs, mine, theirs, NDCT), 0);
	REQUIRE_EQ(gdak_bootstrap_exchange(bs, me, peer, sizeof(me)), 0);
	CHECK_EQ(gdak_qp_destroy(q), 0);
	for (int i = 0; i < NDCT; i++) {
		CHECK_EQ(theirs[i].qp_type, GDAK_QPT_DCT);
		CHECK_EQ(theirs[i].dc_key, keys[i]);
		REQUIRE_EQ(gdak_dc_av(&theirs[i], 0, &av[i]), 0);
	}
	REQUIRE_EQ(gdak_bootstrap_barrier(bs), 0);
	if (!strcmp(mode, "ops"))
		client_ops(bs, av, peer);
	else if (!strcmp(mode, "errors"))
		client_errors(bs, theirs, av, peer);
	else
		client_loss(bs, av, peer);
	CHECK_EQ(gdak_mr_dereg(lmr), 0);
	CHECK_EQ(gdak_mem_free(cctx, lmem), 0);
	gdak_close(cctx);
}

int main(int argc, char **argv)
{
	mode = argc > 1 ? argv[1] : "ops";
	loss_pct = argc > 2 ? (unsigned)atoi(argv[2]) : 0;
	if (strcmp(mode, "ops") && strcmp(mode, "errors") && strcmp(mode, "loss")) {
		fprintf(stderr, "usage: %s ops|errors|loss P\n", argv[0]);
		return 2;
	}
	/* the child exits through exit(): its trace writer closes its file */
	return gdak_test_bs_2proc(client, server, 170);
}
