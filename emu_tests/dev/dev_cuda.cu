/* SPDX-License-Identifier: MIT */
/*
 * dev_cuda.cu - the device API driven from CUDA kernels against a loopback
 * fake NIC: a host thread in this test that consumes the send ring (in
 * mapped pinned memory) in doorbell-record order, executes RDMA_WRITE
 * (inline or SGE), RDMA_READ and atomics on mapped host memory, and writes
 * CQEs for signalled WQEs.  Checks, per doorbell handler (DB, BF, CPU_PROXY)
 * on a SHARED QP: thread-scope puts from 1024 threads, warp- and
 * block-scope puts, 1024 concurrent fetch-adds (every old value seen once),
 * put+signal with a device-side signal wait, and the NIC's own checks (each
 * WQE in the slot its index names, no slot reused before its completion).
 * Exits 77 without a GPU.
 */
#include <pthread.h>
#include <sched.h>

#include <cuda_runtime.h>

#include <gdak/dev/dev.h>

extern "C" {
#include "gdak_test.h"
}
#include "dev_atomic.h"

#define NB 8
#define NT 128
#define N (NB * NT)
#define RING_LOG 9
#define HANG_NS 10000000000ull

struct mem {
	struct gdak_dev_qp qp;
	uint32_t dbrec[2], scq_dbrec[2], rcq_dbrec[2];
	uint64_t db_page[32];
	uint64_t proxy_pi;
	uint64_t scratch;
	uint64_t dst[N], src[N], res[N], counter, sig;
	int rc[N];
	/* rings are 64-byte aligned, as mlx5 rings are (page aligned); the
	 * device API stores WQE segments and loads CQE bytes 16 at a time */
	uint8_t sq[64 << RING_LOG] __attribute__((aligned(64)));
	uint8_t scqes[64 << RING_LOG] __attribute__((aligned(64)));
	uint8_t rcqes[64 * 4] __attribute__((aligned(64)));
};

struct nic {
	struct mem *m;
	int stop;
	uint64_t consumed, bad_index, bad_reuse, bad_op;
};

/* The NIC's view of the ring (the gdak_dev_* helpers are device-only under
 * nvcc). */
static void *ds_at(const struct gdak_dev_qp *qp, uint64_t idx, uint32_t k)
{
	uint64_t u = (idx << 2) + k, mask = ((uint64_t)qp->sq_wqebb_cnt << 2) - 1;
	return (char *)qp->sq_buf + ((u & mask) << 4);
}

static void *nic_main(void *arg)
{
	struct nic *n = (struct nic *)arg;
	struct gdak_dev_qp *qp = &n->m->qp;
	uint64_t ci = 0, retired = 0, cqe_n = 0;
	unsigned spins = 0;

	while (!__atomic_load_n(&n->stop, __ATOMIC_ACQUIRE)) {
		uint16_t pi = (uint16_t)gdak_be32toh(
			__atomic_load_n(&n->m->dbrec[MLX5_SND_DBR], __ATOMIC_ACQUIRE));
		if (pi == (uint16_t)ci) {
			if (++spins > 64)
				sched_yield();
			continue;
		}
		spins = 0;
		while ((uint16_t)ci != pi) {
			struct gdak_mlx5_ctrl c;
			uint64_t raddr = 0, la = 0, sa = 0, cmp = 0, old;
			uint32_t rkey, len = 0, lkey, bbs;
			gdak_mlx5_ctrl_decode((const struct mlx5_wqe_ctrl_seg *)ds_at(qp, ci, 0),
					      &c);
			if (c.wqe_index != (uint16_t)ci || c.qpn != qp->qpn || !c.ds) {
				n->bad_index++;
				c.ds = 1;
			}
			bbs = gdak_mlx5_wqebbs(c.ds);
			if (ci + bbs > retired + qp->sq_wqebb_cnt)
				n->bad_reuse++;
			if (c.opcode != MLX5_OPCODE_NOP)
				gdak_mlx5_raddr_decode((const struct mlx5_wqe_raddr_seg *)
							       ds_at(qp, ci, 1),
						       &raddr, &rkey);
			switch (c.opcode) {
			case MLX5_OPCODE_NOP:
				break;
			case MLX5_OPCODE_RDMA_WRITE: {
				const uint32_t *bc = (const uint32_t *)ds_at(qp, ci, 2);
				uint32_t b = gdak_be32toh(*bc);
				if (b & MLX5_INLINE_SEG) {
					/* short inline payloads here: within the WQEBB */
					memcpy((void *)(uintptr_t)raddr, (const uint8_t *)bc + 4,
					       b & ~MLX5_INLINE_SEG);
				} else {
					gdak_mlx5_data_decode((const struct mlx5_wqe_data_seg *)bc,
							      &la, &len, &lkey);
					memcpy((void *)(uintptr_t)raddr, (void *)(uintptr_t)la, len);
				}
				break;
			}
			case MLX5_OPCODE_RDMA_READ:
				gdak_mlx5_data_decode((const struct mlx5_wqe_data_seg *)
							      ds_at(qp, ci, 2),
						      &la, &len, &lkey);
				memcpy((void *)(uintptr_t)la, (void *)(uintptr_t)raddr, len);
				break;
			case MLX5_OPCODE_ATOMIC_FA:
			case MLX5_OPCODE_ATOMIC_CS:
				gdak_mlx5_atomic_decode((const struct mlx5_wqe_atomic_seg *)
								ds_at(qp, ci, 2),
							&sa, &cmp);
				gdak_mlx5_data_decode((const struct mlx5_wqe_data_seg *)
							      ds_at(qp, ci, 3),
						      &la, &len, &lkey);
				old = fake_atomic8(c.opcode, raddr, sa, cmp);
				/* the fetched value lands big-endian, as ConnectX does */
				*(uint64_t *)(uintptr_t)la = gdak_htobe64(old);
				break;
			default:
				n->bad_op++;
			}
			if (c.fm_ce_se & MLX5_WQE_CTRL_CQ_UPDATE) {
				uint8_t *e;
				while (cqe_n - gdak_be32toh(__atomic_load_n(&n->m->scq_dbrec[0],
									    __ATOMIC_ACQUIRE)) >=
				       qp->scq.ncqe)
					sched_yield();
				e = (uint8_t *)qp->scq.cqes + (cqe_n & (qp->scq.ncqe - 1)) * 64;
				memset(e, 0, 63);
				((struct mlx5_cqe64 *)e)->wqe_counter = gdak_htobe16((uint16_t)ci);
				((struct mlx5_cqe64 *)e)->sop_drop_qpn = gdak_htobe32(qp->qpn);
				__atomic_store_n(&e[63],
						 gdak_mlx5_cqe_op_own(MLX5_CQE_REQ, cqe_n, qp->scq.ncqe),
						 __ATOMIC_RELEASE);
				cqe_n++;
				retired = ci + bbs;
			}
			n->consumed++;
			ci += bbs;
		}
	}
	return NULL;
}

