/* SPDX-License-Identifier: MIT */
/*
 * cuda_udp_dc.cu - the twin of net/net_udp_dc.c on a GPU: DC between two
 * processes over emu:udp (docs/UDP.md "DC"), device code on both sides.
 *
 * The server process has three DCTs (keys differ, one with a receive
 * queue), their memory in GPU memory.  The client process runs NCTA CTAs,
 * each with a DCI of its own, all at once: every CTA reaches every DCT in
 * turn, ROUNDS times, with a three-packet WRITE, READ back, fetch-add on a
 * word all CTAs share, a failing and a succeeding CAS on its own word, and
 * put+signal; then one SEND each to the DCT with the receive queue, which a
 * server kernel receives.  Then a second kernel fails four fresh DCIs: a
 * wrong access key and a DCT number nobody has (TRANSPORT_RETRY_EXC_ERR),
 * a compact AV (no GRH to route by on RoCE: LOCAL_QP_OP_ERR), a bad rkey
 * (REMOTE_ACCESS_ERR).
 *
 * Checked: every return code, fetched values, CQE fields (opcode, syndrome,
 * failed WQE's opcode and index, QP number, receive byte counts), DCI
 * states and syndromes as the host reads them, the DCIs' stream counts,
 * the DCTs' key-violation counts and states, and every byte that moved on
 * both sides.
 *
 * The server is forked before this process touches CUDA (a forked child
 * cannot use its parent's CUDA), and a first child only asks whether a GPU
 * is there: exit 77 without one.
 */
#include <sys/wait.h>

#include <gdak/bootstrap.h>
#include <gdak/dev/dc.h>
#include <gdak/nic.h>

#include "cuda_util.h"
#include "gdak_test_bs.h"

#define NDCT 3
#define NCTA 4
#define ROUNDS 2
#define LEN 3000 /* three packets at MTU 1024 */
#define SLOT 3072
/* server memory per DCT (GPU) */
#define REG 65536
#define R_DATA(c) ((size_t)(c) * 4096)	     /* LEN per CTA */
#define R_SIGDATA(c) (16384 + (size_t)(c) * 256) /* put+signal's data */
#define R_FA 20480				     /* the word all CTAs add to */
#define R_CAS(c) (20480 + 64 + (size_t)(c) * 8)
#define R_SIG(c) (20480 + 128 + (size_t)(c) * 8)
#define R_RECV(k) (32768 + (size_t)(k) * 4096) /* DCT 2's receive buffers */
/* client memory (GPU): one source and one READ slot per (CTA, round, DCT),
 * then one SEND source per CTA */
#define NSL (NCTA * ROUNDS * NDCT)
#define SL(c, r, i) (((size_t)(c) * ROUNDS + (size_t)(r)) * NDCT + (size_t)(i))
#define SIG_LEN 256

static const uint64_t keys[NDCT] = {0x1111222233334444ull, 0xdc, 0};

struct remote {
	uint64_t addr;
	uint32_t rkey, pad;
};

static uint64_t fill_seed(size_t slot)
{
	return 5000 + slot;
}

/* ---- kernels ---------------------------------------------------------------------- */

struct ops_args {
	struct gdak_dev_qp *dci[NCTA];
	struct gdak_dev_av av[NDCT];
	struct remote peer[NDCT];
	uint64_t src, dst, res; /* client GPU buffers */
	uint32_t src_key, dst_key, res_key;
};

#define NRC (ROUNDS * NDCT * 8 + 4)

struct ops_out {
	int rc[NCTA][NRC];
	int n[NCTA];
	uint64_t fa_old[NCTA][ROUNDS * NDCT];
	uint64_t cas_old[NCTA][ROUNDS * NDCT][2];
	struct gdak_dev_cqe cqe[NCTA];
};

