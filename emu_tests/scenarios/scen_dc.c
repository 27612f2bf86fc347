/* SPDX-License-Identifier: MIT */
/*
 * scen_dc.c - the Dynamically Connected transport, host threads playing the
 * device through gdak/dev/dc.h, one scenario for every backend: one DCI
 * reaches the DCTs of two contexts (two PDs) with full and compact address
 * vectors - WRITE, READ, fetch-add, CAS, put+signal, inline puts - data
 * checked byte for byte, the first CQE field by field, the AV bytes as
 * rdma-core's struct mlx5_wqe_av names them; then a wrong access key, which
 * a DCT drops silently so the DCI retries out (TRANSPORT_RETRY_EXC_ERR, DCI
 * in ERR, nothing landed, the DCT untouched); then what the backend refuses.
 *
 * The NIC model ("emu") is held to more: a third DCT with a receive queue
 * takes SENDs, its stream counters are checked, and the error cases whose
 * syndromes and rules only it names (no such DCT, an AV naming another LID,
 * a bad rkey at a DCT, an AV whose size the DS count contradicts, a DCT in
 * ERR and back).  On gdak's ConnectX backend GDAK_HW_QP_PATH=devx makes the
 * DCIs by DEVX (CREATE_QP st=DCI, one stream).  gdak.nic.dc runs it on the
 * NIC model, gdak.hw.emu.dc / devx_dc through hw_mlx5 on the emulated mlx5
 * device.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <gdak/dev/dev.h>
#include <gdak/gdak.h>
#include <gdak/nic.h>

#include "gdak_test.h"
#include "scenarios.h"

#define LEN 200
#define MAX_DCT 3

struct dc_target {
	struct gdak_ctx *ctx;
	struct gdak_qp *dct;
	struct gdak_dev_qp *ddct;
	struct gdak_qp_info info;
	struct gdak_dev_av full, compact;
	uint8_t *mem; /* [0, LEN) data, [256, 264) atomic word, [512, 512 + LEN) receive */
	struct gdak_mr *mr;
};

struct dc_env {
	const struct gdak_scen_cfg *cfg;
	uint64_t t_ns;
	int hw;	  /* not the NIC model: only what a ConnectX shows is checked */
	int devx; /* hw with GDAK_HW_QP_PATH=devx: DCIs by DEVX CREATE_QP st=DCI */
	struct gdak_ctx *ctx_a, *ctx_b;
	int ndct;
	struct dc_target tg[MAX_DCT];
	uint8_t *lmem; /* DCI side: source, READ landing, atomic results */
	struct gdak_mr *lmr;
};

static uint64_t va(const void *p)
{
	return (uint64_t)(uintptr_t)p;
}

/* Compact AVs carry no GRH: only where the DCT has a LID (InfiniBand, and
 * the NIC model, which always gives one). */
static const struct gdak_dev_av *av_pick(const struct dc_target *x, int compact)
{
	return compact && x->info.lid ? &x->compact : &x->full;
}

static void av_bytes_check(const struct dc_target *t, uint64_t key)
{
	struct mlx5_wqe_av f, c;

	CHECK_EQ(t->full.ds, 3);
	CHECK_EQ(t->compact.ds, 1);
	memcpy(&f, t->full.words, sizeof(f));
	memcpy(&c, t->compact.words, 16);
	CHECK_EQ(gdak_be64toh(f.key.dc_key), key);
	CHECK_EQ(gdak_be32toh(f.dqp_dct), t->info.qpn | MLX5_EXTENDED_UD_AV);
	CHECK_EQ(gdak_be16toh(f.rlid), t->info.lid);
	CHECK_EQ(gdak_be32toh(f.grh_gid_fl), 1u << 30);
	CHECK_MEM(f.rgid, t->info.gid, 16);
	CHECK_EQ(gdak_be64toh(c.key.dc_key), key);
	CHECK_EQ(gdak_be32toh(c.dqp_dct), t->info.qpn);
	CHECK_EQ(gdak_be16toh(c.rlid), t->info.lid);
}

