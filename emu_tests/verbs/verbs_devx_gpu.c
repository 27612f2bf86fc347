/* SPDX-License-Identifier: MIT */
/*
 * verbs_devx_gpu.c - DEVX queues whose umem is GPU memory (cuMemAlloc), as
 * DOCA GPUNetIO lays them out: the CQ buffer, the QP's receive and send
 * rings and both doorbell records are device memory, only the UAR register
 * page is host memory.  The program plays the GPU: it writes WQEs and
 * records with host-to-device copies, rings the register, and reads CQEs
 * back with device-to-host copies.  An RDMA WRITE, a READ, a SEND into the
 * QP's own GPU receive ring, fetch-add and compare-and-swap, 70 WRITEs
 * wrapping the send ring and the CQ (the NIC reads the GPU consumer record
 * when the CQ looks full); then an RMP whose ring and record are GPU memory
 * feeding an RC QP (SENDs into it, the receive CQEs naming the RMP WQE,
 * QUERY_RMP's counter read from the GPU record).  Data and CQE fields are checked byte for byte; against the
 * stand-in driver (emu_tests/cuda/gpumem_fake.c, GPU memory the CPU cannot
 * load from) every CQE's owner byte is checked to land after its body.
 *
 * DEVX_GPU_EXPECT_REFUSAL=1 (the run with GDAK_CUDA_DMA=0): the NIC model has
 * no engine to reach GPU memory, and umem registration says so (EOPNOTSUPP)
 * instead of accepting rings it could not execute.
 *
 * Exits 77 without a CUDA driver (the stand-in counts as one).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <endian.h>
#include <errno.h>
#include <sched.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <infiniband/mlx5dv.h>
#include <infiniband/verbs.h>

#include "gdak_devx_gpu_qp.h"
#include "gdak_prm.h"
#include "gdak_rmp.h"
#include "gdak_test.h"
#include "gdak_test_wqe.h"
#include "gdak_verbs.h"

#define LOG_RMP 3
#define LOG_RMP_STRIDE 6

typedef unsigned long long dptr_t;

static struct ibv_context *ctx;
static union ibv_gid gid;
static struct gdak_vt_cuda cu;
static uint32_t pdn;

/* the stand-in driver's owner-byte write log (absent on a real driver) */
struct fwatch {
	uint32_t slot;
	uint8_t val;
	uint8_t by_value;
};
static void (*fake_watch)(dptr_t lo, size_t len);
static unsigned (*fake_watched)(struct fwatch *out, unsigned max);

static void put(dptr_t dst, const void *src, size_t len)
{
	REQUIRE_EQ(cu.htod(dst, src, len), 0);
}

static void get(void *dst, dptr_t src, size_t len)
{
	REQUIRE_EQ(cu.dtoh(dst, src, len), 0);
}

static void put32(dptr_t dst, uint32_t v)
{
	put(dst, &v, 4);
}

static dptr_t galloc(size_t len)
{
	dptr_t p = 0;

	REQUIRE_EQ(cu.mem_alloc(&p, len), 0);
	return p;
}

/* ---- a DEVX RC QP on GPU umem ------------------------------------------------------ */

struct gqp {
	struct mlx5dv_devx_uar *uar;
	dptr_t wq, cqb, dbr; /* RQ then SQ; CQEs; [0..1] QP record, [16] CQ record */
	struct mlx5dv_devx_umem *wq_um, *cq_um, *dbr_um;
	struct mlx5dv_devx_obj *cq, *qp;
	uint32_t cqn, qpn, pi, ci, rq_pi;
};