__global__ void k_ops(struct ops_args x, struct ops_out *o)
{
	const int c = blockIdx.x;
	struct gdak_dev_qp *qp = x.dci[c];
	uint64_t *res = (uint64_t *)(uintptr_t)(x.res + (uint64_t)c * 64);
	struct gdak_dev_sge s;
	uint64_t t = 0, old = 0;
	int k = 0;

	if (threadIdx.x)
		return;
	for (int r = 0; r < ROUNDS; r++) {
		for (int i = 0; i < NDCT; i++) {
			const struct gdak_dev_av *av = &x.av[i];
			const struct remote *p = &x.peer[i];
			const size_t sl = SL(c, r, i);
			const int j = r * NDCT + i;

			s = {x.src + sl * SLOT, LEN, x.src_key};
			o->rc[c][k++] = gdak_dev_dc_put(qp, av, &s, p->addr + R_DATA(c), p->rkey,
							0, &t);
			s = {x.dst + sl * SLOT, LEN, x.dst_key};
			o->rc[c][k++] = gdak_dev_dc_get(qp, av, &s, p->addr + R_DATA(c), p->rkey,
							GDAK_DEV_WQE_SIGNAL, &t);
			o->rc[c][k++] = gdak_dev_wait_timeout(qp, t, CU_WAIT_NS, &o->cqe[c]);
			o->rc[c][k++] = gdak_dev_dc_fetch_add(qp, av, p->addr + R_FA, p->rkey,
							      (uint64_t)(c + 1), res, x.res_key,
							      &old);
			o->fa_old[c][j] = old;
			/* the word holds r: a CAS expecting r + 100 fails, one
			 * expecting r moves it to r + 1 */
			o->rc[c][k++] = gdak_dev_dc_compare_swap(qp, av, p->addr + R_CAS(c),
								 p->rkey, (uint64_t)r + 100, 999,
								 res, x.res_key, &old);
			o->cas_old[c][j][0] = old;
			o->rc[c][k++] = gdak_dev_dc_compare_swap(qp, av, p->addr + R_CAS(c),
								 p->rkey, (uint64_t)r,
								 (uint64_t)r + 1, res, x.res_key,
								 &old);
			o->cas_old[c][j][1] = old;
			s = {x.src + sl * SLOT, SIG_LEN, x.src_key};
			o->rc[c][k++] = gdak_dev_dc_put_signal(qp, av, &s, p->addr + R_SIGDATA(c),
							       p->rkey, p->addr + R_SIG(c),
							       p->rkey, 1, 0, &t);
			o->rc[c][k++] = gdak_dev_wait_timeout(qp, t, CU_WAIT_NS, &o->cqe[c]);
		}
	}
	s = {x.src + ((size_t)NSL + (size_t)c) * SLOT, LEN, x.src_key};
	o->rc[c][k++] = gdak_dev_dc_send(qp, &x.av[2], &s, GDAK_DEV_WQE_SIGNAL, &t);
	o->rc[c][k++] = gdak_dev_wait_timeout(qp, t, CU_WAIT_NS, &o->cqe[c]);
	o->n[c] = k;
}

#define NERR 4

struct err_args {
	struct gdak_dev_qp *dci[NERR];
	struct gdak_dev_av av[NERR];
	uint64_t raddr[NERR];
	uint32_t rkey[NERR];
	uint64_t src;
	uint32_t src_key;
};

struct err_out {
	int rc[NERR][2];
	struct gdak_dev_cqe cqe[NERR];
};

__global__ void k_err(struct err_args x, struct err_out *o)
{
	const int e = blockIdx.x;
	struct gdak_dev_sge s = {x.src, 64, x.src_key};
	uint64_t t = 0;

	if (threadIdx.x)
		return;
	o->rc[e][0] = gdak_dev_dc_put(x.dci[e], &x.av[e], &s, x.raddr[e], x.rkey[e],
				      GDAK_DEV_WQE_SIGNAL, &t);
	o->rc[e][1] = gdak_dev_wait_timeout(x.dci[e], t, CU_WAIT_NS, &o->cqe[e]);
}

struct recv_args {
	struct gdak_dev_qp *dct;
	uint64_t buf;
	uint32_t key;
};

struct recv_out {
	int rc[2 * NCTA];
	struct gdak_dev_cqe cqe[NCTA];
};

