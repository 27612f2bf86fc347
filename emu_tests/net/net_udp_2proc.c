/* SPDX-License-Identifier: MIT */
/*
 * net_udp_2proc.c - two processes on loopback, each with its own NIC model
 * ("emu:udp:127.0.0.1"), joined by the TCP bootstrap; the client drives
 * every operation through mlx5 WQEs (host threads as the device) and both
 * sides verify the bytes, CQEs and receive completions.
 *
 *   net_udp_2proc ops            every operation once, multi-packet sizes
 *   net_udp_2proc xatomic        every masked and 4-byte (extended) atomic
 *                                form (gdak's ExtAtomicETH, docs/UDP.md):
 *                                fetched values, target words, CQEs; an
 *                                unaligned one fails REMOTE_INVAL_REQ
 *   net_udp_2proc loss P         GDAK_FAULTS drop/dup/reorder at P% on both
 *                                sides: many WRITE/READ/FETCH_ADD, each
 *                                completing exactly once, data intact
 *   net_udp_2proc retry          the client reaches nobody: error CQE with
 *                                TRANSPORT_RETRY_EXC, QP in ERR
 *   net_udp_2proc mtu            client MTU 4096, server 512: path MTU 512
 *   net_udp_2proc env            bad GDAK_UDP_* settings refuse gdak_open
 *   net_udp_2proc netem          as loss, with no injected faults: the
 *                                network itself (tc netem) impairs
 *
 * By default the test forks both sides on 127.0.0.1.  With
 *   ... --role server|client DEV BS_HOST BS_PORT
 * it plays one side only, its NIC model opened as DEV ("emu:udp:ADDR[:PORT]"),
 * the bootstrap listening on (server) or connecting to (client)
 * BS_HOST:BS_PORT: gdak.net.netns runs one side per network namespace.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gdak/bootstrap.h>
#include <gdak/gdak.h>

#include "fid_util.h"
#include "gdak_test.h"
#include "gdak_test_bs.h"
#include "nic_util.h"
#include "tr_udp.h"

#define BUF (4u << 20)
#define RB_OFF (3u << 20) /* server: receive buffers */
#define RB_SZ (16u << 10)
#define NRB 16
#define CNT_OFF (BUF - 64) /* server: atomic counter */
#define CNT32_OFF (BUF - 48) /* server: 4-byte counter (loss) */
#define X_OFF (BUF - 4096)   /* server: the extended atomics' targets (64 bytes) */
#define XR_OFF (BUF - 8192)  /* client: their fetched values */
#define POLL_MS 30000

struct remote { uint64_t addr; uint32_t rkey, pad; };

static const char *mode;
static unsigned loss_pct;
static const char *dev = "emu:udp:127.0.0.1";

struct ep {
	struct gdak_ctx *ctx;
	uint8_t *buf;
	struct gdak_mr *mr;
	struct nu_qp q;
	struct remote peer;
	struct gdak_bootstrap *bs;
};

static void ep_open(struct ep *e, int server, struct gdak_bootstrap *bs)
{
	struct gdak_qp_attr a = {.sq_depth = 256, .rq_depth = 64, .mtu = 1024};
	struct gdak_qp_info mine, theirs;
	struct gdak_qp *qp;
	struct remote me;

	e->bs = bs;
	if (!strcmp(mode, "mtu"))
		a.mtu = server ? 512 : 4096;
	REQUIRE_EQ(gdak_open(dev, &e->ctx), 0);
	REQUIRE_EQ(gdak_mem_alloc(e->ctx, BUF, GDAK_MEM_HOST, (void **)&e->buf), 0);
	gdak_test_fill(e->buf, BUF, server ? 2 : 1);
	REQUIRE_EQ(gdak_mr_reg(e->ctx, e->buf, BUF, GDAK_ACCESS_ALL, &e->mr), 0);
	REQUIRE_EQ(gdak_qp_create(e->ctx, &a, &qp), 0);
	nu_qp_from(&e->q, qp);
	if (server)
		for (unsigned i = 0; i < NRB; i++)
			nu_post_recv(&e->q, e->buf + RB_OFF + i * RB_SZ, RB_SZ, gdak_mr_lkey(e->mr));
	REQUIRE_EQ(gdak_qp_info(qp, &mine), 0);
	CHECK_EQ(mine.transport, GDAK_QPI_UDP);
	CHECK(mine.udp_port != 0);
	REQUIRE_EQ(gdak_bootstrap_exchange_qp_info(bs, &mine, &theirs, 1), 0);
	me = (struct remote){.addr = (uintptr_t)e->buf, .rkey = gdak_mr_rkey(e->mr)};
	REQUIRE_EQ(gdak_bootstrap_exchange(bs, &me, &e->peer, sizeof(me)), 0);
	REQUIRE_EQ(gdak_qp_connect(qp, &theirs), 0);
	REQUIRE_EQ(gdak_bootstrap_barrier(bs), 0);
}