static void gqp_create(struct gqp *q, uint32_t rmpn)
{
	uint8_t cqe0[GQP_CQ_BYTES];
	/* zeroes for the largest of the rings and the record page */
	static uint8_t zero[GQP_RQ_BYTES + GQP_SQ_BYTES > 4096 ? GQP_RQ_BYTES + GQP_SQ_BYTES : 4096];

	q->uar = mlx5dv_devx_alloc_uar(ctx, MLX5DV_UAR_ALLOC_TYPE_NC);
	REQUIRE(q->uar != NULL);
	q->wq = galloc(GQP_RQ_BYTES + GQP_SQ_BYTES);
	q->cqb = galloc(GQP_CQ_BYTES);
	q->dbr = galloc(4096);
	put(q->wq, zero, GQP_RQ_BYTES + GQP_SQ_BYTES);
	put(q->dbr, zero, 4096);
	memset(cqe0, 0, sizeof(cqe0));
	for (unsigned i = 0; i < (1u << GQP_LOG_CQ); i++)
		cqe0[i * 64 + 63] = 0xf1; /* opcode INVALID, owner 1 */
	put(q->cqb, cqe0, GQP_CQ_BYTES);
	q->wq_um = mlx5dv_devx_umem_reg(ctx, (void *)(uintptr_t)q->wq, GQP_RQ_BYTES + GQP_SQ_BYTES,
					IBV_ACCESS_LOCAL_WRITE);
	q->cq_um = mlx5dv_devx_umem_reg(ctx, (void *)(uintptr_t)q->cqb, GQP_CQ_BYTES,
					IBV_ACCESS_LOCAL_WRITE);
	q->dbr_um = mlx5dv_devx_umem_reg(ctx, (void *)(uintptr_t)q->dbr, 4096,
					 IBV_ACCESS_LOCAL_WRITE);
	REQUIRE(q->wq_um && q->cq_um && q->dbr_um);

	gqp_objects(ctx, pdn, q->uar, q->dbr_um, q->cq_um, q->wq_um, rmpn, &q->cq, &q->cqn, &q->qp,
		    &q->qpn);
}

static unsigned query_state(struct gqp *q)
{
	return prm_rc_query(q->qp, q->qpn, PRM_QPC(0x0, 4));
}

/* One WQE at q->pi, built here and copied into the GPU send ring; then the
 * GPU record, then the (host) register. */
static void post(struct gqp *q, uint8_t opcode, const void *laddr, uint32_t lkey, uint32_t len,
		 uint64_t raddr, uint32_t rkey, uint64_t add_swap, uint64_t cmp, int rq_first)
{
	uint8_t w[64], *p;
	struct mlx5_wqe_ctrl_seg *c = (void *)w;
	uint32_t sq_off = rq_first ? GQP_RQ_BYTES : 0;

	memset(w, 0, sizeof(w));
	p = gdak_tw_segs(w + 16, opcode, raddr, rkey, add_swap, cmp, (uintptr_t)laddr, lkey, len);
	gdak_tw_ctrl(w, q->pi, opcode, q->qpn, (unsigned)(p - w) / 16);
	put(q->wq + sq_off + (q->pi % (1u << GQP_LOG_SQ)) * 64, w, 64);
	q->pi++;
	put32(q->dbr + 4, htobe32(q->pi & 0xffff));
	__atomic_store_n((uint64_t *)q->uar->reg_addr, *(uint64_t *)(void *)c, __ATOMIC_RELEASE);
}

static void post_recv(struct gqp *q, void *addr, uint32_t lkey, uint32_t len)
{
	uint8_t d[32];

	gdak_tw_recv(d, (uintptr_t)addr, lkey, len);
	put(q->wq + (q->rq_pi % (1u << GQP_LOG_RQ)) * GQP_RQ_STRIDE, d, sizeof(d));
	q->rq_pi++;
	put32(q->dbr, htobe32(q->rq_pi & 0xffff));
}

/* The next CQE of q's CQ, read out of GPU memory (waits, bounded by the
 * test's timeout only); its consumer counter written back to the GPU. */
static void next_cqe(struct gqp *q, struct mlx5_cqe64 *e)
{
	dptr_t slot = q->cqb + (q->ci % (1u << GQP_LOG_CQ)) * 64;
	unsigned owner = (q->ci >> GQP_LOG_CQ) & 1;

	for (;;) {
		get(e, slot, 64);
		if ((e->op_own >> 4) != MLX5_CQE_INVALID && (e->op_own & 1) == owner)
			break;
		sched_yield();
	}
	q->ci++;
	put32(q->dbr + 64, htobe32(q->ci & 0xffffff));
}