__global__ void k_recv_post(struct recv_args x, struct recv_out *o)
{
	for (int k = 0; k < NCTA; k++) {
		struct gdak_dev_sge s = {x.buf + R_RECV(k), 4096, x.key};

		o->rc[k] = gdak_dev_recv_post(x.dct, &s, 1);
	}
}

__global__ void k_recv_wait(struct recv_args x, struct recv_out *o)
{
	for (int k = 0; k < NCTA; k++)
		o->rc[NCTA + k] = gdak_dev_recv_wait_timeout(x.dct, &o->cqe[k], CU_WAIT_NS);
}

/* ---- both sides --------------------------------------------------------------------- */

static uint64_t host_word(const struct cu_buf *b, size_t off)
{
	uint64_t v;

	cu_read(&v, b, off, 8);
	return v;
}

/* ---- server: three DCTs ------------------------------------------------------------ */

static void server(struct gdak_bootstrap *bs)
{
	struct gdak_ctx *ctx;
	struct gdak_qp *dct[NDCT];
	struct gdak_qp_info mine[NDCT], theirs[NDCT];
	struct remote me[NDCT], peer[NDCT];
	struct cu_buf mem[NDCT];
	struct gdak_nic_dc_stats st;
	struct recv_args ra;
	struct recv_out *ro;
	cudaStream_t s;
	static uint8_t want[LEN], got[LEN];
	int seen[NCTA] = {0};

	cu_require_gpu();
	ctx = cu_open_dev("emu:udp:127.0.0.1");
	s = cu_stream();
	for (int i = 0; i < NDCT; i++) {
		struct gdak_qp_attr a = cu_attr(GDAK_DEV_DB_DB, GDAK_DEV_EXCLUSIVE, 4,
						i == 2 ? NCTA : 0);

		a.type = GDAK_QPT_DCT;
		a.dc_key = keys[i];
		GDAK_REQUIRE(gdak_qp_create(ctx, &a, &dct[i]));
		GDAK_REQUIRE(gdak_qp_connect(dct[i], NULL));
		CHECK_EQ(gdak_qp_state(dct[i]), GDAK_QPS_RTR);
		GDAK_REQUIRE(gdak_qp_info(dct[i], &mine[i]));
		CHECK_EQ(mine[i].transport, GDAK_QPI_UDP);
		CHECK_EQ(mine[i].qp_type, GDAK_QPT_DCT);
		CHECK_EQ(mine[i].dc_key, keys[i]);
		cu_buf_make(ctx, REG, GDAK_MEM_GPU, &mem[i]);
		me[i] = {cu_addr(&mem[i], 0), gdak_mr_rkey(mem[i].mr), 0};
	}
	GDAK_REQUIRE(gdak_qp_export(dct[2], &ra.dct));
	ra.buf = cu_addr(&mem[2], 0);
	ra.key = mem[2].key;
	ro = cu_results<struct recv_out>(ctx, 1);
	k_recv_post<<<1, 1, 0, s>>>(ra, ro);
	cu_wait(s, "k_recv_post");
	for (int k = 0; k < NCTA; k++)
		CHECK_EQ(ro->rc[k], 0);
	REQUIRE_EQ(gdak_bootstrap_exchange_qp_info(bs, mine, theirs, NDCT), 0);
	REQUIRE_EQ(gdak_bootstrap_exchange(bs, me, peer, sizeof(me)), 0);
	REQUIRE_EQ(gdak_bootstrap_barrier(bs), 0);

	REQUIRE_EQ(gdak_bootstrap_barrier(bs), 0); /* the client's k_ops ended */
	k_recv_wait<<<1, 1, 0, s>>>(ra, ro);
	cu_wait(s, "k_recv_wait");
	for (int k = 0; k < NCTA; k++) {
		const struct gdak_dev_cqe *c = &ro->cqe[k];
		int from = -1;

		CHECK_EQ(ro->rc[NCTA + k], 0);
		CHECK_EQ(c->opcode, MLX5_CQE_RESP_SEND);
		CHECK_EQ(c->byte_cnt, LEN);
		CHECK_EQ(c->qpn, gdak_qp_num(dct[2]));
		CHECK_EQ(c->wqe_index, (uint64_t)k); /* receives complete in posting order */
		/* whose SEND landed here: one CTA each, each exactly once */
		cu_read(got, &mem[2], R_RECV(k), LEN);
		for (int j = 0; j < NCTA; j++) {
			gdak_test_fill(want, LEN, fill_seed((size_t)NSL + (size_t)j));
			if (!memcmp(got, want, LEN))
				from = j;
		}
		CHECK(from >= 0);
		if (from >= 0)
			seen[from]++;
	}
	for (int j = 0; j < NCTA; j++)
		CHECK_EQ(seen[j], 1);
	for (int i = 0; i < NDCT; i++) {
		/* every fetch-add applied once: ROUNDS * (1 + 2 + ... + NCTA) */
		CHECK_EQ(host_word(&mem[i], R_FA), (uint64_t)ROUNDS * NCTA * (NCTA + 1) / 2);
		for (int c = 0; c < NCTA; c++) {
			CHECK_EQ(host_word(&mem[i], R_CAS(c)), (uint64_t)ROUNDS);
			CHECK_EQ(host_word(&mem[i], R_SIG(c)), (uint64_t)ROUNDS);
			/* the last round's WRITE and put+signal data */
			gdak_test_fill(want, LEN, fill_seed(SL(c, ROUNDS - 1, i)));
			cu_read(got, &mem[i], R_DATA(c), LEN);
			CHECK_MEM(got, want, LEN);
			cu_read(got, &mem[i], R_SIGDATA(c), SIG_LEN);
			CHECK_MEM(got, want, SIG_LEN);
		}
		CHECK_EQ(gdak_nic_dc_stats(dct[i], &st), 0);
		CHECK_EQ(st.key_violations, 0);
		CHECK_EQ(gdak_qp_state(dct[i]), GDAK_QPS_RTR);
	}
	REQUIRE_EQ(gdak_bootstrap_barrier(bs), 0); /* checked: the client may fail */

	REQUIRE_EQ(gdak_bootstrap_barrier(bs), 0); /* the client's k_err ended */
	CHECK_EQ(gdak_nic_dc_stats(dct[0], &st), 0);
	CHECK(st.key_violations >= 1); /* every retry presents the wrong key again */
	for (int i = 0; i < NDCT; i++)
		CHECK_EQ(gdak_qp_state(dct[i]), GDAK_QPS_RTR); /* a DCI's error is its own */
	REQUIRE_EQ(gdak_bootstrap_barrier(bs), 0);

	cudaStreamDestroy(s);
	gdak_mem_free(ctx, ro);
	for (int i = 0; i < NDCT; i++) {
		CHECK_EQ(gdak_qp_destroy(dct[i]), 0);
		cu_buf_free(ctx, &mem[i]);
	}
	gdak_close(ctx);
}