static void ep_close(struct ep *e)
{
	struct roce_stats st;

	if (!nm_tr_udp_qp_stats(e->q.qp, &st))
		printf("pid %d: tx %" PRIu64 " rx %" PRIu64 " retx %" PRIu64 " timeouts %" PRIu64
		       " seq-NAKs %" PRIu64 "/%" PRIu64 " dup-req %" PRIu64 " icrc %" PRIu64
		       " drops %" PRIu64 " dups %" PRIu64 " reorders %" PRIu64 "\n", getpid(),
		       st.tx_pkts, st.rx_pkts, st.retransmits, st.timeouts, st.seq_naks_sent,
		       st.seq_naks_rcvd, st.dup_reqs, st.icrc_errors, st.f_drop, st.f_dup,
		       st.f_reorder);
	nu_destroy(&e->q);
	gdak_mr_dereg(e->mr);
	gdak_mem_free(e->ctx, e->buf);
	gdak_close(e->ctx);
}

/* Post one signalled WQE and wait for its CQE; returns the CQE. */
static struct gdak_mlx5_cqe_fields one(struct ep *e, uint16_t idx)
{
	struct gdak_mlx5_cqe_fields f = {0};

	nu_ring(&e->q);
	REQUIRE_EQ(nu_poll(&e->q, 0, &f, POLL_MS), 0);
	CHECK_EQ(f.wqe_counter, idx);
	return f;
}

static void expect_ok(struct ep *e, uint16_t idx)
{
	struct gdak_mlx5_cqe_fields f = one(e, idx);
	CHECK_EQ(f.opcode, MLX5_CQE_REQ);
	CHECK_EQ(f.syndrome, 0);
}

/* ---- "ops": every operation ------------------------------------------------------ */

static uint8_t *pattern(unsigned seed)
{
	uint8_t *p = malloc(BUF);
	REQUIRE(p);
	gdak_test_fill(p, BUF, seed);
	return p;
}