static void gqp_destroy(struct gqp *q)
{
	prm_rc_destroy(q->qp, q->cq, q->wq_um, q->cq_um, q->dbr_um, q->uar);
	cu.mem_free(q->wq);
	cu.mem_free(q->cqb);
	cu.mem_free(q->dbr);
}

/* Every CQE slot's owner byte: each write before the last says "not ready"
 * (opcode INVALID), the last one is the valid CQE's - the body landed first. */
static void check_owner_last(unsigned ncqe)
{
	static struct fwatch log[4096];
	unsigned n, i, s, seen = 0;

	if (!fake_watched)
		return;
	n = fake_watched(log, 4096);
	REQUIRE(n <= 4096);
	for (s = 0; s < ncqe; s++) {
		int last = -1;

		for (i = 0; i < n; i++)
			if (log[i].slot == s) {
				if (last >= 0)
					CHECK_EQ(log[last].val >> 4, MLX5_CQE_INVALID);
				last = (int)i;
			}
		CHECK(last >= 0);
		if (last >= 0) {
			CHECK(log[last].val >> 4 != MLX5_CQE_INVALID);
			CHECK_EQ(log[last].val & 1, 0); /* the first lap's owner */
			seen++;
		}
	}
	CHECK_EQ(seen, ncqe);
}

/* ---- WRITE, READ, SEND, atomics ----------------------------------------------------- */