/* ---- client: NCTA DCIs, then NERR more ---------------------------------------------- */

static struct gdak_qp *dci_new(struct gdak_ctx *ctx, struct gdak_dev_qp **d)
{
	struct gdak_qp_attr a = cu_attr(GDAK_DEV_DB_DB, GDAK_DEV_EXCLUSIVE, 64, 0);
	struct gdak_qp *q;

	a.type = GDAK_QPT_DCI;
	GDAK_REQUIRE(gdak_qp_create(ctx, &a, &q));
	GDAK_REQUIRE(gdak_qp_connect(q, NULL));
	CHECK_EQ(gdak_qp_state(q), GDAK_QPS_RTS);
	GDAK_REQUIRE(gdak_qp_export(q, d));
	return q;
}

static void client_errors(struct gdak_bootstrap *bs, struct gdak_ctx *ctx,
			  const struct gdak_qp_info *theirs, const struct remote *peer,
			  const struct cu_buf *src, cudaStream_t s)
{
	static const uint8_t synd[NERR] = {MLX5_CQE_SYNDROME_TRANSPORT_RETRY_EXC_ERR,
					   MLX5_CQE_SYNDROME_TRANSPORT_RETRY_EXC_ERR,
					   MLX5_CQE_SYNDROME_LOCAL_QP_OP_ERR,
					   MLX5_CQE_SYNDROME_REMOTE_ACCESS_ERR};
	struct gdak_qp *q[NERR];
	struct err_args x;
	struct err_out *o = cu_results<struct err_out>(ctx, 1);
	struct gdak_qp_info bad;

	memset(&x, 0, sizeof(x));
	for (int e = 0; e < NERR; e++) {
		q[e] = dci_new(ctx, &x.dci[e]);
		x.raddr[e] = peer[0].addr + R_DATA(0);
		x.rkey[e] = peer[0].rkey;
	}
	bad = theirs[0];
	bad.dc_key ^= 1; /* the DCT drops the request and counts it */
	GDAK_REQUIRE(gdak_dc_av(&bad, 0, &x.av[0]));
	bad = theirs[0];
	bad.qpn ^= 0x800000; /* a DCT number nobody has, at DCT 0's address */
	GDAK_REQUIRE(gdak_dc_av(&bad, 0, &x.av[1]));
	GDAK_REQUIRE(gdak_dc_av(&theirs[0], 1, &x.av[2]));
	GDAK_REQUIRE(gdak_dc_av(&theirs[0], 0, &x.av[3]));
	x.rkey[3] ^= 0x100;
	x.src = cu_addr(src, 0);
	x.src_key = src->key;
	k_err<<<NERR, 1, 0, s>>>(x, o);
	cu_wait(s, "k_err");
	for (int e = 0; e < NERR; e++) {
		struct gdak_qp_error qe;

		CHECK_EQ(o->rc[e][0], 0);
		CHECK_EQ(o->rc[e][1], -EIO);
		CHECK_EQ(o->cqe[e].opcode, MLX5_CQE_REQ_ERR);
		CHECK_EQ(o->cqe[e].syndrome, synd[e]);
		CHECK_EQ(o->cqe[e].wqe_opcode, MLX5_OPCODE_RDMA_WRITE);
		CHECK_EQ(o->cqe[e].wqe_index, 0);
		CHECK_EQ(o->cqe[e].qpn, gdak_qp_num(q[e]));
		CHECK_EQ(gdak_qp_query_error(q[e], &qe), 0);
		CHECK_EQ(qe.state, GDAK_QPS_ERR);
		CHECK_EQ(qe.syndrome, synd[e]);
	}
	REQUIRE_EQ(gdak_bootstrap_barrier(bs), 0);
	REQUIRE_EQ(gdak_bootstrap_barrier(bs), 0);
	for (int e = 0; e < NERR; e++)
		CHECK_EQ(gdak_qp_destroy(q[e]), 0);
	gdak_mem_free(ctx, o);
}

