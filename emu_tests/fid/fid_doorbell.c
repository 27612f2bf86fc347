/* SPDX-License-Identifier: MIT */
/*
 * fid_doorbell.c - the doorbell conventions of the real device stacks, with
 * strict checks on, on the in-process and the RoCEv2/UDP transport:
 *   doca      ring (next producer index, opcode 0, DS 0), record, ring again
 *   nvshmem   record, then ring with the next producer index (DS 0)
 *   rdmacore  record, then the last WQE's first 8 ctrl bytes (DS != 0)
 *   proxy     the device publishes its producer index in host memory; a CPU
 *             thread (GPUNetIO's CPU proxy) writes record and register for it
 * Each posts batches of 1..7 signalled RDMA_WRITEs around a 64-WQEBB ring
 * many times over; every byte and CQE is checked and the QP's violation
 * counter must stay 0 (today's bug: DS 0 read as "one WQEBB after the index",
 * then ring_without_record once the QP idles).
 */
#include <pthread.h>

#include "fid_util.h"

#define LEN 64
#define ROUNDS 60

enum style {
	DOCA,
	NVSHMEM,
	RDMACORE,
	PROXY,
	NSTYLES
};
static const char *const style_names[] = { "doca", "nvshmem", "rdmacore", "proxy" };

struct proxy {
	struct nu_qp *q;
	uint64_t word; /* the device's published producer index */
	int stop;
};

/* the CPU proxy: sees the device's index move, rings the NIC for it */
static void *proxy_main(void *arg)
{
	struct proxy *p = arg;
	uint64_t seen = 0;

	while (!__atomic_load_n(&p->stop, __ATOMIC_ACQUIRE)) {
		uint64_t pi = __atomic_load_n(&p->word, __ATOMIC_ACQUIRE);

		if (pi == seen) {
			sched_yield();
			continue;
		}
		fid_dbrec(p->q, pi);
		gdak_dev_mmio_store_u64(p->q->d->db_reg, fid_db_value(p->q->qpn, pi));
		seen = pi;
	}
	return NULL;
}

static void run(struct gdak_ctx *ctx, const char *dev, enum style s)
{
	struct gdak_qp_attr attr = { .sq_depth = 64, .cq_depth = 64 };
	static uint8_t src[LEN * 7 * ROUNDS], dst[LEN * 7 * ROUNDS];
	struct gdak_mr *ms, *md;
	struct nu_qp a, b;
	struct proxy px = { 0 };
	pthread_t th;
	uint64_t cqn = 0, off = 0;

	memset(dst, 0, sizeof(dst));
	gdak_test_fill(src, sizeof(src), 17 + (uint64_t)s);
	REQUIRE_EQ(gdak_mr_reg(ctx, src, sizeof(src), GDAK_ACCESS_ALL, &ms), 0);
	REQUIRE_EQ(gdak_mr_reg(ctx, dst, sizeof(dst), GDAK_ACCESS_ALL, &md), 0);
	REQUIRE_EQ(nu_pair(ctx, &attr, &a, &b), 0);
	if (s == PROXY) {
		px.q = &a;
		REQUIRE_EQ(pthread_create(&th, NULL, proxy_main, &px), 0);
	}
	for (int r = 0; r < ROUNDS; r++) {
		unsigned n = 1 + (unsigned)r % 7;

		for (unsigned i = 0; i < n; i++, off += LEN)
			fid_write(&a, src + off, LEN, gdak_mr_lkey(ms), (uintptr_t)(dst + off),
				  gdak_mr_rkey(md), FID_CQ_UPDATE);
		switch (s) {
		case DOCA:
			fid_submit_doca(&a);
			break;
		case NVSHMEM:
			fid_submit_nvshmem(&a);
			break;
		case RDMACORE:
			fid_submit_rdmacore(&a);
			break;
		default:
			__atomic_store_n(&px.word, a.pi, __ATOMIC_RELEASE);
			break;
		}
		for (unsigned i = 0; i < n; i++, cqn++) {
			const uint8_t *c = fid_cqe_at(&a.d->scq, cqn, 5000);

			if (!c) {
				gdak_test_fail(__FILE__, __LINE__, "%s/%s: no CQE %llu (round %d)",
					       dev, style_names[s], (unsigned long long)cqn, r);
				goto out;
			}
			CHECK_EQ(c[63] >> 4, MLX5_CQE_REQ);
			/* every WQE is one WQEBB: CQE k is WQE k */
			CHECK_EQ(fid_get_be16(c + 60), (uint16_t)cqn);
			CHECK_EQ(fid_get_be32(c + 44), LEN);
		}
		fid_cq_consumed(&a.d->scq, cqn);
	}
	CHECK_MEM(dst, src, off);
	CHECK_EQ(gdak_qp_state(a.qp), GDAK_QPS_RTS);
	/* the idle check has had no reason to fire: give it its settle time */
	CHECK(!FID_UNTIL(fid_violations(&a) != 0, 400));
	CHECK_EQ(fid_violations(&a), 0);
out:
	if (s == PROXY) {
		__atomic_store_n(&px.stop, 1, __ATOMIC_RELEASE);
		pthread_join(th, NULL);
	}
	nu_destroy(&a);
	nu_destroy(&b);
	gdak_mr_dereg(ms);
	gdak_mr_dereg(md);
}

int main(void)
{
	static const char *const devs[] = FID_DEVS;

	REQUIRE_EQ(gdak_nic_set_strict(1), 0);
	for (unsigned d = 0; d < 2; d++) {
		struct gdak_ctx *ctx;

		if (fid_open(devs[d], d, &ctx))
			continue;
		for (int s = 0; s < NSTYLES; s++)
			run(ctx, devs[d], (enum style)s);
		gdak_close(ctx);
	}
	return gdak_test_end();
}
