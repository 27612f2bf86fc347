/* SPDX-License-Identifier: MIT */
/*
 * fuzz_wqe.c - the NIC model's doorbell stage, WQE decoder/checker and
 * executor (nic_model/nm_doorbell.c, nm_req.c, nm_resp.c, nm_comp.c) driven
 * by a misbehaving device: a real in-process NIC model (gdak_open("emu"),
 * two NIC threads, loop transport) whose send queue, doorbell record,
 * doorbell/BlueFlame register, proxy word and CQ doorbell record are
 * written by the fuzz input.
 *
 * Input: one header byte (handler, ring size, CQ size, strict mode, whether
 * to let the NIC settle), then a program, one opcode byte and operands each:
 *   0 wqe     a WQE from parts: opcode (valid ones favoured), flags, keys
 *             (valid, read-only, no-local-write, a region deregistered
 *             later, or garbage), addresses, lengths, 1..4 segments,
 *             inline data; optionally wrong index / QPN / DS count
 *   1 raw     64 raw bytes into the next ring slot
 *   2 ring    doorbell record + register the way the handler does
 *   3 rec     doorbell record alone, producer +-128 (jumps both ways)
 *   4 reg     doorbell register alone (the last ctrl, or raw bytes)
 *   5 proxy   CPU_PROXY producer word, +-128 or raw
 *   6 wait    let the NIC work (bounded)
 *   7 poll    consume CQEs, update the CQ doorbell record
 *   8 pi      the device's own producer index jumps +-128
 *   9 bf      64 bytes to the BlueFlame register, maybe one byte off
 *  10 dereg   deregister region X while WQEs may reference it
 *  11 modify  QP to ERR, or RESET and connect again
 *  12 recv    post receive WQEs on the responder (sizes, keys)
 *  13 cqdb    garbage CQ doorbell record
 *
 * Invariants (FUZZ_ASSERT): no crash; the guard pages around every
 * registered region, the read-only target, the source without LOCAL_WRITE
 * and region X after its deregistration stay byte-for-byte unchanged (no
 * write outside registered memory or without the access right); every CQE
 * is well formed (CQE opcode for its CQ, known syndrome, the QP's number,
 * byte count within what was posted); once settled the QP is in RTS or ERR,
 * and in ERR when an error CQE was seen, with gdak_qp_query_error naming
 * why; a second, healthy QP pair keeps working after every input.
 */
#include <errno.h>
#include <string.h>
#include <time.h>

#include <gdak/dev/types.h>
#include <gdak/gdak.h>
#include <gdak/mlx5.h>
#include <gdak/nic.h>

#include "fuzz.h"

#define GUARD 4096u
#define RLEN 16384u
#define RBUF 256u	/* receive buffer per receive WQE */
#define RQ_DEPTH 16u

enum { REG_L, REG_R, REG_RO, REG_NLW, REG_RB, REG_X, REG_H, NREG };

struct region {
	uint8_t *base;		/* GUARD | RLEN registered | GUARD */
	uint8_t *p;		/* base + GUARD */
	struct gdak_mr *mr;
	uint32_t key;
	unsigned access;
	int fixed;		/* content must never change (no write access) */
};

static struct gdak_ctx *ctx;
static struct region R[NREG];
static uint8_t guard_pat[GUARD], fixed_pat[RLEN], x_snap[RLEN];
static int x_snapped;
static int verbose, skip_overlap;

/* the healthy pair: h0 writes into h1's region after every input */
static struct gdak_qp *h0, *h1;
static struct gdak_dev_qp *hd;
static uint64_t h_pi, h_ci, h_count;

