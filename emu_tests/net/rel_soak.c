/* SPDX-License-Identifier: MIT */
/*
 * rel_soak.c - a bounded mixed-operation soak: many QP pairs spread over
 * several NIC threads, several host threads playing the device, random
 * RDMA_WRITE (gathered and inline), RDMA_READ, SEND, WRITE_IMM, fetch-add
 * and compare-swap in random batches, with random faults: injected error
 * CQEs (every syndrome, at a chosen WQE), delayed CQEs, and now and then a
 * WQE with a key lacking the access right.  Every CQE is checked (opcode,
 * WQE index, syndrome, byte count, immediate), every byte of every target
 * against a shadow copy, every atomic's fetched value; after each error the
 * pair is reset and reconnected and goes on.
 *
 * Settings (environment): GDAK_SOAK_SECONDS (default 4), GDAK_SOAK_QPS
 * (pairs, default 8), GDAK_SOAK_NIC_THREADS (2), GDAK_SOAK_DEV_THREADS (2),
 * GDAK_SOAK_SEED.  Prints the counts; docs/RELIABILITY.md has a long run.
 */
#include <errno.h>
#include <pthread.h>

#include "rel_util.h"

/* gdak_test's counters are not thread safe: device threads report here */
static pthread_mutex_t fail_lock = PTHREAD_MUTEX_INITIALIZER;
#define SOAK_FAIL(...)                                                 \
	do {                                                           \
		pthread_mutex_lock(&fail_lock);                        \
		gdak_test_fail(__FILE__, __LINE__, __VA_ARGS__);       \
		pthread_mutex_unlock(&fail_lock);                      \
	} while (0)
