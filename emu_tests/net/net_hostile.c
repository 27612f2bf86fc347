/* SPDX-License-Identifier: MIT */
/*
 * net_hostile.c - gdak.net.hostile_*: an emu:udp endpoint under attack by
 * a sender on the same host (net_forge.h: its own socket on 127.0.0.2, and
 * with raw sockets the connected peer's own address and port), and QPs
 * that meet transport errors.
 *
 * One process: QPs A and B connected (B requests, A responds), C and D a
 * bystander pair.  The regions they use lie between guard areas that are
 * never registered; a shadow copy holds what the legitimate peer wrote.
 * Cases (argv[1]):
 *   random    random datagrams to every QP
 *   trunc     every opcode's headers cut at every length, ICRC valid
 *   fields    valid ICRC, random header fields and payloads
 *   wrongqpn  everything right but the destination QPN
 *   stranger  right QPN, PSN, rkey and address from a wrong source:
 *             WRITE, READ, CMP_SWAP, FETCH_ADD, SEND to A, and the requests
 *             that put a responder in ERR; NAK, ACK to B
 *   sweep     a bounded PSN sweep (4096 guesses around the right PSN)
 *   idle_nak  error NAKs at the idle requester
 *   errors    a remote error: both QPs in ERR with the cause, every later
 *             WQE flushed with a CQE
 *   reset     the first PSN is drawn again at RESET; a stale packet of the
 *             old connection is not applied
 *   ids       QPNs, MR keys and PSNs: random, never repeated, never reserved
 *   xatomic   gdak's extended atomics (docs/UDP.md) from the peer, malformed:
 *             operand size not 4/8, reserved bytes, FETCH_ADD with compare
 *             fields, a 4-byte operand over 32 bits, unaligned, a wrong
 *             rkey: NAK (invalid request / remote access), A in ERR with
 *             that syndrome, the target untouched; then RESET, reconnect
 *   engine    the RoCE engine alone: ACKs/NAKs/responses at an idle requester
 *             dropped (QP stays RTS), the peer check by address and port
 * After each: guards unchanged, the target holds exactly the shadow, both
 * pairs complete WRITE/READ/FETCH_ADD/SEND with data checked and a CQE for
 * every WQE, QP states and gdak_qp_query_error true, RSS bounded.  The
 * spoofed variants use a raw socket where they may (root), else the target
 * QP's in-process inbox with the peer's source (GDAK_FORGE_NO_RAW=1 forces
 * that; gdak.net.hostile_*_noraw run so).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>

#include "gdak_test.h"
#include "net_forge.h"
#include "nic_util.h"
#include "nm_rand.h"
#include "tr_udp.h"

#define GUARD 4096
#define TSZ (64u << 10)	     /* target region (A) and bystander region (D) */
#define LSZ (64u << 10)	     /* B's and C's local buffers, A's receive buffer */
#define CNT (TSZ - 8)	     /* the atomic counter in the target */
#define RECV_OFF (32u << 10) /* A's receive buffer inside the local region */
#define POLL_MS 30000
#define GUARD_BYTE 0xa5

struct world {
	struct gdak_ctx *ctx;
	uint8_t *mem;
	size_t len;
	uint8_t *tgt, *loc, *byst;
	struct gdak_mr *mr_tgt, *mr_loc, *mr_byst;
	uint8_t shadow[TSZ], byst_shadow[TSZ];
	struct nu_qp a, b, c, d;
	struct gdak_qp_info ia, ib, ic;
	struct forge f;
	unsigned round;
	long rss0;
};

static struct world W;

static uint32_t addr_of(const struct gdak_qp_info *i)
{
	uint32_t a;
	memcpy(&a, i->gid + 12, 4);
	return a;
}

static struct nm_tr_udp_peek peek(struct nu_qp *q)
{
	struct nm_tr_udp_peek p;

	REQUIRE_EQ(nm_tr_udp_qp_peek(q->qp, &p), 0);
	return p;
}

/* Every datagram a QP's socket took ends in exactly one of these. */
static uint64_t accounted(struct nu_qp *q)
{
	struct nm_tr_udp_peek p = peek(q);

	return p.ctx_st.bad_pkts + p.ctx_st.icrc_errors + p.st.foreign_pkts + p.st.rx_pkts;
}

/* Wait (bounded) until q's engine has accounted for n more datagrams;
 * exactly n when nobody else sends to it meanwhile. */
static void settle_min(struct nu_qp *q, uint64_t before, uint64_t n)
{
	for (int i = 0; i < POLL_MS; i++) {
		if (accounted(q) >= before + n)
			break;
		usleep(1000);
	}
	CHECK(accounted(q) - before >= n);
}

static void settle(struct nu_qp *q, uint64_t before, uint64_t n)
{
	settle_min(q, before, n);
	CHECK_EQ(accounted(q) - before, n);
}

static void pair(struct nu_qp *x, struct nu_qp *y)
{
	struct gdak_qp_attr at = {
		.sq_depth = 64, .rq_depth = 16, .rq_max_sge = 1, .rcq_depth = 16, .mtu = 1024
	};

	REQUIRE_EQ(nu_pair(W.ctx, &at, x, y), 0);
}

static void world_open(void)
{
	int r;

	memset(&W, 0, sizeof(W));
	W.rss0 = gdak_test_rss_kib();
	r = gdak_open("emu:udp:127.0.0.1", &W.ctx);
	if (r) {
		fprintf(stderr, "emu:udp cannot open here (%s): skipped\n", gdak_strerror(r));
		exit(77);
	}
	/* guard | target | guard | local | guard | bystander | guard */
	W.len = 4 * GUARD + 2 * TSZ + LSZ;
	REQUIRE_EQ(gdak_mem_alloc(W.ctx, W.len, GDAK_MEM_HOST, (void **)&W.mem), 0);
	memset(W.mem, GUARD_BYTE, W.len);
	W.tgt = W.mem + GUARD;
	W.loc = W.tgt + TSZ + GUARD;
	W.byst = W.loc + LSZ + GUARD;
	gdak_test_fill(W.tgt, TSZ, 1);
	gdak_test_fill(W.byst, TSZ, 2);
	memset(W.loc, 0, LSZ);
	memcpy(W.shadow, W.tgt, TSZ);
	memcpy(W.byst_shadow, W.byst, TSZ);
	REQUIRE_EQ(gdak_mr_reg(W.ctx, W.tgt, TSZ, GDAK_ACCESS_ALL, &W.mr_tgt), 0);
	REQUIRE_EQ(gdak_mr_reg(W.ctx, W.loc, LSZ, GDAK_ACCESS_ALL, &W.mr_loc), 0);
	REQUIRE_EQ(gdak_mr_reg(W.ctx, W.byst, TSZ, GDAK_ACCESS_ALL, &W.mr_byst), 0);
	pair(&W.a, &W.b);
	pair(&W.c, &W.d);
	REQUIRE_EQ(gdak_qp_info(W.a.qp, &W.ia), 0);
	REQUIRE_EQ(gdak_qp_info(W.b.qp, &W.ib), 0);
	REQUIRE_EQ(gdak_qp_info(W.c.qp, &W.ic), 0);
	REQUIRE_EQ(forge_open(&W.f, "127.0.0.2"), 0);
}

static int guards_ok(void)
{
	const uint8_t *g[4] = { W.mem, W.tgt + TSZ, W.loc + LSZ, W.byst + TSZ };

	for (int i = 0; i < 4; i++)
		for (unsigned k = 0; k < GUARD; k++)
			if (g[i][k] != GUARD_BYTE)
				return 0;
	return 1;
}

static void qp_healthy(struct nu_qp *q, const char *name)
{
	struct gdak_qp_error e;

	memset(&e, 0, sizeof(e));
	CHECK_EQ(gdak_qp_state(q->qp), GDAK_QPS_RTS);
	CHECK_EQ(gdak_qp_query_error(q->qp, &e), 0);
	CHECK_EQ(e.syndrome, 0);
	CHECK_STR(e.rule, "");
	if (gdak_qp_state(q->qp) != GDAK_QPS_RTS || e.syndrome)
		fprintf(stderr, "QP %s: %s, %s\n", name, gdak_qp_state_name(gdak_qp_state(q->qp)),
			e.text);
	CHECK_EQ(peek(q).state, ROCE_QPS_RTS);
}

