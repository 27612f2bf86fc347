/* SPDX-License-Identifier: MIT */
/*
 * scen_env.c - what every scenario needs: a context with two connected RC
 * QPs and registered buffers, a host thread to play the device, and the
 * device-side posting, waiting and receive helpers.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gdak_test.h"
#include "scenarios.h"

int scen_pair_open(const struct gdak_scen_cfg *cfg, struct scen_pair *p, uint32_t rq_depth)
{
	return scen_pair_open_ex(cfg, p, rq_depth, GDAK_DEV_EXCLUSIVE, 64);
}

static int pair_open(const struct gdak_scen_cfg *cfg, struct scen_pair *p, uint32_t rq_depth,
		     enum gdak_dev_sharing sharing, uint32_t sq_depth)
{
	struct gdak_qp_attr a;
	struct gdak_qp_info info[2];
	int ret;

	memset(p, 0, sizeof(*p));
	p->cfg = cfg;
	ret = gdak_open(cfg->device, &p->ctx);
	if (ret) {
		fprintf(stderr, "scenario: gdak_open(%s): %s\n", cfg->device, gdak_strerror(ret));
		return ret;
	}
	memset(&a, 0, sizeof(a));
	a.sq_depth = sq_depth;
	a.cq_depth = sq_depth;
	a.rq_depth = rq_depth;
	a.rq_max_sge = 1;
	a.handler = cfg->handler;
	a.sharing = sharing;
	a.mtu = 1024;
	a.nic_thread = -1;
	a.flags = cfg->qp_flags;
	for (int i = 0; i < 2; i++) {
		ret = gdak_mem_alloc(p->ctx, SCEN_BUF_LEN, GDAK_MEM_HOST, (void **)&p->buf[i]);
		if (!ret) {
			/* gdak_mem_alloc does not promise zeroed memory */
			memset(p->buf[i], 0, SCEN_BUF_LEN);
			ret = gdak_mr_reg(p->ctx, p->buf[i], SCEN_BUF_LEN, GDAK_ACCESS_ALL, &p->mr[i]);
		}
		if (!ret)
			ret = gdak_qp_create(p->ctx, &a, &p->qp[i]);
		if (!ret)
			ret = gdak_qp_info(p->qp[i], &info[i]);
		if (ret) {
			fprintf(stderr, "scenario: setting up QP %d: %s\n", i, gdak_strerror(ret));
			return ret;
		}
	}
	for (int i = 0; i < 2; i++) {
		ret = gdak_qp_connect(p->qp[i], &info[1 - i]);
		if (!ret)
			ret = gdak_qp_export(p->qp[i], &p->dq[i]);
		if (ret) {
			fprintf(stderr, "scenario: connecting QP %d: %s\n", i, gdak_strerror(ret));
			return ret;
		}
		if (gdak_qp_state(p->qp[i]) != GDAK_QPS_RTS) {
			fprintf(stderr, "scenario: QP %d in %s after connect\n", i,
				gdak_qp_state_name(gdak_qp_state(p->qp[i])));
			return -EPROTO;
		}
	}
	return 0;
}

int scen_pair_open_ex(const struct gdak_scen_cfg *cfg, struct scen_pair *p, uint32_t rq_depth,
		      enum gdak_dev_sharing sharing, uint32_t sq_depth)
{
	int ret = pair_open(cfg, p, rq_depth, sharing, sq_depth);

	if (ret) {
		CHECK(!"pair setup");
		scen_pair_close(p);
	}
	return ret;
}

void scen_pair_close(struct scen_pair *p)
{
	for (int i = 0; i < 2; i++) {
		if (p->qp[i])
			gdak_qp_destroy(p->qp[i]);
		if (p->mr[i])
			gdak_mr_dereg(p->mr[i]);
		if (p->buf[i])
			gdak_mem_free(p->ctx, p->buf[i]);
	}
	if (p->ctx)
		gdak_close(p->ctx);
	memset(p, 0, sizeof(*p));
}

struct scen_call {
	struct scen_pair *p;
	scen_dev_fn *fn;
	scen_watch_fn *watch;
	void *job;
};

static void *call_dev(void *arg)
{
	struct scen_call *c = arg;

	c->fn(c->p, c->p->dq[0], c->job);
	return NULL;
}

static void *call_watch(void *arg)
{
	struct scen_call *c = arg;

	c->watch(c->p, c->job);
	return NULL;
}

void scen_on_device(struct scen_pair *p, scen_dev_fn *fn, void *job)
{
	struct scen_call c = { .p = p, .fn = fn, .job = job };
	pthread_t t;

	if (pthread_create(&t, NULL, call_dev, &c)) {
		/* no thread to spare: the calling thread plays the device */
		call_dev(&c);
		return;
	}
	pthread_join(t, NULL);
}

void scen_on_device_watched(struct scen_pair *p, scen_dev_fn *fn, scen_watch_fn *watch, void *job)
{
	struct scen_call c = { .p = p, .watch = watch, .job = job };
	pthread_t w;
	int have_w = !pthread_create(&w, NULL, call_watch, &c);

	scen_on_device(p, fn, job);
	if (have_w)
		pthread_join(w, NULL);
	else
		call_watch(&c);
}

int64_t scen_reserve(struct gdak_dev_qp *q, uint32_t nbb)
{
	if (gdak_dev_sq_free_bbs(q) < nbb)
		return -1;
	return (int64_t)gdak_dev_sq_reserve(q, nbb);
}

int scen_batch_ok(const struct gdak_dev_qp *q)
{
	const char *env = getenv("GDAK_SCEN_BF_BATCH");
	return q->handler != GDAK_DEV_DB_BF || !env || *env != '0';
}

int scen_submit_wait(struct scen_pair *p, struct gdak_dev_qp *q, uint64_t last, uint64_t end,
		     struct gdak_dev_cqe *err)
{
	gdak_dev_sq_submit(q, last, end);
	return gdak_dev_sq_wait_timeout(q, end, p->cfg->timeout_ns, err);
}

/* The device API's receive side (gdak/dev/recv.h), with the scenarios'
 * hang guard. */
void scen_rq_post(struct gdak_dev_qp *q, uint64_t addr, uint32_t len, uint32_t lkey)
{
	struct gdak_dev_sge sge = {addr, len, lkey};

	if (gdak_dev_recv_post(q, &sge, 1))
		CHECK(!"gdak_dev_recv_post");
}

int scen_rq_poll(struct scen_pair *p, struct gdak_dev_qp *q, struct gdak_dev_cqe *c)
{
	int rc = gdak_dev_recv_wait_timeout(q, c, p->cfg->timeout_ns);

	return rc ? rc : 1;
}
