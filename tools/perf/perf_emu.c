/* SPDX-License-Identifier: MIT */
/*
 * perf_emu.c - set-up for the tests through the real stack: gdak_open, one
 * loopback connection (requester QP + target QP) per measured QP, idle QPs
 * for the polling-cost measurement, and the registered buffer regions the
 * tests move data between.  The NIC model's knobs (threads, polling mode) go
 * through the environment variables gdak/nic.h documents, read at the first
 * gdak_open().
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <gdak/mlx5.h>

#include "perf.h"

static int set_nic_env(const struct perf_opts *o)
{
	char buf[16];

	if (o->nic_threads) {
		snprintf(buf, sizeof(buf), "%d", o->nic_threads);
		if (setenv("GDAK_NIC_THREADS", buf, 1))
			return -errno;
	}
	/* latency tests default to pure spinning (adaptive back-off would
	 * measure the NIC thread's sleep, not the path) unless $GDAK_POLL says
	 * otherwise; --poll always wins */
	if (o->poll == PERF_POLL_SPIN) {
		if (setenv("GDAK_POLL", "spin", 1))
			return -errno;
	} else if (o->poll == PERF_POLL_DEFAULT && o->test->kind == PERF_KIND_LAT) {
		if (setenv("GDAK_POLL", "spin", 0))
			return -errno;
	} else if (o->poll == PERF_POLL_ADAPTIVE) {
		if (setenv("GDAK_POLL", "adaptive", 1))
			return -errno;
	}
	return 0;
}

static int connect_pair(struct gdak_qp *a, struct gdak_qp *b)
{
	struct gdak_qp_info ia, ib;
	int ret;

	ret = gdak_qp_info(a, &ia);
	if (!ret)
		ret = gdak_qp_info(b, &ib);
	if (!ret)
		ret = gdak_qp_connect(a, &ib);
	if (!ret && a != b)
		ret = gdak_qp_connect(b, &ia);
	return ret;
}

void perf_qp_attrs(const struct perf_opts *o, unsigned i, struct gdak_qp_attr *req,
		   struct gdak_qp_attr *tgt)
{
	memset(req, 0, sizeof(*req));
	req->sq_depth = o->sq_depth;
	req->cq_depth = o->sq_depth;
	req->handler = o->handler;
	req->sharing = GDAK_DEV_EXCLUSIVE;
	req->nic_thread = (int)(i & 0xffff);
	*tgt = *req;
	tgt->sq_depth = 8;
	tgt->cq_depth = 8;
	if (o->test->id == PERF_SEND_BW) {
		tgt->rq_depth = o->sq_depth;
		tgt->rcq_depth = o->sq_depth;
	}
}

size_t perf_max_region(const struct perf_opts *o)
{
	size_t s, best = 0;

	for (s = o->size_min; s <= o->size_max; s *= 2)
		if (perf_region_slots(s) * s > best)
			best = perf_region_slots(s) * s;
	return best + 64;
}

static int open_conn(struct perf_env *env, const struct perf_opts *o, unsigned i)
{
	struct perf_conn *c = &env->conn[i];
	struct gdak_qp_attr req, tgt;
	int ret;

	perf_qp_attrs(o, i, &req, &tgt);
	ret = gdak_qp_create(env->ctx, &req, &c->qp);
	if (ret)
		return ret;
	env->qps_open++;
	ret = gdak_qp_create(env->ctx, &tgt, &c->peer);
	if (ret)
		return ret;
	env->qps_open++;
	ret = connect_pair(c->qp, c->peer);
	if (!ret)
		ret = gdak_qp_export(c->qp, &c->dqp);
	if (!ret)
		ret = gdak_qp_export(c->peer, &c->dpeer);
	return ret;
}

static int open_idle(struct perf_env *env, const struct perf_opts *o)
{
	struct gdak_qp_attr a = {
		.sq_depth = 8, .cq_depth = 8, .handler = o->handler, .nic_thread = -1,
	};
	unsigned i;
	int ret;

	env->idle = calloc(o->idle_qps + 1, sizeof(*env->idle));
	if (!env->idle)
		return -ENOMEM;
	for (i = 0; i < o->idle_qps; i++) {
		ret = gdak_qp_create(env->ctx, &a, &env->idle[i]);
		if (ret)
			return ret;
		env->nidle++;
		env->qps_open++;
		/* connected in pairs so the NIC serves them as it would live ones */
		if (i & 1) {
			ret = connect_pair(env->idle[i - 1], env->idle[i]);
			if (ret)
				return ret;
		}
	}
	if (o->idle_qps & 1)
		return connect_pair(env->idle[o->idle_qps - 1], env->idle[o->idle_qps - 1]);
	return 0;
}

