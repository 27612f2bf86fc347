/* SPDX-License-Identifier: MIT */
/*
 * hw_emu_dc.c - hw_mlx5's DC path (mlx5dv_create_qp DCI / DCT, the DC
 * state masks), host threads playing the device through gdak/dev/dc.h:
 * one DCI reaches two DCTs in two contexts (two PDs) with full address
 * vectors (and compact ones on InfiniBand) - WRITE, READ, fetch-add,
 * compare-swap - data checked byte for byte, the first CQE field by field;
 * then a wrong access key, which a ConnectX DCT drops silently so the DCI
 * retries out (TRANSPORT_RETRY_EXC_ERR, DCI in ERR, the DCT untouched).
 * GDAK_HW_QP_PATH=devx makes the DCIs by DEVX (CREATE_QP st=DCI, one
 * stream); DCTs are verbs objects on both paths.  Run on the emulated
 * mlx5 device under gdak-run (hw_tests/hwemu*.cmake), on a ConnectX too.
 * The device is $GDAK_HW_DEVICE; exits 77 when it cannot be opened.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <gdak/dev/dev.h>
#include <gdak/gdak.h>

#include "gdak_test.h"

#define T_NS 60000000000ull
#define LEN 200
#define NDCT 2

struct target {
	struct gdak_ctx *ctx;
	struct gdak_qp *dct;
	struct gdak_qp_info info;
	struct gdak_dev_av full, compact;
	uint8_t *mem; /* [0, LEN) data, [256, 264) atomic word */
	struct gdak_mr *mr;
};

static struct gdak_ctx *ctx_a, *ctx_b;
static struct target tg[NDCT];
static uint8_t *lmem; /* DCI side: source, READ landing, atomic results */
static struct gdak_mr *lmr;
static int devx; /* GDAK_HW_QP_PATH=devx: the DCIs by DEVX CREATE_QP st=DCI */

static uint64_t va(const void *p)
{
	return (uint64_t)(uintptr_t)p;
}

static void target_new(struct target *t, struct gdak_ctx *ctx, uint64_t key)
{
	struct gdak_qp_attr a = { .type = GDAK_QPT_DCT, .dc_key = key };
	uint8_t w[GDAK_QP_INFO_WIRE_SIZE];
	struct gdak_qp_info back;

	t->ctx = ctx;
	REQUIRE_EQ(gdak_qp_create(ctx, &a, &t->dct), 0);
	CHECK_EQ(gdak_qp_type(t->dct), GDAK_QPT_DCT);
	CHECK_EQ(gdak_qp_connect(t->dct, NULL), 0);
	CHECK_EQ(gdak_qp_state(t->dct), GDAK_QPS_RTR);
	CHECK_EQ(gdak_qp_info(t->dct, &t->info), 0);
	CHECK_EQ(t->info.qp_type, GDAK_QPT_DCT);
	CHECK_EQ(t->info.dc_key, key);
	CHECK_EQ(t->info.qpn, gdak_qp_num(t->dct));
	CHECK_EQ(t->info.transport, GDAK_QPI_HW);
	/* what a peer in another process gets: the packed record */
	gdak_qp_info_pack(&t->info, w);
	CHECK_EQ(gdak_qp_info_unpack(w, &back), 0);
	CHECK_EQ(back.dc_key, key);
	CHECK_EQ(gdak_dc_av(&back, 0, &t->full), 0);
	CHECK_EQ(gdak_dc_av(&t->info, 1, &t->compact), 0);
	REQUIRE_EQ(gdak_mem_alloc(ctx, 1024, GDAK_MEM_HOST, (void **)&t->mem), 0);
	memset(t->mem, 0, 1024);
	REQUIRE_EQ(gdak_mr_reg(ctx, t->mem, 1024, GDAK_ACCESS_ALL, &t->mr), 0);
}

static void target_free(struct target *t)
{
	CHECK_EQ(gdak_qp_destroy(t->dct), 0);
	CHECK_EQ(gdak_mr_dereg(t->mr), 0);
	CHECK_EQ(gdak_mem_free(t->ctx, t->mem), 0);
}

static struct gdak_qp *dci_new(struct gdak_dev_qp **d, uint32_t streams)
{
	struct gdak_qp_attr a = { .type = GDAK_QPT_DCI, .sq_depth = 64, .dci_streams = streams };
	struct gdak_qp *q;

	REQUIRE_EQ(gdak_qp_create(ctx_a, &a, &q), 0);
	CHECK_EQ(gdak_qp_type(q), GDAK_QPT_DCI);
	CHECK_EQ(gdak_qp_connect(q, NULL), 0);
	CHECK_EQ(gdak_qp_state(q), GDAK_QPS_RTS);
	REQUIRE_EQ(gdak_qp_export(q, d), 0);
	CHECK((*d)->sq_wqebb_cnt >= 64);
	return q;
}

