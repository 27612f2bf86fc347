/* SPDX-License-Identifier: MIT */
/*
 * fuzz_roce.c - the RoCEv2 packet parser and RC engine (nic_model/roce/):
 * roce_rx() fed forged packets, and real packets of two connected QPs
 * mutated, dropped, duplicated and reordered on a fake wire, with a fake
 * clock and fake memory (no sockets, no time).
 *
 * The input is a small program (one opcode byte, then operands):
 *   0 inject   a forged packet (length, fix-up flags, bytes): QPN, PSN,
 *              P_Key/TVer and ICRC optionally made right so the packet gets
 *              past the first checks
 *   1 post     a work request on one side (SEND/WRITE/READ/atomics, with a
 *              valid, read-only or garbage rkey)
 *   2 pump     progress both QPs, deliver wire packets, maybe corrupting one
 *              (ICRC fixed afterwards, so the corruption reaches the parser)
 *   3 time     advance the clock, run the timers
 *   4 error    move one QP to ERR
 *   5 recv     post receive buffers on one side
 *   6 wire     drop / duplicate / reorder the packet at the head of the wire
 * Then the wire is run to quiescence, jumping the clock to each deadline.
 *
 * Invariants (FUZZ_ASSERT): the engine calls back only within the bounds it
 * promises (gather/scatter inside the WR, WRITE data inside the RETH length,
 * reads inside the checked range, atomics 8-byte aligned); every WR
 * completes exactly once, in posting order; after quiescence nothing posted
 * is left without a completion (no silent hang); memory without remote write
 * access is never written.
 */
#include <errno.h>
#include <string.h>

#include <gdak/gdak.h>

#include "fuzz.h"
#include "gdak_roce_test.h"
#include "roce.h"

#define MEM 65536u
#define RBUF 4096u
#define RKEY 0x1100
#define RKEY_RO 0x2200
#define WIRE_MAX 512
#define WRS 64

struct side {
	struct roce_qp qp;
	struct roce_path path;	/* headers of the packets this side sends */
	uint8_t *mem;		/* remotely accessible, va = offset */
	uint8_t *ro;		/* remotely readable only, va = offset */
	uint8_t *local;		/* requester buffers */
	uint8_t *rbuf;		/* the receive buffer (SEND target) */
	unsigned rq_avail;
	uint64_t posted, completed;
	uint32_t local_off[WRS];
	int in_msg;		/* a receive WQE is taken by the current message */
};

static struct roce_ctx ctx;
static struct side S[2];
static uint64_t now;
static uint8_t ro_pattern[MEM];

struct wpkt {
	uint32_t len;
	int from;
	uint8_t b[ROCE_MAX_PKT];
};
static struct wpkt *wire;
static unsigned wire_n;

static struct side *side_of(struct roce_qp *qp) { return qp == &S[0].qp ? &S[0] : &S[1]; }

static int xmit(struct roce_qp *qp, const uint8_t *pkt, uint32_t len)
{
	FUZZ_ASSERT(len >= ROCE_BTH_LEN + ROCE_ICRC_LEN && len <= ROCE_MAX_PKT,
		    "engine sent a %u-byte packet", len);
	if (wire_n == WIRE_MAX)
		return 0; /* lost on a full wire: retransmission recovers */
	wire[wire_n].len = len;
	wire[wire_n].from = side_of(qp) == &S[1];
	memcpy(wire[wire_n].b, pkt, len);
	wire_n++;
	return 0;
}

static struct roce_qp *lookup(struct roce_ctx *c, uint32_t qpn)
{
	for (int i = 0; i < 2; i++)
		if (S[i].qp.qpn == qpn)
			return &S[i].qp;
	return NULL;
}

static int gather(struct roce_qp *qp, struct roce_wr *wr, uint32_t off, void *dst, uint32_t len)
{
	struct side *s = side_of(qp);

	FUZZ_ASSERT((uint64_t)off + len <= wr->len, "gather %u+%u beyond the %u-byte WR", off, len,
		    wr->len);
	FUZZ_ASSERT(wr->op != ROCE_WR_READ, "gather for a READ");
	memcpy(dst, s->local + s->local_off[wr->cookie % WRS] + off, len);
	return 0;
}