static int client_ops(struct ep *e)
{
	uint32_t lk = gdak_mr_lkey(e->mr), rk = e->peer.rkey;
	uint64_t ra = e->peer.addr;
	uint8_t *srv = pattern(2);
	uint64_t v;

	/* WRITE 64 KiB + 1 (multi-packet, odd length), WRITE_IMM, SENDs */
	expect_ok(e, nu_post_rdma(&e->q, MLX5_OPCODE_RDMA_WRITE, e->buf, 65537, lk, ra, rk, 0, NU_SIG));
	expect_ok(e, nu_post_rdma(&e->q, MLX5_OPCODE_RDMA_WRITE_IMM, e->buf + 70000, 3000, lk,
				  ra + 70000, rk, htobe32(0x1234abcd), NU_SIG));
	expect_ok(e, nu_post_send(&e->q, MLX5_OPCODE_SEND, e->buf + 100000, 5000, lk, 0, NU_SIG));
	expect_ok(e, nu_post_send(&e->q, MLX5_OPCODE_SEND_IMM, e->buf + 110000, 17, lk,
				  htobe32(0xfeed), NU_SIG));
	/* multi-packet SEND_IMM: the immediate rides on SEND_LAST_IMM only */
	expect_ok(e, nu_post_send(&e->q, MLX5_OPCODE_SEND_IMM, e->buf + 130000, 2500, lk,
				  htobe32(0xbeef), NU_SIG));
	expect_ok(e, nu_post_send(&e->q, MLX5_OPCODE_SEND, e->buf + 120000, 40, lk, 0,
				  NU_SIG | NU_INLINE));
	expect_ok(e, nu_post_send(&e->q, MLX5_OPCODE_SEND, e->buf, 0, lk, 0, NU_SIG));
	/* READ 70000 bytes of the server's pattern; a zero-length READ */
	memset(e->buf + 300000, 0, 70000);
	expect_ok(e, nu_post_rdma(&e->q, MLX5_OPCODE_RDMA_READ, e->buf + 300000, 70000, lk,
				  ra + 200000, rk, 0, NU_SIG));
	CHECK_MEM(e->buf + 300000, srv + 200000, 70000);
	expect_ok(e, nu_post_rdma(&e->q, MLX5_OPCODE_RDMA_READ, e->buf + 400000, 0, lk, ra, rk, 0, NU_SIG));
	/* FETCH_ADD then COMPARE_SWAP on the counter: results big-endian, as ConnectX */
	memcpy(&v, srv + CNT_OFF, 8);
	expect_ok(e, nu_post_atomic(&e->q, MLX5_OPCODE_ATOMIC_FA, e->buf + 500000, lk, ra + CNT_OFF,
				    rk, 7, 0, NU_SIG));
	CHECK_EQ(be64toh(*(uint64_t *)(void *)(e->buf + 500000)), v);
	expect_ok(e, nu_post_atomic(&e->q, MLX5_OPCODE_ATOMIC_CS, e->buf + 500008, lk, ra + CNT_OFF,
				    rk, 42, v + 7, NU_SIG));
	CHECK_EQ(be64toh(*(uint64_t *)(void *)(e->buf + 500008)), v + 7);
	/* a failed compare leaves 42 in place and returns it */
	expect_ok(e, nu_post_atomic(&e->q, MLX5_OPCODE_ATOMIC_CS, e->buf + 500016, lk, ra + CNT_OFF,
				    rk, 99, 1, NU_SIG));
	CHECK_EQ(be64toh(*(uint64_t *)(void *)(e->buf + 500016)), 42);
	/* bad rkey: REMOTE_ACCESS error CQE, QP to ERR */
	{
		struct gdak_mlx5_cqe_fields f;
		f = one(e, nu_post_rdma(&e->q, MLX5_OPCODE_RDMA_WRITE, e->buf, 10, lk, ra, rk ^ 0x100,
					0, NU_SIG));
		CHECK_EQ(f.opcode, MLX5_CQE_REQ_ERR);
		CHECK_EQ(f.syndrome, MLX5_CQE_SYNDROME_REMOTE_ACCESS_ERR);
		CHECK_EQ(nu_wait_state(&e->q, GDAK_QPS_ERR, POLL_MS), 0);
	}
	free(srv);
	REQUIRE_EQ(gdak_bootstrap_barrier(e->bs), 0);
	return 0;
}

static int server_ops(struct ep *e)
{
	uint8_t *cli = pattern(1), *srv = pattern(2);
	struct gdak_mlx5_cqe_fields f;
	uint64_t v;

	/* receive completions in order: WRITE_IMM, SEND, SEND_IMM x2, inline SEND, empty SEND */
	REQUIRE_EQ(nu_poll(&e->q, 1, &f, POLL_MS), 0);
	CHECK_EQ(f.opcode, MLX5_CQE_RESP_WR_IMM);
	CHECK_EQ(f.byte_cnt, 3000);
	CHECK_EQ(be32toh(f.imm), 0x1234abcd);
	REQUIRE_EQ(nu_poll(&e->q, 1, &f, POLL_MS), 0);
	CHECK_EQ(f.opcode, MLX5_CQE_RESP_SEND);
	CHECK_EQ(f.byte_cnt, 5000);
	CHECK_MEM(e->buf + RB_OFF + RB_SZ, cli + 100000, 5000);
	REQUIRE_EQ(nu_poll(&e->q, 1, &f, POLL_MS), 0);
	CHECK_EQ(f.opcode, MLX5_CQE_RESP_SEND_IMM);
	CHECK_EQ(f.byte_cnt, 17);
	CHECK_EQ(be32toh(f.imm), 0xfeed);
	CHECK_MEM(e->buf + RB_OFF + 2 * RB_SZ, cli + 110000, 17);
	REQUIRE_EQ(nu_poll(&e->q, 1, &f, POLL_MS), 0);
	CHECK_EQ(f.opcode, MLX5_CQE_RESP_SEND_IMM);
	CHECK_EQ(f.byte_cnt, 2500);
	CHECK_EQ(be32toh(f.imm), 0xbeef);
	CHECK_MEM(e->buf + RB_OFF + 3 * RB_SZ, cli + 130000, 2500);
	REQUIRE_EQ(nu_poll(&e->q, 1, &f, POLL_MS), 0);
	CHECK_EQ(f.opcode, MLX5_CQE_RESP_SEND);
	CHECK_EQ(f.byte_cnt, 40);
	CHECK_MEM(e->buf + RB_OFF + 4 * RB_SZ, cli + 120000, 40);
	REQUIRE_EQ(nu_poll(&e->q, 1, &f, POLL_MS), 0);
	CHECK_EQ(f.opcode, MLX5_CQE_RESP_SEND);
	CHECK_EQ(f.byte_cnt, 0);
	REQUIRE_EQ(gdak_bootstrap_barrier(e->bs), 0);
	CHECK_MEM(e->buf, cli, 65537);
	CHECK_MEM(e->buf + 65537, srv + 65537, 70000 - 65537); /* nothing beyond */
	CHECK_MEM(e->buf + 70000, cli + 70000, 3000);
	memcpy(&v, e->buf + CNT_OFF, 8);
	CHECK_EQ(v, 42);
	/* the bad-rkey WRITE moved our QP to ERR as well (IBA class C) */
	CHECK_EQ(nu_wait_state(&e->q, GDAK_QPS_ERR, POLL_MS), 0);
	free(cli);
	free(srv);
	return 0;
}

