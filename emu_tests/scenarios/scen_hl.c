/* SPDX-License-Identifier: MIT */
/*
 * scen_hl.c - the high-level device API (gdak/dev/rma.h) end to end: put,
 * put of an inline value, get, tickets and quiet; put+signal watched by the
 * target; blocking atomics; and a SHARED QP posted to by several host
 * threads at once through a small ring (so posters wait for room and take
 * turns at the doorbell).
 */
#include <errno.h>
#include <pthread.h>
#include <string.h>

#include "gdak_test.h"
#include "scenarios.h"

static uint64_t addr_of(const void *p) { return (uint64_t)(uintptr_t)p; }

#define OPEN_OR_RETURN(cfg, p, rq, sharing, depth)                           \
	do {                                                                 \
		if (scen_pair_open_ex((cfg), (p), (rq), (sharing), (depth))) \
			return 0;                                            \
		(p)->dq[0]->wait_timeout_ns = (cfg)->timeout_ns;             \
	} while (0)

/* ---- put, put_value, put_inline, get, wait, quiet ----------------------------------- */

struct pg_job {
	int rc[5];
	uint64_t t_put;
	struct gdak_dev_cqe err;
};

static void pg_dev(struct scen_pair *p, struct gdak_dev_qp *q, void *arg)
{
	struct pg_job *j = arg;
	uint32_t lkey = gdak_mr_lkey(p->mr[0]), rkey = gdak_mr_rkey(p->mr[1]);
	struct gdak_dev_sge src = {addr_of(p->buf[0]), 4096, lkey};
	struct gdak_dev_sge dst = {addr_of(p->buf[0]) + 12288, 1024, lkey};
	uint64_t t;

	j->rc[0] = gdak_dev_put(q, &src, addr_of(p->buf[1]), rkey, 0, &j->t_put);
	j->rc[1] = gdak_dev_put_value(q, 0x1122334455667788ull, 8, addr_of(p->buf[1]) + 8192, rkey,
				      0, &t);
	j->rc[2] = gdak_dev_put_inline(q, p->buf[0] + 5000, 20, addr_of(p->buf[1]) + 5000, rkey, 0,
				       &t);
	/* a READ after WRITEs on one RC QP sees them (IBA 9.5: in order) */
	j->rc[3] = gdak_dev_get(q, &dst, addr_of(p->buf[1]), rkey, 0, &t);
	if (!j->rc[3])
		j->rc[3] = gdak_dev_wait_timeout(q, t, p->cfg->timeout_ns, &j->err);
	j->rc[4] = gdak_dev_quiet_timeout(q, p->cfg->timeout_ns, &j->err);
}

int scen_hl_put_get(const struct gdak_scen_cfg *cfg)
{
	struct scen_pair p;
	struct pg_job j = { .rc = { -1, -1, -1, -1, -1 } };
	uint64_t v;

	OPEN_OR_RETURN(cfg, &p, 0, GDAK_DEV_EXCLUSIVE, 64);
	gdak_test_fill(p.buf[0], 8192, 8);
	scen_on_device(&p, pg_dev, &j);
	for (int i = 0; i < 5; i++)
		CHECK_EQ(j.rc[i], 0);
	CHECK(j.t_put >= 1);
	CHECK_MEM(p.buf[1], p.buf[0], 4096);
	memcpy(&v, p.buf[1] + 8192, 8);
	CHECK_EQ(v, 0x1122334455667788ull);
	CHECK_MEM(p.buf[1] + 5000, p.buf[0] + 5000, 20);
	CHECK_MEM(p.buf[0] + 12288, p.buf[0], 1024);	/* read back what was put */
	CHECK_EQ(p.dq[0]->sq_done, p.dq[0]->sq_ready);
	scen_pair_close(&p);
	return 0;
}

/* ---- put+signal ------------------------------------------------------------------------ */

#define HL_SIG_OFF 12288u
#define HL_SCRATCH_OFF 12288u	/* in the initiator's buffer */

