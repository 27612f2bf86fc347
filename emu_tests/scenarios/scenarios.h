/* SPDX-License-Identifier: MIT */
/*
 * scenarios.h - the scenario library: end-to-end RDMA scenarios written once
 * and run against any device string ("emu" in gdak.emu.scenarios, "mlx5_0"
 * in gdak.hw.scenarios), so the emulated NIC and a real ConnectX are held to
 * the same expectations.
 *
 * A scenario uses only the public host API (<gdak/gdak.h>) and the device API
 * (<gdak/dev/dev.h>); host threads play the device.  Each opens its own
 * context and a pair of connected RC QPs (both on one context: loopback on
 * the emulator, port loopback on a ConnectX), so an error scenario that
 * breaks its QPs cannot disturb the next one.  Results are checked with
 * gdak_test.h's CHECK macros: bytes, CQE opcodes, immediates, byte counts,
 * syndromes and QP states.
 */
#ifndef GDAK_SCENARIOS_H
#define GDAK_SCENARIOS_H

#include <stddef.h>
#include <stdint.h>

#include <gdak/gdak.h>
#include <gdak/dev/dev.h>

struct gdak_scen_cfg {
	const char *device;		/* gdak_open() device string */
	enum gdak_dev_db_handler handler; /* asked for; the backend may substitute */
	unsigned qp_flags;		/* GDAK_QP_F_* */
	uint64_t timeout_ns;		/* hang guard for every wait, not a timing check */
};

struct gdak_scenario {
	const char *name;
	/* 0 when it ran (failures are counted by CHECK), 77 when it does not
	 * apply to this configuration */
	int (*run)(const struct gdak_scen_cfg *cfg);
	/* 1: also run with the BF and CPU_PROXY doorbell handlers */
	int all_handlers;
	/* 1: run only when the filter names it (a suite of its own, e.g. dc) */
	int on_request;
};

/* The scenarios, *n of them. */
const struct gdak_scenario *gdak_scenarios(size_t *n);

/*
 * Run every scenario whose name contains filter (NULL or "" = all) against
 * device: each once with the DB handler, the all_handlers ones also with BF
 * and CPU_PROXY.  Prints one line per run.  Returns the number of scenario
 * runs that failed a check.  $GDAK_SCEN_TIMEOUT_MS overrides the hang guard
 * (default 20000 ms), $GDAK_SCEN_FILTER the filter.  A filter that matches
 * no scenario fails a check, so a misspelt suite cannot pass empty.
 */
int gdak_scen_run(const char *device, const char *filter);

/* ---- internal to the library (scen_env.c) ---------------------------------- */

#define SCEN_BUF_LEN 16384u

/* Two connected RC QPs on one context; qp[0] initiates, qp[1] is the target.
 * buf[i] is registered with every access right as mr[i]. */
struct scen_pair {
	struct gdak_ctx *ctx;
	struct gdak_qp *qp[2];
	struct gdak_dev_qp *dq[2];
	uint8_t *buf[2];
	struct gdak_mr *mr[2];
	const struct gdak_scen_cfg *cfg;
};

/* rq_depth: receive WQEs on each QP (0 = none).  0, or a negative errno
 * after a failed check (the reason is printed) with the pair closed. */
int scen_pair_open(const struct gdak_scen_cfg *cfg, struct scen_pair *p, uint32_t rq_depth);
/* The same with a sharing mode and SQ depth of one's choice. */
int scen_pair_open_ex(const struct gdak_scen_cfg *cfg, struct scen_pair *p, uint32_t rq_depth,
		      enum gdak_dev_sharing sharing, uint32_t sq_depth);
void scen_pair_close(struct scen_pair *p);

/* Device code of a scenario: the pair, its initiating QP (p->dq[0]), the
 * scenario's own job. */
typedef void scen_dev_fn(struct scen_pair *p, struct gdak_dev_qp *q, void *job);
/* The target watching its memory while the device code runs. */
typedef void scen_watch_fn(struct scen_pair *p, void *job);

/* Run fn(p, p->dq[0], job) on a fresh host thread (the "device") and wait
 * for it. */
void scen_on_device(struct scen_pair *p, scen_dev_fn *fn, void *job);
/* The same with watch(p, job) on a thread of its own meanwhile (after fn
 * when no thread is to be had); returns when both are done. */
void scen_on_device_watched(struct scen_pair *p, scen_dev_fn *fn, scen_watch_fn *watch, void *job);

/* Device side: reserve nbb WQEBBs, or -1 when the ring is full. */
int64_t scen_reserve(struct gdak_dev_qp *q, uint32_t nbb);
/* Device side: submit [first, end) (last WQE at last) and wait until it
 * completed; 0, or the negative code with the error CQE in *err. */
int scen_submit_wait(struct scen_pair *p, struct gdak_dev_qp *q, uint64_t last, uint64_t end,
		     struct gdak_dev_cqe *err);
/*
 * 1 when several WQEs may share one doorbell.  Under the BF handler the
 * device API rings batches with the 8-byte doorbell form, which ConnectX
 * and the NIC model both accept; $GDAK_SCEN_BF_BATCH=0 makes BF runs ring
 * once per WQE instead (to bisect a BlueFlame problem on hardware).
 */
int scen_batch_ok(const struct gdak_dev_qp *q);
/* Device side: post one receive WQE (one SGE) through gdak_dev_recv_post. */
void scen_rq_post(struct gdak_dev_qp *q, uint64_t addr, uint32_t len, uint32_t lkey);
/* Device side: wait for one receive completion; 1, -EIO, or -ETIMEDOUT. */
int scen_rq_poll(struct scen_pair *p, struct gdak_dev_qp *q, struct gdak_dev_cqe *c);

/* The scenarios (scen_rma.c, scen_atomic.c, scen_twosided.c, scen_errors.c). */
int scen_write(const struct gdak_scen_cfg *cfg);
int scen_write_inline(const struct gdak_scen_cfg *cfg);
int scen_read(const struct gdak_scen_cfg *cfg);
int scen_write_imm(const struct gdak_scen_cfg *cfg);
int scen_put_signal(const struct gdak_scen_cfg *cfg);
int scen_fetch_add(const struct gdak_scen_cfg *cfg);
int scen_compare_swap(const struct gdak_scen_cfg *cfg);
int scen_send_recv(const struct gdak_scen_cfg *cfg);
int scen_bad_rkey(const struct gdak_scen_cfg *cfg);
/* The high-level device API (gdak/dev/rma.h) (scen_hl.c). */
int scen_hl_put_get(const struct gdak_scen_cfg *cfg);
int scen_hl_put_signal(const struct gdak_scen_cfg *cfg);
int scen_hl_atomics(const struct gdak_scen_cfg *cfg);
int scen_hl_shared(const struct gdak_scen_cfg *cfg);
/* The DC transport: DCIs, DCTs, address vectors (scen_dc.c). */
int scen_dc(const struct gdak_scen_cfg *cfg);

#endif /* GDAK_SCENARIOS_H */