/* ---- "xatomic": the extended atomics ----------------------------------------------- */

/* 4-byte ATOMIC_MASKED_FA / _CS (ctrl opmod 0x08, DS 4), as NVSHMEM posts
 * them: FA: add, boundary; CS: swap, compare, swap mask, compare mask. */
static uint64_t xatomic32(struct ep *e, uint8_t opcode, uint64_t raddr, uint32_t rkey, uint32_t v0,
			  uint32_t v1, uint32_t m0, uint32_t m1, void *local, uint32_t local_len)
{
	uint8_t w[64];

	fid_ctrl(w, GDAK_MLX5_OPMOD_EXT_ATOMIC_4B, (uint16_t)e->q.pi, opcode, e->q.qpn, 4,
		 FID_CQ_UPDATE, 0);
	fid_raddr(w + 16, raddr, rkey);
	fid_be32(w + 32, v0);
	fid_be32(w + 36, v1);
	fid_be32(w + 40, m0);
	fid_be32(w + 44, m1);
	fid_data(w + 48, local_len, gdak_mr_lkey(e->mr), local);
	return fid_put(&e->q, w, 4);
}

static uint64_t xfa32(struct ep *e, uint64_t raddr, uint32_t rkey, uint32_t add, uint32_t boundary,
		      void *local, uint32_t local_len)
{
	return xatomic32(e, MLX5_OPCODE_ATOMIC_MASKED_FA, raddr, rkey, add, boundary, 0, 0, local,
			 local_len);
}

static uint64_t xcs32(struct ep *e, uint64_t raddr, uint32_t rkey, uint32_t swap, uint32_t cmp,
		      uint32_t sm, uint32_t cm, void *local)
{
	return xatomic32(e, MLX5_OPCODE_ATOMIC_MASKED_CS, raddr, rkey, swap, cmp, sm, cm, local, 4);
}

/* 8-byte extended forms (opmod 0x09): FA add/boundary (DS 4), CS the
 * 32-byte segment (DS 5). */
static uint64_t xfa64(struct ep *e, uint64_t raddr, uint32_t rkey, uint64_t add, uint64_t boundary,
		      void *local)
{
	const uint64_t ops[2] = { add, boundary };

	return fid_atomic8(&e->q, GDAK_MLX5_OPMOD_EXT_ATOMIC_8B, MLX5_OPCODE_ATOMIC_MASKED_FA,
			   raddr, rkey, ops, 2, gdak_mr_lkey(e->mr), local, FID_CQ_UPDATE);
}

static uint64_t xcs64(struct ep *e, uint64_t raddr, uint32_t rkey, uint64_t swap, uint64_t cmp,
		      uint64_t sm, uint64_t cm, void *local)
{
	const uint64_t ops[4] = { swap, cmp, sm, cm };

	return fid_atomic8(&e->q, GDAK_MLX5_OPMOD_EXT_ATOMIC_8B, MLX5_OPCODE_ATOMIC_MASKED_CS,
			   raddr, rkey, ops, 4, gdak_mr_lkey(e->mr), local, FID_CQ_UPDATE);
}