static void expect_ok(struct nu_qp *q, uint16_t idx)
{
	nu_ring_expect_ok(q, idx, POLL_MS);
}

/* The legitimate traffic: B -> A WRITE, READ back, FETCH_ADD, SEND; C -> D
 * WRITE and READ back.  Every byte against the shadows. */
static void legit_round(void)
{
	uint32_t lk = gdak_mr_lkey(W.mr_loc), rk = gdak_mr_rkey(W.mr_tgt);
	uint32_t off = (W.round * 1024) % (TSZ - 2048), len = 600;
	uint64_t old, before;
	struct gdak_mlx5_cqe_fields f;

	W.round++;
	/* WRITE */
	gdak_test_fill(W.loc, len, 100 + W.round);
	expect_ok(&W.b, nu_post_rdma(&W.b, MLX5_OPCODE_RDMA_WRITE, W.loc, len, lk,
				     (uintptr_t)(W.tgt + off), rk, 0, NU_SIG));
	memcpy(W.shadow + off, W.loc, len);
	/* READ it back */
	memset(W.loc + 4096, 0, len);
	expect_ok(&W.b, nu_post_rdma(&W.b, MLX5_OPCODE_RDMA_READ, W.loc + 4096, len, lk,
				     (uintptr_t)(W.tgt + off), rk, 0, NU_SIG));
	CHECK_MEM(W.loc + 4096, W.shadow + off, len);
	/* FETCH_ADD: the original value, big-endian */
	memcpy(&before, W.shadow + CNT, 8);
	expect_ok(&W.b, nu_post_atomic(&W.b, MLX5_OPCODE_ATOMIC_FA, W.loc + 8192, lk,
				       (uintptr_t)(W.tgt + CNT), rk, 3, 0, NU_SIG));
	memcpy(&old, W.loc + 8192, 8);
	CHECK_EQ(gdak_be64toh(old), before);
	before += 3;
	memcpy(W.shadow + CNT, &before, 8);
	/* SEND into A's receive buffer */
	gdak_test_fill(W.loc + 12288, 100, 200 + W.round);
	memset(W.loc + RECV_OFF, 0, 256);
	nu_post_recv(&W.a, W.loc + RECV_OFF, 256, lk);
	expect_ok(&W.b, nu_post_send(&W.b, MLX5_OPCODE_SEND, W.loc + 12288, 100, lk, 0, NU_SIG));
	REQUIRE_EQ(nu_poll(&W.a, 1, &f, POLL_MS), 0);
	CHECK_EQ(f.opcode, MLX5_CQE_RESP_SEND);
	CHECK_EQ(f.byte_cnt, 100);
	CHECK_MEM(W.loc + RECV_OFF, W.loc + 12288, 100);
	/* the bystanders */
	gdak_test_fill(W.loc + 16384, 256, 300 + W.round);
	expect_ok(&W.c,
		  nu_post_rdma(&W.c, MLX5_OPCODE_RDMA_WRITE, W.loc + 16384, 256, lk,
			       (uintptr_t)(W.byst + off), gdak_mr_rkey(W.mr_byst), 0, NU_SIG));
	memcpy(W.byst_shadow + off, W.loc + 16384, 256);
	memset(W.loc + 20480, 0, 256);
	expect_ok(&W.c,
		  nu_post_rdma(&W.c, MLX5_OPCODE_RDMA_READ, W.loc + 20480, 256, lk,
			       (uintptr_t)(W.byst + off), gdak_mr_rkey(W.mr_byst), 0, NU_SIG));
	CHECK_MEM(W.loc + 20480, W.byst_shadow + off, 256);
}

/* The invariants after an attack (and legit traffic after it). */
static void check_world(const char *what)
{
	long rss;

	legit_round();
	legit_round();
	CHECK(guards_ok());
	CHECK_EQ(gdak_test_memdiff(W.tgt, W.shadow, TSZ), (size_t)-1);
	CHECK_EQ(gdak_test_memdiff(W.byst, W.byst_shadow, TSZ), (size_t)-1);
	qp_healthy(&W.a, "A");
	qp_healthy(&W.b, "B");
	qp_healthy(&W.c, "C");
	qp_healthy(&W.d, "D");
	/* no CQE left over: every WQE had exactly one */
	CHECK(!nu_cqe_ready(&W.b, 0));
	CHECK(!nu_cqe_ready(&W.c, 0));
	CHECK(!nu_cqe_ready(&W.a, 1));
	rss = gdak_test_rss_kib();
	CHECK(rss < 0 || W.rss0 < 0 || rss - W.rss0 < 256 * 1024);
	printf("%s: checked (RSS %ld -> %ld KiB)\n", what, W.rss0, rss);
}

static void world_close(void)
{
	forge_close(&W.f);
	nu_destroy(&W.a);
	nu_destroy(&W.b);
	nu_destroy(&W.c);
	nu_destroy(&W.d);
	CHECK_EQ(gdak_mr_dereg(W.mr_tgt), 0);
	CHECK_EQ(gdak_mr_dereg(W.mr_loc), 0);
	CHECK_EQ(gdak_mr_dereg(W.mr_byst), 0);
	CHECK_EQ(gdak_mem_free(W.ctx, W.mem), 0);
	gdak_close(W.ctx);
}

/* The path of packets B sends to A (for spoofing B), and A to B. */
static struct roce_path path_b_to_a(void)
{
	return (struct roce_path){ .sip = addr_of(&W.ib),
				   .dip = addr_of(&W.ia),
				   .sport = W.ib.udp_port,
				   .dport = W.ia.udp_port };
}

static struct roce_path path_a_to_b(void)
{
	return (struct roce_path){ .sip = addr_of(&W.ia),
				   .dip = addr_of(&W.ib),
				   .sport = W.ia.udp_port,
				   .dport = W.ib.udp_port };
}

/* Spoofing works always here: a raw socket, else the target's inbox. */
static int can_spoof(const char *what)
{
	printf("%s: spoofing the peer through %s\n", what,
	       W.f.raw >= 0 ? "a raw socket" : "the target's in-process inbox (no raw socket)");
	return 1;
}

/* The QPs' counters before an attack. */
struct before {
	uint64_t a, b, c, fa, fb, fc;
	struct nm_tr_udp_peek pa, pb;
};

static struct before snap(void)
{
	struct before s = { .a = accounted(&W.a), .b = accounted(&W.b), .c = accounted(&W.c) };
	struct gdak_nic_stats st;

	s.pa = peek(&W.a);
	s.pb = peek(&W.b);
	REQUIRE_EQ(gdak_nic_qp_stats(W.a.qp, &st), 0);
	s.fa = st.foreign;
	REQUIRE_EQ(gdak_nic_qp_stats(W.b.qp, &st), 0);
	s.fb = st.foreign;
	REQUIRE_EQ(gdak_nic_qp_stats(W.c.qp, &st), 0);
	s.fc = st.foreign;
	return s;
}

static uint64_t foreign_of(struct nu_qp *q)
{
	struct gdak_nic_stats st;

	REQUIRE_EQ(gdak_nic_qp_stats(q->qp, &st), 0);
	return st.foreign;
}

/* ---- cases ------------------------------------------------------------------ */

static void case_random(void)
{
	uint8_t b[1500];
	uint64_t rs = 7;
	struct before s = snap();
	struct roce_path sp = path_b_to_a();
	unsigned n = 0;

	for (int i = 0; i < 3000; i++) {
		uint32_t len = (uint32_t)(gdak_test_rand(&rs) % sizeof(b));
		const struct gdak_qp_info *to = i % 3 == 0 ? &W.ia : i % 3 == 1 ? &W.ib : &W.ic;

		gdak_test_fill(b, len, (uint64_t)i);
		REQUIRE_EQ(forge_send_raw(&W.f, addr_of(to), to->udp_port, b, len), 0);
	}
	settle(&W.a, s.a, 1000);
	settle(&W.b, s.b, 1000);
	settle(&W.c, s.c, 1000);
	if (can_spoof("random")) {
		s = snap();
		for (int i = 0; i < 1000; i++) {
			uint32_t len = (uint32_t)(gdak_test_rand(&rs) % sizeof(b));

			gdak_test_fill(b, len, 5000u + (uint64_t)i);
			REQUIRE_EQ(forge_spoof(&W.f, &sp, b, len), 0);
			n++;
		}
		settle(&W.a, s.a, n);
	}
	check_world("random");
}

