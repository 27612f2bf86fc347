/* SPDX-License-Identifier: MIT */
/*
 * net_roce_engine.c - the RoCEv2 RC engine between two endpoints joined by a
 * fake wire, with fake memory and a fake clock (no sockets, no timing
 * dependence): every operation at every path MTU; loss, duplication,
 * reordering, corruption and delay at 1/5/20% with every WR completing
 * exactly once and the data intact; atomics never applied twice; retry and
 * RNR exhaustion, remote errors and garbage packets ending in the right
 * syndrome or a counted drop.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>

#include "gdak_roce_test.h"
#include "gdak_test.h"
#include "roce.h"

#define MEM_SZ (4u << 20)
#define RBUF_SZ (64u << 10)
#define RBUFS 16
#define RKEY 0x1234
#define RKEY_RO 0x5678 /* remote read only */
#define MAX_WR 4096

struct recv_done {
	uint32_t len, imm;
	uint8_t has_imm, st, kind;
};

struct side {
	struct roce_ctx ctx;
	struct roce_qp qp;
	struct roce_path path;	/* of the packets it sends */
	uint8_t *mem;		/* remotely accessible, va = offset */
	uint8_t *local;		/* requester buffers */
	uint8_t *rbuf;		/* RBUFS receive buffers */
	unsigned rq_posted, rq_used;
	struct recv_done recv[MAX_WR];
	unsigned nrecv;
	unsigned nfatal, natomic_applied;
	uint8_t fatal_st;
};

struct twr {
	struct roce_wr wr;
	uint32_t local_off;
	int ncomp;
	uint8_t st;
};

static struct side S[2];
static struct twr W[MAX_WR];
static unsigned nw, ncomp_total;
static uint64_t now;

struct qpkt {
	struct qpkt *next;
	int from;
	uint32_t len;
	uint8_t b[];
};
static struct qpkt *qhead, **qtail = &qhead;

static struct side *side_of(struct roce_qp *qp) { return qp == &S[0].qp ? &S[0] : &S[1]; }

static int xmit(struct roce_qp *qp, const uint8_t *pkt, uint32_t len)
{
	struct qpkt *p = malloc(sizeof(*p) + len);

	REQUIRE(p);
	p->next = NULL;
	p->from = side_of(qp) == &S[1];
	p->len = len;
	memcpy(p->b, pkt, len);
	*qtail = p;
	qtail = &p->next;
	return 0;
}

static struct roce_qp *lookup(struct roce_ctx *c, uint32_t qpn)
{
	struct side *s = c == &S[0].ctx ? &S[0] : &S[1];
	return s->qp.qpn == qpn ? &s->qp : NULL;
}

static int gather(struct roce_qp *qp, struct roce_wr *wr, uint32_t off, void *dst, uint32_t len)
{
	memcpy(dst, side_of(qp)->local + W[wr->cookie].local_off + off, len);
	return 0;
}

static int scatter(struct roce_qp *qp, struct roce_wr *wr, uint32_t off, const void *src,
		   uint32_t len)
{
	memcpy(side_of(qp)->local + W[wr->cookie].local_off + off, src, len);
	return 0;
}

static void complete(struct roce_qp *qp, struct roce_wr *wr, uint8_t st)
{
	struct twr *t = &W[wr->cookie];

	t->ncomp++;
	t->st = st;
	ncomp_total++;
}

static int key_ok(uint32_t rkey, uint64_t va, uint64_t len, int write)
{
	return roce_test_key_check(rkey, va, len, write, RKEY, RKEY_RO, MEM_SZ);
}

static int take_rwqe(struct side *s, struct roce_rmsg *m)
{
	if (s->rq_used == s->rq_posted)
		return ROCE_RNR;
	m->priv = s->rbuf + (s->rq_used++ % RBUFS) * RBUF_SZ;
	return 0;
}

static int r_begin(struct roce_qp *qp, struct roce_rmsg *m)
{
	struct side *s = side_of(qp);
	int st;

	if (m->kind == ROCE_WR_WRITE) {
		st = key_ok(m->rkey, m->va, m->dma_len, 1);
		if (st)
			return st;
		return m->has_imm ? take_rwqe(s, m) : 0;
	}
	return take_rwqe(s, m);
}

static int r_imm(struct roce_qp *qp, struct roce_rmsg *m) { return take_rwqe(side_of(qp), m); }

static int r_data(struct roce_qp *qp, struct roce_rmsg *m, uint32_t off, const void *src,
		  uint32_t len)
{
	struct side *s = side_of(qp);

	if (m->kind == ROCE_WR_WRITE) {
		int st = key_ok(m->rkey, m->va + off, len, 1);
		if (st)
			return st;
		memcpy(s->mem + m->va + off, src, len);
		return 0;
	}
	if (off + len > RBUF_SZ)
		return MLX5_CQE_SYNDROME_LOCAL_LENGTH_ERR;
	memcpy((uint8_t *)m->priv + off, src, len);
	return 0;
}

