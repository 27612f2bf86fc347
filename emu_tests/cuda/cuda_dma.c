/* SPDX-License-Identifier: MIT */
/*
 * cuda_dma.c - the NIC model's CUDA memory engine without kernels: host
 * threads post WQEs (emu_tests/nic_util), the data lives in GPU memory.
 * Verification goes through the NIC itself: bytes written into GPU memory
 * are read back into host memory with RDMA READ and compared.
 *
 *   kinds      gdak_mem_kind_of for GPU / mapped / host allocations
 *   copies     WRITE host->GPU, GPU->GPU, READ GPU->host, SEND GPU->GPU
 *              receive buffer, sizes 1 B .. 4 MiB, unaligned offsets
 *   async      the engine's asynchronous copies (nm_cuda_copy_start/_poll,
 *              not yet used by the requester): host -> GPU, 4 copies
 *              GPU -> GPU in flight at once, GPU -> host; every byte, and
 *              the errors (unused ticket, host-only copy done at once)
 *   atomics    4 host threads x 4 QPs on 4 NIC threads, 500 fetch-adds
 *              each on one word in GPU memory: the total is exact and every
 *              fetched value is distinct (the engine's locked
 *              read-modify-write is atomic across NIC threads)
 *
 * Exits 77 when the engine has no GPU (gdak_mem_alloc(GDAK_MEM_GPU) is
 * refused with -ENOTSUP).
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>

#include "gdak_test.h"
#include "nic_util.h"
#include "nm_cuda.h"

#define BIG (4u << 20)
#define TMO 20000

static struct gdak_ctx *ctx;

static struct gdak_mr *reg(void *p, size_t len)
{
	struct gdak_mr *mr = NULL;

	REQUIRE_EQ(gdak_mr_reg(ctx, p, len, GDAK_ACCESS_ALL, &mr), 0);
	return mr;
}

/* One signalled op, its CQE checked. */
static void op(struct nu_qp *q, uint8_t opcode, void *l, uint32_t len, uint32_t lkey, void *r,
	       uint32_t rkey)
{
	struct gdak_mlx5_cqe_fields f;
	uint16_t idx = nu_post_rdma(q, opcode, l, len, lkey, (uint64_t)(uintptr_t)r, rkey, 0,
				    NU_SIG);

	nu_ring(q);
	REQUIRE_EQ(nu_poll(q, 0, &f, TMO), 0);
	CHECK_EQ(f.opcode, MLX5_CQE_REQ);
	CHECK_EQ(f.wqe_counter, idx);
}

static void test_kinds(void)
{
	void *g, *m, *h;

	REQUIRE_EQ(gdak_mem_alloc(ctx, 4096, GDAK_MEM_GPU, &g), 0);
	REQUIRE_EQ(gdak_mem_alloc(ctx, 4096, GDAK_MEM_HOST_MAPPED, &m), 0);
	REQUIRE_EQ(gdak_mem_alloc(ctx, 4096, GDAK_MEM_HOST, &h), 0);
	CHECK_EQ(gdak_mem_kind_of(ctx, g), GDAK_MEM_GPU);
	CHECK_EQ(gdak_mem_kind_of(ctx, (char *)g + 4095), GDAK_MEM_GPU);
	CHECK_EQ(gdak_mem_kind_of(ctx, m), GDAK_MEM_HOST_MAPPED);
	CHECK_EQ(gdak_mem_kind_of(ctx, h), GDAK_MEM_HOST);
	CHECK_EQ(gdak_mem_kind_of(ctx, &g), GDAK_MEM_HOST); /* the stack */
	CHECK_EQ(gdak_mem_free(ctx, g), 0);
	CHECK_EQ(gdak_mem_free(ctx, m), 0);
	CHECK_EQ(gdak_mem_free(ctx, h), 0);
}