static int scatter(struct roce_qp *qp, struct roce_wr *wr, uint32_t off, const void *src,
		   uint32_t len)
{
	struct side *s = side_of(qp);

	if (roce_wr_is_atomic(wr->op))
		FUZZ_ASSERT(off == 0 && len == 8, "atomic result %u+%u", off, len);
	else
		FUZZ_ASSERT(wr->op == ROCE_WR_READ, "scatter for a %s", roce_wr_op_name(wr->op));
	FUZZ_ASSERT((uint64_t)off + len <= wr->len, "scatter %u+%u beyond the %u-byte WR", off,
		    len, wr->len);
	memcpy(s->local + s->local_off[wr->cookie % WRS] + off, src, len);
	return 0;
}

static void complete(struct roce_qp *qp, struct roce_wr *wr, uint8_t st)
{
	struct side *s = side_of(qp);

	FUZZ_ASSERT(wr->cookie == s->completed, "completion of WR %llu, expected %llu",
		    (unsigned long long)wr->cookie, (unsigned long long)s->completed);
	FUZZ_ASSERT(s->completed < s->posted, "completion of a WR never posted");
	s->completed++;
}

static int key_ok(uint32_t rkey, uint64_t va, uint64_t len, int write)
{
	return roce_test_key_check(rkey, va, len, write, RKEY, RKEY_RO, MEM);
}

static uint8_t *target(struct side *s, uint32_t rkey, uint64_t va)
{
	return (rkey == RKEY_RO ? s->ro : s->mem) + va;
}

static int resp_begin(struct roce_qp *qp, struct roce_rmsg *m)
{
	struct side *s = side_of(qp);

	if (m->kind == ROCE_WR_WRITE) {
		int st = key_ok(m->rkey, m->va, m->dma_len, 1);
		if (st)
			return st;
	}
	if (m->kind == ROCE_WR_SEND || m->has_imm) {
		if (!s->rq_avail)
			return ROCE_RNR;
		s->rq_avail--;
		s->in_msg = 1;
	}
	return 0;
}

static int resp_imm(struct roce_qp *qp, struct roce_rmsg *m)
{
	struct side *s = side_of(qp);

	if (s->in_msg)
		return 0;
	if (!s->rq_avail)
		return ROCE_RNR;
	s->rq_avail--;
	s->in_msg = 1;
	return 0;
}

static int resp_data(struct roce_qp *qp, struct roce_rmsg *m, uint32_t off, const void *src,
		     uint32_t len)
{
	struct side *s = side_of(qp);

	if (m->kind == ROCE_WR_WRITE) {
		FUZZ_ASSERT((uint64_t)off + len <= m->dma_len, "WRITE data %u+%u beyond RETH length %u",
			    off, len, m->dma_len);
		FUZZ_ASSERT(!key_ok(m->rkey, m->va, m->dma_len, 1), "WRITE data to an unchecked target");
		memcpy(target(s, m->rkey, m->va) + off, src, len);
		return 0;
	}
	FUZZ_ASSERT(m->kind == ROCE_WR_SEND, "data for message kind %u", m->kind);
	if ((uint64_t)off + len > RBUF)
		return MLX5_CQE_SYNDROME_REMOTE_INVAL_REQ_ERR; /* receive buffer too small */
	memcpy(s->rbuf + off, src, len);
	return 0;
}

static int resp_end(struct roce_qp *qp, struct roce_rmsg *m, int status)
{
	side_of(qp)->in_msg = 0;
	return 0;
}

static int resp_read_check(struct roce_qp *qp, uint32_t rkey, uint64_t va, uint32_t len)
{
	return key_ok(rkey, va, len, 0);
}

static int resp_read(struct roce_qp *qp, uint32_t rkey, uint64_t va, void *dst, uint32_t len)
{
	FUZZ_ASSERT(!key_ok(rkey, va, len, 0), "read of %u bytes at 0x%llx key 0x%x: not checked",
		    len, (unsigned long long)va, rkey);
	memcpy(dst, target(side_of(qp), rkey, va), len);
	return 0;
}

static int resp_atomic(struct roce_qp *qp, uint8_t opcode, uint32_t rkey, uint64_t va,
		       uint64_t swap_add, uint64_t cmp, uint64_t *orig)
{
	uint64_t v;
	uint8_t *t;
	int st;

	FUZZ_ASSERT(!(va & 7), "atomic at unaligned 0x%llx reached memory", (unsigned long long)va);
	if ((st = key_ok(rkey, va, 8, 1)))
		return st;
	t = target(side_of(qp), rkey, va);
	memcpy(&v, t, 8);
	*orig = v;
	if (opcode == ROCE_FETCH_ADD)
		v += swap_add;
	else if (v == cmp)
		v = swap_add;
	memcpy(t, &v, 8);
	return 0;
}