/* The CQE of the WQE at idx: a requester completion of that WQE, this QP. */
static void xok(struct ep *e, uint64_t idx)
{
	struct gdak_mlx5_cqe_fields f = one(e, (uint16_t)idx);

	CHECK_EQ(f.opcode, MLX5_CQE_REQ);
	CHECK_EQ(f.syndrome, 0);
	CHECK_EQ(f.qpn, e->q.qpn);
}

static uint32_t be32at(const uint8_t *p)
{
	return fid_get_be32(p);
}
static uint64_t be64at(const uint8_t *p)
{
	return (uint64_t)fid_get_be32(p) << 32 | fid_get_be32(p + 4);
}

/* The targets' final words, which the server checks too. */
static const uint32_t x_final32[4] = { 0, 0, 0x00020000u, 1 };
static const uint64_t x_final64[4] = { 0x0000000200000000ull, 0x1211342256337844ull,
				       0x0000000100000000ull, 0xabcdull };

static int client_xatomic(struct ep *e)
{
	static const uint32_t init32[4] = { 0xffffffffu, 0x11111111u, 5, 0x12345678u };
	static const uint64_t init64[4] = { 0x00000001ffffffffull, 0x1111222233334444ull,
					    0x00000000ffffffffull, 0x5555ull };
	uint32_t lk = gdak_mr_lkey(e->mr), rk = e->peer.rkey;
	uint64_t ra = e->peer.addr + X_OFF, t = ra + 16 /* 8-byte targets at +16.. */;
	uint8_t *r = e->buf + XR_OFF;

	/* known target words, written over the wire first */
	memcpy(e->buf + X_OFF, init32, 16);
	memcpy(e->buf + X_OFF + 16, init64, 32);
	expect_ok(e, nu_post_rdma(&e->q, MLX5_OPCODE_RDMA_WRITE, e->buf + X_OFF, 48, lk, ra, rk, 0,
				  NU_SIG));
	memset(r, 0xee, 256);

	/* 4-byte fetch-add: wraps to 0, no carry into the next word; the
	 * fetched value big-endian in 4 bytes and not one byte more */
	xok(e, xfa32(e, ra, rk, 1, 0, r, 4));
	CHECK_EQ(be32at(r), 0xffffffffu);
	CHECK_EQ(r[4], 0xee);
	/* the high half of an 8-byte pair */
	xok(e, xfa32(e, ra + 4, rk, 0xeeeeeeefu, 0, r + 8, 4));
	CHECK_EQ(be32at(r + 8), 0x11111111u);
	/* 4-byte compare-swap, all masks: succeeds, then fails (the word stays) */
	xok(e, xcs32(e, ra + 8, rk, 9, 5, ~0u, ~0u, r + 16));
	CHECK_EQ(be32at(r + 16), 5);
	xok(e, xcs32(e, ra + 8, rk, 1, 5, ~0u, ~0u, r + 20));
	CHECK_EQ(be32at(r + 20), 9);
	/* NVSHMEM's AMO_SET: compare mask 0 (always), swap mask all */
	xok(e, xcs32(e, ra + 12, rk, 1, 0, ~0u, 0, r + 24));
	CHECK_EQ(be32at(r + 24), 0x12345678u);
	/* masked swap: only the bits under the swap mask change */
	xok(e, xcs32(e, ra + 8, rk, 0x0001ff00u, 0, 0xffffff00u, 0, r + 28));
	CHECK_EQ(be32at(r + 28), 9);
	xok(e, xcs32(e, ra + 8, rk, 0xff, 0x09, 0xffu, 0xffu, r + 32)); /* 0x0001ff09 -> ..ff */
	CHECK_EQ(be32at(r + 32), 0x0001ff09u);
	/* field boundaries: two 16-bit counters, the low one's carry dropped */
	xok(e, xfa32(e, ra + 8, rk, 0x00010001u, 0x00008000u, r + 36, 4));
	CHECK_EQ(be32at(r + 36), 0x0001ffffu);

	/* 8-byte masked fetch-add (opmod 0): two 32-bit fields */
	xok(e, nu_post_masked(&e->q, MLX5_OPCODE_ATOMIC_MASKED_FA, r + 64, lk, t, rk,
			      0x0000000100000001ull, 0, 0x80000000ull, 0, NU_SIG));
	CHECK_EQ(be64at(r + 64), 0x00000001ffffffffull);
	/* 8-byte masked compare-swap (opmod 0): compare the high bytes only,
	 * swap every other byte */
	xok(e, nu_post_masked(&e->q, MLX5_OPCODE_ATOMIC_MASKED_CS, r + 72, lk, t + 8, rk,
			      0x1200340056007800ull, 0x1111000000000000ull, 0xff00ff00ff00ff00ull,
			      0xffff000000000000ull, NU_SIG));
	CHECK_EQ(be64at(r + 72), 0x1111222233334444ull);
	/* and a failing one: nothing changes */
	xok(e, nu_post_masked(&e->q, MLX5_OPCODE_ATOMIC_MASKED_CS, r + 80, lk, t + 8, rk, 0, 0x1,
			      ~0ull, 0x1ull, NU_SIG));
	CHECK_EQ(be64at(r + 80), 0x1211342256337844ull);
	/* 8-byte extended forms (opmod 0x09) */
	xok(e, xfa64(e, t + 16, rk, 1, 0, r + 88));
	CHECK_EQ(be64at(r + 88), 0x00000000ffffffffull);
	xok(e, xcs64(e, t + 24, rk, 0xabcdull, 0x5555ull, ~0ull, ~0ull, r + 96));
	CHECK_EQ(be64at(r + 96), 0x5555ull);

	/* read the targets back over the wire */
	expect_ok(e, nu_post_rdma(&e->q, MLX5_OPCODE_RDMA_READ, e->buf + XR_OFF + 128, 48, lk, ra,
				  rk, 0, NU_SIG));
	CHECK_MEM(e->buf + XR_OFF + 128, x_final32, 16);
	CHECK_MEM(e->buf + XR_OFF + 144, x_final64, 32);
	REQUIRE_EQ(gdak_bootstrap_barrier(e->bs), 0);

	/* a 4-byte atomic on an address that is not 4-byte aligned: the
	 * responder NAKs it (invalid request), the QP goes to ERR */
	{
		struct gdak_mlx5_cqe_fields f = one(e, xfa32(e, ra + 2, rk, 1, 0, r + 128, 4));

		CHECK_EQ(f.opcode, MLX5_CQE_REQ_ERR);
		CHECK_EQ(f.syndrome, MLX5_CQE_SYNDROME_REMOTE_INVAL_REQ_ERR);
		CHECK_EQ(nu_wait_state(&e->q, GDAK_QPS_ERR, POLL_MS), 0);
	}
	REQUIRE_EQ(gdak_bootstrap_barrier(e->bs), 0);
	return 0;
}