static void check_rc(struct ibv_mr *mr, uint8_t *buf)
{
	struct gqp a, b;
	struct mlx5_cqe64 e;
	uint64_t *ctr = (uint64_t *)(void *)(buf + 60000), *res = (uint64_t *)(void *)(buf + 61000);

	memset(&a, 0, sizeof(a));
	memset(&b, 0, sizeof(b));
	gqp_create(&a, 0);
	gqp_create(&b, 0);
	CHECK_EQ(query_state(&a), 0);
	gqp_connect(a.qp, a.qpn, b.qpn, gid.raw);
	gqp_connect(b.qp, b.qpn, a.qpn, gid.raw);
	CHECK_EQ(query_state(&a), 3);
	if (fake_watch)
		fake_watch(a.cqb, GQP_CQ_BYTES);

	/* RDMA WRITE a -> b */
	gdak_test_fill(buf, 4096, 21);
	post(&a, MLX5_OPCODE_RDMA_WRITE, buf, mr->lkey, 3000, (uintptr_t)(buf + 8192), mr->rkey, 0,
	     0, 1);
	next_cqe(&a, &e);
	CHECK_EQ(e.op_own >> 4, MLX5_CQE_REQ);
	CHECK_EQ(be16toh(e.wqe_counter), 0);
	CHECK_EQ(be32toh(e.sop_drop_qpn) & 0xffffff, a.qpn);
	CHECK_MEM(buf + 8192, buf, 3000);

	/* RDMA READ: b's bytes into a's buffer */
	gdak_test_fill(buf + 12288, 2000, 22);
	memset(buf + 16384, 0, 2000);
	post(&a, MLX5_OPCODE_RDMA_READ, buf + 16384, mr->lkey, 2000, (uintptr_t)(buf + 12288),
	     mr->rkey, 0, 0, 1);
	next_cqe(&a, &e);
	CHECK_EQ(e.op_own >> 4, MLX5_CQE_REQ);
	CHECK_EQ(be16toh(e.wqe_counter), 1);
	CHECK_EQ(be32toh(e.byte_cnt), 2000);
	CHECK_MEM(buf + 16384, buf + 12288, 2000);

	/* SEND a -> b into b's GPU receive ring: both CQEs */
	gdak_test_fill(buf + 20480, 700, 23);
	post_recv(&b, buf + 24576, mr->lkey, 1024);
	post(&a, MLX5_OPCODE_SEND, buf + 20480, mr->lkey, 700, 0, 0, 0, 0, 1);
	next_cqe(&a, &e);
	CHECK_EQ(e.op_own >> 4, MLX5_CQE_REQ);
	CHECK_EQ(be16toh(e.wqe_counter), 2);
	next_cqe(&b, &e);
	CHECK_EQ(e.op_own >> 4, MLX5_CQE_RESP_SEND);
	CHECK_EQ(be32toh(e.byte_cnt), 700);
	CHECK_EQ(be16toh(e.wqe_counter), 0);
	CHECK_EQ(be32toh(e.sop_drop_qpn) & 0xffffff, b.qpn);
	CHECK_MEM(buf + 24576, buf + 20480, 700);

	/* a second receive, posted after the NIC last read the record */
	gdak_test_fill(buf + 28672, 300, 24);
	post_recv(&b, buf + 32768, mr->lkey, 1024);
	post(&a, MLX5_OPCODE_SEND, buf + 28672, mr->lkey, 300, 0, 0, 0, 0, 1);
	next_cqe(&a, &e);
	CHECK_EQ(be16toh(e.wqe_counter), 3);
	next_cqe(&b, &e);
	CHECK_EQ(e.op_own >> 4, MLX5_CQE_RESP_SEND);
	CHECK_EQ(be32toh(e.byte_cnt), 300);
	CHECK_EQ(be16toh(e.wqe_counter), 1);
	CHECK_MEM(buf + 32768, buf + 28672, 300);

	/* fetch-add, then CAS hit and miss: the remote word in host order, the
	 * originals returned big-endian */
	*ctr = 1000;
	post(&a, MLX5_OPCODE_ATOMIC_FA, res, mr->lkey, 8, (uintptr_t)ctr, mr->rkey, 24, 0, 1);
	next_cqe(&a, &e);
	CHECK_EQ(e.op_own >> 4, MLX5_CQE_REQ);
	CHECK_EQ(be16toh(e.wqe_counter), 4);
	CHECK_EQ(*ctr, 1024);
	CHECK_EQ(be64toh(res[0]), 1000);
	post(&a, MLX5_OPCODE_ATOMIC_CS, res + 1, mr->lkey, 8, (uintptr_t)ctr, mr->rkey, 7, 1024, 1);
	next_cqe(&a, &e);
	CHECK_EQ(e.op_own >> 4, MLX5_CQE_REQ);
	CHECK_EQ(*ctr, 7);
	CHECK_EQ(be64toh(res[1]), 1024);
	post(&a, MLX5_OPCODE_ATOMIC_CS, res + 2, mr->lkey, 8, (uintptr_t)ctr, mr->rkey, 99, 1024,
	     1);
	next_cqe(&a, &e);
	CHECK_EQ(e.op_own >> 4, MLX5_CQE_REQ);
	CHECK_EQ(be16toh(e.wqe_counter), 6);
	CHECK_EQ(*ctr, 7);
	CHECK_EQ(be64toh(res[2]), 7);
	check_owner_last(a.ci);

	/* b -> a: 70 WRITEs, each CQE consumed before the next post: the
	 * send ring and b's CQ (2 CQEs in already) wrap, the owner bit flips,
	 * and the CQ looks full to the NIC until it reads the consumer
	 * counter from the GPU record */
	for (unsigned i = 0; i < 70; i++) {
		uint8_t *src = buf + 40960 + (i % 8) * 64, *dst = buf + 45056 + (i % 8) * 64;

		gdak_test_fill(src, 64, 100 + i);
		post(&b, MLX5_OPCODE_RDMA_WRITE, src, mr->lkey, 64, (uintptr_t)dst, mr->rkey, 0, 0,
		     1);
		next_cqe(&b, &e);
		CHECK_EQ(e.op_own >> 4, MLX5_CQE_REQ);
		CHECK_EQ(be16toh(e.wqe_counter), i);
		CHECK_EQ(be32toh(e.sop_drop_qpn) & 0xffffff, b.qpn);
		CHECK_MEM(dst, src, 64);
	}
	CHECK_EQ(b.ci, 72);
	CHECK_EQ(query_state(&b), 3);

	/* a WRITE to a key that does not exist: the error CQE, from GPU memory */
	post(&a, MLX5_OPCODE_RDMA_WRITE, buf, mr->lkey, 64, (uintptr_t)(buf + 8192),
	     mr->rkey ^ 0x55, 0, 0, 1);
	next_cqe(&a, &e);
	CHECK_EQ(e.op_own >> 4, MLX5_CQE_REQ_ERR);
	CHECK_EQ(((struct mlx5_err_cqe *)(void *)&e)->syndrome,
		 MLX5_CQE_SYNDROME_REMOTE_ACCESS_ERR);
	CHECK_EQ(query_state(&a), 6);

	gqp_destroy(&a);
	gqp_destroy(&b);
}