static int resp_xatomic(struct roce_qp *qp, const struct roce_xatomic *x, uint64_t *orig)
{
	int st;

	FUZZ_ASSERT(x->size == 4 || x->size == 8, "extended atomic of %u bytes reached memory",
		    x->size);
	FUZZ_ASSERT(!(x->va & (x->size - 1u)), "extended atomic at unaligned 0x%llx reached memory",
		    (unsigned long long)x->va);
	if ((st = key_ok(x->rkey, x->va, x->size, 1)))
		return st;
	roce_test_xatomic(x, target(side_of(qp), x->rkey, x->va), orig);
	return 0;
}

static void resp_fatal(struct roce_qp *qp, uint8_t syndrome, const char *why) {}

static const struct roce_ops ops = {
	.xmit = xmit,
	.lookup = lookup,
	.req_gather = gather,
	.req_scatter = scatter,
	.req_complete = complete,
	.resp_begin = resp_begin,
	.resp_data = resp_data,
	.resp_imm = resp_imm,
	.resp_end = resp_end,
	.resp_read_check = resp_read_check,
	.resp_read = resp_read,
	.resp_atomic = resp_atomic,
	.resp_xatomic = resp_xatomic,
	.resp_fatal = resp_fatal,
};

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	/* the engine warns about every bad packet: keep the fuzzer's output readable */
	if (!getenv("GDAK_LOG"))
		gdak_set_log_level(GDAK_LOG_ERROR);
	wire = calloc(WIRE_MAX, sizeof(*wire));
	for (int i = 0; i < 2; i++) {
		S[i].mem = malloc(MEM);
		S[i].ro = malloc(MEM);
		S[i].local = malloc(MEM);
		S[i].rbuf = malloc(RBUF);
		if (!S[i].mem || !S[i].ro || !S[i].local || !S[i].rbuf)
			abort();
	}
	for (uint32_t i = 0; i < MEM; i++) {
		ro_pattern[i] = (uint8_t)(i * 7 + 3);
		S[0].local[i] = S[1].local[i] = (uint8_t)(i * 5 + 1);
	}
	memset(S[0].rbuf, 0, RBUF);
	memset(S[1].rbuf, 0, RBUF);
	return 0;
}

void fuzz_fini(void)
{
	for (int i = 0; i < 2; i++) {
		free(S[i].mem);
		free(S[i].ro);
		free(S[i].local);
		free(S[i].rbuf);
	}
	free(wire);
	wire = NULL;
}

static void setup(uint8_t h)
{
	static const uint32_t mtus[] = {256, 512, 1024, 2048, 4096};
	struct roce_cfg cfg = {
		.mtu = mtus[h % 5], .sq_size = WRS, .window = 32, .max_rd_atomic = 4,
		.retry_cnt = 3, .rnr_retry = 3, .min_rnr_timer = 1, .cfg_set = 1,
	};

	roce_ctx_init(&ctx, &ops, NULL);
	now = 1000000;
	wire_n = 0;
	for (int i = 0; i < 2; i++) {
		struct side *s = &S[i];
		int rc;

		memset(s->mem, 0, MEM);
		memcpy(s->ro, ro_pattern, MEM);
		s->rq_avail = 0;
		s->posted = s->completed = 0;
		s->in_msg = 0;
		s->path = (struct roce_path){.sip = i ? 0x0200000a : 0x0100000a,
					     .dip = i ? 0x0100000a : 0x0200000a,
					     .sport = (uint16_t)(49152 + i), .dport = ROCE_UDP_PORT};
		rc = roce_qp_init(&s->qp, &ctx, i ? 0x22 : 0x11, &cfg);
		FUZZ_ASSERT(!rc, "roce_qp_init: %d", rc);
	}
	/* PSNs near the 24-bit wrap when asked: wrap-around arithmetic */
	{
		uint32_t p0 = h & 0x80 ? 0xfffff0 : 0x100, p1 = h & 0x40 ? 0xffffff : 0x200;
		FUZZ_ASSERT(!roce_qp_connect(&S[0].qp, 0x22, p0, p1, cfg.mtu, &S[0].path), "connect");
		FUZZ_ASSERT(!roce_qp_connect(&S[1].qp, 0x11, p1, p0, cfg.mtu, &S[1].path), "connect");
	}
}