/* one input's QPs, as the device sees them */
struct dev {
	struct gdak_qp *a, *b;
	struct gdak_qp_info ia, ib;
	struct gdak_dev_qp *d, *db;
	uint64_t pi, last;	/* device producer index, start of the last WQE */
	uint64_t ci;		/* send CQEs consumed */
	uint64_t rci, rq_pi;	/* b: receive CQEs consumed, receive WQEs posted */
	int err_cqe;		/* a non-flush error CQE was seen on a's send CQ */
	int reset;		/* went through RESET (the ring restarted) */
};

static void fill_guards(struct region *r)
{
	memcpy(r->base, guard_pat, GUARD);
	memcpy(r->p + RLEN, guard_pat, GUARD);
}

static void check_region(const struct region *r, int i)
{
	FUZZ_ASSERT(!memcmp(r->base, guard_pat, GUARD), "region %d: guard below written", i);
	FUZZ_ASSERT(!memcmp(r->p + RLEN, guard_pat, GUARD), "region %d: guard above written", i);
	if (r->fixed)
		FUZZ_ASSERT(!memcmp(r->p, fixed_pat, RLEN),
			    "region %d: written without write access", i);
}

static int reg(struct region *r, unsigned access)
{
	int rc = gdak_mr_reg(ctx, r->p, RLEN, access, &r->mr);

	if (rc)
		return rc;
	r->key = gdak_mr_lkey(r->mr);
	r->access = access;
	return 0;
}

static void sleep_us(unsigned us)
{
	struct timespec ts = {.tv_sec = 0, .tv_nsec = (long)us * 1000};
	nanosleep(&ts, NULL);
}

static int connect_pair(struct gdak_qp *a, struct gdak_qp *b, struct gdak_qp_info *ia,
			struct gdak_qp_info *ib)
{
	int rc;

	if ((rc = gdak_qp_info(a, ia)) || (rc = gdak_qp_info(b, ib)))
		return rc;
	if ((rc = gdak_qp_connect(a, ib)) || (rc = gdak_qp_connect(b, ia)))
		return rc;
	return 0;
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	struct gdak_qp_attr ha = {.sq_depth = 64, .handler = GDAK_DEV_DB_DB, .nic_thread = 1};
	struct gdak_qp_info i0, i1;
	static const unsigned acc[NREG] = {
		[REG_L] = GDAK_ACCESS_ALL, [REG_R] = GDAK_ACCESS_ALL,
		[REG_RO] = GDAK_ACCESS_REMOTE_READ,
		[REG_NLW] = GDAK_ACCESS_REMOTE_READ, /* a source, never a target */
		[REG_RB] = GDAK_ACCESS_LOCAL_WRITE, [REG_X] = GDAK_ACCESS_ALL,
		[REG_H] = GDAK_ACCESS_ALL,
	};

	if (ctx)
		return 0;
#if defined(__SANITIZE_THREAD__)
	/* The misbehaving device writes ring and receive-queue memory while the
	 * NIC reads it, on purpose (a DMA engine races the CPU the same way).
	 * Those are C11 data races by construction, which TSan reports; the
	 * target runs under ASan, UBSan and Valgrind instead. */
	fprintf(stderr, "SKIP: fuzz_wqe races the NIC model on purpose; not run under TSan\n");
	exit(77);
#endif
	verbose = getenv("GDAK_FUZZ_VERBOSE") != NULL;
	skip_overlap = getenv("GDAK_FUZZ_SKIP_OVERLAP") != NULL;
	if (!getenv("GDAK_LOG"))
		gdak_set_log_level(GDAK_LOG_ERROR);
	gdak_nic_set_threads(2);
	gdak_nic_set_rnr_timeout_ms(5);
	FUZZ_ASSERT(!gdak_open("emu", &ctx), "gdak_open(emu)");
	for (unsigned i = 0; i < GUARD; i++)
		guard_pat[i] = (uint8_t)(0xa5 ^ i);
	for (unsigned i = 0; i < RLEN; i++)
		fixed_pat[i] = (uint8_t)(i * 13 + 1);
	for (int i = 0; i < NREG; i++) {
		R[i].base = aligned_alloc(4096, RLEN + 2 * GUARD);
		FUZZ_ASSERT(R[i].base, "alloc");
		R[i].p = R[i].base + GUARD;
		memset(R[i].p, 0, RLEN);
		fill_guards(&R[i]);
		R[i].fixed = i == REG_RO || i == REG_NLW;
		if (R[i].fixed)
			memcpy(R[i].p, fixed_pat, RLEN);
		if (i != REG_X)
			FUZZ_ASSERT(!reg(&R[i], acc[i]), "register region %d", i);
		R[i].access = acc[i];
	}
	FUZZ_ASSERT(!gdak_qp_create(ctx, &ha, &h0), "healthy QP");
	ha.nic_thread = 0;
	FUZZ_ASSERT(!gdak_qp_create(ctx, &ha, &h1), "healthy QP");
	FUZZ_ASSERT(!connect_pair(h0, h1, &i0, &i1), "healthy pair connect");
	FUZZ_ASSERT(!gdak_qp_export(h0, &hd), "export");
	return 0;
}