static int r_end(struct roce_qp *qp, struct roce_rmsg *m, int st)
{
	struct side *s = side_of(qp);

	if (m->kind == ROCE_WR_SEND || m->has_imm) {
		struct recv_done *r = &s->recv[s->nrecv++ % MAX_WR];
		r->len = m->kind == ROCE_WR_SEND ? m->off : m->dma_len;
		r->imm = ntohl(m->imm);
		r->has_imm = m->has_imm;
		r->st = (uint8_t)st;
		r->kind = m->kind;
	}
	return 0;
}

static int r_rcheck(struct roce_qp *qp, uint32_t rkey, uint64_t va, uint32_t len)
{
	return key_ok(rkey, va, len, 0);
}

static int r_read(struct roce_qp *qp, uint32_t rkey, uint64_t va, void *dst, uint32_t len)
{
	int st = key_ok(rkey, va, len, 0);
	if (!st)
		memcpy(dst, side_of(qp)->mem + va, len);
	return st;
}

static int r_atomic(struct roce_qp *qp, uint8_t op, uint32_t rkey, uint64_t va, uint64_t sa,
		    uint64_t cmp, uint64_t *orig)
{
	struct side *s = side_of(qp);
	uint64_t v;
	int st = key_ok(rkey, va, 8, 1);

	if (st)
		return st;
	memcpy(&v, s->mem + va, 8);
	*orig = v;
	v = op == ROCE_FETCH_ADD ? v + sa : (v == cmp ? sa : v);
	memcpy(s->mem + va, &v, 8);
	s->natomic_applied++;
	return 0;
}

static void r_fatal(struct roce_qp *qp, uint8_t st, const char *why)
{
	struct side *s = side_of(qp);
	s->nfatal++;
	s->fatal_st = st;
	roce_qp_error(qp); /* what the NIC model does: the QP goes to ERR */
}

static const struct roce_ops ops = {
	.xmit = xmit, .lookup = lookup, .req_gather = gather, .req_scatter = scatter,
	.req_complete = complete, .resp_begin = r_begin, .resp_data = r_data, .resp_imm = r_imm,
	.resp_end = r_end, .resp_read_check = r_rcheck, .resp_read = r_read,
	.resp_atomic = r_atomic, .resp_fatal = r_fatal,
};

/* ---- world set-up and driver --------------------------------------------------- */

static void world_fini(void)
{
	while (qhead) {
		struct qpkt *p = qhead;
		qhead = p->next;
		free(p);
	}
	qtail = &qhead;
	for (int i = 0; i < 2; i++) {
		roce_qp_fini(&S[i].qp);
		roce_ctx_fini(&S[i].ctx);
		free(S[i].mem);
		free(S[i].local);
		free(S[i].rbuf);
	}
}

static void world_init(uint32_t mtu, const struct roce_cfg *cfg, uint32_t psn0,
		       const char *faults_a, const char *faults_b)
{
	struct roce_cfg c = cfg ? *cfg : (struct roce_cfg){0};

	memset(S, 0, sizeof(S));
	memset(W, 0, sizeof(W));
	nw = ncomp_total = 0;
	now = 1000;
	c.mtu = mtu;
	if (!c.sq_size)
		c.sq_size = 4096;
	for (int i = 0; i < 2; i++) {
		struct side *s = &S[i];
		roce_ctx_init(&s->ctx, &ops, s);
		s->mem = malloc(MEM_SZ);
		s->local = malloc(MEM_SZ);
		s->rbuf = malloc(RBUFS * RBUF_SZ);
		REQUIRE(s->mem && s->local && s->rbuf);
		gdak_test_fill(s->mem, MEM_SZ, 10 + i);
		gdak_test_fill(s->local, MEM_SZ, 20 + i);
		s->path = (struct roce_path){.sip = htonl(0x0a000001 + i), .dip = htonl(0x0a000002 - i),
					     .sport = (uint16_t)(50000 + i), .dport = ROCE_UDP_PORT};
		REQUIRE_EQ(roce_qp_init(&s->qp, &s->ctx, 0x100 + i, &c), 0);
		REQUIRE_EQ(roce_fault_parse(i ? faults_b : faults_a, &s->ctx.faults), 0);
	}
	REQUIRE_EQ(roce_qp_connect(&S[0].qp, 0x101, psn0, psn0 ^ 0x5555, mtu, &S[0].path), 0);
	REQUIRE_EQ(roce_qp_connect(&S[1].qp, 0x100, psn0 ^ 0x5555, psn0, mtu, &S[1].path), 0);
}