/* Settle both sides after n[0] packets to A and n[1] to B since s. */
static void settle_both(const struct before *s, const uint64_t n[2])
{
	settle(&W.a, s->a, n[0]);
	settle_min(&W.b, s->b, n[1]);
}

/* Every opcode (valid or not), its headers and payload cut at every length
 * short of the whole, with an ICRC valid for the cut packet. */
static void case_trunc(void)
{
	static const uint8_t data[8] = { 1, 2, 3, 4, 5, 6, 7, 8 };
	uint8_t full[ROCE_MAX_PKT], pkt[ROCE_MAX_PKT], ext[ROCE_MAX_HDR];
	struct roce_path sp = path_b_to_a(), sp_b = path_a_to_b();
	struct before s = snap();
	int spoof = can_spoof("trunc");
	uint64_t n[2] = { 0, 0 }; /* packets sent: [0] to A, [1] to B */

	memset(ext, 0, sizeof(ext));
	for (unsigned op = 0; op < 256; op++) {
		const struct roce_opinfo *oi = roce_op((uint8_t)op);
		int to_req = (oi->mask & ROCE_M_VALID) && !(oi->mask & ROCE_M_REQ);
		const struct gdak_qp_info *to = to_req ? &W.ib : &W.ia;
		struct roce_path mine = { .sip = W.f.sip,
					  .dip = addr_of(to),
					  .sport = W.f.sport,
					  .dport = to->udp_port };
		uint32_t exl = oi->hdr_len > ROCE_BTH_LEN ? oi->hdr_len - ROCE_BTH_LEN : 0;
		uint32_t plen = (oi->mask & ROCE_M_PAYLOAD) ? sizeof(data) : 0;
		struct nm_tr_udp_peek p = peek(to_req ? &W.b : &W.a);
		/* from the peer: a PSN just behind (a duplicate), never applied */
		uint32_t psn = to_req ? psn_add(p.una_psn, -1) : psn_add(p.epsn, -1);
		uint32_t len;

		if (oi->off_reth)
			forge_reth(ext + oi->off_reth - ROCE_BTH_LEN, (uintptr_t)W.tgt,
				   gdak_mr_rkey(W.mr_tgt), 8);
		len = forge_build(full, &mine, (uint8_t)op, to->qpn, p.epsn, ext, exl, data, plen);
		for (uint32_t t = 0; t < len; t++) {
			memcpy(pkt, full, t);
			if (t >= ROCE_BTH_LEN + ROCE_ICRC_LEN)
				gdak_roce_icrc_set(&mine, pkt, t);
			REQUIRE_EQ(forge_send_raw(&W.f, mine.dip, mine.dport, pkt, t), 0);
			n[to_req]++;
		}
		if (spoof) {
			const struct roce_path *pp = to_req ? &sp_b : &sp;

			len = forge_build(full, pp, (uint8_t)op, to->qpn, psn, ext, exl, data,
					  plen);
			for (uint32_t t = ROCE_BTH_LEN + ROCE_ICRC_LEN; t < len; t++) {
				memcpy(pkt, full, t);
				gdak_roce_icrc_set(pp, pkt, t);
				REQUIRE_EQ(forge_spoof(&W.f, pp, pkt, t), 0);
				n[to_req]++;
			}
		}
		if ((op & 15) == 15) {
			settle_both(&s, n);
		}
	}
	check_world("trunc");
}

/* Request opcodes with valid ICRC and random fields (the right QPN). */
static void case_fields(void)
{
	static const uint8_t ops[] = { ROCE_SEND_FIRST,	    ROCE_SEND_MIDDLE,	ROCE_SEND_LAST,
				       ROCE_SEND_ONLY,	    ROCE_SEND_ONLY_IMM, ROCE_WRITE_FIRST,
				       ROCE_WRITE_MIDDLE,   ROCE_WRITE_LAST,	ROCE_WRITE_ONLY,
				       ROCE_WRITE_ONLY_IMM, ROCE_READ_REQ,	ROCE_CMP_SWAP,
				       ROCE_FETCH_ADD,	    ROCE_ACK,		ROCE_READ_RESP_ONLY,
				       ROCE_ATOMIC_ACK };
	uint8_t pkt[ROCE_MAX_PKT], ext[ROCE_MAX_HDR], pay[1024];
	uint64_t rs = 11, n[2] = { 0, 0 }; /* packets sent: [0] to A, [1] to B */
	struct roce_path sp = path_b_to_a(), sp_b = path_a_to_b();
	struct before s = snap();
	int spoof = can_spoof("fields");

	for (int i = 0; i < 2000; i++) {
		uint8_t op = ops[gdak_test_rand(&rs) % sizeof(ops)];
		const struct roce_opinfo *oi = roce_op(op);
		int to_req = !(oi->mask & ROCE_M_REQ);
		uint32_t plen = (oi->mask & ROCE_M_PAYLOAD) ? (uint32_t)(gdak_test_rand(&rs) % 1025)
							    : 0;
		uint32_t psn = (uint32_t)gdak_test_rand(&rs) & ROCE_PSN_MASK;
		uint32_t exl = oi->hdr_len - ROCE_BTH_LEN;
		const struct gdak_qp_info *to = to_req ? &W.ib : &W.ia;

		gdak_test_fill(ext, sizeof(ext), gdak_test_rand(&rs));
		/* half of them aim inside the target region with its key */
		if (oi->off_reth && (i & 1))
			forge_reth(ext + oi->off_reth - ROCE_BTH_LEN,
				   (uintptr_t)W.tgt + gdak_test_rand(&rs) % TSZ,
				   gdak_mr_rkey(W.mr_tgt), (uint32_t)gdak_test_rand(&rs));
		gdak_test_fill(pay, plen, (uint64_t)i);
		REQUIRE_EQ(forge_send(&W.f, addr_of(to), to->udp_port, op, to->qpn, psn, ext, exl,
				      pay, plen),
			   0);
		n[to_req]++;
		if (spoof) {
			/* from the peer's own address: any PSN but the one the
			 * responder expects (that one the peer itself may use -
			 * which no receiver can tell from a forgery) */
			const struct roce_path *pp = to_req ? &sp_b : &sp;
			struct nm_tr_udp_peek p = to_req ? peek(&W.b) : peek(&W.a);
			uint32_t len;

			if (!to_req && psn == p.epsn)
				psn = psn_add(psn, 1);
			len = forge_build(pkt, pp, op, to->qpn, psn, ext, exl, pay, plen);
			REQUIRE_EQ(forge_spoof(&W.f, pp, pkt, len), 0);
			n[to_req]++;
		}
		if ((i & 127) == 127) {
			settle_both(&s, n);
		}
	}
	settle_both(&s, n);
	/* the stranger's packets were all refused as foreign */
	CHECK(foreign_of(&W.a) - s.fa + foreign_of(&W.b) - s.fb == 2000);
	check_world("fields");
}

static void case_wrongqpn(void)
{
	uint8_t ext[16], pay[64];
	struct roce_path sp = path_b_to_a();
	struct before s = snap();
	struct nm_tr_udp_peek pa = peek(&W.a);
	unsigned n = 0;

	memset(pay, 0xee, sizeof(pay));
	forge_reth(ext, (uintptr_t)W.tgt, gdak_mr_rkey(W.mr_tgt), sizeof(pay));
	for (uint32_t k = 1; k <= 512; k++) {
		uint32_t qpn = (W.ia.qpn ^ (k * 0x9e37u)) & ROCE_PSN_MASK;

		if (qpn == W.ia.qpn || qpn == W.ib.qpn || qpn == W.ic.qpn || qpn == W.d.qpn)
			continue;
		REQUIRE_EQ(forge_send(&W.f, addr_of(&W.ia), W.ia.udp_port, ROCE_WRITE_ONLY, qpn,
				      pa.epsn, ext, 16, pay, sizeof(pay)),
			   0);
		n++;
		{
			uint8_t pkt[256];
			uint32_t len = forge_build(pkt, &sp, ROCE_WRITE_ONLY, qpn, pa.epsn, ext, 16,
						   pay, sizeof(pay));
			REQUIRE_EQ(forge_spoof(&W.f, &sp, pkt, len), 0);
			n++;
		}
	}
	settle(&W.a, s.a, n);
	CHECK_EQ(peek(&W.a).ctx_st.bad_pkts - s.pa.ctx_st.bad_pkts, n);
	CHECK_EQ(peek(&W.a).epsn, pa.epsn);
	check_world("wrongqpn");
}