static void target_new(struct dc_env *e, struct dc_target *t, struct gdak_ctx *ctx, uint64_t key,
		       int rq)
{
	struct gdak_qp_attr a = { .type = GDAK_QPT_DCT, .dc_key = key, .rq_depth = rq ? 16 : 0 };
	uint8_t w[GDAK_QP_INFO_WIRE_SIZE];
	struct gdak_qp_info back;

	t->ctx = ctx;
	REQUIRE_EQ(gdak_qp_create(ctx, &a, &t->dct), 0);
	CHECK_EQ(gdak_qp_type(t->dct), GDAK_QPT_DCT);
	CHECK_EQ(gdak_qp_connect(t->dct, NULL), 0);
	CHECK_EQ(gdak_qp_state(t->dct), GDAK_QPS_RTR);
	CHECK_EQ(gdak_qp_export(t->dct, &t->ddct), 0);
	CHECK_EQ(gdak_qp_info(t->dct, &t->info), 0);
	CHECK_EQ(t->info.qp_type, GDAK_QPT_DCT);
	CHECK_EQ(t->info.dc_key, key);
	CHECK_EQ(t->info.qpn, gdak_qp_num(t->dct));
	if (e->hw)
		CHECK_EQ(t->info.transport, GDAK_QPI_HW);
	else
		CHECK(t->info.lid != 0); /* so the compact AVs below are exercised */
	/* what a peer in another process gets: the packed record */
	gdak_qp_info_pack(&t->info, w);
	CHECK_EQ(gdak_qp_info_unpack(w, &back), 0);
	CHECK_EQ(back.dc_key, key);
	CHECK_EQ(back.qp_type, GDAK_QPT_DCT);
	CHECK_EQ(gdak_dc_av(&back, 0, &t->full), 0);
	CHECK_EQ(gdak_dc_av(&t->info, 1, &t->compact), 0);
	av_bytes_check(t, key);
	REQUIRE_EQ(gdak_mem_alloc(ctx, 1024, GDAK_MEM_HOST, (void **)&t->mem), 0);
	memset(t->mem, 0, 1024);
	REQUIRE_EQ(gdak_mr_reg(ctx, t->mem, 1024, GDAK_ACCESS_ALL, &t->mr), 0);
}

static void target_free(struct dc_target *t)
{
	CHECK_EQ(gdak_qp_destroy(t->dct), 0);
	CHECK_EQ(gdak_mr_dereg(t->mr), 0);
	CHECK_EQ(gdak_mem_free(t->ctx, t->mem), 0);
}

static struct gdak_qp *dci_new(struct dc_env *e, struct gdak_dev_qp **d, uint32_t streams)
{
	struct gdak_qp_attr a = { .type = GDAK_QPT_DCI,
				  .sq_depth = 64,
				  .dci_streams = streams,
				  .handler = e->cfg->handler };
	struct gdak_qp *q;

	REQUIRE_EQ(gdak_qp_create(e->ctx_a, &a, &q), 0);
	CHECK_EQ(gdak_qp_type(q), GDAK_QPT_DCI);
	CHECK_EQ(gdak_qp_connect(q, NULL), 0);
	CHECK_EQ(gdak_qp_state(q), GDAK_QPS_RTS);
	REQUIRE_EQ(gdak_qp_export(q, d), 0);
	CHECK((*d)->sq_wqebb_cnt >= 64);
	/* the inline puts and SENDs below carry up to 64 bytes */
	if ((*d)->max_inline < 64)
		(*d)->max_inline = 64;
	return q;
}

/* Every RDMA operation to every DCT, full and compact AVs alternating,
 * targets interleaved so that a one-stream DCI turns at every call. */