static unsigned post(int side, uint8_t op, uint32_t len, uint64_t raddr, uint32_t rkey,
		     uint32_t local_off, uint64_t sa, uint64_t cmp)
{
	struct twr *t = &W[nw];

	REQUIRE(nw < MAX_WR);
	t->wr = (struct roce_wr){.cookie = nw, .op = op, .len = len, .raddr = raddr, .rkey = rkey,
				 .imm = htonl(0xabc00000 + nw), .swap_add = sa, .cmp = cmp};
	t->local_off = local_off;
	REQUIRE_EQ(roce_post(&S[side].qp, &t->wr), 0);
	return nw++;
}

/* Deliver, progress, and advance the clock to the next deadline when idle.
 * Returns 0 when every posted WR completed and both ends went quiet. */
static int run(void)
{
	for (unsigned steps = 0; steps < 2000000; steps++) {
		int moved = 0;

		for (int i = 0; i < 2; i++) {
			moved += roce_qp_progress(&S[i].qp, now, 32);
			CHECK(S[i].qp.rd_inflight <= S[i].qp.cfg.max_rd_atomic);
		}
		struct qpkt *p = qhead;
		qhead = NULL;
		qtail = &qhead;
		while (p) {
			struct qpkt *next = p->next;
			struct side *from = &S[p->from], *to = &S[!p->from];
			(void)roce_rx(&to->ctx, &from->path, p->b, p->len, now);
			free(p);
			p = next;
			moved++;
		}
		if (!moved && ncomp_total == nw && !roce_qp_busy(&S[0].qp) && !roce_qp_busy(&S[1].qp))
			return 0;
		if (!moved) {
			uint64_t d = roce_qp_deadline(&S[0].qp), d1 = roce_qp_deadline(&S[1].qp);
			if (d1 < d)
				d = d1;
			if (d == UINT64_MAX)
				return -1; /* nothing will ever happen: a hang */
			if (d > now)
				now = d;
			roce_qp_timer(&S[0].qp, now);
			roce_qp_timer(&S[1].qp, now);
		} else {
			now += 1000;
		}
	}
	return -2;
}

/* ---- a mixed workload with full verification ----------------------------------- */

struct mix_expect {
	unsigned first, n;
	unsigned sends[MAX_WR], nsends;
	uint64_t fa_base, cs_base;
};

/* Writes, sends (with/without imm), reads and atomics from side 0 to side
 * 1; every region distinct so the result is checkable byte by byte. */
static void mix_post(unsigned n, uint32_t mtu, uint64_t seed, struct mix_expect *e)
{
	uint64_t rs = seed;
	const uint32_t slot = 3 * 4096 + 64;
	uint64_t fa_va = MEM_SZ - 64, cs_va = MEM_SZ - 32;

	memset(e, 0, sizeof(*e));
	e->first = nw;
	memcpy(&e->fa_base, S[1].mem + fa_va, 8);
	memcpy(&e->cs_base, S[1].mem + cs_va, 8);
	S[1].rq_posted = 1u << 30; /* plenty of receive WQEs */
	for (unsigned i = 0; i < n; i++) {
		unsigned k = (unsigned)(gdak_test_rand(&rs) % 7);
		uint32_t len = (uint32_t)(gdak_test_rand(&rs) % (3 * mtu + 20));
		uint32_t off = i * slot;
		unsigned fa_i = 0, cs_i = 0;

		for (unsigned j = e->first; j < nw; j++) {
			fa_i += W[j].wr.op == ROCE_WR_FETCH_ADD;
			cs_i += W[j].wr.op == ROCE_WR_CMP_SWAP;
		}
		if (len > RBUF_SZ)
			len = RBUF_SZ;
		switch (k) {
		case 0: case 1:
			post(0, k ? ROCE_WR_WRITE_IMM : ROCE_WR_WRITE, len, off, RKEY, off, 0, 0);
			break;
		case 2: case 3:
			e->sends[e->nsends++] = nw;
			post(0, k == 3 ? ROCE_WR_SEND_IMM : ROCE_WR_SEND, len, 0, 0, off, 0, 0);
			break;
		case 4:
			post(0, ROCE_WR_READ, len, off, RKEY, off, 0, 0);
			break;
		case 5:
			post(0, ROCE_WR_FETCH_ADD, 8, fa_va, RKEY, off, fa_i + 1, 0);
			break;
		default:
			/* a chain: each compare-swap expects the previous one's result */
			post(0, ROCE_WR_CMP_SWAP, 8, cs_va, RKEY, off, e->cs_base + cs_i + 1,
			     e->cs_base + cs_i);
			break;
		}
	}
	e->n = n;
}