void fuzz_fini(void)
{
	if (!ctx)
		return;
	gdak_qp_destroy(h0);
	gdak_qp_destroy(h1);
	for (int i = 0; i < NREG; i++) {
		if (R[i].mr)
			gdak_mr_dereg(R[i].mr);
		free(R[i].base);
		R[i].mr = NULL;
	}
	gdak_close(ctx);
	ctx = NULL;
}

/* ---- the device side ----------------------------------------------------------- */

static uint8_t *slot(struct gdak_dev_qp *d, uint64_t i)
{
	return (uint8_t *)d->sq_buf + (size_t)(i & (d->sq_wqebb_cnt - 1)) * 64;
}

static void put_wqe(struct dev *v, const uint8_t *w, unsigned bbs)
{
	for (unsigned i = 0; i < bbs; i++)
		memcpy(slot(v->d, v->pi + i), w + (size_t)i * 64, 64);
	v->last = v->pi;
	v->pi += bbs;
}

static void ring(struct gdak_dev_qp *d, uint64_t pi, uint64_t last)
{
	const uint8_t *w = slot(d, last);

	if (d->handler == GDAK_DEV_DB_CPU_PROXY) {
		__atomic_store_n(d->proxy_pi, pi, __ATOMIC_RELEASE);
		return;
	}
	/* record before register: two seq_cst stores (TSan knows no fences) */
	__atomic_store_n(&d->dbrec[MLX5_SND_DBR], gdak_mlx5_sq_dbrec_value((uint32_t)pi),
			 __ATOMIC_SEQ_CST);
	if (d->handler == GDAK_DEV_DB_BF)
		memcpy((uint8_t *)d->db_reg + 8, w + 8, 56);
	__atomic_store_n(d->db_reg, *(const uint64_t *)(const void *)w, __ATOMIC_SEQ_CST);
}

static uint32_t pick_key(uint8_t sel, struct fuzz_in *in)
{
	static const int which[] = {REG_L, REG_R, REG_RO, REG_NLW, REG_X, REG_RB};

	sel &= 7;
	if (sel < 6)
		return R[which[sel]].key;
	return sel == 6 ? fuzz_u32(in) : MLX5_INVALID_LKEY;
}

static uint64_t pick_addr(uint32_t key, uint16_t off, int raw, struct fuzz_in *in)
{
	if (raw)
		return fuzz_u64(in);
	for (int i = 0; i < NREG; i++)
		if (R[i].mr && R[i].key == key)
			return (uint64_t)(uintptr_t)R[i].p + off % (RLEN + 64); /* may run past the end */
	return (uint64_t)(uintptr_t)R[REG_L].p + off;
}