static void ops_rdma(struct dc_env *e, struct gdak_qp *q, struct gdak_dev_qp *d, uint32_t streams)
{
	uint64_t t = 0, old = 0;

	for (int round = 0; round < 4; round++) {
		for (int i = 0; i < e->ndct; i++) {
			struct dc_target *x = &e->tg[i];
			const struct gdak_dev_av *av = av_pick(x, (round + i) & 1);
			struct gdak_dev_sge src = { va(e->lmem), LEN, gdak_mr_lkey(e->lmr) };
			struct gdak_dev_sge dst = { va(e->lmem + 2048), LEN, gdak_mr_lkey(e->lmr) };
			uint64_t *word = (uint64_t *)(void *)(x->mem + 256);
			uint64_t *res = (uint64_t *)(void *)(e->lmem + 4096);
			uint64_t base = 1000u * (unsigned)(i + 1) + (unsigned)round;
			uint32_t lkey = gdak_mr_lkey(e->lmr), rkey = gdak_mr_rkey(x->mr);

			gdak_test_fill(e->lmem, LEN,
				       (uint64_t)(round * 10 + i + 1 + streams * 100));
			CHECK_EQ(gdak_dev_dc_put(d, av, &src, va(x->mem), rkey, GDAK_DEV_WQE_SIGNAL,
						 &t),
				 0);
			CHECK_EQ(gdak_dev_wait_timeout(d, t, e->t_ns, NULL), 0);
			CHECK_MEM(x->mem, e->lmem, LEN);
			if (round == 0 && i == 0) {
				/* the DCI's first WQE: its CQE at entry 0 */
				struct gdak_mlx5_cqe_fields f;

				gdak_mlx5_cqe_decode(d->scq.cqes, &f);
				CHECK_EQ(f.opcode, MLX5_CQE_REQ);
				CHECK_EQ(f.wqe_counter, 0);
				CHECK_EQ(f.qpn, gdak_qp_num(q));
			}

			/* READ back what the WRITE put there; the NIC model also
			 * waits on an unsignalled one */
			memset(e->lmem + 2048, 0, LEN);
			CHECK_EQ(gdak_dev_dc_get(d, av, &dst, va(x->mem), rkey,
						 e->hw ? GDAK_DEV_WQE_SIGNAL : 0, &t),
				 0);
			CHECK_EQ(gdak_dev_wait_timeout(d, t, e->t_ns, NULL), 0);
			CHECK_MEM(e->lmem + 2048, e->lmem, LEN);

			/* fetch-add, a CAS that fails and one that succeeds */
			*word = base;
			CHECK_EQ(gdak_dev_dc_fetch_add(d, av, va(word), rkey, 5, res, lkey, &old),
				 0);
			CHECK_EQ(old, base);
			CHECK_EQ(*res, gdak_htobe64(base)); /* big-endian, as ConnectX */
			CHECK_EQ(*word, base + 5);
			CHECK_EQ(gdak_dev_dc_compare_swap(d, av, va(word), rkey, 1, 77, res, lkey,
							  &old),
				 0);
			CHECK_EQ(old, base + 5);
			CHECK_EQ(*word, base + 5);
			CHECK_EQ(gdak_dev_dc_compare_swap(d, av, va(word), rkey, base + 5, 77, res,
							  lkey, &old),
				 0);
			CHECK_EQ(*word, 77);
		}
	}
	if (!e->hw && streams == 1) {
		struct gdak_nic_dc_stats st;

		/* every call named another DCT than the one before it: the
		 * stream turned each time (4 rounds, each DCT in turn) */
		CHECK_EQ(gdak_nic_dc_stats(q, &st), 0);
		CHECK_EQ(st.connects, 4u * (unsigned)e->ndct);
		CHECK_EQ(st.disconnects, 4u * (unsigned)e->ndct - 1);
		CHECK_EQ(st.open_streams, 1);
	}
}

/* SEND: the DCT with a receive queue consumes a receive WQE (NIC model). */
static void ops_send(struct dc_env *e, struct gdak_dev_qp *d)
{
	struct dc_target *x = &e->tg[2];
	struct gdak_dev_sge rs = { va(x->mem + 512), LEN, gdak_mr_lkey(x->mr) };
	struct gdak_dev_sge src = { va(e->lmem), 150, gdak_mr_lkey(e->lmr) };
	struct gdak_dev_cqe c = { 0 };
	static const char msg[] = "inline hello to a DCT";
	uint64_t t = 0;

	CHECK_EQ(gdak_dev_recv_post(x->ddct, &rs, 1), 0);
	CHECK_EQ(gdak_dev_recv_post(x->ddct, &rs, 1), 0);
	gdak_test_fill(e->lmem, 150, 99);
	CHECK_EQ(gdak_dev_dc_send(d, &x->full, &src, GDAK_DEV_WQE_SIGNAL, &t), 0);
	CHECK_EQ(gdak_dev_wait_timeout(d, t, e->t_ns, NULL), 0);
	CHECK_EQ(gdak_dev_recv_wait_timeout(x->ddct, &c, e->t_ns), 0);
	CHECK_EQ(c.opcode, MLX5_CQE_RESP_SEND);
	CHECK_EQ(c.byte_cnt, 150);
	CHECK_EQ(c.qpn, gdak_qp_num(x->dct));
	CHECK_EQ(c.wqe_index, 0);
	CHECK_MEM(x->mem + 512, e->lmem, 150);
	CHECK_EQ(gdak_dev_dc_send_inline(d, &x->compact, msg, sizeof(msg), 0, &t), 0);
	CHECK_EQ(gdak_dev_quiet_timeout(d, e->t_ns, NULL), 0);
	CHECK_EQ(gdak_dev_recv_wait_timeout(x->ddct, &c, e->t_ns), 0);
	CHECK_EQ(c.byte_cnt, sizeof(msg));
	CHECK_EQ(c.wqe_index, 1);
	CHECK_MEM(x->mem + 512, msg, sizeof(msg));
}