static void mix_check(const struct mix_expect *e, const uint8_t *local0, const uint8_t *mem1)
{
	uint64_t fa_sum = 0, fa_total = 0, v;
	unsigned cs_n = 0, send_i = 0, rq_imm = 0;

	for (unsigned i = e->first; i < e->first + e->n; i++) {
		struct twr *t = &W[i];
		uint32_t off = t->local_off, len = t->wr.len;

		CHECK_EQ(t->ncomp, 1);
		CHECK_EQ(t->st, 0);
		switch (t->wr.op) {
		case ROCE_WR_WRITE:
		case ROCE_WR_WRITE_IMM:
			CHECK_MEM(S[1].mem + t->wr.raddr, local0 + off, len);
			rq_imm += t->wr.op == ROCE_WR_WRITE_IMM;
			break;
		case ROCE_WR_READ:
			CHECK_MEM(S[0].local + off, mem1 + t->wr.raddr, len);
			break;
		case ROCE_WR_FETCH_ADD:
			memcpy(&v, S[0].local + off, 8);
			CHECK_EQ(v, e->fa_base + fa_sum); /* applied once, in order */
			fa_sum += t->wr.swap_add;
			fa_total++;
			break;
		case ROCE_WR_CMP_SWAP:
			memcpy(&v, S[0].local + off, 8);
			CHECK_EQ(v, e->cs_base + cs_n);
			cs_n++;
			break;
		default:
			break;
		}
	}
	memcpy(&v, S[1].mem + MEM_SZ - 64, 8);
	CHECK_EQ(v, e->fa_base + fa_sum);
	memcpy(&v, S[1].mem + MEM_SZ - 32, 8);
	CHECK_EQ(v, e->cs_base + cs_n);
	CHECK_EQ(S[1].natomic_applied, fa_total + cs_n);
	/* receive completions: one per SEND and WRITE_IMM, in posting order */
	CHECK_EQ(S[1].nrecv, e->nsends + rq_imm);
	for (unsigned r = 0; r < S[1].nrecv && r < MAX_WR; r++) {
		struct recv_done *rd = &S[1].recv[r];
		CHECK_EQ(rd->st, 0);
		if (rd->kind != ROCE_WR_SEND)
			continue;
		REQUIRE(send_i < e->nsends);
		struct twr *t = &W[e->sends[send_i++]];
		CHECK_EQ(rd->len, t->wr.len);
		CHECK_EQ(rd->has_imm, t->wr.op == ROCE_WR_SEND_IMM);
		if (rd->has_imm)
			CHECK_EQ(rd->imm, 0xabc00000 + (t - W));
		/* the last RBUFS receives are still in their buffers */
		if (r + RBUFS >= S[1].nrecv)
			CHECK_MEM(S[1].rbuf + (r % RBUFS) * RBUF_SZ, local0 + t->local_off, t->wr.len);
	}
	CHECK_EQ(S[1].nfatal, 0);
	CHECK_EQ(S[0].nfatal, 0);
}

static void test_mix(uint32_t mtu, unsigned n, uint32_t psn0, const char *fa, const char *fb,
		     const char *what)
{
	struct mix_expect *e = calloc(1, sizeof(*e));
	uint8_t *local0 = malloc(MEM_SZ), *mem1 = malloc(MEM_SZ);
	int r;

	world_init(mtu, NULL, psn0, fa, fb);
	memcpy(local0, S[0].local, MEM_SZ);
	memcpy(mem1, S[1].mem, MEM_SZ);
	mix_post(n, mtu, mtu * 7 + n, e);
	r = run();
	if (r)
		fprintf(stderr, "%s: mtu %u: run() = %d, %u/%u complete\n", what, mtu, r, ncomp_total, nw);
	CHECK_EQ(r, 0);
	mix_check(e, local0, mem1);
	printf("%-28s mtu %4u: %4u WRs, pkts %6" PRIu64 "/%6" PRIu64 ", retx %5" PRIu64
	       ", timeouts %3" PRIu64 ", naks %3" PRIu64 ", dup reqs %4" PRIu64 ", icrc drops %3"
	       PRIu64 ", sim time %.3f s\n", what, mtu, n, S[0].qp.stats.tx_pkts,
	       S[1].qp.stats.tx_pkts, S[0].qp.stats.retransmits, S[0].qp.stats.timeouts,
	       S[1].qp.stats.seq_naks_sent, S[1].qp.stats.dup_reqs,
	       S[0].ctx.stats.icrc_errors + S[1].ctx.stats.icrc_errors, now / 1e9);
	world_fini();
	free(e);
	free(local0);
	free(mem1);
}

/* ---- error paths --------------------------------------------------------------- */