static void client(struct gdak_bootstrap *bs)
{
	struct gdak_ctx *ctx;
	struct gdak_qp_info mine[NDCT], theirs[NDCT];
	struct remote me[NDCT], peer[NDCT];
	struct gdak_qp *q[NCTA];
	struct gdak_nic_dc_stats st;
	struct cu_buf src, dst, res;
	struct ops_args x;
	struct ops_out *o;
	cudaStream_t s;
	static uint8_t want[LEN], got[LEN];

	cu_require_gpu();
	ctx = cu_open_dev("emu:udp:127.0.0.1");
	s = cu_stream();
	memset(&x, 0, sizeof(x));
	for (int c = 0; c < NCTA; c++)
		q[c] = dci_new(ctx, &x.dci[c]);
	/* the exchange wants equal counts; a DCI is reached by nobody */
	GDAK_REQUIRE(gdak_qp_info(q[0], &mine[0]));
	for (int i = 0; i < NDCT; i++) {
		mine[i] = mine[0];
		me[i] = {0, 0, 0};
	}
	REQUIRE_EQ(gdak_bootstrap_exchange_qp_info(bs, mine, theirs, NDCT), 0);
	REQUIRE_EQ(gdak_bootstrap_exchange(bs, me, peer, sizeof(me)), 0);
	for (int i = 0; i < NDCT; i++) {
		CHECK_EQ(theirs[i].qp_type, GDAK_QPT_DCT);
		CHECK_EQ(theirs[i].dc_key, keys[i]);
		GDAK_REQUIRE(gdak_dc_av(&theirs[i], 0, &x.av[i]));
		x.peer[i] = peer[i];
	}
	cu_buf_make(ctx, (size_t)(NSL + NCTA) * SLOT, GDAK_MEM_GPU, &src);
	cu_buf_make(ctx, (size_t)NSL * SLOT, GDAK_MEM_GPU, &dst);
	cu_buf_make(ctx, (size_t)NCTA * 64, GDAK_MEM_GPU, &res);
	for (size_t sl = 0; sl < (size_t)NSL + NCTA; sl++) {
		gdak_test_fill(want, LEN, fill_seed(sl));
		cu_write(&src, sl * SLOT, want, LEN);
	}
	cu_ref(&src, &x.src, &x.src_key);
	cu_ref(&dst, &x.dst, &x.dst_key);
	cu_ref(&res, &x.res, &x.res_key);
	o = cu_results<struct ops_out>(ctx, 1);
	REQUIRE_EQ(gdak_bootstrap_barrier(bs), 0);

	k_ops<<<NCTA, 32, 0, s>>>(x, o);
	cu_wait(s, "k_ops");
	for (int c = 0; c < NCTA; c++) {
		CHECK_EQ(o->n[c], NRC - 2);
		for (int k = 0; k < NRC - 2; k++)
			CHECK_EQ(o->rc[c][k], 0);
		for (int r = 0; r < ROUNDS; r++) {
			for (int i = 0; i < NDCT; i++) {
				const int j = r * NDCT + i;

				/* the shared word grows by this CTA's add and
				 * maybe others' */
				if (r)
					CHECK(o->fa_old[c][j] >=
					      o->fa_old[c][j - NDCT] + (uint64_t)(c + 1));
				CHECK(o->fa_old[c][j] <=
				      (uint64_t)ROUNDS * NCTA * (NCTA + 1) / 2 - (uint64_t)(c + 1));
				CHECK_EQ(o->cas_old[c][j][0], (uint64_t)r);
				CHECK_EQ(o->cas_old[c][j][1], (uint64_t)r);
				/* the READ returned what this CTA's WRITE put there */
				gdak_test_fill(want, LEN, fill_seed(SL(c, r, i)));
				cu_read(got, &dst, SL(c, r, i) * SLOT, LEN);
				CHECK_MEM(got, want, LEN);
			}
		}
		/* the stream turns at every DCT: one connect per (round, DCT); the
		 * SEND goes to the DCT the last round ended at */
		CHECK_EQ(gdak_nic_dc_stats(q[c], &st), 0);
		CHECK_EQ(st.connects, (uint64_t)ROUNDS * NDCT);
		CHECK_EQ(st.disconnects, (uint64_t)ROUNDS * NDCT - 1);
		CHECK_EQ(gdak_qp_state(q[c]), GDAK_QPS_RTS);
	}
	REQUIRE_EQ(gdak_bootstrap_barrier(bs), 0); /* the server checks */
	REQUIRE_EQ(gdak_bootstrap_barrier(bs), 0);

	client_errors(bs, ctx, theirs, peer, &src, s);

	cudaStreamDestroy(s);
	gdak_mem_free(ctx, o);
	for (int c = 0; c < NCTA; c++)
		CHECK_EQ(gdak_qp_destroy(q[c]), 0);
	cu_buf_free(ctx, &src);
	cu_buf_free(ctx, &dst);
	cu_buf_free(ctx, &res);
	gdak_close(ctx);
}

/* Whether a GPU is usable, asked in a child: this process stays without
 * CUDA until the server is forked. */
static int gpu_present(void)
{
	int status = 0;
	pid_t pid;

	fflush(NULL);
	pid = fork();
	REQUIRE(pid >= 0);
	if (pid == 0) {
		int n = 0;

		_exit(cudaGetDeviceCount(&n) == cudaSuccess && n > 0 ? 0 : 77);
	}
	REQUIRE(waitpid(pid, &status, 0) == pid);
	return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

int main(void)
{
	if (!gpu_present())
		GDAK_TEST_SKIP("no usable GPU");
	return gdak_test_bs_2proc(server, client, 170);
}