/* ---- an RMP on GPU memory ------------------------------------------------------------ */

static void check_rmp(struct ibv_mr *mr, uint8_t *buf)
{
	uint8_t in[RMP_IN_LEN], out[RMP_IN_LEN], ring[(1u << LOG_RMP) << LOG_RMP_STRIDE];
	const unsigned stride = 1u << LOG_RMP_STRIDE;
	struct mlx5dv_devx_umem *rum, *dum;
	struct mlx5dv_devx_obj *rmp;
	struct mlx5_cqe64 e;
	struct gqp s, r;
	dptr_t gring, gdbr;
	uint32_t rmpn;
	unsigned i;

	/* linked list 0 -> 3 -> 1 -> 2 -> ..., each WQE one data segment */
	gring = galloc(sizeof(ring));
	gdbr = galloc(64);
	memset(ring, 0, sizeof(ring));
	for (i = 0; i < (1u << LOG_RMP); i++) {
		static const uint16_t nxt[8] = { 3, 2, 4, 1, 5, 6, 7, 0 };
		uint8_t *w = ring + i * stride;
		struct mlx5_wqe_data_seg *d = (void *)(w + 16);

		w[2] = (uint8_t)(nxt[i] >> 8);
		w[3] = (uint8_t)nxt[i];
		d[0].byte_count = htobe32(512);
		d[0].lkey = htobe32(mr->lkey);
		d[0].addr = htobe64((uintptr_t)(buf + 36864 + i * 512));
		d[1].lkey = htobe32(MLX5_INVALID_LKEY);
	}
	put(gring, ring, sizeof(ring));
	put32(gdbr, 0);
	rum = mlx5dv_devx_umem_reg(ctx, (void *)(uintptr_t)gring, sizeof(ring),
				   IBV_ACCESS_LOCAL_WRITE);
	dum = mlx5dv_devx_umem_reg(ctx, (void *)(uintptr_t)gdbr, 64, IBV_ACCESS_LOCAL_WRITE);
	REQUIRE(rum && dum);
	rmp_fill(in, pdn, LOG_RMP, LOG_RMP_STRIDE, rum->umem_id, dum->umem_id, 0, 0);
	rmp = mlx5dv_devx_obj_create(ctx, in, sizeof(in), out, 16);
	REQUIRE(rmp != NULL);
	rmpn = prm_get(out, PRM_OBJ);

	memset(&s, 0, sizeof(s));
	memset(&r, 0, sizeof(r));
	gqp_create(&s, 0);
	gqp_create(&r, rmpn);
	gqp_connect(s.qp, s.qpn, r.qpn, gid.raw);
	gqp_connect(r.qp, r.qpn, s.qpn, gid.raw);

	/* three WQEs posted (the record in GPU memory), three SENDs: the WQEs
	 * in list order 0, 3, 1, each CQE naming its ring index */
	put32(gdbr, htobe32(3));
	for (i = 0; i < 3; i++) {
		static const uint16_t order[3] = { 0, 3, 1 };

		gdak_test_fill(buf + 49152 + i * 512, 400 + i, 30 + i);
		post(&s, MLX5_OPCODE_SEND, buf + 49152 + i * 512, mr->lkey, 400 + i, 0, 0, 0, 0, 1);
		next_cqe(&s, &e);
		CHECK_EQ(e.op_own >> 4, MLX5_CQE_REQ);
		next_cqe(&r, &e);
		CHECK_EQ(e.op_own >> 4, MLX5_CQE_RESP_SEND);
		CHECK_EQ(be32toh(e.byte_cnt), 400 + i);
		CHECK_EQ(be16toh(e.wqe_counter), order[i]);
		CHECK_EQ(be32toh(e.sop_drop_qpn) & 0xffffff, r.qpn);
		CHECK_MEM(buf + 36864 + order[i] * 512, buf + 49152 + i * 512, 400 + i);
	}
	/* QUERY_RMP: 3 taken, and the posted count read from the GPU record */
	memset(in, 0, 16);
	prm_set(in, PRM_OPCODE, 0x90f);
	prm_set(in, PRM_OBJ, rmpn);
	CHECK_EQ(mlx5dv_devx_obj_query(rmp, in, 16, out, sizeof(out)), 0);
	CHECK_EQ(prm_get(out, RMPWQ(0xc0, 32)), 3);
	CHECK_EQ(prm_get(out, RMPWQ(0xe0, 32)), 3);
	put32(gdbr, htobe32(5));
	CHECK_EQ(mlx5dv_devx_obj_query(rmp, in, 16, out, sizeof(out)), 0);
	CHECK_EQ(prm_get(out, RMPWQ(0xe0, 32)), 5);

	gqp_destroy(&r);
	gqp_destroy(&s);
	CHECK_EQ(mlx5dv_devx_obj_destroy(rmp), 0);
	CHECK_EQ(mlx5dv_devx_umem_dereg(rum), 0);
	CHECK_EQ(mlx5dv_devx_umem_dereg(dum), 0);
	cu.mem_free(gring);
	cu.mem_free(gdbr);
}