static void case_stranger(void)
{
	uint8_t ext[32], pay[256], aeth[4];
	uint32_t rk = gdak_mr_rkey(W.mr_tgt), lk = gdak_mr_lkey(W.mr_loc);
	struct nm_tr_udp_peek pa, pb;
	struct before s;
	struct gdak_mlx5_cqe_fields f;
	uint64_t v;

	legit_round();
	s = snap();
	pa = s.pa;
	pb = s.pb;
	memset(pay, 0xee, sizeof(pay));
	/* A has a receive posted: a stranger's SEND must not take it */
	nu_post_recv(&W.a, W.loc + RECV_OFF, 256, lk);
	/* WRITE at the PSN the responder expects, into the region, right rkey */
	forge_reth(ext, (uintptr_t)(W.tgt + 128), rk, sizeof(pay));
	REQUIRE_EQ(forge_send(&W.f, addr_of(&W.ia), W.ia.udp_port, ROCE_WRITE_ONLY, W.ia.qpn,
			      pa.epsn, ext, 16, pay, sizeof(pay)),
		   0);
	forge_reth(ext, (uintptr_t)W.tgt, rk, 4096);
	REQUIRE_EQ(forge_send(&W.f, addr_of(&W.ia), W.ia.udp_port, ROCE_READ_REQ, W.ia.qpn, pa.epsn,
			      ext, 16, NULL, 0),
		   0);
	forge_atmeth(ext, (uintptr_t)(W.tgt + CNT), rk, 0xdead, 0);
	REQUIRE_EQ(forge_send(&W.f, addr_of(&W.ia), W.ia.udp_port, ROCE_FETCH_ADD, W.ia.qpn,
			      pa.epsn, ext, 28, NULL, 0),
		   0);
	memcpy(&v, W.shadow + CNT, 8);
	forge_atmeth(ext, (uintptr_t)(W.tgt + CNT), rk, 0xbad, v);
	REQUIRE_EQ(forge_send(&W.f, addr_of(&W.ia), W.ia.udp_port, ROCE_CMP_SWAP, W.ia.qpn, pa.epsn,
			      ext, 28, NULL, 0),
		   0);
	REQUIRE_EQ(forge_send(&W.f, addr_of(&W.ia), W.ia.udp_port, ROCE_SEND_ONLY, W.ia.qpn,
			      pa.epsn, NULL, 0, pay, 100),
		   0);
	/* the requests that put the responder in ERR when they were taken: a
	 * READ past the region, a 2 GiB READ, an unaligned atomic, a wrong pad
	 * count, MIDDLE without FIRST */
	forge_reth(ext, (uintptr_t)(W.tgt + TSZ - 16), rk, 64);
	REQUIRE_EQ(forge_send(&W.f, addr_of(&W.ia), W.ia.udp_port, ROCE_READ_REQ, W.ia.qpn, pa.epsn,
			      ext, 16, NULL, 0),
		   0);
	forge_reth(ext, (uintptr_t)W.tgt, rk, 1u << 31);
	REQUIRE_EQ(forge_send(&W.f, addr_of(&W.ia), W.ia.udp_port, ROCE_READ_REQ, W.ia.qpn, pa.epsn,
			      ext, 16, NULL, 0),
		   0);
	forge_atmeth(ext, (uintptr_t)(W.tgt + 3), rk, 1, 0);
	REQUIRE_EQ(forge_send(&W.f, addr_of(&W.ia), W.ia.udp_port, ROCE_FETCH_ADD, W.ia.qpn,
			      pa.epsn, ext, 28, NULL, 0),
		   0);
	{
		uint8_t pkt[512];
		struct roce_path mine = { .sip = W.f.sip,
					  .dip = addr_of(&W.ia),
					  .sport = W.f.sport,
					  .dport = W.ia.udp_port };
		uint32_t len;

		forge_reth(ext, (uintptr_t)W.tgt, rk, 64);
		len = forge_build(pkt, &mine, ROCE_WRITE_ONLY, W.ia.qpn, pa.epsn, ext, 16, pay, 64);
		pkt[1] |= 3 << 4; /* pad 3 on a 64-byte payload */
		gdak_roce_icrc_set(&mine, pkt, len);
		REQUIRE_EQ(forge_send_raw(&W.f, mine.dip, mine.dport, pkt, len), 0);
	}
	REQUIRE_EQ(forge_send(&W.f, addr_of(&W.ia), W.ia.udp_port, ROCE_WRITE_MIDDLE, W.ia.qpn,
			      pa.epsn, NULL, 0, pay, 256),
		   0);
	/* to the requester B: every NAK and an ACK, at the PSN it last sent */
	for (unsigned code = 0; code <= 4; code++) {
		forge_aeth(aeth, (uint8_t)(AETH_NAK | code), 0);
		REQUIRE_EQ(forge_send(&W.f, addr_of(&W.ib), W.ib.udp_port, ROCE_ACK, W.ib.qpn,
				      psn_add(pb.max_psn, -1), aeth, 4, NULL, 0),
			   0);
	}
	forge_aeth(aeth, AETH_ACK | 0x1f, 0);
	REQUIRE_EQ(forge_send(&W.f, addr_of(&W.ib), W.ib.udp_port, ROCE_ACK, W.ib.qpn,
			      psn_add(pb.max_psn, -1), aeth, 4, NULL, 0),
		   0);
	settle(&W.a, s.a, 10);
	settle(&W.b, s.b, 6);
	CHECK_EQ(foreign_of(&W.a) - s.fa, 10);
	CHECK_EQ(foreign_of(&W.b) - s.fb, 6);
	CHECK_EQ(peek(&W.a).st.foreign_pkts - pa.st.foreign_pkts, 10);
	/* nothing moved: PSN, memory, the receive WQE */
	CHECK_EQ(peek(&W.a).epsn, pa.epsn);
	CHECK_EQ(gdak_test_memdiff(W.tgt, W.shadow, TSZ), (size_t)-1);
	CHECK(!nu_cqe_ready(&W.a, 1));
	/* the peer's own WRITE at that very PSN lands (was taken as a
	 * duplicate, ACKed and dropped before) */
	gdak_test_fill(W.loc, 256, 77);
	expect_ok(&W.b, nu_post_rdma(&W.b, MLX5_OPCODE_RDMA_WRITE, W.loc, 256, lk,
				     (uintptr_t)(W.tgt + 128), rk, 0, NU_SIG));
	memcpy(W.shadow + 128, W.loc, 256);
	CHECK_MEM(W.tgt + 128, W.loc, 256);
	/* and the peer's SEND takes the receive WQE the stranger's did not */
	gdak_test_fill(W.loc + 12288, 60, 78);
	expect_ok(&W.b, nu_post_send(&W.b, MLX5_OPCODE_SEND, W.loc + 12288, 60, lk, 0, NU_SIG));
	REQUIRE_EQ(nu_poll(&W.a, 1, &f, POLL_MS), 0);
	CHECK_EQ(f.byte_cnt, 60);
	CHECK_MEM(W.loc + RECV_OFF, W.loc + 12288, 60);
	check_world("stranger");
}