static void ops(uint32_t streams)
{
	struct gdak_dev_qp *d;
	struct gdak_qp *q = dci_new(&d, streams);
	uint64_t t = 0, old = 0;

	for (int round = 0; round < 4; round++) {
		for (int i = 0; i < NDCT; i++) {
			struct target *x = &tg[i];
			/* compact AVs carry no GRH: InfiniBand (a LID) only */
			const struct gdak_dev_av *av = (round + i) & 1 && x->info.lid ? &x->compact
										      : &x->full;
			struct gdak_dev_sge src = { va(lmem), LEN, gdak_mr_lkey(lmr) };
			struct gdak_dev_sge dst = { va(lmem + 2048), LEN, gdak_mr_lkey(lmr) };
			uint64_t *word = (uint64_t *)(void *)(x->mem + 256);
			uint64_t *res = (uint64_t *)(void *)(lmem + 4096);
			uint64_t base = 1000u * (unsigned)(i + 1) + (unsigned)round;

			gdak_test_fill(lmem, LEN, (uint64_t)(round * 10 + i + 1 + streams * 100));
			CHECK_EQ(gdak_dev_dc_put(d, av, &src, va(x->mem), gdak_mr_rkey(x->mr),
						 GDAK_DEV_WQE_SIGNAL, &t),
				 0);
			CHECK_EQ(gdak_dev_wait_timeout(d, t, T_NS, NULL), 0);
			CHECK_MEM(x->mem, lmem, LEN);
			if (round == 0 && i == 0) {
				/* the DCI's first WQE: its CQE at entry 0 */
				struct gdak_mlx5_cqe_fields f;

				gdak_mlx5_cqe_decode(d->scq.cqes, &f);
				CHECK_EQ(f.opcode, MLX5_CQE_REQ);
				CHECK_EQ(f.wqe_counter, 0);
				CHECK_EQ(f.qpn, gdak_qp_num(q));
			}

			/* READ back what the WRITE put there */
			memset(lmem + 2048, 0, LEN);
			CHECK_EQ(gdak_dev_dc_get(d, av, &dst, va(x->mem), gdak_mr_rkey(x->mr),
						 GDAK_DEV_WQE_SIGNAL, &t),
				 0);
			CHECK_EQ(gdak_dev_wait_timeout(d, t, T_NS, NULL), 0);
			CHECK_MEM(lmem + 2048, lmem, LEN);

			/* fetch-add, a CAS that fails and one that succeeds */
			*word = base;
			CHECK_EQ(gdak_dev_dc_fetch_add(d, av, va(word), gdak_mr_rkey(x->mr), 5, res,
						       gdak_mr_lkey(lmr), &old),
				 0);
			CHECK_EQ(old, base);
			CHECK_EQ(*res, gdak_htobe64(base)); /* big-endian, as ConnectX */
			CHECK_EQ(*word, base + 5);
			CHECK_EQ(gdak_dev_dc_compare_swap(d, av, va(word), gdak_mr_rkey(x->mr), 1,
							  77, res, gdak_mr_lkey(lmr), &old),
				 0);
			CHECK_EQ(old, base + 5);
			CHECK_EQ(*word, base + 5);
			CHECK_EQ(gdak_dev_dc_compare_swap(d, av, va(word), gdak_mr_rkey(x->mr),
							  base + 5, 77, res, gdak_mr_lkey(lmr),
							  &old),
				 0);
			CHECK_EQ(*word, 77);
		}
	}
	CHECK_EQ(gdak_qp_state(q), GDAK_QPS_RTS);
	for (int i = 0; i < NDCT; i++)
		CHECK_EQ(gdak_qp_state(tg[i].dct), GDAK_QPS_RTR);
	CHECK_EQ(gdak_qp_destroy(q), 0);
}

/* A wrong access key: the DCT drops the connect without a NAK (ConnectX
 * answers no DCI that cannot present the key), the DCI retries out. */