int main(void)
{
	struct ibv_pd *pd;
	struct ibv_mr *mr;
	struct mlx5dv_devx_obj *pdo;
	uint8_t *buf;
	const char *refusal = getenv("DEVX_GPU_EXPECT_REFUSAL");
	dptr_t probe = 0;

	gdak_vt_cuda_open(&cu);
	if (cu.mem_alloc(&probe, 4096))
		GDAK_TEST_SKIP("no usable GPU");
	fake_watch = (void (*)(dptr_t, size_t))dlsym(cu.lib, "gdak_fake_gpu_watch");
	fake_watched = (unsigned (*)(struct fwatch *, unsigned))dlsym(cu.lib,
								      "gdak_fake_gpu_watched");
	ctx = gdak_vt_open_first();
	REQUIRE_EQ(ibv_query_gid(ctx, 1, 0, &gid), 0);

	if (refusal && *refusal == '1') {
		struct mlx5dv_devx_umem *u;

		errno = 0;
		u = mlx5dv_devx_umem_reg(ctx, (void *)(uintptr_t)probe, 4096,
					 IBV_ACCESS_LOCAL_WRITE);
		CHECK(u == NULL);
		CHECK_EQ(errno, EOPNOTSUPP);
		cu.mem_free(probe);
		ibv_close_device(ctx);
		return gdak_test_end();
	}

	pd = ibv_alloc_pd(ctx);
	REQUIRE(pd != NULL);
	buf = gdak_test_pages(65536);
	mr = gdak_vt_reg_all(pd, buf, 65536);
	pdo = prm_alloc_pd(ctx, &pdn);

	check_rc(mr, buf);
	check_rmp(mr, buf);

	CHECK_EQ(mlx5dv_devx_obj_destroy(pdo), 0);
	ibv_dereg_mr(mr);
	ibv_dealloc_pd(pd);
	free(buf);
	cu.mem_free(probe);
	ibv_close_device(ctx);
	return gdak_test_end();
}