__global__ void k_thread(struct mem *m)
{
	unsigned g = blockIdx.x * blockDim.x + threadIdx.x;
	uint64_t t;
	int rc = gdak_dev_put_value(&m->qp, g * 7 + 1, 8, (uint64_t)(uintptr_t)&m->dst[g], 1, 0, &t);
	if (!rc)
		rc = gdak_dev_wait_timeout(&m->qp, t, HANG_NS, NULL);
	m->rc[g] = rc;
}

__global__ void k_warp(struct mem *m)
{
	unsigned g = blockIdx.x * blockDim.x + threadIdx.x;
	uint64_t t;
	int rc = gdak_dev_put_value_warp(&m->qp, g * 5 + 2, (uint64_t)(uintptr_t)&m->dst[g], 1, 0,
					 &t);
	if (!rc)
		rc = gdak_dev_quiet_warp(&m->qp, NULL);
	m->rc[g] = rc;
}

__global__ void k_block(struct mem *m)
{
	unsigned g = blockIdx.x * blockDim.x + threadIdx.x;
	struct gdak_dev_sge s = {(uint64_t)(uintptr_t)&m->src[g], 8, 2};
	uint64_t t;
	int rc = gdak_dev_put_block(&m->qp, &s, (uint64_t)(uintptr_t)&m->dst[g], 1, 0, &t);
	int rc2 = gdak_dev_quiet_block(&m->qp, NULL);
	m->rc[g] = rc ? rc : rc2;
}

__global__ void k_fetch_add(struct mem *m)
{
	unsigned g = blockIdx.x * blockDim.x + threadIdx.x;
	uint64_t old = ~0ull;
	int rc = gdak_dev_fetch_add_timeout(&m->qp, (uint64_t)(uintptr_t)&m->counter, 1, 1,
					    &m->res[g], 3, &old, HANG_NS, NULL);
	m->dst[g] = old;
	m->rc[g] = rc;
}

__global__ void k_put_signal(struct mem *m)
{
	unsigned g = blockIdx.x * blockDim.x + threadIdx.x;
	struct gdak_dev_sge s = {(uint64_t)(uintptr_t)&m->src[g], 8, 2};
	uint64_t t, seen = 0;
	int rc = gdak_dev_put_signal(&m->qp, &s, (uint64_t)(uintptr_t)&m->dst[g], 1,
				     (uint64_t)(uintptr_t)&m->sig, 1, 1, 0, &t);
	/* every thread waits for everyone's signal: then all data is there */
	if (!rc)
		rc = gdak_dev_signal_wait_timeout(&m->sig, GDAK_DEV_CMP_GE, N, HANG_NS, &seen);
	if (!rc && gdak_dev_load_acquire_u64(&m->dst[(g + 1) % N]) != m->src[(g + 1) % N])
		rc = -EBADMSG;
	if (!rc)
		rc = gdak_dev_quiet_timeout(&m->qp, HANG_NS, NULL);
	m->rc[g] = rc;
}