/* put+signal to the DCT in the other context (the signal follows the data),
 * then inline puts back to back to one DCT (no stream turn). */
static void ops_signal_inline(struct dc_env *e, struct gdak_qp *q, struct gdak_dev_qp *d)
{
	struct dc_target *x = &e->tg[1], *y = &e->tg[0];
	struct gdak_dev_sge src = { va(e->lmem), LEN, gdak_mr_lkey(e->lmr) };
	uint64_t *sig = (uint64_t *)(void *)(x->mem + 264);
	uint32_t rkey = gdak_mr_rkey(x->mr);
	struct gdak_nic_dc_stats st;
	uint64_t t = 0, old = 0, before = 0;

	*sig = 0;
	memset(x->mem, 0, LEN);
	gdak_test_fill(e->lmem, LEN, 1234);
	CHECK_EQ(gdak_dev_dc_put_signal(d, &x->full, &src, va(x->mem), rkey, va(sig), rkey, 3, 0,
					&t),
		 0);
	CHECK_EQ(gdak_dev_signal_wait_timeout(sig, GDAK_DEV_CMP_GE, 3, e->t_ns, &old), 0);
	CHECK_MEM(x->mem, e->lmem, LEN);
	CHECK_EQ(gdak_dev_dc_put_signal(d, av_pick(x, 1), &src, va(x->mem + 300), rkey, va(sig),
					rkey, 4, 0, &t),
		 0);
	CHECK_EQ(gdak_dev_wait_timeout(d, t, e->t_ns, NULL), 0);
	CHECK_EQ(*sig, 7);
	CHECK_MEM(x->mem + 300, e->lmem, LEN);

	if (!e->hw) {
		CHECK_EQ(gdak_nic_dc_stats(q, &st), 0);
		before = st.connects;
	}
	for (int i = 0; i < 100; i++) {
		uint32_t v = (uint32_t)i * 3u;

		CHECK_EQ(gdak_dev_dc_put_inline(d, av_pick(y, 1), &v, 4, va(y->mem + 4 * (i % 50)),
						gdak_mr_rkey(y->mr), 0, &t),
			 0);
	}
	CHECK_EQ(gdak_dev_quiet_timeout(d, e->t_ns, NULL), 0);
	for (int i = 50; i < 100; i++) {
		uint32_t v;

		memcpy(&v, y->mem + 4 * (i % 50), 4);
		CHECK_EQ(v, (uint32_t)i * 3u);
	}
	if (!e->hw) {
		CHECK_EQ(gdak_nic_dc_stats(q, &st), 0);
		CHECK_EQ(st.connects, before + 1);
	}
}

static void ops(struct dc_env *e, uint32_t streams)
{
	struct gdak_dev_qp *d;
	struct gdak_qp *q = dci_new(e, &d, streams);

	ops_rdma(e, q, d, streams);
	if (streams == 1) {
		if (!e->hw)
			ops_send(e, d);
		ops_signal_inline(e, q, d);
	}
	CHECK_EQ(gdak_qp_state(q), GDAK_QPS_RTS);
	/* the DCTs were never disturbed */
	for (int i = 0; i < e->ndct; i++) {
		if (!e->hw) {
			struct gdak_nic_dc_stats st;

			CHECK_EQ(gdak_nic_dc_stats(e->tg[i].dct, &st), 0);
			CHECK_EQ(st.key_violations, 0);
		}
		CHECK_EQ(gdak_qp_state(e->tg[i].dct), GDAK_QPS_RTR);
	}
	CHECK_EQ(gdak_qp_destroy(q), 0);
}