static void case_sweep(void)
{
	uint8_t ext[16], pay[8], pkt[128];
	uint32_t rk = gdak_mr_rkey(W.mr_tgt);
	struct roce_path sp = path_b_to_a();
	struct before s = snap();
	uint32_t e = s.pa.epsn;
	uint64_t n = 0;

	memset(pay, 0xee, sizeof(pay));
	forge_reth(ext, (uintptr_t)(W.tgt + 64), rk, sizeof(pay));
	for (int32_t d = -2048; d < 2048; d++) {
		REQUIRE_EQ(forge_send(&W.f, addr_of(&W.ia), W.ia.udp_port, ROCE_WRITE_ONLY,
				      W.ia.qpn, psn_add(e, d), ext, 16, pay, sizeof(pay)),
			   0);
		if ((d & 255) == 255)
			settle(&W.a, s.a, (uint64_t)(d + 2049));
	}
	settle(&W.a, s.a, 4096);
	CHECK_EQ(foreign_of(&W.a) - s.fa, 4096);
	CHECK_EQ(peek(&W.a).epsn, e);
	CHECK_EQ(gdak_test_memdiff(W.tgt, W.shadow, TSZ), (size_t)-1);
	if (can_spoof("sweep")) {
		/* from the peer's address: every PSN but the expected one is a
		 * duplicate (ACKed, not applied) or ahead (dropped, one NAK) */
		s = snap();
		for (int32_t d = -1024; d <= 1024; d++) {
			uint32_t len;

			if (!d)
				continue;
			len = forge_build(pkt, &sp, ROCE_WRITE_ONLY, W.ia.qpn, psn_add(e, d), ext,
					  16, pay, sizeof(pay));
			REQUIRE_EQ(forge_spoof(&W.f, &sp, pkt, len), 0);
			n++;
			if ((n & 255) == 0)
				settle(&W.a, s.a, n);
		}
		settle(&W.a, s.a, n);
		CHECK_EQ(peek(&W.a).epsn, e);
		CHECK_EQ(gdak_test_memdiff(W.tgt, W.shadow, TSZ), (size_t)-1);
	}
	check_world("sweep");
}

static void case_idle_nak(void)
{
	uint8_t aeth[4];
	struct roce_path sp = path_a_to_b();
	struct before s;
	uint64_t n = 0;

	legit_round();
	s = snap();
	for (unsigned code = 1; code <= 4; code++) {
		forge_aeth(aeth, (uint8_t)(AETH_NAK | code), 0);
		REQUIRE_EQ(forge_send(&W.f, addr_of(&W.ib), W.ib.udp_port, ROCE_ACK, W.ib.qpn,
				      s.pb.una_psn, aeth, 4, NULL, 0),
			   0);
		REQUIRE_EQ(forge_send(&W.f, addr_of(&W.ib), W.ib.udp_port, ROCE_ACK, W.ib.qpn,
				      psn_add(s.pb.una_psn, -1), aeth, 4, NULL, 0),
			   0);
	}
	settle(&W.b, s.b, 8);
	CHECK_EQ(foreign_of(&W.b) - s.fb, 8);
	if (can_spoof("idle_nak")) {
		/* as if from the responder: the requester has nothing out, so
		 * the NAK answers nothing (rxe drops it); it must not kill B */
		s = snap();
		for (unsigned code = 1; code <= 4; code++) {
			uint8_t pkt[64];
			uint32_t len;

			forge_aeth(aeth, (uint8_t)(AETH_NAK | code), 0);
			len = forge_build(pkt, &sp, ROCE_ACK, W.ib.qpn, s.pb.una_psn, aeth, 4, NULL,
					  0);
			REQUIRE_EQ(forge_spoof(&W.f, &sp, pkt, len), 0);
			len = forge_build(pkt, &sp, ROCE_ACK, W.ib.qpn, psn_add(s.pb.una_psn, -1),
					  aeth, 4, NULL, 0);
			REQUIRE_EQ(forge_spoof(&W.f, &sp, pkt, len), 0);
			forge_aeth(aeth, AETH_RNR_NAK | 1, 0);
			len = forge_build(pkt, &sp, ROCE_ACK, W.ib.qpn, s.pb.una_psn, aeth, 4, NULL,
					  0);
			REQUIRE_EQ(forge_spoof(&W.f, &sp, pkt, len), 0);
			n += 3;
		}
		settle(&W.b, s.b, n);
		{
			struct nm_tr_udp_peek p = peek(&W.b);

			CHECK_EQ(p.st.rx_pkts - s.pb.st.rx_pkts, n);
			CHECK_EQ(p.st.err_naks_rcvd - s.pb.st.err_naks_rcvd, 4);
			CHECK_EQ(p.state, ROCE_QPS_RTS);
		}
	}
	/* the next WQE and the one after it complete (the bug: a bare flush,
	 * then nothing) */
	check_world("idle_nak");
}

/* RESET both QPs of the connected pair; what each one is now. */
static void reset_ab(struct gdak_qp_info *ia, struct gdak_qp_info *ib)
{
	REQUIRE_EQ(gdak_qp_modify(W.a.qp, GDAK_QPS_RESET, NULL), 0);
	REQUIRE_EQ(gdak_qp_modify(W.b.qp, GDAK_QPS_RESET, NULL), 0);
	REQUIRE_EQ(gdak_qp_info(W.a.qp, ia), 0);
	REQUIRE_EQ(gdak_qp_info(W.b.qp, ib), 0);
}

/* Connect the reset pair to each other again. */
static void connect_ab(const struct gdak_qp_info *ia, const struct gdak_qp_info *ib)
{
	REQUIRE_EQ(gdak_qp_connect(W.a.qp, ib), 0);
	REQUIRE_EQ(gdak_qp_connect(W.b.qp, ia), 0);
	nu_qp_from(&W.a, W.a.qp);
	nu_qp_from(&W.b, W.b.qp);
	W.ia = *ia;
	W.ib = *ib;
}

/* RESET both QPs of the connected pair and connect them again. */
static void reconnect_ab(void)
{
	struct gdak_qp_info ia, ib;

	reset_ab(&ia, &ib);
	connect_ab(&ia, &ib);
}

/* The next send CQE of q is an error CQE with syndrome synd for WQE idx. */
static void expect_err_cqe(struct nu_qp *q, uint8_t synd, uint16_t idx)
{
	struct gdak_mlx5_cqe_fields f;

	REQUIRE_EQ(nu_poll(q, 0, &f, POLL_MS), 0);
	CHECK_EQ(f.opcode, MLX5_CQE_REQ_ERR);
	CHECK_EQ(f.syndrome, synd);
	CHECK_EQ(f.wqe_counter, idx);
}

/* On q in ERR: a 64-byte WRITE or READ to the target completes flushed. */
static void post_expect_flush(struct nu_qp *q, uint8_t opcode, unsigned flags)
{
	uint16_t idx = nu_post_rdma(q, opcode, W.loc, 64, gdak_mr_lkey(W.mr_loc), (uintptr_t)W.tgt,
				    gdak_mr_rkey(W.mr_tgt), 0, flags);

	nu_ring(q);
	expect_err_cqe(q, MLX5_CQE_SYNDROME_WR_FLUSH_ERR, idx);
}

/* A remote error: the responder and the requester go to ERR with the
 * cause, and no WQE is left without a CQE. */
static void case_errors(void)
{
	uint32_t lk = gdak_mr_lkey(W.mr_loc), rk = gdak_mr_rkey(W.mr_tgt);
	struct gdak_qp_error e;
	uint16_t i1, i2;

	legit_round();
	/* WRITE past the end of the target region: REMOTE_ACCESS */
	i1 = nu_post_rdma(&W.b, MLX5_OPCODE_RDMA_WRITE, W.loc, 64, lk, (uintptr_t)(W.tgt + TSZ - 8),
			  rk, 0, NU_SIG);
	i2 = nu_post_rdma(&W.b, MLX5_OPCODE_RDMA_WRITE, W.loc, 64, lk, (uintptr_t)W.tgt, rk, 0,
			  NU_SIG);
	nu_ring(&W.b);
	expect_err_cqe(&W.b, MLX5_CQE_SYNDROME_REMOTE_ACCESS_ERR, i1);
	expect_err_cqe(&W.b, MLX5_CQE_SYNDROME_WR_FLUSH_ERR, i2);
	/* later WQEs: one flush CQE each, none missing */
	post_expect_flush(&W.b, MLX5_OPCODE_RDMA_WRITE, 0);
	post_expect_flush(&W.b, MLX5_OPCODE_RDMA_READ, 0);
	CHECK_EQ(nu_wait_state(&W.b, GDAK_QPS_ERR, POLL_MS), 0);
	memset(&e, 0, sizeof(e));
	CHECK_EQ(gdak_qp_query_error(W.b.qp, &e), 0);
	CHECK_EQ(e.syndrome, MLX5_CQE_SYNDROME_REMOTE_ACCESS_ERR);
	CHECK_EQ(e.wqe_index, i1);
	CHECK(strstr(e.text, "REMOTE_ACCESS") != NULL);
	CHECK_EQ(peek(&W.b).state, ROCE_QPS_ERR);
	/* the responder: ERR with its own cause, its WQEs flushed too */
	CHECK_EQ(nu_wait_state(&W.a, GDAK_QPS_ERR, POLL_MS), 0);
	memset(&e, 0, sizeof(e));
	CHECK_EQ(gdak_qp_query_error(W.a.qp, &e), 0);
	CHECK_EQ(e.syndrome, MLX5_CQE_SYNDROME_REMOTE_ACCESS_ERR);
	CHECK_STR(e.rule, "udp_responder");
	CHECK(e.text[0] != 0);
	post_expect_flush(&W.a, MLX5_OPCODE_RDMA_WRITE, NU_SIG);
	/* nothing written outside, the bystanders unaffected */
	CHECK(guards_ok());
	CHECK_EQ(gdak_test_memdiff(W.tgt, W.shadow, TSZ), (size_t)-1);
	qp_healthy(&W.c, "C");
	qp_healthy(&W.d, "D");
	/* RESET and reconnect: the pair works again */
	reconnect_ab();
	check_world("errors");
}