struct hs_job {
	int rc[3];
	int wrc[2];
	int data_ok[2];
	uint64_t seen[2];
	struct gdak_dev_cqe err;
};

static void hs_dev(struct scen_pair *p, struct gdak_dev_qp *q, void *arg)
{
	struct hs_job *j = arg;
	uint32_t lkey = gdak_mr_lkey(p->mr[0]), rkey = gdak_mr_rkey(p->mr[1]);
	uint64_t t;

	/* two rounds: region k, then the signal goes to k + 1 */
	for (uint32_t k = 0; k < 2; k++) {
		struct gdak_dev_sge src = {addr_of(p->buf[0]) + 4096u * k, 3000, lkey};
		j->rc[k] = gdak_dev_put_signal(q, &src, addr_of(p->buf[1]) + 4096u * k, rkey,
					       addr_of(p->buf[1]) + HL_SIG_OFF, rkey, 1,
					       GDAK_DEV_WQE_SIGNAL, &t);
		if (j->rc[k])
			return;
	}
	j->rc[2] = gdak_dev_quiet_timeout(q, p->cfg->timeout_ns, &j->err);
}

static void hs_watch(struct scen_pair *p, void *arg)
{
	struct hs_job *j = arg;
	const uint64_t *sig = (const uint64_t *)(const void *)(p->buf[1] + HL_SIG_OFF);

	for (uint32_t k = 0; k < 2; k++) {
		j->wrc[k] = gdak_dev_signal_wait_timeout(sig, GDAK_DEV_CMP_GE, k + 1,
							 p->cfg->timeout_ns, &j->seen[k]);
		/* every region whose signal arrived must be complete */
		j->data_ok[k] = !j->wrc[k] &&
				!memcmp(p->buf[1] + 4096u * k, p->buf[0] + 4096u * k, 3000);
	}
}

int scen_hl_put_signal(const struct gdak_scen_cfg *cfg)
{
	struct scen_pair p;
	struct hs_job j = { .rc = { -1, -1, -1 }, .wrc = { -1, -1 } };
	uint64_t sig;

	OPEN_OR_RETURN(cfg, &p, 0, GDAK_DEV_EXCLUSIVE, 64);
	if (!scen_batch_ok(p.dq[0])) {
		/* put+signal is two WQEs under one doorbell: see scen_batch_ok */
		scen_pair_close(&p);
		return 77;
	}
	if (!p.dq[0]->scratch_addr) {
		/* the host fills it (gdak/dev/types.h); a backend that does not
		 * leaves it to the application, which is us */
		printf("note: %s left scratch_addr unset; the scenario supplies one\n",
		       cfg->device);
		p.dq[0]->scratch_addr = addr_of(p.buf[0]) + HL_SCRATCH_OFF;
		p.dq[0]->scratch_lkey = gdak_mr_lkey(p.mr[0]);
	}
	gdak_test_fill(p.buf[0], 8192, 9);
	scen_on_device_watched(&p, hs_dev, hs_watch, &j);
	for (int k = 0; k < 3; k++)
		CHECK_EQ(j.rc[k], 0);
	for (int k = 0; k < 2; k++) {
		CHECK_EQ(j.wrc[k], 0);
		CHECK(j.data_ok[k]);
	}
	memcpy(&sig, p.buf[1] + HL_SIG_OFF, 8);
	CHECK_EQ(sig, 2);
	scen_pair_close(&p);
	return 0;
}

/* ---- blocking atomics ------------------------------------------------------------------- */

struct ha_job {
	int rc[3];
	uint64_t old[3];
};

static void ha_dev(struct scen_pair *p, struct gdak_dev_qp *q, void *arg)
{
	struct ha_job *j = arg;
	uint32_t lkey = gdak_mr_lkey(p->mr[0]), rkey = gdak_mr_rkey(p->mr[1]);
	uint64_t raddr = addr_of(p->buf[1]) + 8192;
	uint64_t *result = (uint64_t *)(void *)(p->buf[0] + 8192);
	uint64_t to = p->cfg->timeout_ns;

	j->rc[0] = gdak_dev_fetch_add_timeout(q, raddr, rkey, 5, result, lkey, &j->old[0], to, NULL);
	j->rc[1] = gdak_dev_compare_swap_timeout(q, raddr, rkey, 105, 77, result, lkey, &j->old[1],
						 to, NULL);
	j->rc[2] = gdak_dev_compare_swap_timeout(q, raddr, rkey, 105, 99, result, lkey, &j->old[2],
						 to, NULL);
}

