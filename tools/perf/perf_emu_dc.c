/* SPDX-License-Identifier: MIT */
/*
 * perf_emu_dc.c - dc_put_bw: put_bw on the Dynamically Connected transport,
 * host threads as the device (gdak-perf-cuda's dc_put_bw is the kernel
 * version).  One DCI per connection (-q), 8 DCTs in the same context; put j
 * of DCI k goes to DCT (k + j) % 8, so every put names another target than
 * the one before it.  Compact address vectors (full ones over emu:udp).  The same run measures the
 * same puts on the RC connections (one peer each), reported as rc_rate and
 * the ratio DC / RC.  High-level calls on both sides (one doorbell per put,
 * a CQE per half ring): --wqes-per-db and --signal-every do not apply.
 * One posting thread, round-robin over the QPs.  After each round the
 * slots the last puts wrote are checked.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <gdak/dev/dev.h>

#include "perf.h"

#define DC_PEERS 8
#define WAIT_NS (30ull * 1000000000ull)

struct dc_state {
	struct perf_env *env;
	unsigned n; /* DCIs (= connections) */
	struct gdak_qp **dci;
	struct gdak_dev_qp **ddci;
	struct gdak_qp *dct[DC_PEERS];
	struct gdak_dev_av av[DC_PEERS];
};

static struct dc_state dcs;

void perf_emu_dc_close(struct perf_env *env)
{
	if (dcs.env != env)
		return;
	for (unsigned k = 0; k < dcs.n; k++)
		if (dcs.dci[k])
			gdak_qp_destroy(dcs.dci[k]);
	for (unsigned p = 0; p < DC_PEERS; p++)
		if (dcs.dct[p])
			gdak_qp_destroy(dcs.dct[p]);
	free(dcs.dci);
	free(dcs.ddci);
	memset(&dcs, 0, sizeof(dcs));
}

static int dc_open(struct perf_env *env, const struct perf_opts *o)
{
	struct gdak_qp_attr a;
	int ret;

	if (dcs.env == env)
		return 0;
	if (env->bs) {
		fprintf(stderr, "gdak-perf: dc_put_bw runs in one process (DC is modelled on the "
				"in-process transport)\n");
		return -ENOTSUP;
	}
	memset(&dcs, 0, sizeof(dcs));
	dcs.env = env;
	dcs.n = env->nconn;
	dcs.dci = calloc(dcs.n, sizeof(*dcs.dci));
	dcs.ddci = calloc(dcs.n, sizeof(*dcs.ddci));
	if (!dcs.dci || !dcs.ddci)
		return -ENOMEM;
	for (unsigned p = 0; p < DC_PEERS; p++) {
		struct gdak_qp_info info;

		memset(&a, 0, sizeof(a));
		a.type = GDAK_QPT_DCT;
		a.dc_key = 0xd0c0 + p;
		a.nic_thread = (int)p;
		ret = gdak_qp_create(env->ctx, &a, &dcs.dct[p]);
		if (!ret)
			ret = gdak_qp_connect(dcs.dct[p], NULL);
		if (!ret)
			ret = gdak_qp_info(dcs.dct[p], &info);
		if (!ret)
			/* compact AVs, full ones on RoCE (emu:udp), where a
			 * compact one has nothing to route by */
			ret = gdak_dc_av(&info, info.transport != GDAK_QPI_UDP, &dcs.av[p]);
		if (ret)
			return ret;
	}
	for (unsigned k = 0; k < dcs.n; k++) {
		struct gdak_qp_attr req, tgt;

		perf_qp_attrs(o, k, &req, &tgt);
		req.type = GDAK_QPT_DCI;
		req.rq_depth = req.rcq_depth = req.rq_max_sge = 0;
		req.flags &= ~(unsigned)(GDAK_QP_F_RCQ_OVERRUN_IGNORE | GDAK_QP_F_RCQ_COLLAPSED);
		ret = gdak_qp_create(env->ctx, &req, &dcs.dci[k]);
		if (!ret)
			ret = gdak_qp_connect(dcs.dci[k], NULL);
		if (!ret)
			ret = gdak_qp_export(dcs.dci[k], &dcs.ddci[k]);
		if (ret)
			return ret;
	}
	perf_set_qps_open(perf_qps_open() + dcs.n + DC_PEERS);
	return 0;
}