/* An ExtAtomicETH with every field given (xatmeth_set writes the
 * reserved bytes zero; resv puts them back). */
static void xeth(uint8_t *h, uint64_t va, uint32_t rkey, uint8_t lg, uint32_t resv, uint64_t sa,
		 uint64_t cmp, uint64_t sm, uint64_t cm)
{
	xatmeth_set(h, va, rkey, lg, sa, cmp, sm, cm);
	roce_put24(h + 13, resv);
}

static void case_xatomic(void)
{
	uint32_t rk = gdak_mr_rkey(W.mr_tgt);
	uint64_t cnt = (uintptr_t)(W.tgt + CNT);
	static const struct {
		const char *what;
		uint8_t op, lg;
		uint32_t resv;
		int64_t va_off;
		uint32_t rkey_xor;
		uint64_t sa, cmp, sm, cm;
		uint8_t syn;	 /* A's error syndrome */
		const char *why; /* in A's error text */
	} t[] = {
		{ "size 2 bytes", ROCE_XMASKED_FETCH_ADD, 1, 0, 0, 0, 1, 0, 0, 0,
		  MLX5_CQE_SYNDROME_REMOTE_INVAL_REQ_ERR, "operand size" },
		{ "size 16 bytes", ROCE_XMASKED_CMP_SWAP, 4, 0, 0, 0, 1, 0, ~0ull, 0,
		  MLX5_CQE_SYNDROME_REMOTE_INVAL_REQ_ERR, "operand size" },
		{ "reserved bytes", ROCE_XMASKED_CMP_SWAP, 3, 0x000100, 0, 0, 1, 0, ~0ull, 0,
		  MLX5_CQE_SYNDROME_REMOTE_INVAL_REQ_ERR, "reserved" },
		{ "FETCH_ADD with a compare mask", ROCE_XMASKED_FETCH_ADD, 3, 0, 0, 0, 1, 0, 0, 1,
		  MLX5_CQE_SYNDROME_REMOTE_INVAL_REQ_ERR, "compare fields" },
		{ "4-byte operand over 32 bits", ROCE_XMASKED_CMP_SWAP, 2, 0, 0, 0, 1ull << 32, 0,
		  ~0u, 0, MLX5_CQE_SYNDROME_REMOTE_INVAL_REQ_ERR, "wider than 32" },
		{ "4-byte mask over 32 bits", ROCE_XMASKED_FETCH_ADD, 2, 0, 0, 0, 1, 0, 1ull << 40,
		  0, MLX5_CQE_SYNDROME_REMOTE_INVAL_REQ_ERR, "wider than 32" },
		{ "8-byte unaligned", ROCE_XMASKED_FETCH_ADD, 3, 0, -4, 0, 1, 0, 0, 0,
		  MLX5_CQE_SYNDROME_REMOTE_INVAL_REQ_ERR, "not aligned" },
		{ "4-byte unaligned", ROCE_XMASKED_CMP_SWAP, 2, 0, 2, 0, 1, 0, ~0u, 0,
		  MLX5_CQE_SYNDROME_REMOTE_INVAL_REQ_ERR, "not aligned" },
		{ "wrong rkey", ROCE_XMASKED_FETCH_ADD, 2, 0, 0, 0x100, 1, 0, 0, 0,
		  MLX5_CQE_SYNDROME_REMOTE_ACCESS_ERR, "rejected" },
	};
	struct roce_path sp = path_b_to_a();

	(void)can_spoof("xatomic");
	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		struct nm_tr_udp_peek pa;
		struct gdak_qp_error e;
		uint8_t ext[ROCE_XATMETH_LEN], pkt[256];
		struct before s;
		uint32_t len;

		legit_round();
		s = snap();
		pa = s.pa;
		xeth(ext, cnt + (uint64_t)t[i].va_off, rk ^ t[i].rkey_xor, t[i].lg, t[i].resv,
		     t[i].sa, t[i].cmp, t[i].sm, t[i].cm);
		len = forge_build(pkt, &sp, t[i].op, W.ia.qpn, pa.epsn, ext, sizeof(ext), NULL, 0);
		REQUIRE_EQ(forge_spoof(&W.f, &sp, pkt, len), 0);
		if (nu_wait_state(&W.a, GDAK_QPS_ERR, POLL_MS)) {
			gdak_test_fail(__FILE__, __LINE__, "%s: A never went to ERR", t[i].what);
			continue;
		}
		memset(&e, 0, sizeof(e));
		CHECK_EQ(gdak_qp_query_error(W.a.qp, &e), 0);
		CHECK_EQ(e.syndrome, t[i].syn);
		CHECK_STR(e.rule, "udp_responder");
		if (!strstr(e.text, t[i].why))
			gdak_test_fail(__FILE__, __LINE__, "%s: error text '%s' lacks '%s'",
				       t[i].what, e.text, t[i].why);
		pa = peek(&W.a);
		CHECK_EQ(pa.st.err_naks_sent - s.pa.st.err_naks_sent, 1);
		CHECK_EQ(pa.st.bad_xatomics - s.pa.st.bad_xatomics,
			 t[i].syn == MLX5_CQE_SYNDROME_REMOTE_INVAL_REQ_ERR ? 1u : 0u);
		/* nothing applied: the target holds what the peer wrote */
		CHECK_EQ(gdak_test_memdiff(W.tgt, W.shadow, TSZ), (size_t)-1);
		CHECK(guards_ok());
		printf("xatomic: %s -> %s (%s)\n", t[i].what, gdak_mlx5_syndrome_name(e.syndrome),
		       e.text);
		reconnect_ab();
	}
	check_world("xatomic");
}

static void case_reset(void)
{
	uint8_t ext[16], pay[64], pkt[128];
	uint32_t rk = gdak_mr_rkey(W.mr_tgt);
	struct gdak_qp_info ia, ib;
	uint32_t seen[200];
	struct roce_path sp;
	uint32_t stale_psn;

	legit_round();
	stale_psn = psn_add(peek(&W.a).epsn, -1); /* the last WRITE's PSN... of some request */
	for (int k = 0; k < 200; k++) {
		reset_ab(&ia, &ib);
		/* a new first PSN at every RESET, none seen before */
		CHECK(ib.psn != W.ib.psn);
		CHECK(ia.psn != W.ia.psn);
		seen[k] = ib.psn;
		for (int j = 0; j < k; j++)
			CHECK(seen[j] != ib.psn);
		connect_ab(&ia, &ib);
		CHECK_EQ(peek(&W.a).epsn, ib.psn);
		CHECK_EQ(peek(&W.b).tx_psn, ib.psn);
	}
	legit_round();
	if (can_spoof("reset")) {
		/* a packet of the old connection, replayed from the peer's address */
		struct before s = snap();

		sp = path_b_to_a();
		memset(pay, 0xee, sizeof(pay));
		forge_reth(ext, (uintptr_t)W.tgt, rk, sizeof(pay));
		for (int32_t d = -4; d <= 4; d++) {
			uint32_t len = forge_build(pkt, &sp, ROCE_WRITE_ONLY, W.ia.qpn,
						   psn_add(stale_psn, d), ext, 16, pay,
						   sizeof(pay));
			REQUIRE_EQ(forge_spoof(&W.f, &sp, pkt, len), 0);
		}
		settle(&W.a, s.a, 9);
		CHECK_EQ(gdak_test_memdiff(W.tgt, W.shadow, TSZ), (size_t)-1);
	}
	check_world("reset");
}