/* One WRITE to tg[0] on a fresh DCI with av: an error CQE with synd naming
 * the WQE, the DCI in ERR with the rule (the NIC model names it), nothing
 * landed. */
static void expect_fail(struct dc_env *e, const struct gdak_dev_av *av, uint32_t rkey, uint8_t synd,
			const char *rule)
{
	struct gdak_dev_qp *d;
	struct gdak_qp *q = dci_new(e, &d, 1);
	struct dc_target *x = &e->tg[0];
	struct gdak_dev_sge src = { va(e->lmem), 64, gdak_mr_lkey(e->lmr) };
	struct gdak_dev_cqe c;
	struct gdak_qp_error err;
	uint64_t t = 0;

	memset(&c, 0, sizeof(c));
	memset(x->mem, 0, 64);
	gdak_test_fill(e->lmem, 64, 4242);
	CHECK_EQ(gdak_dev_dc_put(d, av, &src, va(x->mem), rkey, GDAK_DEV_WQE_SIGNAL, &t), 0);
	CHECK_EQ(gdak_dev_wait_timeout(d, t, e->t_ns, &c), -EIO);
	CHECK_EQ(c.opcode, MLX5_CQE_REQ_ERR);
	CHECK_EQ(c.syndrome, synd);
	CHECK_EQ(c.wqe_opcode, MLX5_OPCODE_RDMA_WRITE);
	CHECK_EQ(c.wqe_index, 0);
	CHECK_EQ(gdak_qp_query_error(q, &err), 0);
	CHECK_EQ(err.state, GDAK_QPS_ERR);
	CHECK_EQ(err.syndrome, synd);
	CHECK_EQ(err.opcode, MLX5_OPCODE_RDMA_WRITE);
	CHECK_EQ(err.wqe_index, 0);
	if (rule)
		CHECK_STR(err.rule, rule);
	CHECK_EQ(gdak_qp_state(q), GDAK_QPS_ERR);
	for (int i = 0; i < 64; i++)
		CHECK_EQ(x->mem[i], 0);
	CHECK_EQ(gdak_qp_destroy(q), 0);
}

/* A wrong access key: the DCT drops the connect without a NAK (ConnectX
 * answers no DCI that cannot present the key), the DCI retries out, the
 * DCT still serves the right key. */
static void wrong_key(struct dc_env *e)
{
	struct dc_target *x = &e->tg[0];
	struct gdak_qp_info info = x->info;
	struct gdak_qp_error err;
	struct gdak_dev_av bad;

	info.dc_key ^= 1;
	REQUIRE_EQ(gdak_dc_av(&info, 0, &bad), 0);
	expect_fail(e, &bad, gdak_mr_rkey(x->mr), MLX5_CQE_SYNDROME_TRANSPORT_RETRY_EXC_ERR,
		    e->hw ? NULL : "dc_key_violation");
	if (!e->hw) {
		struct gdak_nic_dc_stats st;

		CHECK_EQ(gdak_nic_dc_stats(x->dct, &st), 0);
		CHECK_EQ(st.key_violations, 1);
	}
	CHECK_EQ(gdak_qp_query_error(x->dct, &err), 0);
	CHECK_EQ(err.state, GDAK_QPS_RTR);
	CHECK_EQ(err.syndrome, 0);
	CHECK_EQ(gdak_qp_state(x->dct), GDAK_QPS_RTR);
}