static void op_wqe(struct dev *v, struct fuzz_in *in)
{
	static const uint8_t ops[] = {
		MLX5_OPCODE_NOP, MLX5_OPCODE_RDMA_WRITE, MLX5_OPCODE_RDMA_WRITE_IMM,
		MLX5_OPCODE_SEND, MLX5_OPCODE_SEND_IMM, MLX5_OPCODE_RDMA_READ,
		MLX5_OPCODE_ATOMIC_CS, MLX5_OPCODE_ATOMIC_FA, MLX5_OPCODE_ATOMIC_MASKED_CS,
		MLX5_OPCODE_ATOMIC_MASKED_FA, GDAK_MLX5_OPCODE_WAIT, GDAK_MLX5_OPCODE_DUMP,
		MLX5_OPCODE_RDMA_WRITE, MLX5_OPCODE_SEND, MLX5_OPCODE_RDMA_READ,
	};
	uint8_t w[1024] __attribute__((aligned(16))) = {0};
	uint8_t sel = fuzz_u8(in), fl = fuzz_u8(in), k = fuzz_u8(in), nseg = (fuzz_u8(in) & 3) + 1;
	uint16_t loff = fuzz_u16(in), roff = fuzz_u16(in);
	uint32_t len = fuzz_u16(in) % 2048;
	uint8_t opcode = sel < 2 * sizeof(ops) ? ops[sel % sizeof(ops)] : fuzz_u8(in);
	const struct gdak_mlx5_op_info *info = gdak_mlx5_op_info(opcode);
	uint32_t lkey = pick_key(k, in), rkey = pick_key(k >> 3, in);
	struct gdak_mlx5_ctrl c = {
		.opcode = opcode, .wqe_index = (uint16_t)v->pi, .qpn = v->d->qpn,
		.fm_ce_se = (uint8_t)((fl & 1 ? MLX5_WQE_CTRL_CQ_UPDATE : 0) |
				      (fl & 2 ? GDAK_MLX5_FENCE_SMALL_AND_FENCE : 0)),
		.imm = 0x11223344,
	};
	unsigned ds = 1, off = 16;

	/* GDAK_FUZZ_SKIP_OVERLAP=1: local and remote never share a region, to
	 * fuzz on past the known nm_dma_copy overlap finding (rel_overlap.c) */
	if (skip_overlap && lkey == rkey)
		rkey = lkey == R[REG_R].key ? R[REG_L].key : R[REG_R].key;
	if (k & 0xc0) /* lengths beyond the regions, and huge ones */
		len = k & 0x80 ? fuzz_u32(in) : RLEN + (len & 63);
	if (info && (info->flags & GDAK_OPF_RADDR)) {
		uint64_t ra = pick_addr(rkey, roff, fl & 0x40, in);
		if (info->flags & (GDAK_OPF_ATOMIC | GDAK_OPF_MASKED) && !(fl & 0x80))
			ra &= ~7ull;
		gdak_mlx5_raddr_encode((void *)(w + off), ra, rkey);
		off += 16;
		ds++;
	}
	if (info && (info->flags & GDAK_OPF_ATOMIC)) {
		gdak_mlx5_atomic_encode((void *)(w + off), fuzz_u8(in), fuzz_u8(in));
		off += 16;
		ds++;
	} else if (info && (info->flags & GDAK_OPF_MASKED)) {
		fuzz_bytes(in, w + off, 32);
		off += 32;
		ds += 2;
	}
	if (!info || (info->flags & GDAK_OPF_DATA)) {
		if (info && (info->flags & (GDAK_OPF_ATOMIC | GDAK_OPF_MASKED))) {
			nseg = 1;
			if (!(fl & 0x80))
				len = 8;
		}
		if (fl & 4) { /* inline */
			uint32_t il = len % 256;
			gdak_mlx5_inline_encode((void *)(w + off), fl & 0x80 ? len : il);
			fuzz_bytes(in, w + off + 4, il);
			ds += gdak_mlx5_inline_ds(il);
		} else {
			for (unsigned i = 0; i < nseg; i++, off += 16, ds++)
				gdak_mlx5_data_encode((void *)(w + off),
						      pick_addr(lkey, (uint16_t)(loff + i * 512),
								(fl & 0x40) && i + 1 == (unsigned)nseg, in),
						      len / nseg, lkey);
		}
	}
	if (fl & 8)
		c.wqe_index = fuzz_u16(in);
	if (fl & 0x10)
		c.qpn = fuzz_u32(in) & 0xffffff;
	if (fl & 0x20)
		ds = fuzz_u8(in) & 0x3f;
	c.ds = (uint8_t)ds;
	gdak_mlx5_ctrl_encode((void *)w, &c);
	put_wqe(v, w, gdak_mlx5_wqebbs(ds ? (ds > 63 ? 63 : ds) : 1));
}