static int cmp32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	return x < y ? -1 : x > y;
}

/* Identifiers: random, never repeated where a repeat is a collision, never
 * a reserved value. */
static void case_ids(void)
{
	enum {
		NMR = 100000,
		NSLOT = 1000,
		NQP = 300
	};
	struct gdak_ctx *ctx;
	struct gdak_mr **mr = calloc(NMR, sizeof(*mr));
	uint32_t *keys = calloc(NMR, sizeof(*keys)), cnt[256] = { 0 }, qpn[NQP];
	uint8_t *bits = calloc(1u << 21, 1);
	uint8_t *buf;
	unsigned distinct = 0, plus1 = 0, rep = 0;
	uint8_t prev = 0;

	REQUIRE(mr && keys && bits);
	REQUIRE_EQ(gdak_open("emu", &ctx), 0);
	REQUIRE_EQ(gdak_mem_alloc(ctx, NMR, GDAK_MEM_HOST, (void **)&buf), 0);
	/* 100000 registrations alive at once: all keys distinct, none reserved,
	 * key bytes spread over 1..255 */
	for (unsigned i = 0; i < NMR; i++) {
		REQUIRE_EQ(gdak_mr_reg(ctx, buf + i, 1, GDAK_ACCESS_ALL, &mr[i]), 0);
		keys[i] = gdak_mr_lkey(mr[i]);
		CHECK_EQ(gdak_mr_rkey(mr[i]), keys[i]);
		cnt[keys[i] & 0xff]++;
	}
	qsort(keys, NMR, sizeof(*keys), cmp32);
	for (unsigned i = 1; i < NMR; i++)
		rep += keys[i] == keys[i - 1];
	CHECK_EQ(rep, 0);
	CHECK(keys[0] != 0 && keys[0] != 0x100);
	for (unsigned i = 0; i < NMR; i++)
		CHECK(keys[i] != 0x100 && (keys[i] & 0xff) != 0);
	CHECK_EQ(cnt[0], 0);
	for (unsigned b = 1; b < 256; b++) {
		/* expected 392 each; 7 standard deviations either way */
		if (cnt[b] < 250 || cnt[b] > 540)
			CHECK(!"MR key bytes are not spread evenly");
	}
	for (unsigned i = 0; i < NMR; i++)
		REQUIRE_EQ(gdak_mr_dereg(mr[i]), 0);
	/* one slot registered again and again: a new key byte each time */
	memset(cnt, 0, sizeof(cnt));
	for (unsigned i = 0; i < NSLOT; i++) {
		struct gdak_mr *m;
		uint8_t k;

		REQUIRE_EQ(gdak_mr_reg(ctx, buf, 8, GDAK_ACCESS_ALL, &m), 0);
		k = (uint8_t)gdak_mr_lkey(m);
		CHECK(k != 0);
		if (i) {
			CHECK(k != prev);
			plus1 += k == (uint8_t)(prev + 1);
		}
		distinct += !cnt[k]++;
		prev = k;
		REQUIRE_EQ(gdak_mr_dereg(m), 0);
	}
	CHECK(distinct >= 200); /* expected about 250 */
	CHECK(plus1 < 30);	/* a counter would give 999 */
	CHECK_EQ(gdak_mem_free(ctx, buf), 0);
	/* QPNs: not a counter, never 0/1, never repeated */
	for (unsigned i = 0; i < NQP; i++) {
		struct gdak_qp *q;

		REQUIRE_EQ(gdak_qp_create(ctx, NULL, &q), 0);
		qpn[i] = gdak_qp_num(q);
		CHECK(qpn[i] >= 2 && qpn[i] <= ROCE_PSN_MASK);
		REQUIRE_EQ(gdak_qp_destroy(q), 0);
	}
	plus1 = 0;
	for (unsigned i = 1; i < NQP; i++)
		plus1 += qpn[i] == qpn[i - 1] + 1;
	CHECK(plus1 < 3);
	qsort(qpn, NQP, sizeof(*qpn), cmp32);
	for (unsigned i = 1; i < NQP; i++)
		CHECK(qpn[i] != qpn[i - 1]);
	gdak_close(ctx);
	/* first PSNs: 100000 draws, no repeat (2^24 bitmap); the sequence is a
	 * permutation of the whole 24-bit space */
	rep = 0;
	for (unsigned i = 0; i < NMR; i++) {
		uint32_t p = nm_rand_seq24(NM_RAND_PSN);

		rep += (bits[p >> 3] >> (p & 7)) & 1;
		bits[p >> 3] |= (uint8_t)(1u << (p & 7));
	}
	CHECK_EQ(rep, 0);
	memset(bits, 0, 1u << 21);
	rep = 0;
	for (uint32_t x = 0; x < (1u << 24); x++) {
		uint32_t p = nm_rand_perm24(NM_RAND_PSN, x);

		rep += p > ROCE_PSN_MASK || ((bits[p >> 3] >> (p & 7)) & 1);
		bits[p >> 3] |= (uint8_t)(1u << (p & 7));
	}
	CHECK_EQ(rep, 0);
	free(bits);
	free(keys);
	free(mr);
	printf("ids: checked\n");
}

/* ---- the engine alone (no sockets): the requester's side of idle NAKs ----- */

static struct {
	unsigned ncomp, nfatal, nforeign;
	uint8_t last_st;
} E;

static int e_xmit(struct roce_qp *qp, const uint8_t *pkt, uint32_t len)
{
	(void)qp;
	(void)pkt;
	(void)len;
	return 0; /* the responder is not there: nothing comes back */
}
static struct roce_qp *e_qp;
static struct roce_qp *e_lookup(struct roce_ctx *c, uint32_t qpn)
{
	(void)c;
	return qpn == e_qp->qpn ? e_qp : NULL;
}
static int e_gather(struct roce_qp *qp, struct roce_wr *wr, uint32_t off, void *dst, uint32_t len)
{
	(void)qp;
	(void)wr;
	(void)off;
	memset(dst, 0x5a, len);
	return 0;
}
static int e_scatter(struct roce_qp *qp, struct roce_wr *wr, uint32_t off, const void *src,
		     uint32_t len)
{
	(void)qp;
	(void)wr;
	(void)off;
	(void)src;
	(void)len;
	return 0;
}
static void e_complete(struct roce_qp *qp, struct roce_wr *wr, uint8_t st)
{
	(void)qp;
	(void)wr;
	E.ncomp++;
	E.last_st = st;
}
static void e_req_fatal(struct roce_qp *qp, uint8_t st, const char *why)
{
	(void)qp;
	(void)st;
	(void)why;
	E.nfatal++;
}
static void e_foreign(struct roce_qp *qp, const struct roce_path *rx, const uint8_t *pkt,
		      uint32_t len)
{
	(void)qp;
	(void)rx;
	(void)pkt;
	(void)len;
	E.nforeign++;
}
static int e_resp_none(struct roce_qp *qp, struct roce_rmsg *m)
{
	(void)qp;
	(void)m;
	return MLX5_CQE_SYNDROME_REMOTE_ACCESS_ERR;
}
static int e_resp_data(struct roce_qp *qp, struct roce_rmsg *m, uint32_t off, const void *src,
		       uint32_t len)
{
	(void)qp;
	(void)m;
	(void)off;
	(void)src;
	(void)len;
	return MLX5_CQE_SYNDROME_REMOTE_ACCESS_ERR;
}
static int e_resp_end(struct roce_qp *qp, struct roce_rmsg *m, int st)
{
	(void)qp;
	(void)m;
	return st;
}
static int e_rcheck(struct roce_qp *qp, uint32_t rkey, uint64_t va, uint32_t len)
{
	(void)qp;
	(void)rkey;
	(void)va;
	(void)len;
	return MLX5_CQE_SYNDROME_REMOTE_ACCESS_ERR;
}
static int e_read(struct roce_qp *qp, uint32_t rkey, uint64_t va, void *dst, uint32_t len)
{
	(void)qp;
	(void)rkey;
	(void)va;
	(void)dst;
	(void)len;
	return MLX5_CQE_SYNDROME_REMOTE_ACCESS_ERR;
}
static int e_atomic(struct roce_qp *qp, uint8_t op, uint32_t rkey, uint64_t va, uint64_t sa,
		    uint64_t cmp, uint64_t *orig)
{
	(void)qp;
	(void)op;
	(void)rkey;
	(void)va;
	(void)sa;
	(void)cmp;
	(void)orig;
	return MLX5_CQE_SYNDROME_REMOTE_ACCESS_ERR;
}
static void e_resp_fatal(struct roce_qp *qp, uint8_t st, const char *why)
{
	(void)st;
	(void)why;
	roce_qp_error(qp);
}