/* The error cases whose syndromes and rules the NIC model names. */
static void errors_emu(struct dc_env *e)
{
	struct dc_target *x = &e->tg[0];
	uint32_t rkey = gdak_mr_rkey(x->mr);
	struct gdak_qp_info info;
	struct gdak_dev_av bad;

	/* no such DCT: a number nothing has, and an RC QP's number */
	info = x->info;
	info.qpn = 0xfffffe;
	CHECK_EQ(gdak_dc_av(&info, 1, &bad), 0);
	expect_fail(e, &bad, rkey, MLX5_CQE_SYNDROME_TRANSPORT_RETRY_EXC_ERR, "dc_no_dct");
	{
		struct gdak_qp *rc;

		CHECK_EQ(gdak_qp_create(e->ctx_a, NULL, &rc), 0);
		info.qpn = gdak_qp_num(rc);
		CHECK_EQ(gdak_dc_av(&info, 0, &bad), 0);
		expect_fail(e, &bad, rkey, MLX5_CQE_SYNDROME_TRANSPORT_RETRY_EXC_ERR, "dc_no_dct");
		CHECK_EQ(gdak_qp_destroy(rc), 0);
	}

	/* an AV naming the DCT at another LID */
	info = x->info;
	info.lid ^= 0x100;
	CHECK_EQ(gdak_dc_av(&info, 1, &bad), 0);
	expect_fail(e, &bad, rkey, MLX5_CQE_SYNDROME_TRANSPORT_RETRY_EXC_ERR, "dc_av_target");

	/* a bad rkey at a DCT: REMOTE_ACCESS_ERR as on RC, the DCT stays up */
	expect_fail(e, &x->full, rkey ^ 0x100, MLX5_CQE_SYNDROME_REMOTE_ACCESS_ERR, "bad_rkey");
	CHECK_EQ(gdak_qp_state(x->dct), GDAK_QPS_RTR);

	/* an AV that claims the full form in a WQE sized for the compact one */
	bad = x->compact;
	((uint8_t *)bad.words)[8] |= 0x80;
	expect_fail(e, &bad, rkey, MLX5_CQE_SYNDROME_LOCAL_QP_OP_ERR, "bad_ds");

	/* the DCT in ERR answers nothing */
	CHECK_EQ(gdak_qp_modify(x->dct, GDAK_QPS_ERR, NULL), 0);
	expect_fail(e, &x->full, rkey, MLX5_CQE_SYNDROME_TRANSPORT_RETRY_EXC_ERR, "dc_dct_state");
	/* ... and works again after RESET -> RTR */
	CHECK_EQ(gdak_qp_modify(x->dct, GDAK_QPS_RESET, NULL), 0);
	CHECK_EQ(gdak_qp_connect(x->dct, NULL), 0);
	{
		struct gdak_dev_qp *d;
		struct gdak_qp *q = dci_new(e, &d, 2);
		struct gdak_dev_sge src = { va(e->lmem), 64, gdak_mr_lkey(e->lmr) };
		uint64_t t = 0;

		gdak_test_fill(e->lmem, 64, 4242);
		CHECK_EQ(gdak_dev_dc_put(d, &x->full, &src, va(x->mem), rkey, GDAK_DEV_WQE_SIGNAL,
					 &t),
			 0);
		CHECK_EQ(gdak_dev_wait_timeout(d, t, e->t_ns, NULL), 0);
		CHECK_MEM(x->mem, e->lmem, 64);
		CHECK_EQ(gdak_qp_destroy(q), 0);
	}
}

/* The host API's refusals on the NIC model. */
static void refusals_emu(struct dc_env *e)
{
	struct gdak_qp_attr a;
	struct gdak_qp *q = NULL, *rc;
	struct gdak_qp_info info;
	struct gdak_dev_av av;

	a = (struct gdak_qp_attr){ .dc_key = 5 };
	CHECK_EQ(gdak_qp_create(e->ctx_a, &a, &q), -EINVAL); /* a key on an RC QP */
	a = (struct gdak_qp_attr){ .type = GDAK_QPT_DCI, .dci_streams = 3 };
	CHECK_EQ(gdak_qp_create(e->ctx_a, &a, &q), -EINVAL);
	a = (struct gdak_qp_attr){ .type = GDAK_QPT_DCI, .dci_streams = 32 };
	CHECK_EQ(gdak_qp_create(e->ctx_a, &a, &q), -EINVAL);
	a = (struct gdak_qp_attr){ .type = GDAK_QPT_DCI, .rq_depth = 4 };
	CHECK_EQ(gdak_qp_create(e->ctx_a, &a, &q), -EINVAL);
	a = (struct gdak_qp_attr){ .type = 7 };
	CHECK_EQ(gdak_qp_create(e->ctx_a, &a, &q), -EINVAL);
	CHECK(q == NULL);

	/* a DCT stops at RTR; a DC QP connects to nobody */
	CHECK_EQ(gdak_qp_modify(e->tg[1].dct, GDAK_QPS_RTS, NULL), -EINVAL);
	CHECK_EQ(gdak_qp_create(e->ctx_a, NULL, &rc), 0);
	CHECK_EQ(gdak_qp_info(rc, &info), 0);
	CHECK_EQ(info.qp_type, GDAK_QPT_RC);
	CHECK_EQ(gdak_dc_av(&info, 0, &av), -EINVAL); /* not a DCT */
	CHECK_EQ(gdak_qp_connect(rc, NULL), -EINVAL);
	a = (struct gdak_qp_attr){ .type = GDAK_QPT_DCI };
	CHECK_EQ(gdak_qp_create(e->ctx_a, &a, &q), 0);
	CHECK_EQ(gdak_qp_connect(q, &info), -EINVAL);
	CHECK_EQ(gdak_qp_destroy(q), 0);
	CHECK_EQ(gdak_qp_destroy(rc), 0);
}