/* one of the syndromes gdak's table names (mlx5_names.c) */
static int syndrome_known(uint8_t s)
{
	return s && gdak_mlx5_syndrome_from_name(gdak_mlx5_syndrome_name(s)) == s;
}

/* Consume what is ready on a CQ, checking each CQE. */
static unsigned drain(const struct gdak_dev_cq *cq, uint64_t *ci, uint32_t qpn, int recv,
		      int *err_seen)
{
	unsigned n = 0;

	while (n < cq->ncqe) {
		const uint8_t *c = (const uint8_t *)cq->cqes + (size_t)(*ci & (cq->ncqe - 1)) * 64;
		struct gdak_mlx5_cqe_fields f;

		if (!gdak_mlx5_cqe_is_sw_owned(__atomic_load_n(c + 63, __ATOMIC_ACQUIRE), *ci,
					       cq->ncqe))
			break;
		gdak_mlx5_cqe_decode(c, &f);
		if (recv)
			FUZZ_ASSERT(f.opcode == MLX5_CQE_RESP_WR_IMM || f.opcode == MLX5_CQE_RESP_SEND ||
				    f.opcode == MLX5_CQE_RESP_SEND_IMM || f.opcode == MLX5_CQE_RESP_ERR,
				    "receive CQE opcode %u", f.opcode);
		else
			FUZZ_ASSERT(f.opcode == MLX5_CQE_REQ || f.opcode == MLX5_CQE_REQ_ERR,
				    "send CQE opcode %u", f.opcode);
		FUZZ_ASSERT(f.qpn == qpn, "CQE names QPN 0x%x, the QP is 0x%x", f.qpn, qpn);
		if (f.opcode == MLX5_CQE_REQ_ERR || f.opcode == MLX5_CQE_RESP_ERR) {
			FUZZ_ASSERT(syndrome_known(f.syndrome), "error CQE syndrome 0x%x", f.syndrome);
			if (f.syndrome != MLX5_CQE_SYNDROME_WR_FLUSH_ERR && err_seen)
				*err_seen = 1;
		} else if (recv && f.opcode != MLX5_CQE_RESP_WR_IMM) {
			/* a SEND landed in one receive buffer (WRITE_IMM reports the
			 * RDMA write's length, which went elsewhere) */
			FUZZ_ASSERT(f.byte_cnt <= RBUF + 64, "receive (CQE opcode %u) of %u bytes into "
				    "a buffer of at most %u", f.opcode, f.byte_cnt, RBUF + 64);
		}
		(*ci)++;
		n++;
	}
	if (n)
		__atomic_store_n(cq->dbrec, gdak_mlx5_cq_dbrec_value((uint32_t)*ci),
				 __ATOMIC_RELEASE);
	return n;
}

static void poll_all(struct dev *v)
{
	drain(&v->d->scq, &v->ci, v->d->qpn, 0, &v->err_cqe);
	drain(&v->db->rcq, &v->rci, v->db->qpn, 1, NULL);
}