static void test_retry_exhausted(void)
{
	struct roce_cfg c = {.retry_cnt = 3, .cfg_set = 1, .rnr_retry = 7, .min_rnr_timer = 1};
	unsigned a, b, d;

	world_init(1024, &c, 0, "pkt_drop:p=1", NULL); /* side 0 reaches nobody */
	a = post(0, ROCE_WR_WRITE, 3000, 0, RKEY, 0, 0, 0);
	b = post(0, ROCE_WR_READ, 100, 8192, RKEY, 8192, 0, 0);
	d = post(0, ROCE_WR_SEND, 10, 0, 0, 0, 0, 0);
	CHECK_EQ(run(), 0);
	CHECK_EQ(W[a].st, MLX5_CQE_SYNDROME_TRANSPORT_RETRY_EXC_ERR);
	CHECK_EQ(W[b].st, MLX5_CQE_SYNDROME_WR_FLUSH_ERR);
	CHECK_EQ(W[d].st, MLX5_CQE_SYNDROME_WR_FLUSH_ERR);
	CHECK_EQ(W[a].ncomp + W[b].ncomp + W[d].ncomp, 3);
	CHECK_EQ(S[0].qp.stats.timeouts, 4); /* the first try + 3 retries */
	CHECK_EQ(S[0].qp.state, ROCE_QPS_ERR);
	CHECK_EQ(roce_post(&S[0].qp, &W[a].wr), -EIO);
	world_fini();

	/* the ACKs are what is lost: same outcome, though the data did land */
	world_init(1024, &c, 0, NULL, "pkt_drop:p=100%");
	a = post(0, ROCE_WR_WRITE, 100, 0, RKEY, 0, 0, 0);
	CHECK_EQ(run(), 0);
	CHECK_EQ(W[a].st, MLX5_CQE_SYNDROME_TRANSPORT_RETRY_EXC_ERR);
	CHECK_MEM(S[1].mem, S[0].local, 100);
	CHECK(S[1].qp.stats.dup_reqs >= 3);
	world_fini();
}

/*
 * RTT-adaptive timer: a lost tail packet (nothing behind it provokes a NAK)
 * is resent after about min_rto, not after the full timeout, without
 * spending a retry; and when everything is lost the QP still gets its full
 * retry_cnt timeouts before TRANSPORT_RETRY_EXC.
 */
static void test_adaptive_rto(void)
{
	struct roce_cfg c = {.retry_cnt = 3, .cfg_set = 1, .rnr_retry = 7, .min_rnr_timer = 1,
			     .timeout_ns = 20000000, .min_rto_ns = 1000000};
	uint64_t t0;
	unsigned a, early;

	/* packets 1..3: three one-packet WRITEs (RTT samples); 4..7: a
	 * four-packet WRITE whose last packet is lost */
	world_init(1024, &c, 0xfffff0, "pkt_drop:nth=7,op=req", NULL);
	for (unsigned i = 0; i < 3; i++) {
		a = post(0, ROCE_WR_WRITE, 500, 4096 * i, RKEY, 4096 * i, 0, 0);
		CHECK_EQ(run(), 0);
		CHECK_EQ(W[a].st, 0);
	}
	CHECK(S[0].qp.srtt_ns > 0);
	CHECK_EQ(S[0].qp.rto_ns, c.min_rto_ns); /* fake RTTs are microseconds */
	t0 = now;
	a = post(0, ROCE_WR_WRITE, 4000, 65536, RKEY, 65536, 0, 0);
	CHECK_EQ(run(), 0);
	CHECK_EQ(W[a].st, 0);
	CHECK_EQ(W[a].ncomp, 1);
	CHECK_MEM(S[1].mem + 65536, S[0].local + 65536, 4000);
	CHECK_EQ(S[0].qp.stats.f_drop, 1);
	CHECK_EQ(S[0].qp.stats.early_timeouts, 1);
	CHECK_EQ(S[0].qp.stats.timeouts, 0);
	CHECK(now - t0 >= c.min_rto_ns);
	CHECK(now - t0 < 2 * c.min_rto_ns); /* not the 20 ms timeout */

	/* now nothing gets through: early expiries back off without spending
	 * retries - 2, 4, 8, 16 ms: the timer stays backed off after the tail
	 * loss until a fresh RTT sample (Karn) - then 1 + 3 full timeouts */
	roce_fault_free(S[0].ctx.faults);
	REQUIRE_EQ(roce_fault_parse("pkt_drop:p=1", &S[0].ctx.faults), 0);
	early = (unsigned)S[0].qp.stats.early_timeouts;
	t0 = now;
	a = post(0, ROCE_WR_WRITE, 100, 0, RKEY, 0, 0, 0);
	CHECK_EQ(run(), 0);
	CHECK_EQ(W[a].st, MLX5_CQE_SYNDROME_TRANSPORT_RETRY_EXC_ERR);
	CHECK_EQ(S[0].qp.stats.early_timeouts - early, 4);
	CHECK_EQ(S[0].qp.stats.timeouts, 4);
	CHECK(now - t0 >= 4 * c.timeout_ns);
	world_fini();
}