/* What the ConnectX backend refuses, with a reason, rather than misbuilds. */
static void refusals_hw(struct dc_env *e)
{
	struct gdak_qp_attr a = { .type = GDAK_QPT_DCT, .dc_key = 1, .rq_depth = 4 };
	struct gdak_qp *q = NULL;

	CHECK_EQ(gdak_qp_create(e->ctx_a, &a, &q), -ENOTSUP);
	a = (struct gdak_qp_attr){ .type = GDAK_QPT_DCT,
				   .dc_key = 1,
				   .flags = GDAK_QP_F_SCQ_OVERRUN_IGNORE };
	CHECK_EQ(gdak_qp_create(e->ctx_a, &a, &q), -ENOTSUP);
	if (e->devx) {
		/* the DEVX path sets no DCI stream context */
		a = (struct gdak_qp_attr){ .type = GDAK_QPT_DCI, .dci_streams = 2 };
		CHECK_EQ(gdak_qp_create(e->ctx_a, &a, &q), -ENOTSUP);
	} else {
		/* CQ flags are DEVX context fields */
		a = (struct gdak_qp_attr){ .type = GDAK_QPT_DCI,
					   .flags = GDAK_QP_F_SCQ_OVERRUN_IGNORE };
		CHECK_EQ(gdak_qp_create(e->ctx_a, &a, &q), -ENOTSUP);
	}
	a = (struct gdak_qp_attr){ .type = GDAK_QPT_DCI };
	REQUIRE_EQ(gdak_qp_create(e->ctx_a, &a, &q), 0);
	CHECK_EQ(gdak_qp_connect(q, &e->tg[0].info), -EINVAL); /* a DCI connects to nobody */
	CHECK_EQ(gdak_qp_destroy(q), 0);
}

int scen_dc(const struct gdak_scen_cfg *cfg)
{
	struct dc_env env = { .cfg = cfg, .t_ns = cfg->timeout_ns };
	struct dc_env *e = &env;
	const char *path = getenv("GDAK_HW_QP_PATH");
	int ret = gdak_open(cfg->device, &e->ctx_a);

	if (ret) {
		CHECK_EQ(ret, 0);
		return 0;
	}
	e->hw = strcmp(gdak_ctx_backend(e->ctx_a), "emu") != 0;
	e->devx = e->hw && path && !strcmp(path, "devx");
	/* gdak's ConnectX backend makes no DCT with a receive queue */
	e->ndct = e->hw ? 2 : 3;
	REQUIRE_EQ(gdak_open(cfg->device, &e->ctx_b), 0);
	REQUIRE_EQ(gdak_mem_alloc(e->ctx_a, 8192, GDAK_MEM_HOST, (void **)&e->lmem), 0);
	REQUIRE_EQ(gdak_mr_reg(e->ctx_a, e->lmem, 8192, GDAK_ACCESS_ALL, &e->lmr), 0);
	target_new(e, &e->tg[0], e->ctx_a, 0x1111222233334444ull, 0);
	target_new(e, &e->tg[1], e->ctx_b, 0xdc, 0);
	if (e->ndct > 2)
		target_new(e, &e->tg[2], e->ctx_b, 0, 1);

	ops(e, 1);
	if (!e->devx)
		ops(e, 2);
	wrong_key(e);
	if (e->hw) {
		refusals_hw(e);
	} else {
		errors_emu(e);
		refusals_emu(e);
	}

	for (int i = 0; i < e->ndct; i++)
		target_free(&e->tg[i]);
	CHECK_EQ(gdak_mr_dereg(e->lmr), 0);
	CHECK_EQ(gdak_mem_free(e->ctx_a, e->lmem), 0);
	gdak_close(e->ctx_b);
	gdak_close(e->ctx_a);
	return 0;
}
