/* SPDX-License-Identifier: MIT */
/* nm_api.c - gdak_nic_*: settings, environment, counters. */
#include <errno.h>
#include <stdlib.h>
#include <strings.h>

#include <gdak/env.h>

#include "nm_loc.h"

struct nm_config nm_cfg = {.strict = 1, .poll = GDAK_NIC_POLL_ADAPTIVE, .threads = 1,
			   .rnr_timeout_ms = 1000};

static pthread_once_t env_once = PTHREAD_ONCE_INIT;
static int env_trace_ret; /* GDAK_TRACE could not be opened: gdak_open fails */
static pthread_mutex_t api_lock = PTHREAD_MUTEX_INITIALIZER;
static struct gdak_nic_stats retired;

/* A bad value keeps the built-in setting; the table has logged it, and
 * gdak_open() refuses to open a context under it (gdak_env_validate). */
static void env_init(void)
{
	unsigned long long n;
	const char *s;
	int v;

	if (gdak_env_uint("GDAK_NIC_THREADS", &n) == 0)
		atomic_store(&nm_cfg.threads, (unsigned)n);
	if (gdak_env_bool("GDAK_STRICT", &v) == 0)
		atomic_store(&nm_cfg.strict, v);
	/* choices "adaptive|spin" */
	if (gdak_env_choice("GDAK_POLL", &v) == 0)
		atomic_store(&nm_cfg.poll, v ? GDAK_NIC_POLL_SPIN : GDAK_NIC_POLL_ADAPTIVE);
	if (gdak_env_uint("GDAK_RNR_TIMEOUT_MS", &n) == 0)
		atomic_store(&nm_cfg.rnr_timeout_ms, (uint32_t)n);
	if ((s = gdak_env_raw("GDAK_FAULTS")))
		nm_fault_env(s); /* logs what is wrong; gdak_open then fails */
	if ((s = gdak_env_raw("GDAK_TRACE")))
		env_trace_ret = gdak_nic_set_trace(s); /* logs why; gdak_open then fails */
}

int nm_config_env_check(void)
{
	const char *s = gdak_env_raw("GDAK_TRACE");

	if (env_trace_ret) {
		GDAK_ERR("nic", 0,
			 "GDAK_TRACE='%s' cannot be written (%s): not opening without the "
			 "trace asked for",
			 s ? s : "", strerror(-env_trace_ret));
		return env_trace_ret;
	}
	return nm_fault_env_check();
}

void nm_config_init_env(void) { pthread_once(&env_once, env_init); }

int gdak_nic_set_threads(unsigned n)
{
	if (n < 1 || n > 64) {
		GDAK_ERR("nic", 0, "%u NIC threads: must be 1..64", n);
		return -EINVAL;
	}
	nm_config_init_env();
	if (nm_engine_nthreads()) {
		GDAK_ERR("nic", 0, "NIC threads are running: close every emu context first");
		return -EBUSY;
	}
	atomic_store(&nm_cfg.threads, n);
	return 0;
}

unsigned gdak_nic_get_threads(void)
{
	unsigned n = nm_engine_nthreads();
	nm_config_init_env();
	return n ? n : atomic_load(&nm_cfg.threads);
}

int gdak_nic_set_strict(int on)
{
	nm_config_init_env();
	atomic_store(&nm_cfg.strict, !!on);
	return 0;
}

int gdak_nic_get_strict(void)
{
	nm_config_init_env();
	return nm_strict();
}

int gdak_nic_set_poll(enum gdak_nic_poll mode)
{
	if (mode != GDAK_NIC_POLL_ADAPTIVE && mode != GDAK_NIC_POLL_SPIN) {
		GDAK_ERR("nic", 0, "unknown polling mode %d", (int)mode);
		return -EINVAL;
	}
	nm_config_init_env();
	atomic_store(&nm_cfg.poll, (int)mode);
	return 0;
}

enum gdak_nic_poll gdak_nic_get_poll(void)
{
	nm_config_init_env();
	return (enum gdak_nic_poll)atomic_load(&nm_cfg.poll);
}

int gdak_nic_set_rnr_timeout_ms(uint32_t ms)
{
	nm_config_init_env();
	atomic_store(&nm_cfg.rnr_timeout_ms, ms);
	return 0;
}