static void test_copies(void)
{
	struct gdak_qp_attr at = {.sq_depth = 64, .rq_depth = 4, .rq_max_sge = 1, .mtu = 1024,
				  .nic_thread = -1};
	static const uint32_t sizes[] = {1, 7, 64, 4096, 65537, BIG - 3};
	struct nu_qp a, b;
	uint8_t *h, *h2, *g, *g2, *pat;
	struct gdak_mr *mh, *mh2, *mg, *mg2;
	struct gdak_mlx5_cqe_fields f;

	REQUIRE_EQ(nu_pair(ctx, &at, &a, &b), 0);
	REQUIRE_EQ(gdak_mem_alloc(ctx, BIG, GDAK_MEM_HOST, (void **)&h), 0);
	REQUIRE_EQ(gdak_mem_alloc(ctx, BIG, GDAK_MEM_HOST_MAPPED, (void **)&h2), 0);
	REQUIRE_EQ(gdak_mem_alloc(ctx, BIG, GDAK_MEM_GPU, (void **)&g), 0);
	REQUIRE_EQ(gdak_mem_alloc(ctx, BIG, GDAK_MEM_GPU, (void **)&g2), 0);
	pat = malloc(BIG);
	REQUIRE(pat != NULL);
	gdak_test_fill(pat, BIG, 42);
	mh = reg(h, BIG);
	mh2 = reg(h2, BIG);
	mg = reg(g, BIG);
	mg2 = reg(g2, BIG);
	memcpy(h, pat, BIG);

	for (unsigned i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		uint32_t n = sizes[i], off = i & 3;

		memset(h2, 0, BIG);
		/* host -> GPU, GPU -> GPU, GPU -> mapped host (READ) */
		op(&a, MLX5_OPCODE_RDMA_WRITE, h, n, gdak_mr_lkey(mh), g + off, gdak_mr_rkey(mg));
		op(&a, MLX5_OPCODE_RDMA_WRITE, g + off, n, gdak_mr_lkey(mg), g2 + 3, gdak_mr_rkey(mg2));
		op(&a, MLX5_OPCODE_RDMA_READ, h2, n, gdak_mr_lkey(mh2), g2 + 3, gdak_mr_rkey(mg2));
		CHECK_MEM(h2, pat, n);
		CHECK_EQ(h2[n], 0);
	}
	/* SEND from GPU memory into a receive buffer in GPU memory */
	nu_post_recv(&b, g2, 1000, gdak_mr_lkey(mg2));
	nu_post_send(&a, MLX5_OPCODE_SEND, g + 100, 1000, gdak_mr_lkey(mg), 0, NU_SIG);
	nu_ring(&a);
	REQUIRE_EQ(nu_poll(&a, 0, &f, TMO), 0);
	CHECK_EQ(f.opcode, MLX5_CQE_REQ);
	REQUIRE_EQ(nu_poll(&b, 1, &f, TMO), 0);
	CHECK_EQ(f.opcode, MLX5_CQE_RESP_SEND);
	CHECK_EQ(f.byte_cnt, 1000);
	memset(h2, 0, 1000);
	op(&a, MLX5_OPCODE_RDMA_READ, h2, 1000, gdak_mr_lkey(mh2), g2, gdak_mr_rkey(mg2));
	/* g holds pat shifted by the last size's offset (i & 3 = 1) */
	CHECK_MEM(h2, pat + 100 - 1, 1000);

	CHECK_EQ(gdak_qp_state(a.qp), GDAK_QPS_RTS);
	nu_destroy(&a);
	nu_destroy(&b);
	gdak_mr_dereg(mh);
	gdak_mr_dereg(mh2);
	gdak_mr_dereg(mg);
	gdak_mr_dereg(mg2);
	gdak_mem_free(ctx, h);
	gdak_mem_free(ctx, h2);
	gdak_mem_free(ctx, g);
	gdak_mem_free(ctx, g2);
	free(pat);
}

#define NT 4
#define NOPS 500

struct worker {
	struct nu_qp a, b;
	uint64_t *word;
	uint32_t rkey;
	uint64_t *res;		/* host memory, NOPS words */
	uint32_t lkey;
	int fail;
};

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	struct gdak_mlx5_cqe_fields f;

	for (unsigned i = 0; i < NOPS; i++) {
		nu_post_atomic(&w->a, MLX5_OPCODE_ATOMIC_FA, &w->res[i], w->lkey,
			       (uint64_t)(uintptr_t)w->word, w->rkey, 1, 0, NU_SIG);
		nu_ring(&w->a);
		if (nu_poll(&w->a, 0, &f, TMO) || f.opcode != MLX5_CQE_REQ) {
			w->fail = 1;
			break;
		}
	}
	return NULL;
}

