/* SPDX-License-Identifier: MIT */
/*
 * demo.h - gdak-demo internals.
 *
 * The demo is gdak's main job in one program: device code (host threads
 * here; a CUDA kernel when a GPU is present and the CUDA path is built)
 * drives two connected QPs through the device API - put, get, fetch-add,
 * put+signal with the target waiting on the signal, send/recv - while the
 * emulated NIC executes them; every result is verified, a short table is
 * printed, and the trace the NIC wrote is shown decoded.
 */
#ifndef GDAK_DEMO_H
#define GDAK_DEMO_H

#include <stddef.h>
#include <stdint.h>

#include <gdak/gdak.h>
#include <gdak/dev/types.h>

enum demo_op { DEMO_PUT, DEMO_GET, DEMO_FADD, DEMO_PUT_SIGNAL, DEMO_SENDRECV, DEMO_NOPS };

/* Buffer layout: the same offsets in the initiator's buffer (A) and the
 * target's (B). */
enum {
	DEMO_PUT_OFF = 0, DEMO_PUT_LEN = 4096,
	DEMO_GET_OFF = 4096, DEMO_GET_LEN = 4096,
	DEMO_FADD_OFF = 8192,			 /* B: the counter; A: fetched values */
	DEMO_SIG_DATA_OFF = 12288, DEMO_SIG_DATA_LEN = 256,
	DEMO_SIG_OFF = 12288 + 256,		 /* B: the signal word */
	DEMO_SEND_OFF = 16384, DEMO_SEND_LEN = 64, /* A: source; B: receive slots */
	DEMO_BUF_LEN = 65536,
	DEMO_FADD_START = 1000,
};

struct demo_op_result {
	const char *name;
	uint32_t bytes;
	uint32_t iters;		/* completed */
	uint64_t ns_sum, ns_min, ns_max;
	int ok;			/* verified */
	char why[160];		/* what was checked, or what was wrong */
};

/* Everything the device code needs: descriptors and keys, no host API. */
struct demo_args {
	struct gdak_dev_qp *a, *b;	/* A posts; B is the target (and the receiver) */
	/* The context of a and b, or NULL: the CUDA path allocates its GPU
	 * buffers there (without it, it opens its own context and QP pair). */
	struct gdak_ctx *ctx;
	uint8_t *abuf, *bbuf;
	uint32_t alkey, arkey, blkey, brkey;
	uint32_t iters;
	uint64_t timeout_ns;		/* bound on every wait */
	struct demo_op_result res[DEMO_NOPS];
};

/* ---- demo_pair.c: the two connected QPs ------------------------------- */
/* What demo_pair_open makes, and the buffers and MRs the host path adds
 * (NULL where there are none). */
struct demo_pair {
	struct gdak_ctx *ctx;
	struct gdak_qp *qa, *qb;
	void *abuf, *bbuf;
	struct gdak_mr *amr, *bmr;
};
/* A context on device (NULL: gdak's default), QP A (SQ and CQ 64 deep) and
 * QP B (SQ 8, 64 receives) connected to each other, their descriptors in
 * *da and *db.  0, or the first failing call's -errno; what was made is in
 * p either way, for demo_pair_close. */
int demo_pair_open(struct demo_pair *p, const char *device, struct gdak_dev_qp **da,
		   struct gdak_dev_qp **db);
/* Destroys what p holds: MRs, QPs, buffers, then the context (that flushes
 * and closes the trace). */
void demo_pair_close(struct demo_pair *p);

/* ---- demo_device.c: the device code (host-thread build) ----------------- */
/* Runs every operation; fills a->res.  0, or the first failure's -errno. */
int demo_device_run(struct demo_args *a);

/* ---- demo_cuda*.c: the same device code as a CUDA kernel ----------------- */
/* 1 when this build has the CUDA path and a GPU answers; 0 with *why. */
int demo_cuda_available(const char **why);
int demo_cuda_run(struct demo_args *a);

/* ---- demo_show.c: output ----------------------------------------------- */
void demo_print_table(const struct demo_args *a, const char *device, const char *runner,
		      const char *trace);
/* Print the first `lines` decoded lines of the trace with gdak-trace. */
int demo_show_trace(const char *argv0, const char *trace, unsigned lines);

#endif /* GDAK_DEMO_H */