static int server_xatomic(struct ep *e)
{
	struct gdak_qp_error err;

	REQUIRE_EQ(gdak_bootstrap_barrier(e->bs), 0);
	/* the barrier orders this process's NIC thread's atomics before this
	 * read through the client, which ThreadSanitizer cannot see: a peek
	 * the NIC thread runs after them gives the order within this process */
	{
		struct nm_tr_udp_peek pk;

		REQUIRE_EQ(nm_tr_udp_qp_peek(e->q.qp, &pk), 0);
	}
	CHECK_MEM(e->buf + X_OFF, x_final32, 16);
	CHECK_MEM(e->buf + X_OFF + 16, x_final64, 32);
	REQUIRE_EQ(gdak_bootstrap_barrier(e->bs), 0);
	/* the unaligned one moved the responder to ERR too, with the NAK's syndrome */
	CHECK_EQ(nu_wait_state(&e->q, GDAK_QPS_ERR, POLL_MS), 0);
	CHECK_EQ(gdak_qp_query_error(e->q.qp, &err), 0);
	CHECK_EQ(err.syndrome, MLX5_CQE_SYNDROME_REMOTE_INVAL_REQ_ERR);
	return 0;
}

/* ---- "loss": many operations through injected faults --------------------------------- */

#define LOSS_N 150
#define SLOT 12288u /* LOSS_N slots stay below the 2 MiB read-back area */