static void test_atomics(void)
{
	struct gdak_qp_attr at = {.sq_depth = 16, .mtu = 1024};
	struct worker w[NT];
	pthread_t tid[NT];
	uint64_t *word, *res, *back, got;
	struct gdak_mr *mw, *mr, *mb;
	uint8_t *seen = calloc(NT * NOPS, 1);
	unsigned bad = 0;

	REQUIRE(seen != NULL);
	REQUIRE_EQ(gdak_mem_alloc(ctx, 64, GDAK_MEM_GPU, (void **)&word), 0);
	REQUIRE_EQ(gdak_mem_alloc(ctx, NT * NOPS * 8, GDAK_MEM_HOST, (void **)&res), 0);
	REQUIRE_EQ(gdak_mem_alloc(ctx, 64, GDAK_MEM_HOST, (void **)&back), 0);
	mw = reg(word, 64);
	mr = reg(res, NT * NOPS * 8);
	mb = reg(back, 64);
	for (int t = 0; t < NT; t++) {
		at.nic_thread = t;
		REQUIRE_EQ(nu_pair(ctx, &at, &w[t].a, &w[t].b), 0);
		w[t].word = word;
		w[t].rkey = gdak_mr_rkey(mw);
		w[t].res = res + t * NOPS;
		w[t].lkey = gdak_mr_lkey(mr);
		w[t].fail = 0;
	}
	/* zero the GPU word through the NIC: WRITE of 8 zero bytes */
	memset(back, 0, 64);
	op(&w[0].a, MLX5_OPCODE_RDMA_WRITE, back, 8, gdak_mr_lkey(mb), word, gdak_mr_rkey(mw));
	for (int t = 0; t < NT; t++)
		REQUIRE_EQ(pthread_create(&tid[t], NULL, worker_main, &w[t]), 0);
	for (int t = 0; t < NT; t++) {
		pthread_join(tid[t], NULL);
		CHECK_EQ(w[t].fail, 0);
	}
	op(&w[0].a, MLX5_OPCODE_RDMA_READ, back, 8, gdak_mr_lkey(mb), word, gdak_mr_rkey(mw));
	got = back[0];
	CHECK_EQ(got, NT * NOPS);
	for (unsigned i = 0; i < NT * NOPS; i++) {
		uint64_t v = gdak_be64toh(res[i]);
		if (v >= NT * NOPS || seen[v]++)
			bad++;
	}
	CHECK_EQ(bad, 0);
	for (int t = 0; t < NT; t++) {
		nu_destroy(&w[t].a);
		nu_destroy(&w[t].b);
	}
	gdak_mr_dereg(mw);
	gdak_mr_dereg(mr);
	gdak_mr_dereg(mb);
	gdak_mem_free(ctx, word);
	gdak_mem_free(ctx, res);
	gdak_mem_free(ctx, back);
	free(seen);
}

/* Wait for a ticket; 1 when done, else the error (or 0 after the time-out). */
static int ticket_wait(struct nm_cuda_ticket *t)
{
	uint64_t t0 = gdak_test_now_ns();
	int r;

	while ((r = nm_cuda_copy_poll(t)) == 0 && gdak_test_now_ns() - t0 < 20000000000ull)
		sched_yield();
	return r;
}

static void test_async(void)
{
	enum { PARTS = 4 };
	const size_t len = BIG;
	uint8_t *pat = malloc(len), *got = malloc(len), *ga = NULL, *gb = NULL;
	struct nm_cuda_ticket t[PARTS], h;
	uint64_t x = 0x1122334455667788ull, y = 0;

	REQUIRE(pat && got);
	memset(t, 0, sizeof(t));
	memset(&h, 0, sizeof(h));
	gdak_test_fill(pat, len, 77);
	memset(got, 0, len);
	REQUIRE_EQ(gdak_mem_alloc(ctx, len, GDAK_MEM_GPU, (void **)&ga), 0);
	REQUIRE_EQ(gdak_mem_alloc(ctx, len, GDAK_MEM_GPU, (void **)&gb), 0);
	/* an unused ticket has nothing to wait for */
	CHECK_EQ(nm_cuda_copy_poll(&h), -EINVAL);
	/* host to host: done at once, no event */
	CHECK_EQ(nm_cuda_copy_start(&y, GDAK_MEM_HOST, &x, GDAK_MEM_HOST, 8, &h), 0);
	CHECK_EQ(nm_cuda_copy_poll(&h), 1);
	CHECK_EQ(y, x);
	/* host -> GPU a; then GPU a -> GPU b in 4 copies in flight together;
	 * then back to the host */
	REQUIRE_EQ(nm_cuda_copy_start(ga, GDAK_MEM_GPU, pat, GDAK_MEM_HOST, len, &t[0]), 0);
	REQUIRE_EQ(ticket_wait(&t[0]), 1);
	for (int i = 0; i < PARTS; i++)
		REQUIRE_EQ(nm_cuda_copy_start(gb + i * (len / PARTS), GDAK_MEM_GPU,
					      ga + i * (len / PARTS), GDAK_MEM_GPU, len / PARTS,
					      &t[i]), 0);
	/* one stream: the last ticket done means all are */
	REQUIRE_EQ(ticket_wait(&t[PARTS - 1]), 1);
	for (int i = 0; i < PARTS; i++)
		CHECK_EQ(nm_cuda_copy_poll(&t[i]), 1);
	REQUIRE_EQ(nm_cuda_copy_start(got, GDAK_MEM_HOST, gb, GDAK_MEM_GPU, len, &t[0]), 0);
	REQUIRE_EQ(ticket_wait(&t[0]), 1);
	CHECK_MEM(got, pat, len);
	for (int i = 0; i < PARTS; i++)
		nm_cuda_copy_ticket_fini(&t[i]);
	nm_cuda_copy_ticket_fini(&h);
	gdak_mem_free(ctx, ga);
	gdak_mem_free(ctx, gb);
	free(pat);
	free(got);
}

int main(void)
{
	REQUIRE_EQ(gdak_nic_set_threads(NT), 0);
	REQUIRE_EQ(gdak_open("emu", &ctx), 0);
	nu_need_gpu_mem(ctx);
	test_kinds();
	test_copies();
	test_async();
	test_atomics();
	gdak_close(ctx);
	return gdak_test_end();
}