static void post_recv(struct dev *v, uint8_t n, struct fuzz_in *in)
{
	struct gdak_dev_qp *d = v->db;

	for (unsigned i = 0; i < (n & 7u); i++) {
		uint8_t *w = (uint8_t *)d->rq_buf + ((v->rq_pi & (d->rq_wqe_cnt - 1)) << d->rq_log_stride);
		uint8_t kk = fuzz_u8(in);
		uint32_t key = kk & 0x80 ? pick_key(kk, in) : R[REG_RB].key;

		gdak_mlx5_data_encode((void *)w, (uintptr_t)(R[REG_RB].p + (v->rq_pi % 64) * RBUF),
				      kk & 0x40 ? RBUF + 64 : RBUF, key);
		v->rq_pi++;
	}
	__atomic_store_n(&d->dbrec[MLX5_RCV_DBR], gdak_htobe32((uint32_t)v->rq_pi & 0xffff),
			 __ATOMIC_RELEASE);
}

static void stats_of(struct gdak_qp *q, uint64_t out[6])
{
	struct gdak_nic_stats st;

	memset(&st, 0, sizeof(st));
	gdak_nic_qp_stats(q, &st);
	out[0] = st.wqes;
	out[1] = st.cqes;
	out[2] = st.flushed;
	out[3] = st.doorbells;
	out[4] = st.violations;
	out[5] = st.recvs;
}

/* Let the NIC work until nothing changes for a few polls (bounded). */
static void settle(struct dev *v, unsigned max_ms)
{
	uint64_t prev[6] = {0}, cur[6];
	unsigned same = 0;

	for (unsigned i = 0; i < max_ms * 4 && same < 8; i++) {
		poll_all(v);
		sleep_us(250);
		stats_of(v->a, cur);
		same = memcmp(cur, prev, sizeof(cur)) ? 0 : same + 1;
		memcpy(prev, cur, sizeof(cur));
	}
	poll_all(v);
}

static void op_dereg_x(void)
{
	if (!R[REG_X].mr)
		return;
	FUZZ_ASSERT(!gdak_mr_dereg(R[REG_X].mr), "dereg X");
	R[REG_X].mr = NULL;
	/* from here on nothing may write region X (dereg waited for the NIC) */
	memcpy(x_snap, R[REG_X].p, RLEN);
	x_snapped = 1;
}

static void op_modify(struct dev *v, uint8_t b)
{
	if (!(b & 1)) {
		FUZZ_ASSERT(!gdak_qp_modify(v->a, GDAK_QPS_ERR, NULL), "modify to ERR");
		return;
	}
	/* RESET zeroes the rings and indices; connect again and restart at 0 */
	FUZZ_ASSERT(!gdak_qp_modify(v->a, GDAK_QPS_RESET, NULL), "modify to RESET");
	FUZZ_ASSERT(gdak_qp_state(v->a) == GDAK_QPS_RESET, "state after RESET");
	FUZZ_ASSERT(!gdak_qp_connect(v->a, &v->ib), "connect after RESET");
	FUZZ_ASSERT(!gdak_qp_export(v->a, &v->d), "export");
	v->pi = v->last = v->ci = 0;
	v->err_cqe = 0;
	v->reset = 1;
}