int perf_env_open(const struct perf_opts *o, struct perf_env **envp)
{
	struct perf_env *env = calloc(1, sizeof(*env));
	unsigned i;
	int ret;

	if (!env)
		return -ENOMEM;
	ret = set_nic_env(o);
	if (!ret)
		ret = gdak_open(o->device, &env->ctx);
	if (ret) {
		free(env);
		return ret;
	}
	env->conn = calloc(o->qps, sizeof(*env->conn));
	if (!env->conn) {
		ret = -ENOMEM;
		goto fail;
	}
	if (o->server || o->peer_addr) {
		ret = perf_net_setup(env, o);
		if (ret)
			goto fail;
	}
	for (i = 0; i < o->qps && !env->bs; i++) {
		env->nconn++;
		ret = open_conn(env, o, i);
		if (ret)
			goto fail;
	}
	ret = open_idle(env, o);
	if (ret)
		goto fail;
	perf_set_qps_open(env->qps_open);
	*envp = env;
	return 0;
fail:
	perf_env_close(env);
	return ret;
}

static void free_regions(struct perf_env *env, struct perf_conn *c)
{
	if (c->lmr)
		gdak_mr_dereg(c->lmr);
	if (c->rmr)
		gdak_mr_dereg(c->rmr);
	if (c->lbuf)
		gdak_mem_free(env->ctx, c->lbuf);
	if (c->rbuf)
		gdak_mem_free(env->ctx, c->rbuf);
	c->lmr = c->rmr = NULL;
	c->lbuf = c->rbuf = NULL;
	c->region = 0;
}

/* len bytes of kind in *buf, registered for all access as *mr; *buf stays
 * NULL when the allocation fails, the buffer is kept when only the
 * registration does. */
static int region_make(struct perf_env *env, size_t len, enum gdak_mem_kind kind, void **buf,
		       struct gdak_mr **mr)
{
	int ret;

	*buf = NULL;
	ret = gdak_mem_alloc(env->ctx, len, kind, buf);
	if (ret)
		return ret;
	return gdak_mr_reg(env->ctx, *buf, len, GDAK_ACCESS_ALL, mr);
}

int perf_env_regions(struct perf_env *env, const struct perf_opts *o, size_t region)
{
	unsigned i;
	int ret;

	for (i = 0; i < env->nconn; i++) {
		struct perf_conn *c = &env->conn[i];
		void *l, *r;

		if (c->region >= region)
			continue;
		free_regions(env, c);
		ret = region_make(env, region, o->mem, &l, &c->lmr);
		c->lbuf = l;
		if (ret)
			return ret;
		c->region = region;
		if (env->bs) {
			/* the target region is the server's */
			if (region > env->peer_region) {
				fprintf(stderr, "gdak-perf: the server's regions hold %zu bytes, this "
					"size needs %zu\n", env->peer_region, region);
				return -ERANGE;
			}
			continue;
		}
		ret = region_make(env, region, o->mem, &r, &c->rmr);
		c->rbuf = r;
		if (ret)
			return ret;
		c->raddr = (uint64_t)(uintptr_t)c->rbuf;
		c->rkey = gdak_mr_rkey(c->rmr);
	}
	return 0;
}

void perf_env_close(struct perf_env *env)
{
	unsigned i;

	if (!env)
		return;
	perf_emu_dc_close(env);
	if (env->bs)
		perf_net_close(env, !env->server);
	for (i = 0; i < env->nconn; i++) {
		struct perf_conn *c = &env->conn[i];

		if (c->qp)
			gdak_qp_destroy(c->qp);
		if (c->peer)
			gdak_qp_destroy(c->peer);
		free_regions(env, c);
	}
	for (i = 0; i < env->nidle; i++)
		gdak_qp_destroy(env->idle[i]);
	free(env->idle);
	free(env->conn);
	if (env->ctx)
		gdak_close(env->ctx);
	free(env);
}

void perf_report_qp_error(const char *test, struct perf_conn *c, int rc)
{
	struct gdak_qp_error e;

	fprintf(stderr, "gdak-perf: %s: QP 0x%x failed: %s\n", test, c->dqp ? c->dqp->qpn : 0,
		gdak_strerror(rc));
	if (c->qp && !gdak_qp_query_error(c->qp, &e))
		fprintf(stderr, "gdak-perf:   state %s, syndrome 0x%02x (%s), WQE %u (%s)%s%s: %s\n",
			gdak_qp_state_name(e.state), e.syndrome,
			gdak_mlx5_syndrome_name(e.syndrome), e.wqe_index,
			gdak_mlx5_opcode_name(e.opcode), e.rule[0] ? ", rule " : "", e.rule, e.text);
}

int perf_emu_test(void *envp, const struct perf_opts *o, size_t size, uint64_t iters,
		  struct perf_result *round, double *lat_ns)
{
	struct perf_env *env = envp;
	size_t region = perf_region_slots(size) * size;
	int ret;

	/* + 64: room for put_signal_lat's signal word after the data slots */
	ret = perf_env_regions(env, o, region + 64);
	if (!ret && env->bs)
		ret = perf_net_round(env, o, size, iters);
	if (ret)
		return ret;
	if (o->test->kind == PERF_KIND_LAT)
		return perf_emu_lat(env, o, size, iters, lat_ns);
	if (o->test->id == PERF_DC_PUT_BW)
		return perf_emu_dc(env, o, size, iters, round);
	return perf_emu_rate(env, o, size, iters, round);
}