static void teardown(void)
{
	for (int i = 0; i < 2; i++) {
		FUZZ_ASSERT(!memcmp(S[i].ro, ro_pattern, MEM),
			    "memory without remote write access was written");
		roce_qp_fini(&S[i].qp);
	}
	roce_ctx_fini(&ctx);
}

static void post(struct fuzz_in *in)
{
	struct side *s = &S[fuzz_u8(in) & 1];
	uint8_t op = fuzz_u8(in), kf = fuzz_u8(in);
	struct roce_wr wr = {0};
	uint32_t len = fuzz_u16(in) % (MEM / 2);
	int rc;

	wr.op = (uint8_t)(op % ROCE_WR_NOPS);
	wr.flags = (uint8_t)((op >> 4) & 3);
	wr.cookie = s->posted;
	wr.raddr = fuzz_u16(in);
	wr.rkey = kf % 3 == 0 ? RKEY : kf % 3 == 1 ? RKEY_RO : fuzz_u32(in);
	if (kf & 0x80)
		wr.raddr = fuzz_u64(in);
	wr.imm = 0x01020304;
	wr.swap_add = fuzz_u8(in);
	wr.cmp = 0;
	if (wr.op == ROCE_WR_CMP_SWAP || wr.op == ROCE_WR_FETCH_ADD) {
		len = 8;
		if (!(kf & 0x40))
			wr.raddr &= ~7ull;
	} else if (wr.op == ROCE_WR_XMASKED_CS || wr.op == ROCE_WR_XMASKED_FA) {
		wr.asize = kf & 0x20 ? 4 : 8;
		wr.swap_mask = fuzz_u8(in);
		wr.cmp_mask = kf & 0x10 ? ~0ull : 0;
		len = wr.asize;
		if (!(kf & 0x40))
			wr.raddr &= ~(uint64_t)(wr.asize - 1);
	}
	wr.len = len;
	s->local_off[wr.cookie % WRS] = fuzz_u16(in) % (MEM - len);
	rc = roce_post(&s->qp, &wr);
	FUZZ_ASSERT(rc == 0 || rc == -EAGAIN || rc == -EIO, "roce_post: %d", rc);
	if (!rc)
		s->posted++;
}

/* Take the packet at the head of the wire and hand it to the receiver
 * (from a copy: receiving may send, and sending appends to the wire). */
static void deliver_head(int mutate, uint16_t pos, uint8_t x)
{
	static struct wpkt p;

	if (!wire_n)
		return;
	memcpy(&p, &wire[0], sizeof(p));
	memmove(&wire[0], &wire[1], sizeof(wire[0]) * (wire_n - 1));
	wire_n--;
	if (mutate) {
		p.b[pos % p.len] ^= x ? x : 1;
		gdak_roce_icrc_set(&S[p.from].path, p.b, p.len);
	}
	/* dropped or not, both are fine here: the invariants are checked elsewhere */
	(void)roce_rx(&ctx, &S[p.from].path, p.b, p.len, now);
}

static void pump(unsigned budget, int mutate, uint16_t pos, uint8_t x)
{
	for (int i = 0; i < 2; i++)
		roce_qp_progress(&S[i].qp, now, (int)budget);
	for (unsigned n = wire_n; n && wire_n; n--)
		deliver_head(mutate && n == 1, pos, x);
}

static void inject(struct fuzz_in *in)
{
	static uint8_t pkt[ROCE_MAX_PKT + 64];
	uint32_t len = fuzz_u16(in) % (ROCE_MAX_PKT + 64);
	uint8_t f = fuzz_u8(in);
	struct side *to = &S[(f >> 1) & 1], *from = &S[!((f >> 1) & 1)];

	fuzz_bytes(in, pkt, len > 96 ? 96 : len);
	if (len > 96)
		memset(pkt + 96, f, len - 96);
	if (len >= ROCE_BTH_LEN + ROCE_ICRC_LEN) {
		if (f & 1)
			roce_put24(pkt + 5, to->qp.qpn);
		if (f & 4) {
			int req = roce_op(pkt[0])->mask & ROCE_M_REQ;
			roce_put24(pkt + 9, req ? to->qp.rseq->epsn : to->qp.una_psn);
		}
		if (f & 8) {
			pkt[1] &= 0xf0;
			roce_put16(pkt + 2, ROCE_PKEY_DEFAULT);
		}
		if (!(f & 0x10))
			gdak_roce_icrc_set(&from->path, pkt, len);
	}
	(void)roce_rx(&ctx, &from->path, pkt, len, now);
}