/* a control-path call that must work; the soak cannot go on without it */
#define SOAK_MUST(call)                                                                 \
	do {                                                                            \
		int rc_ = (call);                                                       \
		if (rc_) {                                                              \
			SOAK_FAIL("%s: %d", #call, rc_);                                \
			abort();                                                        \
		}                                                                       \
	} while (0)

#define SLICE (32u * 1024)	/* per pair, in la (S) and lb (D) */
#define DATA 16384u		/* S: source [0, DATA), read-back [DATA, 2*DATA - 64),
				 * atomic results in the last 64 bytes (one per op) */
#define SPAN (DATA - 64)	/* ops stay within [0, SPAN) */
#define RECV_OFF 16384u		/* D: write target [0, DATA); receive slots */
#define RECV_SLOT 1024u
#define RECV_SLOTS 8u
#define ATOM_OFF (SLICE - 64)	/* D: the atomic word */
#define MAX_BATCH 8

static struct rel_env E;
/* the pairs' memory: S slices in sbuf, D slices in dbuf (GDAK_ACCESS_ALL) */
static uint8_t *sbuf, *dbuf;
static struct gdak_mr *smr, *dmr;
static unsigned seconds = 4, npairs = 8, nic_threads = 2, dev_threads = 2;
static uint64_t seed0 = 1;

enum kind { K_WRITE, K_WRITE_INL, K_READ, K_SEND, K_WRITE_IMM, K_FA, K_CS, K_NKINDS };
static const char *const kind_names[] = {"write", "write_inline", "read", "send", "write_imm",
					 "fetch_add", "cmp_swap"};

struct op {
	enum kind k;
	uint32_t off, len;
	uint64_t add, cmp;
	uint16_t idx;
	uint32_t imm;
	int bad_key;		/* posted with a read-only rkey: REMOTE_ACCESS expected */
	unsigned rslot;
};

struct pair {
	struct nu_qp a, b;
	uint8_t *S, *D;
	uint8_t shadow[DATA];	/* what D's write target must hold */
	uint8_t shadow_rb[DATA];	/* what S's read-back area must hold */
	uint64_t atom;		/* what the atomic word must hold */
	uint64_t *res;		/* atomic result words, one per op of a batch (in S) */
	pthread_mutex_t lock;	/* one device thread at a time per pair */
};

static struct pair *P;


/* counters, summed at the end (relaxed atomics: several device threads) */
static struct {
	uint64_t ops, bytes, batches, cqes, recv_cqes, inj_err, inj_delay, bad_key, errors_seen,
		flushed, recoveries, by_kind[K_NKINDS];
} C;
#define CNT(f, n) __atomic_fetch_add(&C.f, (n), __ATOMIC_RELAXED)

/* ---- faults: one faulted batch at a time ----------------------------------
 *
 * gdak_nic_set_faults replaces the whole table, and while it does so no rule
 * is active (nm_fault.c), so a rule of one thread would be missed by a WQE
 * running while another thread changes the table.  A batch with a fault
 * holds fault_lock from setting its rule to clearing it; other threads run
 * their batches without faults meanwhile (trylock).
 */
static pthread_mutex_t fault_lock = PTHREAD_MUTEX_INITIALIZER;

static void fault_set(const char *kind, uint32_t qpn, uint16_t wqe, const char *arg)
{
	char spec[128];

	snprintf(spec, sizeof(spec), "%s:qp=%u,wqe=%u,%s=%s", kind, qpn, wqe,
		 strcmp(kind, "err") ? "passes" : "syndrome", arg);
	SOAK_MUST(gdak_nic_set_faults(spec));
}

/* ---- one pair ------------------------------------------------------------- */

static void pair_connect(struct pair *p)
{
	struct gdak_qp_info ia, ib;

	SOAK_MUST(gdak_qp_info(p->a.qp, &ia));
	SOAK_MUST(gdak_qp_info(p->b.qp, &ib));
	SOAK_MUST(gdak_qp_connect(p->a.qp, &ib));
	SOAK_MUST(gdak_qp_connect(p->b.qp, &ia));
	nu_qp_from(&p->a, p->a.qp);
	nu_qp_from(&p->b, p->b.qp);
}

static void pair_reset(struct pair *p)
{
	SOAK_MUST(gdak_qp_modify(p->a.qp, GDAK_QPS_RESET, NULL));
	SOAK_MUST(gdak_qp_modify(p->b.qp, GDAK_QPS_RESET, NULL));
	pair_connect(p);
	CNT(recoveries, 1);
}

static const char *const inj_syndromes[] = {
	"LOCAL_LENGTH", "LOCAL_QP_OP", "LOCAL_PROT", "BAD_RESP", "LOCAL_ACCESS",
	"REMOTE_INVAL_REQ", "REMOTE_ACCESS", "REMOTE_OP", "TRANSPORT_RETRY_EXC",
	"RNR_RETRY_EXC", "REMOTE_ABORTED",
};

static void post(struct pair *p, struct op *o)
{
	/* a bad key: one that names no region (REMOTE_ACCESS, rule bad_rkey) */
	uint32_t lk = gdak_mr_lkey(smr), rk = o->bad_key ? 0x7fffff00u : gdak_mr_rkey(dmr);
	uint8_t *src = p->S + o->off, *dst = p->D + o->off;

	switch (o->k) {
	case K_WRITE:
		o->idx = nu_post_rdma(&p->a, MLX5_OPCODE_RDMA_WRITE, src, o->len, lk, (uintptr_t)dst, rk,
				      0, NU_SIG);
		break;
	case K_WRITE_INL:
		o->idx = nu_post_rdma(&p->a, MLX5_OPCODE_RDMA_WRITE, src, o->len, lk, (uintptr_t)dst, rk,
				      0, NU_SIG | NU_INLINE);
		break;
	case K_READ:
		o->idx = nu_post_rdma(&p->a, MLX5_OPCODE_RDMA_READ, p->S + DATA + o->off, o->len, lk,
				      (uintptr_t)dst, rk, 0, NU_SIG);
		break;
	case K_SEND:
		nu_post_recv(&p->b, p->D + RECV_OFF + o->rslot * RECV_SLOT, RECV_SLOT,
			     gdak_mr_lkey(dmr));
		o->idx = nu_post_send(&p->a, MLX5_OPCODE_SEND, src, o->len, lk, 0, NU_SIG);
		break;
	case K_WRITE_IMM:
		nu_post_recv(&p->b, p->D + RECV_OFF + o->rslot * RECV_SLOT, RECV_SLOT,
			     gdak_mr_lkey(dmr));
		o->idx = nu_post_rdma(&p->a, MLX5_OPCODE_RDMA_WRITE_IMM, src, o->len, lk, (uintptr_t)dst,
				      rk, gdak_htobe32(o->imm), NU_SIG);
		break;
	case K_FA:
	case K_CS:
		o->idx = nu_post_atomic(&p->a, o->k == K_FA ? MLX5_OPCODE_ATOMIC_FA : MLX5_OPCODE_ATOMIC_CS,
					&p->res[o->rslot], lk, (uintptr_t)(p->D + ATOM_OFF), rk, o->add,
					o->cmp,
					NU_SIG);
		break;
	default:
		break;
	}
}

/* The effect of a successful op, in order, on the shadows; checks what a
 * completed READ / atomic / SEND brought back. */
static void apply_ok(struct pair *p, struct op *o, uint64_t *fails)
{
	switch (o->k) {
	case K_WRITE:
	case K_WRITE_INL:
	case K_WRITE_IMM:
		memcpy(p->shadow + o->off, p->S + o->off, o->len);
		break;
	case K_READ:
		memcpy(p->shadow_rb + o->off, p->shadow + o->off, o->len);
		break;
	case K_SEND:
		if (memcmp(p->D + RECV_OFF + o->rslot * RECV_SLOT, p->S + o->off, o->len)) {
			SOAK_FAIL("QP 0x%x: SEND of %u bytes arrived wrong",
				       p->a.qpn, o->len);
			(*fails)++;
		}
		break;
	case K_FA:
	case K_CS:
		if (gdak_be64toh(p->res[o->rslot]) != p->atom) {
			SOAK_FAIL("QP 0x%x: %s fetched 0x%llx, want 0x%llx",
				       p->a.qpn, kind_names[o->k],
				       (unsigned long long)gdak_be64toh(p->res[o->rslot]),
				       (unsigned long long)p->atom);
			(*fails)++;
		}
		if (o->k == K_FA)
			p->atom += o->add;
		else if (p->atom == o->cmp)
			p->atom = o->add;
		break;
	default:
		break;
	}
}

static uint64_t batch(struct pair *p, uint64_t *rs)
{
	struct op ops[MAX_BATCH];
	unsigned n = 1 + (unsigned)(gdak_test_rand(rs) % MAX_BATCH), nrecv = 0, rslot = 0;
	int err_at = -1, faulted = 0;
	uint8_t err_synd = 0;
	uint64_t fails = 0, r = gdak_test_rand(rs);

	/* a fresh source pattern per batch */
	gdak_test_fill(p->S, DATA, gdak_test_rand(rs));
	for (unsigned i = 0; i < n; i++) {
		struct op *o = &ops[i];
		memset(o, 0, sizeof(*o));
		o->k = (enum kind)(gdak_test_rand(rs) % K_NKINDS);
		o->len = 1 + (uint32_t)(gdak_test_rand(rs) % (o->k == K_WRITE_INL ? 64 : 4096));
		if (o->k == K_SEND)
			o->len = 1 + (uint32_t)(gdak_test_rand(rs) % RECV_SLOT);
		o->off = (uint32_t)(gdak_test_rand(rs) % (SPAN - o->len));
		o->add = gdak_test_rand(rs) % 1000;
		o->cmp = gdak_test_rand(rs) & 1 ? p->atom : p->atom + 1; /* may not match later */
		o->imm = (uint32_t)gdak_test_rand(rs);
		if (o->k == K_SEND || o->k == K_WRITE_IMM)
			o->rslot = rslot++ % RECV_SLOTS;
		else if (o->k == K_FA || o->k == K_CS)
			o->rslot = i; /* its result word */
	}
	/* at most one error per batch: an injected one (1 in 16) or a bad key
	 * (1 in 64); or a delayed CQE (1 in 16) */
	if ((r % 16 == 0 || r % 16 == 2) && !pthread_mutex_trylock(&fault_lock)) {
		faulted = 1;
		if (r % 16 == 0) {
			unsigned at = (unsigned)((r >> 8) % n);
			const char *sn = inj_syndromes[(r >> 16) % (sizeof(inj_syndromes) /
								    sizeof(*inj_syndromes))];
			/* its WQE index: the WQEBBs of the ops before it */
			uint64_t idx = p->a.pi;
			for (unsigned i = 0; i < at; i++)
				idx += ops[i].k == K_WRITE_INL
					       ? gdak_mlx5_wqebbs(2 + gdak_mlx5_inline_ds(ops[i].len))
					       : 1;
			fault_set("err", p->a.qpn, (uint16_t)idx, sn);
			err_at = (int)at;
			err_synd = (uint8_t)gdak_mlx5_syndrome_from_name(sn);
			CNT(inj_err, 1);
		} else {
			char passes[16];
			snprintf(passes, sizeof(passes), "%u", (unsigned)(1 + (r >> 8) % 200));
			fault_set("delay", p->a.qpn, (uint16_t)p->a.pi, passes);
			CNT(inj_delay, 1);
		}
	} else if (r % 64 == 1) {
		unsigned at = (unsigned)((r >> 8) % n);
		if (ops[at].k != K_SEND) {
			ops[at].bad_key = 1;
			err_at = (int)at;
			err_synd = MLX5_CQE_SYNDROME_REMOTE_ACCESS_ERR;
			CNT(bad_key, 1);
		}
	}
	for (unsigned i = 0; i < n; i++)
		post(p, &ops[i]);
	nu_ring(&p->a);
	for (unsigned i = 0; i < n; i++) {
		struct op *o = &ops[i];
		struct gdak_mlx5_cqe_fields f;
		int want_err = err_at >= 0 && (int)i >= err_at;
		uint8_t want_synd = (int)i == err_at ? err_synd : MLX5_CQE_SYNDROME_WR_FLUSH_ERR;

		if (nu_poll(&p->a, 0, &f, 20000)) {
			SOAK_FAIL("QP 0x%x: no CQE for %s WQE %u in 20 s",
				       p->a.qpn, kind_names[o->k], o->idx);
			return 1;
		}
		CNT(cqes, 1);
		if (f.wqe_counter != o->idx || f.qpn != p->a.qpn ||
		    (want_err ? f.opcode != MLX5_CQE_REQ_ERR || f.syndrome != want_synd
			      : f.opcode != MLX5_CQE_REQ)) {
			SOAK_FAIL("QP 0x%x %s WQE %u: CQE opcode %u syndrome 0x%x "
				       "idx %u; want %s 0x%x", p->a.qpn, kind_names[o->k], o->idx,
				       f.opcode, f.syndrome, f.wqe_counter, want_err ? "error" : "success",
				       want_synd);
			fails++;
			continue;
		}
		if (want_err) {
			if (f.syndrome == MLX5_CQE_SYNDROME_WR_FLUSH_ERR)
				CNT(flushed, 1);
			else
				CNT(errors_seen, 1);
			continue;
		}
		if (o->k != K_READ && o->k != K_FA && o->k != K_CS && f.byte_cnt != o->len) {
			SOAK_FAIL("QP 0x%x %s WQE %u: byte count %u, want %u",
				       p->a.qpn, kind_names[o->k], o->idx, f.byte_cnt, o->len);
			fails++;
		}
		CNT(ops, 1);
		CNT(bytes, o->len);
		CNT(by_kind[o->k], 1);
		if (o->k == K_SEND || o->k == K_WRITE_IMM) {
			struct gdak_mlx5_cqe_fields rf;
			if (nu_poll(&p->b, 1, &rf, 20000)) {
				SOAK_FAIL("QP 0x%x: no receive CQE", p->b.qpn);
				fails++;
			} else {
				CNT(recv_cqes, 1);
				nrecv++;
				if (rf.opcode != (o->k == K_SEND ? MLX5_CQE_RESP_SEND : MLX5_CQE_RESP_WR_IMM) ||
				    rf.byte_cnt != o->len ||
				    (o->k == K_WRITE_IMM && rf.imm != gdak_htobe32(o->imm))) {
					SOAK_FAIL("QP 0x%x %s: receive CQE opcode %u "
						       "bytes %u imm 0x%x", p->b.qpn, kind_names[o->k],
						       rf.opcode, rf.byte_cnt, rf.imm);
					fails++;
				}
			}
		}
		apply_ok(p, o, &fails);
	}
	if (faulted) {
		SOAK_MUST(gdak_nic_set_faults(NULL));
		pthread_mutex_unlock(&fault_lock);
	}
	/* every byte of the write target against the shadow */
	if (memcmp(p->D, p->shadow, DATA)) {
		SOAK_FAIL("QP 0x%x: write target differs from its shadow at "
			       "byte %zu", p->a.qpn, gdak_test_memdiff(p->D, p->shadow, DATA));
		fails++;
	}
	if (memcmp(p->S + DATA, p->shadow_rb, SPAN)) {
		SOAK_FAIL("QP 0x%x: read-back area differs from its shadow at "
			       "byte %zu", p->a.qpn, gdak_test_memdiff(p->S + DATA, p->shadow_rb, SPAN));
		fails++;
	}
	if (*(volatile uint64_t *)(void *)(p->D + ATOM_OFF) != p->atom) {
		SOAK_FAIL("QP 0x%x: atomic word 0x%llx, want 0x%llx", p->a.qpn,
			       (unsigned long long)*(volatile uint64_t *)(void *)(p->D + ATOM_OFF),
			       (unsigned long long)p->atom);
		fails++;
	}
	if (err_at >= 0) {
		if (nu_wait_state(&p->a, GDAK_QPS_ERR, 10000)) {
			SOAK_FAIL("QP 0x%x not in ERR after its error CQE", p->a.qpn);
			fails++;
		}
		pair_reset(p);
	}
	CNT(batches, 1);
	(void)nrecv;
	return fails;
}

struct dev_thread {
	pthread_t t;
	unsigned id;
	uint64_t fails;
};

static void *dev_main(void *arg)
{
	struct dev_thread *dt = arg;
	uint64_t rs = seed0 * 0x9e3779b97f4a7c15ull + dt->id + 1;
	uint64_t end = gdak_test_now_ns() + (uint64_t)seconds * 1000000000ull;

	while (gdak_test_now_ns() < end && !dt->fails) {
		/* pairs i with i % dev_threads == id belong to this thread */
		unsigned mine = (npairs + dev_threads - 1 - dt->id) / dev_threads;
		unsigned k = dt->id + dev_threads * (unsigned)(gdak_test_rand(&rs) % (mine ? mine : 1));
		struct pair *p;

		if (k >= npairs)
			continue;
		p = &P[k];
		pthread_mutex_lock(&p->lock);
		dt->fails += batch(p, &rs);
		pthread_mutex_unlock(&p->lock);
	}
	return NULL;
}

static unsigned env_u(const char *name, unsigned def, unsigned max)
{
	const char *v = getenv(name);
	unsigned long x;

	if (!v || !*v)
		return def;
	x = strtoul(v, NULL, 0);
	if (!x || x > max) {
		fprintf(stderr, "%s=%s: want 1..%u\n", name, v, max);
		exit(2);
	}
	return (unsigned)x;
}

int main(void)
{
	struct dev_thread *dts;
	uint64_t t0, t1, fails = 0;

	seconds = env_u("GDAK_SOAK_SECONDS", 4, 86400);
	npairs = env_u("GDAK_SOAK_QPS", 8, 1024);
	nic_threads = env_u("GDAK_SOAK_NIC_THREADS", 2, 64);
	dev_threads = env_u("GDAK_SOAK_DEV_THREADS", 2, 64);
	seed0 = env_u("GDAK_SOAK_SEED", 1, 0xffffffffu);
	if (getenv("GDAK_UNDER_VALGRIND") && !getenv("GDAK_SOAK_SECONDS"))
		seconds = 2;
	rel_env_open(&E, nic_threads);
	P = calloc(npairs, sizeof(*P));
	REQUIRE(P);
	REQUIRE_EQ(gdak_mem_alloc(E.ctx, (size_t)npairs * SLICE, GDAK_MEM_HOST, (void **)&sbuf), 0);
	REQUIRE_EQ(gdak_mem_alloc(E.ctx, (size_t)npairs * SLICE, GDAK_MEM_HOST, (void **)&dbuf), 0);
	REQUIRE_EQ(gdak_mr_reg(E.ctx, sbuf, (size_t)npairs * SLICE, GDAK_ACCESS_ALL, &smr), 0);
	REQUIRE_EQ(gdak_mr_reg(E.ctx, dbuf, (size_t)npairs * SLICE, GDAK_ACCESS_ALL, &dmr), 0);
	for (unsigned i = 0; i < npairs; i++) {
		struct gdak_qp_attr at = {.sq_depth = 64, .cq_depth = 64, .rq_depth = 16,
					  .handler = (enum gdak_dev_db_handler)(i % 3), .nic_thread = -1};
		struct gdak_qp *qa, *qb;

		REQUIRE_EQ(gdak_qp_create(E.ctx, &at, &qa), 0);
		REQUIRE_EQ(gdak_qp_create(E.ctx, &at, &qb), 0);
		P[i].a.qp = qa;
		P[i].b.qp = qb;
		pair_connect(&P[i]);
		P[i].S = sbuf + (size_t)i * SLICE;
		P[i].D = dbuf + (size_t)i * SLICE;
		P[i].res = (uint64_t *)(void *)(P[i].S + SLICE - 64);
		memset(P[i].D, 0, SLICE);
		memset(P[i].S, 0, SLICE);
		memset(P[i].shadow, 0, DATA);
		memset(P[i].shadow_rb, 0, DATA);
		P[i].atom = 0;
		pthread_mutex_init(&P[i].lock, NULL);
	}
	dts = calloc(dev_threads, sizeof(*dts));
	REQUIRE(dts);
	t0 = gdak_test_now_ns();
	for (unsigned i = 0; i < dev_threads; i++) {
		dts[i].id = i;
		REQUIRE_EQ(pthread_create(&dts[i].t, NULL, dev_main, &dts[i]), 0);
	}
	for (unsigned i = 0; i < dev_threads; i++) {
		pthread_join(dts[i].t, NULL);
		fails += dts[i].fails;
	}
	t1 = gdak_test_now_ns();
	CHECK_EQ(fails, 0);
	/* every injected error was seen exactly once, as its own error CQE */
	CHECK_EQ(C.errors_seen, C.inj_err + C.bad_key);
	CHECK(C.ops > 0);
	REQUIRE_EQ(gdak_nic_set_faults(NULL), 0);
	rel_bystanders_ok(&E);
	{
		struct gdak_nic_stats st;
		gdak_nic_stats(&st);
		printf("soak: %u s, %u QP pairs, %u NIC threads, %u device threads, seed %llu\n",
		       seconds, npairs, nic_threads, dev_threads, (unsigned long long)seed0);
		printf("soak: %llu ops ok (%.0f/s), %llu bytes, %llu batches, %llu CQEs + %llu receive "
		       "CQEs checked\n", (unsigned long long)C.ops,
		       (double)C.ops * 1e9 / (double)(t1 - t0), (unsigned long long)C.bytes,
		       (unsigned long long)C.batches, (unsigned long long)C.cqes,
		       (unsigned long long)C.recv_cqes);
		printf("soak: faults injected: %llu error CQEs, %llu delays; %llu bad-key WQEs; errors "
		       "seen %llu, flushed %llu, recoveries %llu; mismatches %llu\n",
		       (unsigned long long)C.inj_err, (unsigned long long)C.inj_delay,
		       (unsigned long long)C.bad_key, (unsigned long long)C.errors_seen,
		       (unsigned long long)C.flushed, (unsigned long long)C.recoveries,
		       (unsigned long long)fails);
		printf("soak: by kind:");
		for (int k = 0; k < K_NKINDS; k++)
			printf(" %s %llu", kind_names[k], (unsigned long long)C.by_kind[k]);
		printf("\nsoak: NIC model: %llu WQEs, %llu CQEs, %llu errors, %llu flushed, %llu "
		       "violations, %llu doorbells\n", (unsigned long long)st.wqes,
		       (unsigned long long)st.cqes, (unsigned long long)st.errors,
		       (unsigned long long)st.flushed, (unsigned long long)st.violations,
		       (unsigned long long)st.doorbells);
	}
	for (unsigned i = 0; i < npairs; i++) {
		nu_destroy(&P[i].a);
		nu_destroy(&P[i].b);
		pthread_mutex_destroy(&P[i].lock);
	}
	free(P);
	free(dts);
	CHECK_EQ(gdak_mr_dereg(smr), 0);
	CHECK_EQ(gdak_mr_dereg(dmr), 0);
	CHECK_EQ(gdak_mem_free(E.ctx, sbuf), 0);
	CHECK_EQ(gdak_mem_free(E.ctx, dbuf), 0);
	rel_env_close(&E);
	return gdak_test_end();
}