/*
 * Runs both QPs, delivering every packet at once and firing only side 0's timers in 100 us steps,
 * until side 0 has taken @naks RNR NAKs: the caller then changes the receiver before the next one.
 */
static void step_until_rnr_naks(uint64_t naks)
{
	for (int i = 0; i < 100000 && S[0].qp.stats.rnr_naks_rcvd < naks; i++) {
		roce_qp_progress(&S[0].qp, now, 32);
		roce_qp_progress(&S[1].qp, now, 32);
		while (qhead) {
			struct qpkt *p = qhead;
			qhead = p->next;
			roce_rx(&S[!p->from].ctx, &S[p->from].path, p->b, p->len, now);
			free(p);
		}
		qtail = &qhead;
		now += 100000;
		roce_qp_timer(&S[0].qp, now);
	}
}

static void test_rnr(void)
{
	struct roce_cfg c = {.retry_cnt = 7, .rnr_retry = 2, .min_rnr_timer = 14, .cfg_set = 1};
	unsigned a;

	/* no receive WQE ever: RNR NAK, two retries, then RNR_RETRY_EXC */
	world_init(512, &c, 77, NULL, NULL);
	a = post(0, ROCE_WR_SEND, 2000, 0, 0, 0, 0, 0);
	CHECK_EQ(run(), 0);
	CHECK_EQ(W[a].st, MLX5_CQE_SYNDROME_RNR_RETRY_EXC_ERR);
	CHECK_EQ(S[0].qp.stats.rnr_naks_rcvd, 3);
	CHECK_EQ(S[1].nrecv, 0);
	CHECK(now >= 2 * gdak_roce_rnr_timer_ns(14)); /* it did wait as told */
	world_fini();

	/* a receive WQE shows up after two RNR NAKs: the SEND then lands once */
	c.rnr_retry = 7;
	world_init(512, &c, 77, NULL, NULL);
	a = post(0, ROCE_WR_SEND_IMM, 1500, 0, 0, 64, 0, 0);
	unsigned b = post(0, ROCE_WR_WRITE_IMM, 1100, 4096, RKEY, 8192, 0, 0);
	step_until_rnr_naks(2);
	CHECK_EQ(S[0].qp.stats.rnr_naks_rcvd, 2);
	S[1].rq_posted = 1; /* the WRITE_IMM needs a second one: RNR at its last packet */
	step_until_rnr_naks(3);
	CHECK_EQ(W[a].ncomp, 1);
	CHECK_EQ(W[b].ncomp, 0);
	S[1].rq_posted = 2;
	CHECK_EQ(run(), 0);
	CHECK_EQ(W[a].st, 0);
	CHECK_EQ(W[b].st, 0);
	CHECK_EQ(W[b].ncomp, 1);
	CHECK_EQ(S[1].nrecv, 2);
	CHECK_EQ(S[1].recv[0].len, 1500);
	CHECK_EQ(S[1].recv[0].imm, 0xabc00000 + a);
	CHECK_MEM(S[1].rbuf, S[0].local + 64, 1500);
	CHECK_EQ(S[1].recv[1].len, 1100);
	CHECK_EQ(S[1].recv[1].kind, ROCE_WR_WRITE);
	CHECK_EQ(S[1].recv[1].imm, 0xabc00000 + b);
	CHECK_MEM(S[1].mem + 4096, S[0].local + 8192, 1100);
	world_fini();
}