static const struct roce_ops e_ops = {
	.xmit = e_xmit,
	.lookup = e_lookup,
	.req_gather = e_gather,
	.req_scatter = e_scatter,
	.req_complete = e_complete,
	.resp_begin = e_resp_none,
	.resp_data = e_resp_data,
	.resp_imm = e_resp_none,
	.resp_end = e_resp_end,
	.resp_read_check = e_rcheck,
	.resp_read = e_read,
	.resp_atomic = e_atomic,
	.resp_fatal = e_resp_fatal,
	.req_fatal = e_req_fatal,
	.rx_foreign = e_foreign,
};

/* An ACK-class packet from path to the engine's QP. */
static int e_rx(struct roce_ctx *c, const struct roce_path *p, uint8_t op, uint8_t syn,
		uint32_t psn)
{
	const struct roce_opinfo *oi = roce_op(op);
	uint8_t pkt[64], ext[32] = { 0 };
	uint32_t n = oi->hdr_len - ROCE_BTH_LEN, len;

	if (oi->off_aeth)
		forge_aeth(ext + oi->off_aeth - ROCE_BTH_LEN, syn, 0);
	len = forge_build(pkt, p, op, e_qp->qpn, psn, ext, n, NULL, 0);
	return roce_rx(c, p, pkt, len, 1000);
}

static void case_engine(void)
{
	struct roce_ctx c;
	struct roce_qp qp;
	struct roce_path me = {
		.sip = htonl(0x0a000001), .dip = htonl(0x0a000002), .sport = 1111, .dport = 2222
	};
	struct roce_path peer = {
		.sip = me.dip, .dip = me.sip, .sport = me.dport, .dport = me.sport
	};
	struct roce_path other = peer, port = peer;
	struct roce_wr wr = { .op = ROCE_WR_WRITE, .len = 64, .raddr = 0x1000, .rkey = 7 };
	struct roce_stats s0;

	other.sip = htonl(0x0a000003);
	port.sport = 3333;
	memset(&E, 0, sizeof(E));
	roce_ctx_init(&c, &e_ops, NULL);
	REQUIRE_EQ(roce_qp_init(&qp, &c, 0x1234, NULL), 0);
	e_qp = &qp;
	REQUIRE_EQ(roce_qp_connect(&qp, 0x4321, 1000, 5000, 1024, &me), 0);
	qp.peer_sport = peer.sport;

	/* error NAKs, an RNR NAK, an ACK and a READ response at the idle
	 * requester, from its peer: dropped, the QP stays RTS, nobody told of
	 * an error (before: ERR inside with nothing to report it on) */
	for (unsigned code = 1; code <= 4; code++) {
		CHECK_EQ(e_rx(&c, &peer, ROCE_ACK, (uint8_t)(AETH_NAK | code), 1000), 0);
		CHECK_EQ(e_rx(&c, &peer, ROCE_ACK, (uint8_t)(AETH_NAK | code), 999), 0);
	}
	CHECK_EQ(e_rx(&c, &peer, ROCE_ACK, AETH_RNR_NAK | 3, 1000), 0);
	CHECK_EQ(e_rx(&c, &peer, ROCE_ACK, AETH_ACK | 0x1f, 1000), 0);
	CHECK_EQ(e_rx(&c, &peer, ROCE_READ_RESP_ONLY, AETH_ACK | 0x1f, 1000), 0);
	CHECK_EQ(e_rx(&c, &peer, ROCE_ATOMIC_ACK, AETH_ACK | 0x1f, 999), 0);
	CHECK_EQ(qp.state, ROCE_QPS_RTS);
	CHECK_EQ(E.nfatal, 0);
	CHECK_EQ(E.ncomp, 0);
	CHECK_EQ(qp.stats.err_naks_rcvd, 4); /* the ones at 999: behind, duplicates */
	CHECK(qp.stats.bad_pkts + qp.stats.dup_resps + qp.stats.unsolicited >= 12);
	/* a WR posted but not sent yet: a NAK still answers nothing */
	REQUIRE_EQ(roce_post(&qp, &wr), 0);
	CHECK_EQ(e_rx(&c, &peer, ROCE_ACK, AETH_NAK | AETH_NAK_REM_ACCESS, 1000), 0);
	CHECK_EQ(qp.state, ROCE_QPS_RTS);
	s0 = qp.stats;
	/* strangers: another address, or the peer's address from another port */
	CHECK_EQ(e_rx(&c, &other, ROCE_ACK, AETH_NAK | AETH_NAK_REM_ACCESS, 1000), -EPERM);
	CHECK_EQ(e_rx(&c, &port, ROCE_ACK, AETH_NAK | AETH_NAK_REM_ACCESS, 1000), -EPERM);
	CHECK_EQ(E.nforeign, 2);
	CHECK_EQ(qp.stats.foreign_pkts, 2);
	CHECK_EQ(qp.stats.rx_pkts, s0.rx_pkts);
	/* the WR goes out; the peer's NAK for it fails it - once, with its
	 * syndrome, and the owner learns it through the WR, not req_fatal */
	CHECK(roce_qp_progress(&qp, 1000, 8) >= 1);
	CHECK_EQ(e_rx(&c, &peer, ROCE_ACK, AETH_NAK | AETH_NAK_REM_ACCESS, 1000), 0);
	CHECK_EQ(E.ncomp, 1);
	CHECK_EQ(E.last_st, MLX5_CQE_SYNDROME_REMOTE_ACCESS_ERR);
	CHECK_EQ(qp.state, ROCE_QPS_ERR);
	CHECK_EQ(qp.err_syn, MLX5_CQE_SYNDROME_REMOTE_ACCESS_ERR);
	CHECK(qp.err_why != NULL);
	CHECK_EQ(E.nfatal, 0);
	/* peer_sport 0 (a kernel RoCE stack's flow-entropy ports): the address
	 * alone is checked */
	roce_qp_fini(&qp);
	REQUIRE_EQ(roce_qp_init(&qp, &c, 0x1234, NULL), 0);
	REQUIRE_EQ(roce_qp_connect(&qp, 0x4321, 1000, 5000, 1024, &me), 0);
	CHECK_EQ(e_rx(&c, &port, ROCE_ACK, AETH_ACK | 0x1f, 999), 0);
	CHECK_EQ(e_rx(&c, &other, ROCE_ACK, AETH_ACK | 0x1f, 999), -EPERM);
	roce_qp_fini(&qp);
	roce_ctx_fini(&c);
	printf("engine: checked\n");
}

int main(int argc, char **argv)
{
	static const struct {
		const char *name;
		void (*fn)(void);
	} cases[] = { { "random", case_random },     { "trunc", case_trunc },
		      { "fields", case_fields },     { "wrongqpn", case_wrongqpn },
		      { "stranger", case_stranger }, { "sweep", case_sweep },
		      { "idle_nak", case_idle_nak }, { "errors", case_errors },
		      { "reset", case_reset },	     { "xatomic", case_xatomic } };

	gdak_set_log_level(GDAK_LOG_ERROR);
	unsetenv("GDAK_UDP_LOCAL");
	unsetenv("GDAK_FAULTS");
	if (argc < 2) {
		fprintf(stderr, "usage: %s CASE\n", argv[0]);
		return 2;
	}
	if (!strcmp(argv[1], "ids")) {
		case_ids();
		return gdak_test_end();
	}
	if (!strcmp(argv[1], "engine")) {
		case_engine();
		return gdak_test_end();
	}
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		if (strcmp(argv[1], cases[i].name))
			continue;
		world_open();
		legit_round();
		cases[i].fn();
		world_close();
		return gdak_test_end();
	}
	fprintf(stderr, "unknown case '%s'\n", argv[1]);
	return 2;
}