int scen_hl_atomics(const struct gdak_scen_cfg *cfg)
{
	struct scen_pair p;
	struct ha_job j = { .rc = { -1, -1, -1 } };
	uint64_t v = 100;

	OPEN_OR_RETURN(cfg, &p, 0, GDAK_DEV_EXCLUSIVE, 64);
	memcpy(p.buf[1] + 8192, &v, 8);
	scen_on_device(&p, ha_dev, &j);
	for (int i = 0; i < 3; i++)
		CHECK_EQ(j.rc[i], 0);
	CHECK_EQ(j.old[0], 100);	/* in host order: the API swaps the reply */
	CHECK_EQ(j.old[1], 105);	/* hit */
	CHECK_EQ(j.old[2], 77);		/* miss */
	memcpy(&v, p.buf[1] + 8192, 8);
	CHECK_EQ(v, 77);
	scen_pair_close(&p);
	return 0;
}

/* ---- SHARED QP, several posters ----------------------------------------------------------- */

#define SH_THREADS 4
#define SH_PUTS 64
#define SH_LEN 64u	/* SH_THREADS * SH_PUTS * SH_LEN == SCEN_BUF_LEN */

struct sh_poster {
	struct scen_pair *p;
	uint32_t t;
	int rc;
	struct gdak_dev_cqe err;
};

static void *sh_post(void *arg)
{
	struct sh_poster *s = arg;
	struct scen_pair *p = s->p;
	struct gdak_dev_qp *q = p->dq[0];
	uint32_t lkey = gdak_mr_lkey(p->mr[0]), rkey = gdak_mr_rkey(p->mr[1]);

	for (uint32_t i = 0; i < SH_PUTS && !s->rc; i++) {
		uint64_t off = (uint64_t)(s->t * SH_PUTS + i) * SH_LEN;
		struct gdak_dev_sge src = {addr_of(p->buf[0]) + off, SH_LEN, lkey};
		uint64_t t;
		s->rc = gdak_dev_put(q, &src, addr_of(p->buf[1]) + off, rkey,
				     (i % 16 == 15) ? GDAK_DEV_WQE_SIGNAL : 0, &t);
	}
	if (!s->rc)
		s->rc = gdak_dev_quiet_timeout(q, p->cfg->timeout_ns, &s->err);
	return NULL;
}

int scen_hl_shared(const struct gdak_scen_cfg *cfg)
{
	struct scen_pair p;
	struct sh_poster s[SH_THREADS];
	pthread_t th[SH_THREADS];
	int started[SH_THREADS];

	/* 16 WQEBBs asked for: posters must wait for room and for their turn */
	OPEN_OR_RETURN(cfg, &p, 0, GDAK_DEV_SHARED, 16);
	gdak_test_fill(p.buf[0], SCEN_BUF_LEN, 10);
	for (uint32_t t = 0; t < SH_THREADS; t++) {
		s[t] = (struct sh_poster){ .p = &p, .t = t, .rc = 0 };
		started[t] = !pthread_create(&th[t], NULL, sh_post, &s[t]);
		if (!started[t])
			sh_post(&s[t]);
	}
	for (uint32_t t = 0; t < SH_THREADS; t++) {
		if (started[t])
			pthread_join(th[t], NULL);
		CHECK_EQ(s[t].rc, 0);
	}
	CHECK_MEM(p.buf[1], p.buf[0], SCEN_BUF_LEN);
	CHECK_EQ(p.dq[0]->sq_done, p.dq[0]->sq_ready);
	CHECK_EQ(p.dq[0]->sq_ready, p.dq[0]->sq_resv);
	scen_pair_close(&p);
	return 0;
}