static int client_loss(struct ep *e)
{
	uint32_t lk = gdak_mr_lkey(e->mr), rk = e->peer.rkey;
	uint64_t ra = e->peer.addr, rs = 5, sum = 0, base;
	uint8_t *srv = pattern(2);
	uint32_t base32;

	memcpy(&base, srv + CNT_OFF, 8);
	memcpy(&base32, srv + CNT32_OFF, 4);
	for (unsigned i = 0; i < LOSS_N; i++) {
		uint32_t len = 1 + (uint32_t)(gdak_test_rand(&rs) % (SLOT - 1));
		uint32_t off = i * SLOT;

		expect_ok(e, nu_post_rdma(&e->q, MLX5_OPCODE_RDMA_WRITE, e->buf + off, len, lk,
					  ra + off, rk, 0, NU_SIG));
		/* read it back into another place: the responder applied it in order */
		memset(e->buf + (2u << 20), 0, len);
		expect_ok(e, nu_post_rdma(&e->q, MLX5_OPCODE_RDMA_READ, e->buf + (2u << 20), len, lk,
					  ra + off, rk, 0, NU_SIG));
		CHECK_MEM(e->buf + (2u << 20), e->buf + off, len);
		expect_ok(e, nu_post_atomic(&e->q, MLX5_OPCODE_ATOMIC_FA, e->buf + BUF - 8, lk,
					    ra + CNT_OFF, rk, i + 1, 0, NU_SIG));
		/* exactly once: the value before is the sum of the earlier adds */
		CHECK_EQ(be64toh(*(uint64_t *)(void *)(e->buf + BUF - 8)), base + sum);
		/* and a 4-byte extended one (the replay cache answers its duplicates) */
		xfa32(e, ra + CNT32_OFF, rk, i + 1, 0, e->buf + BUF - 16, 4);
		expect_ok(e, e->q.last);
		CHECK_EQ(be32toh(*(uint32_t *)(void *)(e->buf + BUF - 16)),
			 (uint32_t)(base32 + sum));
		sum += i + 1;
	}
	free(srv);
	REQUIRE_EQ(gdak_bootstrap_barrier(e->bs), 0);
	return 0;
}

static int server_loss(struct ep *e)
{
	uint8_t *cli = pattern(1), *srv = pattern(2);
	uint64_t v, base, sum = 0, rs = 5;
	uint32_t base32, v32;

	REQUIRE_EQ(gdak_bootstrap_barrier(e->bs), 0);
	memcpy(&base, srv + CNT_OFF, 8);
	for (unsigned i = 0; i < LOSS_N; i++) {
		uint32_t len = 1 + (uint32_t)(gdak_test_rand(&rs) % (SLOT - 1));
		CHECK_MEM(e->buf + i * SLOT, cli + i * SLOT, len);
		sum += i + 1;
	}
	memcpy(&v, e->buf + CNT_OFF, 8);
	CHECK_EQ(v, base + sum);
	memcpy(&base32, srv + CNT32_OFF, 4);
	memcpy(&v32, e->buf + CNT32_OFF, 4);
	CHECK_EQ(v32, (uint32_t)(base32 + sum));
	free(cli);
	free(srv);
	return 0;
}

/* ---- "retry": nobody answers ------------------------------------------------------------ */

static int client_retry(struct ep *e)
{
	struct gdak_mlx5_cqe_fields f;
	struct gdak_qp_error err;

	f = one(e, nu_post_rdma(&e->q, MLX5_OPCODE_RDMA_WRITE, e->buf, 5000, gdak_mr_lkey(e->mr),
				e->peer.addr, e->peer.rkey, 0, NU_SIG));
	CHECK_EQ(f.opcode, MLX5_CQE_REQ_ERR);
	CHECK_EQ(f.syndrome, MLX5_CQE_SYNDROME_TRANSPORT_RETRY_EXC_ERR);
	CHECK_EQ(nu_wait_state(&e->q, GDAK_QPS_ERR, POLL_MS), 0);
	CHECK_EQ(gdak_qp_query_error(e->q.qp, &err), 0);
	CHECK_EQ(err.syndrome, MLX5_CQE_SYNDROME_TRANSPORT_RETRY_EXC_ERR);
	REQUIRE_EQ(gdak_bootstrap_barrier(e->bs), 0);
	return 0;
}

static int server_retry(struct ep *e)
{
	REQUIRE_EQ(gdak_bootstrap_barrier(e->bs), 0);
	return 0;
}