static void test_remote_errors(void)
{
	unsigned a, b, c;

	/* unknown rkey on a WRITE: REMOTE_ACCESS, responder to ERR, rest flushed */
	world_init(1024, NULL, 5, NULL, NULL);
	a = post(0, ROCE_WR_WRITE, 10, 0, RKEY, 0, 0, 0);
	b = post(0, ROCE_WR_WRITE, 2000, 0, 0xdead, 0, 0, 0);
	c = post(0, ROCE_WR_READ, 10, 0, RKEY, 0, 0, 0);
	CHECK_EQ(run(), 0);
	CHECK_EQ(W[a].st, 0);
	CHECK_EQ(W[b].st, MLX5_CQE_SYNDROME_REMOTE_ACCESS_ERR);
	CHECK_EQ(W[c].st, MLX5_CQE_SYNDROME_WR_FLUSH_ERR);
	CHECK_EQ(S[1].nfatal, 1);
	CHECK_EQ(S[1].fatal_st, MLX5_CQE_SYNDROME_REMOTE_ACCESS_ERR);
	CHECK_EQ(S[0].qp.stats.err_naks_rcvd, 1);
	world_fini();

	/* write through a read-only key; READ past the region end */
	world_init(1024, NULL, 5, NULL, NULL);
	a = post(0, ROCE_WR_WRITE, 10, 0, RKEY_RO, 0, 0, 0);
	CHECK_EQ(run(), 0);
	CHECK_EQ(W[a].st, MLX5_CQE_SYNDROME_REMOTE_ACCESS_ERR);
	world_fini();
	world_init(1024, NULL, 5, NULL, NULL);
	a = post(0, ROCE_WR_READ, 4096, MEM_SZ - 100, RKEY_RO, 0, 0, 0);
	CHECK_EQ(run(), 0);
	CHECK_EQ(W[a].st, MLX5_CQE_SYNDROME_REMOTE_ACCESS_ERR);
	world_fini();

	/* misaligned atomic: REMOTE_INVAL_REQ, memory untouched */
	world_init(1024, NULL, 5, NULL, NULL);
	uint8_t before[16];
	memcpy(before, S[1].mem + 100, 16);
	a = post(0, ROCE_WR_FETCH_ADD, 8, 100 + 1, RKEY, 0, 1, 0);
	CHECK_EQ(run(), 0);
	CHECK_EQ(W[a].st, MLX5_CQE_SYNDROME_REMOTE_INVAL_REQ_ERR);
	CHECK_MEM(S[1].mem + 100, before, 16);
	CHECK_EQ(S[1].natomic_applied, 0);
	world_fini();

	/* SEND longer than the receive buffer: requester REMOTE_INVAL_REQ,
	 * responder's receive completes with LOCAL_LENGTH */
	world_init(4096, NULL, 5, NULL, NULL);
	S[1].rq_posted = 4;
	a = post(0, ROCE_WR_SEND, RBUF_SZ + 1, 0, 0, 0, 0, 0);
	CHECK_EQ(run(), 0);
	CHECK_EQ(W[a].st, MLX5_CQE_SYNDROME_REMOTE_INVAL_REQ_ERR);
	CHECK_EQ(S[1].nrecv, 1);
	CHECK_EQ(S[1].recv[0].st, MLX5_CQE_SYNDROME_LOCAL_LENGTH_ERR);
	world_fini();
}

/* Lost responses make the requester ask again: a READ is executed again,
 * an atomic is answered from the replay cache and never applied twice. */
static void test_duplicates(void)
{
	unsigned a;
	uint64_t v, base;

	world_init(1024, NULL, 0xfffffe, NULL, "pkt_drop:nth=1,op=atomic");
	memcpy(&base, S[1].mem + 64, 8);
	a = post(0, ROCE_WR_FETCH_ADD, 8, 64, RKEY, 0, 5, 0);
	CHECK_EQ(run(), 0);
	CHECK_EQ(W[a].st, 0);
	memcpy(&v, S[0].local, 8);
	CHECK_EQ(v, base);
	memcpy(&v, S[1].mem + 64, 8);
	CHECK_EQ(v, base + 5);
	CHECK_EQ(S[1].natomic_applied, 1);
	CHECK_EQ(S[1].qp.stats.dup_reqs, 1);
	CHECK_EQ(S[1].qp.stats.f_drop, 1);
	world_fini();

	/* the 3rd READ response packet is lost: the READ resumes from it */
	world_init(256, NULL, 0xfffffe, NULL, "pkt_drop:nth=3,op=read");
	a = post(0, ROCE_WR_READ, 256 * 6 + 3, 1000, RKEY, 500, 0, 0);
	CHECK_EQ(run(), 0);
	CHECK_EQ(W[a].st, 0);
	CHECK_MEM(S[0].local + 500, S[1].mem + 1000, 256 * 6 + 3);
	CHECK(S[1].qp.stats.dup_reqs >= 1);
	world_fini();

	/* more READs than max_rd_atomic: the requester holds them back */
	world_init(1024, &(struct roce_cfg){.max_rd_atomic = 2}, 0, NULL, NULL);
	for (unsigned i = 0; i < 12; i++)
		post(0, i % 3 ? ROCE_WR_READ : ROCE_WR_FETCH_ADD, 3000, 8 * 4096 * i, RKEY,
		     8 * 4096 * i, 1, 0);
	CHECK_EQ(run(), 0); /* run() checks rd_inflight <= 2 at every step */
	for (unsigned i = 0; i < 12; i++)
		CHECK_EQ(W[i].st, 0);
	world_fini();
}