static void wrong_key(void)
{
	struct gdak_dev_qp *d;
	struct gdak_qp *q = dci_new(&d, 1);
	struct gdak_qp_info info = tg[0].info;
	struct gdak_dev_sge src = { va(lmem), 64, gdak_mr_lkey(lmr) };
	struct gdak_dev_av bad;
	struct gdak_dev_cqe c;
	struct gdak_qp_error e;
	uint64_t t = 0;

	info.dc_key ^= 1;
	REQUIRE_EQ(gdak_dc_av(&info, 0, &bad), 0);
	memset(&c, 0, sizeof(c));
	memset(tg[0].mem, 0, 64);
	gdak_test_fill(lmem, 64, 4242);
	CHECK_EQ(gdak_dev_dc_put(d, &bad, &src, va(tg[0].mem), gdak_mr_rkey(tg[0].mr),
				 GDAK_DEV_WQE_SIGNAL, &t),
		 0);
	CHECK_EQ(gdak_dev_wait_timeout(d, t, T_NS, &c), -EIO);
	CHECK_EQ(c.opcode, MLX5_CQE_REQ_ERR);
	CHECK_EQ(c.syndrome, MLX5_CQE_SYNDROME_TRANSPORT_RETRY_EXC_ERR);
	CHECK_EQ(c.wqe_opcode, MLX5_OPCODE_RDMA_WRITE);
	CHECK_EQ(c.wqe_index, 0);
	CHECK_EQ(gdak_qp_query_error(q, &e), 0);
	CHECK_EQ(e.state, GDAK_QPS_ERR);
	CHECK_EQ(e.syndrome, MLX5_CQE_SYNDROME_TRANSPORT_RETRY_EXC_ERR);
	CHECK_EQ(e.opcode, MLX5_OPCODE_RDMA_WRITE);
	CHECK_EQ(e.wqe_index, 0);
	CHECK_EQ(gdak_qp_state(q), GDAK_QPS_ERR);
	/* nothing landed, and the DCT still serves the right key */
	for (int i = 0; i < 64; i++)
		CHECK_EQ(tg[0].mem[i], 0);
	CHECK_EQ(gdak_qp_query_error(tg[0].dct, &e), 0);
	CHECK_EQ(e.state, GDAK_QPS_RTR);
	CHECK_EQ(e.syndrome, 0);
	CHECK_EQ(gdak_qp_destroy(q), 0);
}

/* What this backend refuses, with a reason, rather than misbuilds. */
static void refusals(void)
{
	struct gdak_qp_attr a = { .type = GDAK_QPT_DCT, .dc_key = 1, .rq_depth = 4 };
	struct gdak_qp *q = NULL;

	CHECK_EQ(gdak_qp_create(ctx_a, &a, &q), -ENOTSUP);
	a = (struct gdak_qp_attr){ .type = GDAK_QPT_DCT,
				   .dc_key = 1,
				   .flags = GDAK_QP_F_SCQ_OVERRUN_IGNORE };
	CHECK_EQ(gdak_qp_create(ctx_a, &a, &q), -ENOTSUP);
	if (devx) {
		/* the DEVX path sets no DCI stream context */
		a = (struct gdak_qp_attr){ .type = GDAK_QPT_DCI, .dci_streams = 2 };
		CHECK_EQ(gdak_qp_create(ctx_a, &a, &q), -ENOTSUP);
	} else {
		/* CQ flags are DEVX context fields */
		a = (struct gdak_qp_attr){ .type = GDAK_QPT_DCI,
					   .flags = GDAK_QP_F_SCQ_OVERRUN_IGNORE };
		CHECK_EQ(gdak_qp_create(ctx_a, &a, &q), -ENOTSUP);
	}
	a = (struct gdak_qp_attr){ .type = GDAK_QPT_DCI };
	REQUIRE_EQ(gdak_qp_create(ctx_a, &a, &q), 0);
	CHECK_EQ(gdak_qp_connect(q, &tg[0].info), -EINVAL); /* a DCI connects to nobody */
	CHECK_EQ(gdak_qp_destroy(q), 0);
}

int main(void)
{
	const char *env = getenv("GDAK_HW_DEVICE");
	const char *dev = env && *env ? env : "mlx5_0";
	const char *path = getenv("GDAK_HW_QP_PATH");
	int ret = gdak_open(dev, &ctx_a);

	devx = path && !strcmp(path, "devx");

	if (ret)
		GDAK_TEST_SKIP("cannot open %s: %s", dev, gdak_strerror(ret));
	REQUIRE_EQ(gdak_open(dev, &ctx_b), 0);
	REQUIRE_EQ(gdak_mem_alloc(ctx_a, 8192, GDAK_MEM_HOST, (void **)&lmem), 0);
	REQUIRE_EQ(gdak_mr_reg(ctx_a, lmem, 8192, GDAK_ACCESS_ALL, &lmr), 0);
	target_new(&tg[0], ctx_a, 0x1111222233334444ull);
	target_new(&tg[1], ctx_b, 0xdc);

	ops(1);
	if (!devx)
		ops(2);
	wrong_key();
	refusals();

	for (int i = 0; i < NDCT; i++)
		target_free(&tg[i]);
	CHECK_EQ(gdak_mr_dereg(lmr), 0);
	CHECK_EQ(gdak_mem_free(ctx_a, lmem), 0);
	gdak_close(ctx_b);
	gdak_close(ctx_a);
	return gdak_test_end();
}