static int side(int server, struct gdak_bootstrap *bs)
{
	struct ep e;
	int r;

	memset(&e, 0, sizeof(e));
	if (!strcmp(mode, "loss")) {
		char f[200];
		snprintf(f, sizeof(f), "pkt_drop:p=%u%%,seed=%d;pkt_dup:p=%u%%;pkt_reorder:p=%u%%",
			 loss_pct, server + 1, loss_pct, loss_pct);
		setenv("GDAK_FAULTS", f, 1);
		/* at 20% both ways, 8 losses in a row on one tail packet happen
		 * (0.36^8 per stall); IBA allows at most 7 retries */
		if (loss_pct >= 10)
			setenv("GDAK_UDP_RETRY", "forever", 1);
	} else if (!strcmp(mode, "retry") && !server) {
		setenv("GDAK_FAULTS", "pkt_drop:p=100%", 1);
	} else if (!strcmp(mode, "netem")) {
		setenv("GDAK_UDP_RETRY", "forever", 1);
	}
	ep_open(&e, server, bs);
	if (!strcmp(mode, "loss") || !strcmp(mode, "netem"))
		r = server ? server_loss(&e) : client_loss(&e);
	else if (!strcmp(mode, "retry"))
		r = server ? server_retry(&e) : client_retry(&e);
	else if (!strcmp(mode, "xatomic"))
		r = server ? server_xatomic(&e) : client_xatomic(&e);
	else
		r = server ? server_ops(&e) : client_ops(&e);
	ep_close(&e);
	return r;
}

static void side_client(struct gdak_bootstrap *bs)
{
	side(0, bs);
}

static void side_server(struct gdak_bootstrap *bs)
{
	side(1, bs);
}

/* "env": each bad setting stops gdak_open with -EINVAL; good ones open. */
static int env_checks(void)
{
	static const struct { const char *var, *val; int ok; } t[] = {
		{"GDAK_UDP_RTO_MIN_US", "5", 0}, {"GDAK_UDP_RTO_MIN_US", "abc", 0},
		{"GDAK_UDP_RTO_MIN_US", "20000", 0}, /* above the 10 ms timeout */
		{"GDAK_UDP_RTO_MIN_US", "500", 1}, {"GDAK_UDP_RTO_US", "9", 0},
		{"GDAK_UDP_WINDOW", "0", 0}, {"GDAK_UDP_WINDOW", "64", 1},
		{"GDAK_UDP_RETRY", "8", 0}, {"GDAK_UDP_RETRY", "forever", 1},
	};
	for (unsigned i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		struct gdak_ctx *ctx = NULL;
		int r;

		setenv(t[i].var, t[i].val, 1);
		r = gdak_open("emu:udp:127.0.0.1", &ctx);
		if (t[i].ok) {
			CHECK_EQ(r, 0);
			if (!r)
				gdak_close(ctx);
		} else {
			CHECK_EQ(r, -EINVAL);
		}
		unsetenv(t[i].var);
	}
	return gdak_test_end();
}

/* One side only (--role): the other runs elsewhere (another namespace). */
static int one_side(const char *role, const char *host, const char *port_s)
{
	struct gdak_bootstrap *bs;
	char *end;
	unsigned long port = strtoul(port_s, &end, 10);

	if (*end || !port || port > 65535 || (strcmp(role, "server") && strcmp(role, "client"))) {
		fprintf(stderr, "usage: --role server|client DEV BS_HOST BS_PORT\n");
		return 2;
	}
	if (!strcmp(role, "server")) {
		REQUIRE_EQ(gdak_bootstrap_listen(host, (uint16_t)port, &bs), 0);
		REQUIRE_EQ(gdak_bootstrap_accept(bs, 20000), 0);
		side(1, bs);
	} else {
		REQUIRE_EQ(gdak_bootstrap_connect(host, (uint16_t)port, 20000, &bs), 0);
		side(0, bs);
	}
	gdak_bootstrap_close(bs);
	return gdak_test_end();
}

int main(int argc, char **argv)
{
	mode = argc > 1 ? argv[1] : "ops";
	loss_pct = argc > 2 && argv[2][0] != '-' ? (unsigned)atoi(argv[2]) : 0;
	alarm(110); /* a hang becomes a failure, not a stuck suite */
	if (!strcmp(mode, "env"))
		return env_checks();
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--role"))
			continue;
		if (argc - i != 5) {
			fprintf(stderr, "usage: %s MODE [P] --role server|client DEV BS_HOST BS_PORT\n",
				argv[0]);
			return 2;
		}
		dev = argv[i + 2];
		return one_side(argv[i + 1], argv[i + 3], argv[i + 4]);
	}
	return gdak_test_bs_2proc(side_client, side_server, 110);
}