static void healthy_check(void)
{
	uint8_t w[64] __attribute__((aligned(16))) = {0};
	struct gdak_mlx5_ctrl c = {.opcode = MLX5_OPCODE_RDMA_WRITE, .wqe_index = (uint16_t)h_pi,
				   .qpn = hd->qpn, .ds = 3, .fm_ce_se = MLX5_WQE_CTRL_CQ_UPDATE};
	uint8_t *dst = R[REG_H].p + (h_count % 64) * 8;
	const uint8_t *cqe = (const uint8_t *)hd->scq.cqes + (h_ci & (hd->scq.ncqe - 1)) * 64;
	struct gdak_mlx5_cqe_fields f;
	uint64_t val = ++h_count;
	unsigned waited = 0;

	memcpy(w + 48, &val, 8);
	/* write the local copy of the value (in region H too) to its slot */
	memcpy(R[REG_H].p + 8192, &val, 8);
	gdak_mlx5_ctrl_encode((void *)w, &c);
	gdak_mlx5_raddr_encode((void *)(w + 16), (uintptr_t)dst, R[REG_H].key);
	gdak_mlx5_data_encode((void *)(w + 32), (uintptr_t)(R[REG_H].p + 8192), 8, R[REG_H].key);
	memcpy(slot(hd, h_pi), w, 64);
	h_pi++;
	ring(hd, h_pi, h_pi - 1);
	while (!gdak_mlx5_cqe_is_sw_owned(__atomic_load_n(cqe + 63, __ATOMIC_ACQUIRE), h_ci,
					  hd->scq.ncqe)) {
		FUZZ_ASSERT(++waited < 20000, "the healthy QP got no completion in 5 s: the NIC "
			    "model stopped serving other QPs");
		sleep_us(250);
	}
	gdak_mlx5_cqe_decode(cqe, &f);
	h_ci++;
	__atomic_store_n(hd->scq.dbrec, gdak_mlx5_cq_dbrec_value((uint32_t)h_ci), __ATOMIC_RELEASE);
	FUZZ_ASSERT(f.opcode == MLX5_CQE_REQ, "healthy QP completion opcode %u syndrome 0x%x",
		    f.opcode, f.syndrome);
	FUZZ_ASSERT(!memcmp(dst, &val, 8), "healthy QP's data did not arrive");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fuzz_in in = {.p = data, .n = size};
	struct dev v = {0};
	uint8_t h = fuzz_u8(&in);
	struct gdak_qp_attr aa = {
		.sq_depth = 16u << (h & 3), .handler = (enum gdak_dev_db_handler)((h >> 2) % 3),
		.nic_thread = 0,
	};
	struct gdak_qp_attr ba = {.sq_depth = 16, .rq_depth = RQ_DEPTH, .nic_thread = (h >> 4) & 1};
	unsigned steps = 0;
	int settled = !(h & 0x80);

	if (!ctx)
		LLVMFuzzerInitialize(NULL, NULL);
	aa.cq_depth = h & 0x20 ? 2 : aa.sq_depth; /* CQ too small */
	gdak_nic_set_strict(!(h & 0x40));
	FUZZ_ASSERT(!reg(&R[REG_X], GDAK_ACCESS_ALL), "register X");
	x_snapped = 0;
	FUZZ_ASSERT(!gdak_qp_create(ctx, &aa, &v.a), "create a");
	FUZZ_ASSERT(!gdak_qp_create(ctx, &ba, &v.b), "create b");
	FUZZ_ASSERT(!connect_pair(v.a, v.b, &v.ia, &v.ib), "connect");
	FUZZ_ASSERT(!gdak_qp_export(v.a, &v.d) && !gdak_qp_export(v.b, &v.db), "export");
	post_recv(&v, 4, &in);

	while (fuzz_more(&in) && steps++ < 200) {
		uint8_t op = fuzz_u8(&in);

		switch (op % 14) {
		case 0:
			op_wqe(&v, &in);
			break;
		case 1: {
			uint8_t w[64];
			fuzz_bytes(&in, w, 64);
			put_wqe(&v, w, 1);
			break;
		}
		case 2:
			ring(v.d, v.pi, v.last);
			break;
		case 3:
			__atomic_store_n(&v.d->dbrec[MLX5_SND_DBR],
					 gdak_mlx5_sq_dbrec_value((uint32_t)(v.pi + (int8_t)fuzz_u8(&in))),
					 __ATOMIC_RELEASE);
			break;
		case 4: {
			uint64_t r = fuzz_u8(&in) & 1 ? fuzz_u64(&in)
						      : *(const uint64_t *)(const void *)slot(v.d, v.last);
			__atomic_store_n(v.d->db_reg, r, __ATOMIC_RELEASE);
			break;
		}
		case 5: {
			uint8_t b = fuzz_u8(&in);
			uint64_t p = b & 1 ? fuzz_u64(&in) : v.pi + (int8_t)fuzz_u8(&in);
			__atomic_store_n(v.d->proxy_pi, p, __ATOMIC_RELEASE);
			break;
		}
		case 6:
			settle(&v, 1 + fuzz_u8(&in) % 4);
			break;
		case 7:
			poll_all(&v);
			break;
		case 8:
			v.pi += (uint64_t)(int64_t)(int8_t)fuzz_u8(&in);
			break;
		case 9: {
			uint8_t w[64], at = fuzz_u8(&in);
			memcpy(w, slot(v.d, v.last), 64);
			if (at & 0x80)
				w[at & 63] ^= 0x5a;
			memcpy((uint8_t *)v.d->db_reg + 8, w + 8, 56);
			__atomic_store_n(v.d->db_reg, *(const uint64_t *)(const void *)w,
					 __ATOMIC_RELEASE);
			break;
		}
		case 10:
			op_dereg_x();
			break;
		case 11:
			op_modify(&v, fuzz_u8(&in));
			break;
		case 12:
			post_recv(&v, fuzz_u8(&in), &in);
			break;
		default:
			__atomic_store_n(v.d->scq.dbrec, fuzz_u32(&in), __ATOMIC_RELEASE);
			break;
		}
	}

	if (settled) {
		enum gdak_qp_state s;

		settle(&v, 50);
		s = gdak_qp_state(v.a);
		FUZZ_ASSERT(s == GDAK_QPS_RTS || s == GDAK_QPS_ERR, "QP in %s after settling",
			    gdak_qp_state_name(s));
		if (v.err_cqe)
			FUZZ_ASSERT(s == GDAK_QPS_ERR, "error CQE seen but the QP is in %s",
				    gdak_qp_state_name(s));
		if (s == GDAK_QPS_ERR) {
			struct gdak_qp_error e;
			FUZZ_ASSERT(!gdak_qp_query_error(v.a, &e), "query_error");
			FUZZ_ASSERT(e.state == GDAK_QPS_ERR && e.text[0],
				    "QP in ERR but query_error names no reason (state %s)",
				    gdak_qp_state_name(e.state));
		}
	}
	if (verbose) {
		struct gdak_nic_stats st = {0};
		struct gdak_qp_error e;
		gdak_nic_qp_stats(v.a, &st);
		gdak_qp_query_error(v.a, &e);
		fprintf(stderr, "fuzz_wqe: %s, %llu WQEs, %llu CQEs (%llu errors, %llu flushed), "
			"%llu violations, %llu doorbells; rule '%s' %s\n", gdak_qp_state_name(e.state),
			(unsigned long long)st.wqes, (unsigned long long)st.cqes,
			(unsigned long long)st.errors, (unsigned long long)st.flushed,
			(unsigned long long)st.violations, (unsigned long long)st.doorbells, e.rule,
			e.text);
	}
	/* destroyed with whatever is still in flight (unsettled inputs) */
	FUZZ_ASSERT(!gdak_qp_destroy(v.a), "destroy a");
	FUZZ_ASSERT(!gdak_qp_destroy(v.b), "destroy b");
	if (R[REG_X].mr) {
		FUZZ_ASSERT(!gdak_mr_dereg(R[REG_X].mr), "dereg X");
		R[REG_X].mr = NULL;
	} else if (x_snapped) {
		FUZZ_ASSERT(!memcmp(x_snap, R[REG_X].p, RLEN),
			    "region X written after its deregistration returned");
	}
	for (int i = 0; i < NREG; i++)
		check_region(&R[i], i);
	healthy_check();
	gdak_nic_set_strict(1);
	return 0;
}