static void check_rcs(struct mem *m, const char *what)
{
	unsigned bad = 0;
	for (unsigned i = 0; i < N; i++)
		bad += m->rc[i] != 0;
	if (bad)
		fprintf(stderr, "%s: %u threads failed, e.g. rc %d\n", what, bad, m->rc[0]);
	CHECK_EQ(bad, 0);
	memset(m->rc, 0xff, sizeof(m->rc));
}

static int launch(void (*k)(struct mem *), struct mem *m)
{
	k<<<NB, NT>>>(m);
	cudaError_t e = cudaDeviceSynchronize();
	if (e != cudaSuccess)
		fprintf(stderr, "kernel: %s\n", cudaGetErrorString(e));
	return e == cudaSuccess;
}

static void run(uint32_t handler)
{
	struct mem *m;
	struct nic n;
	pthread_t tid;
	unsigned bad = 0;
	uint8_t seen[N];

	REQUIRE(cudaHostAlloc((void **)&m, sizeof(*m), cudaHostAllocMapped) == cudaSuccess);
	memset(m, 0, sizeof(*m));
	struct gdak_dev_qp *qp = &m->qp;
	qp->version = GDAK_DEV_ABI_VERSION;
	qp->qpn = 0x4242;
	qp->qpn_ds_be = gdak_htobe32(qp->qpn << 8);
	qp->sq_wqebb_cnt = 1u << RING_LOG;
	qp->sq_log_cnt = RING_LOG;
	qp->handler = handler;
	qp->sharing = GDAK_DEV_SHARED;
	qp->max_inline = 64;
	qp->sq_buf = m->sq;
	qp->dbrec = m->dbrec;
	qp->db_reg = m->db_page;
	qp->proxy_pi = &m->proxy_pi;
	qp->scq.version = GDAK_DEV_ABI_VERSION;
	qp->scq.ncqe = 1u << RING_LOG;
	qp->scq.log_ncqe = RING_LOG;
	qp->scq.cqes = m->scqes;
	qp->scq.dbrec = m->scq_dbrec;
	for (unsigned i = 0; i < qp->scq.ncqe; i++)
		m->scqes[i * 64 + 63] = GDAK_MLX5_CQE_INVALID_OP_OWN;
	qp->scratch_addr = (uint64_t)(uintptr_t)&m->scratch;
	qp->scratch_lkey = 4;
	qp->wait_timeout_ns = HANG_NS;
	memset(m->rc, 0xff, sizeof(m->rc));

	memset(&n, 0, sizeof(n));
	n.m = m;
	REQUIRE(pthread_create(&tid, NULL, nic_main, &n) == 0);

	REQUIRE(launch(k_thread, m));
	check_rcs(m, "thread scope");
	for (unsigned i = 0; i < N; i++)
		bad += m->dst[i] != i * 7 + 1;
	CHECK_EQ(bad, 0);

	REQUIRE(launch(k_warp, m));
	check_rcs(m, "warp scope");
	bad = 0;
	for (unsigned i = 0; i < N; i++)
		bad += m->dst[i] != i * 5 + 2;
	CHECK_EQ(bad, 0);

	for (unsigned i = 0; i < N; i++)
		m->src[i] = 0xabc0000000ull + i;
	REQUIRE(launch(k_block, m));
	check_rcs(m, "block scope");
	bad = 0;
	for (unsigned i = 0; i < N; i++)
		bad += m->dst[i] != 0xabc0000000ull + i;
	CHECK_EQ(bad, 0);

	m->counter = 0;
	REQUIRE(launch(k_fetch_add, m));
	check_rcs(m, "fetch-add");
	CHECK_EQ(m->counter, N);
	memset(seen, 0, sizeof(seen));
	bad = 0;
	for (unsigned i = 0; i < N; i++) {
		if (m->dst[i] >= N || seen[m->dst[i]]++)
			bad++;
	}
	CHECK_EQ(bad, 0); /* every old value exactly once */

	memset(m->dst, 0, sizeof(m->dst));
	for (unsigned i = 0; i < N; i++)
		m->src[i] = 0x5150000000ull + i;
	m->sig = 0;
	REQUIRE(launch(k_put_signal, m));
	check_rcs(m, "put+signal");
	CHECK_EQ(m->sig, N);

	__atomic_store_n(&n.stop, 1, __ATOMIC_RELEASE);
	pthread_join(tid, NULL);
	CHECK_EQ(n.bad_index, 0);
	CHECK_EQ(n.bad_reuse, 0);
	CHECK_EQ(n.bad_op, 0);
	CHECK_EQ(qp->scq.err, 0); /* no sticky error */
	if (handler == GDAK_DEV_DB_CPU_PROXY)
		CHECK_EQ(m->proxy_pi, qp->sq_ready);
	printf("handler %u: %" PRIu64 " WQEs, %" PRIu64 " WQEBBs through the fake NIC\n",
	       handler, n.consumed, qp->sq_ready);
	cudaFreeHost(m);
}

int main(void)
{
	int ndev = 0;
	if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev == 0)
		GDAK_TEST_SKIP("no CUDA device");
	run(GDAK_DEV_DB_DB);
	run(GDAK_DEV_DB_BF);
	run(GDAK_DEV_DB_CPU_PROXY);
	return gdak_test_end();
}