static void wire_op(uint8_t k)
{
	if (!wire_n)
		return;
	switch (k % 3) {
	case 0: /* drop */
		memmove(&wire[0], &wire[1], sizeof(wire[0]) * (wire_n - 1));
		wire_n--;
		break;
	case 1: /* duplicate */
		if (wire_n < WIRE_MAX) {
			memmove(&wire[1], &wire[0], sizeof(wire[0]) * wire_n);
			wire_n++;
		}
		break;
	default: /* reorder */
		if (wire_n > 1) {
			static struct wpkt t;
			memcpy(&t, &wire[0], sizeof(t));
			memcpy(&wire[0], &wire[1], sizeof(t));
			memcpy(&wire[1], &t, sizeof(t));
		}
		break;
	}
}

/* Run until nothing is in flight, jumping the clock to each deadline. */
static void settle(void)
{
	for (unsigned it = 0; it < 20000; it++) {
		uint64_t d = UINT64_MAX;
		int busy = 0;

		pump(64, 0, 0, 0);
		if (wire_n)
			continue;
		for (int i = 0; i < 2; i++) {
			uint64_t di = roce_qp_deadline(&S[i].qp);
			busy |= roce_qp_busy(&S[i].qp);
			if (di < d)
				d = di;
		}
		if (!busy)
			return;
		if (d == UINT64_MAX) {
			/* busy with no packet on the wire and no timer: only
			 * legitimate when the QP still has packets to send */
			int sent = 0;
			for (int i = 0; i < 2; i++)
				sent += roce_qp_progress(&S[i].qp, now, 64);
			FUZZ_ASSERT(sent || wire_n, "QPs busy (%s/%s) with nothing on the wire and no "
				    "timer: a silent hang", roce_qp_state_name(S[0].qp.state),
				    roce_qp_state_name(S[1].qp.state));
			continue;
		}
		if (d > now)
			now = d;
		for (int i = 0; i < 2; i++)
			roce_qp_timer(&S[i].qp, now);
	}
	FUZZ_ASSERT(0, "no quiescence after 20000 rounds");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fuzz_in in = {.p = data, .n = size};
	unsigned steps = 0;

	if (!wire)
		LLVMFuzzerInitialize(NULL, NULL);
	setup(fuzz_u8(&in));
	while (fuzz_more(&in) && steps++ < 256) {
		uint8_t op = fuzz_u8(&in);

		switch (op % 7) {
		case 0:
			inject(&in);
			break;
		case 1:
			post(&in);
			break;
		case 2: {
			uint8_t b = fuzz_u8(&in), x = fuzz_u8(&in);
			uint16_t pos = fuzz_u16(&in);
			pump(1u + (b & 31), (b & 0x80) != 0, pos, x);
			break;
		}
		case 3:
			now += (uint64_t)fuzz_u16(&in) * 10000;
			for (int i = 0; i < 2; i++)
				roce_qp_timer(&S[i].qp, now);
			break;
		case 4:
			roce_qp_error(&S[fuzz_u8(&in) & 1].qp);
			break;
		case 5: {
			uint8_t b = fuzz_u8(&in);
			S[b & 1].rq_avail += (b >> 1) & 7;
			break;
		}
		default:
			wire_op(fuzz_u8(&in));
			break;
		}
	}
	/* receive buffers for whatever SENDs are still waiting, then drain */
	S[0].rq_avail += 64;
	S[1].rq_avail += 64;
	settle();
	for (int i = 0; i < 2; i++)
		FUZZ_ASSERT(S[i].completed == S[i].posted,
			    "side %d: %llu WRs posted, %llu completed after quiescence (state %s)", i,
			    (unsigned long long)S[i].posted, (unsigned long long)S[i].completed,
			    roce_qp_state_name(S[i].qp.state));
	teardown();
	return 0;
}