/* Datagrams that are not valid RoCEv2 packets are dropped and counted. */
static void test_garbage(void)
{
	uint8_t b[600];
	uint64_t rs = 99;
	unsigned a;

	world_init(1024, NULL, 0, NULL, NULL);
	for (int i = 0; i < 2000; i++) {
		uint32_t len = (uint32_t)(gdak_test_rand(&rs) % sizeof(b));
		gdak_test_fill(b, len, (uint64_t)i);
		if (i & 1) {
			/* well-formed ICRC over random headers: the parser must cope */
			b[0] = (uint8_t)(gdak_test_rand(&rs) % 0x16);
			roce_put24(b + 5, 0x101);
			if (len >= 16)
				gdak_roce_icrc_set(&S[0].path, b, len);
		}
		CHECK(roce_rx(&S[1].ctx, &S[0].path, b, len, now) <= 0);
		roce_qp_progress(&S[1].qp, now, 32);
	}
	CHECK(S[1].ctx.stats.icrc_errors > 0);
	CHECK(S[1].ctx.stats.bad_pkts > 0);
	world_fini();

	/* ACK for a PSN never sent: dropped, counted, nothing completes */
	world_init(1024, NULL, 0, NULL, NULL);
	a = post(0, ROCE_WR_WRITE, 10, 0, RKEY, 0, 0, 0);
	memset(b, 0, sizeof(b));
	bth_set(b, ROCE_ACK, 0, 0, 0xffff, 0x100, 0, 500);
	aeth_set(b + 12, AETH_ACK | 0x1f, 1);
	gdak_roce_icrc_set(&S[1].path, b, 20);
	CHECK_EQ(roce_rx(&S[0].ctx, &S[1].path, b, 20, now), 0);
	CHECK_EQ(S[0].qp.stats.bad_pkts, 1);
	CHECK_EQ(W[a].ncomp, 0);
	/* unknown destination QP */
	bth_set(b, ROCE_ACK, 0, 0, 0xffff, 0x999, 0, 0);
	gdak_roce_icrc_set(&S[1].path, b, 20);
	CHECK_EQ(roce_rx(&S[0].ctx, &S[1].path, b, 20, now), -ENOENT);
	CHECK_EQ(run(), 0);
	CHECK_EQ(W[a].st, 0);
	world_fini();
}

static void test_fault_parse(void)
{
	struct roce_fault *f = NULL;

	CHECK_EQ(roce_fault_parse("pkt_drop:p=5%,seed=3;pkt_delay:every=10,us=50", &f), 0);
	CHECK(f != NULL);
	roce_fault_free(f);
	/* entries of other components are not ours */
	CHECK_EQ(roce_fault_parse("cqe_err:qp=3,nth=2", &f), 0);
	CHECK(f == NULL);
	CHECK_EQ(roce_fault_parse("pkt_drop:p=1.5", &f), -EINVAL);
	CHECK_EQ(roce_fault_parse("pkt_drop:bogus=1", &f), -EINVAL);
	CHECK_EQ(roce_fault_parse("pkt_drop", &f), -EINVAL);
	CHECK_EQ(roce_fault_parse("pkt_dup:p=x", &f), -EINVAL);
	CHECK_EQ(roce_fault_parse("pkt_frob:p=0.1", &f), -EINVAL);
	CHECK_EQ(roce_fault_parse("pkt_drop:op=nope,p=1", &f), -EINVAL);
}

int main(void)
{
	static const uint32_t mtus[] = {256, 512, 1024, 2048, 4096};

	test_fault_parse();
	for (unsigned i = 0; i < 5; i++)
		test_mix(mtus[i], 120, 0, NULL, NULL, "clean");
	test_mix(256, 200, 0xffff00, NULL, NULL, "clean, PSN wrap");
	static const char *const rates[] = {"1%", "5%", "20%"};
	for (unsigned i = 0; i < 3; i++) {
		char fa[256], fb[256], what[64];
		snprintf(fa, sizeof(fa), "pkt_drop:p=%s,seed=%u;pkt_dup:p=%s;pkt_reorder:p=%s;"
			 "pkt_corrupt:p=%s;pkt_delay:p=%s,us=300", rates[i], i + 1, rates[i],
			 rates[i], rates[i], rates[i]);
		snprintf(fb, sizeof(fb), "pkt_drop:p=%s,seed=%u;pkt_dup:p=%s;pkt_reorder:p=%s",
			 rates[i], i + 11, rates[i], rates[i]);
		snprintf(what, sizeof(what), "faults %s each", rates[i]);
		test_mix(1024, 300, 0xfffff0, fa, fb, what);
		snprintf(what, sizeof(what), "loss %s", rates[i]);
		snprintf(fa, sizeof(fa), "pkt_drop:p=%s,seed=%u", rates[i], i + 5);
		test_mix(256, 200, 0, fa, fa, what);
	}
	test_retry_exhausted();
	test_adaptive_rto();
	test_rnr();
	test_remote_errors();
	test_duplicates();
	test_garbage();
	return gdak_test_end();
}