int gdak_nic_set_faults(const char *spec)
{
	nm_config_init_env();
	return nm_fault_parse(spec ? spec : "");
}

#ifdef NM_HAVE_TRACE
static void trace_atexit(void);
#endif

int gdak_nic_set_trace(const char *path)
{
#ifdef NM_HAVE_TRACE
	struct gdak_trace *old, *t = NULL;
	int ret;

	if (path && *path) {
		ret = gdak_trace_open(path, &t);
		if (ret) {
			GDAK_ERR("nic", 0, "cannot open trace '%s': %s", path, strerror(-ret));
			return ret;
		}
	}
	pthread_mutex_lock(&api_lock);
	old = atomic_exchange(&nm_cfg.trace, t);
	{
		static int registered;
		if (t && !registered) {
			registered = 1;
			atexit(trace_atexit);
		}
	}
	pthread_mutex_unlock(&api_lock);
	if (old) {
		/* NIC threads may be writing through their buffers of old */
		nm_engine_sync();
		gdak_trace_close(old);
	}
	return 0;
#else
	GDAK_ERR("nic", 0, "this build has no trace writer (core/trace)");
	return -ENOTSUP;
#endif
}

/* Engine stopped: its threads are gone, so their buffers can be flushed
 * from here.  The trace stays open for a later session of the process and
 * is closed at exit (or by gdak_nic_set_trace(NULL)). */
void nm_trace_engine_stopped(void)
{
#ifdef NM_HAVE_TRACE
	struct gdak_trace *t = atomic_load(&nm_cfg.trace);
	if (t)
		gdak_trace_flush(t);
#endif
}

#ifdef NM_HAVE_TRACE
static void trace_atexit(void)
{
	/* with NIC threads still running (a context never closed) only flush */
	if (nm_engine_nthreads()) {
		struct gdak_trace *t = atomic_load(&nm_cfg.trace);
		if (t)
			gdak_trace_flush(t);
		return;
	}
	gdak_nic_set_trace(NULL);
}
#endif

static void add(struct gdak_nic_stats *d, const struct gdak_nic_stats *s)
{
	d->wqes += __atomic_load_n(&s->wqes, __ATOMIC_RELAXED);
	d->bytes += __atomic_load_n(&s->bytes, __ATOMIC_RELAXED);
	d->cqes += __atomic_load_n(&s->cqes, __ATOMIC_RELAXED);
	d->errors += __atomic_load_n(&s->errors, __ATOMIC_RELAXED);
	d->flushed += __atomic_load_n(&s->flushed, __ATOMIC_RELAXED);
	d->violations += __atomic_load_n(&s->violations, __ATOMIC_RELAXED);
	d->doorbells += __atomic_load_n(&s->doorbells, __ATOMIC_RELAXED);
	d->recvs += __atomic_load_n(&s->recvs, __ATOMIC_RELAXED);
	d->rnr += __atomic_load_n(&s->rnr, __ATOMIC_RELAXED);
	d->foreign += __atomic_load_n(&s->foreign, __ATOMIC_RELAXED);
}

void nm_stats_retire(const struct gdak_nic_stats *st)
{
	pthread_mutex_lock(&api_lock);
	add(&retired, st);
	pthread_mutex_unlock(&api_lock);
}

int gdak_nic_qp_stats(struct gdak_qp *qp, struct gdak_nic_stats *st)
{
	if (!qp || !st)
		return -EINVAL;
	if (qp->ctx->ops != &gdak_nm_backend_ops)
		return -ENOTSUP;
	memset(st, 0, sizeof(*st));
	add(st, &nm_qp_of(qp)->st);
	return 0;
}

int gdak_nic_stats(struct gdak_nic_stats *st)
{
	if (!st)
		return -EINVAL;
	memset(st, 0, sizeof(*st));
	pthread_mutex_lock(&api_lock);
	add(st, &retired);
	pthread_mutex_unlock(&api_lock);
	nm_qp_stats_sum(st);
	return 0;
}

uint64_t gdak_nic_qp_state_bytes(void)
{
	/* the QP object (heap) plus the device block beyond the rings: the
	 * UAR page, descriptor and records (8 KiB) */
	return sizeof(struct nm_qp) + 8192;
}