static struct gdak_dev_sge src_sge(const struct perf_conn *c, size_t size, size_t slot)
{
	struct gdak_dev_sge s = { (uint64_t)(uintptr_t)(c->lbuf + slot * size), (uint32_t)size,
				  gdak_mr_lkey(c->lmr) };
	return s;
}

static int quiet_all(struct gdak_dev_qp **q, unsigned n, const char *what)
{
	for (unsigned k = 0; k < n; k++) {
		int rc = gdak_dev_quiet_timeout(q[k], WAIT_NS, NULL);

		if (rc) {
			fprintf(stderr, "gdak-perf: dc_put_bw: %s QP %u: %s\n", what, k,
				gdak_strerror(rc));
			return rc;
		}
	}
	return 0;
}

int perf_emu_dc(struct perf_env *env, const struct perf_opts *o, size_t size, uint64_t iters,
		struct perf_result *round)
{
	size_t slots = perf_region_slots(size);
	struct gdak_dev_qp **rcq;
	uint64_t t0, t1, t;
	int ret = dc_open(env, o);

	if (ret)
		return ret;
	rcq = calloc(env->nconn, sizeof(*rcq));
	if (!rcq)
		return -ENOMEM;
	for (unsigned k = 0; k < env->nconn; k++) {
		rcq[k] = env->conn[k].dqp;
		/* every source holds the same bytes: puts of several DCIs that
		 * meet in one target slot leave it checkable */
		perf_fill(env->conn[k].lbuf, slots * size, PERF_SEED(size));
		memset(env->conn[k].rbuf, 0, slots * size);
	}

	/* RC: the same puts, one peer per QP */
	t0 = perf_now_ns();
	for (uint64_t j = 0; j < iters && !ret; j++)
		for (unsigned k = 0; k < env->nconn && !ret; k++) {
			struct perf_conn *c = &env->conn[k];
			struct gdak_dev_sge s = src_sge(c, size, j % slots);

			ret = gdak_dev_put(c->dqp, &s, c->raddr + (j % slots) * size, c->rkey, 0,
					   &t);
		}
	if (!ret)
		ret = quiet_all(rcq, env->nconn, "RC");
	t1 = perf_now_ns();
	if (ret)
		goto out;
	round->rc_rate = (double)env->nconn * (double)iters / ((double)(t1 - t0) / 1e9);
	for (unsigned k = 0; k < env->nconn; k++)
		memset(env->conn[k].rbuf, 0, slots * size);

	/* DC: DCI k's put j to DCT (k + j) % 8, into that peer's region (the
	 * regions of the RC targets: the DCTs share their context, the PD) */
	t0 = perf_now_ns();
	for (uint64_t j = 0; j < iters && !ret; j++)
		for (unsigned k = 0; k < dcs.n && !ret; k++) {
			unsigned p = (unsigned)((k + j) % DC_PEERS);
			const struct perf_conn *tc = &env->conn[p % env->nconn];
			struct gdak_dev_sge s = src_sge(&env->conn[k], size, j % slots);

			ret = gdak_dev_dc_put(dcs.ddci[k], &dcs.av[p], &s,
					      tc->raddr + (j % slots) * size, tc->rkey, 0, &t);
		}
	if (!ret)
		ret = quiet_all(dcs.ddci, dcs.n, "DCI");
	t1 = perf_now_ns();
	if (ret)
		goto out;
	round->msg_rate = (double)dcs.n * (double)iters / ((double)(t1 - t0) / 1e9);
	round->bw = round->msg_rate * (double)size;
	if (perf_test_corrupt())
		env->conn[0].rbuf[(iters - 1) % slots * size] ^= 1;
	/* the last put's slot of every target region that was written */
	{
		size_t last = (size_t)((iters - 1) % slots);

		for (unsigned k = 0; k < dcs.n; k++) {
			unsigned p = (unsigned)((k + iters - 1) % DC_PEERS);
			const struct perf_conn *tc = &env->conn[p % env->nconn];

			if (memcmp(tc->rbuf + last * size, env->conn[k].lbuf + last * size, size)) {
				perf_verify_fail("dc_put_bw", size,
						 "DCT %u's region, slot %zu: "
						 "bytes differ from DCI %u's source",
						 p, last, k);
				ret = -EIO;
				break;
			}
		}
	}
out:
	free(rcq);
	return ret;
}
