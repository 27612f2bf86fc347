/* SPDX-License-Identifier: MIT */
/* log.c - GDAK_LOG levels, line format, rate limiting. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <pthread.h>
#include <time.h>

#include <gdak/env.h>

#include "gdak_log.h"

_Atomic int gdak_log_level_cur = GDAK_LOG_WARN;

static gdak_log_sink_fn log_sink;
static void *log_sink_arg;
static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;

static const char level_char[] = {'E', 'W', 'I', 'D'};

/* Read $GDAK_LOG once, before main(): logging works from the first call. */
__attribute__((constructor)) static void log_init_from_env(void)
{
	int i;

	/* the choices are the four names, then their digits 0..3; a bad value
	 * is reported by the table and leaves the level at warn */
	if (gdak_env_choice("GDAK_LOG", &i) == 0)
		atomic_store(&gdak_log_level_cur, i & 3);
}

void gdak_set_log_level(enum gdak_log_level lvl)
{
	if ((int)lvl < GDAK_LOG_ERROR)
		lvl = GDAK_LOG_ERROR;
	if ((int)lvl > GDAK_LOG_DEBUG)
		lvl = GDAK_LOG_DEBUG;
	atomic_store(&gdak_log_level_cur, (int)lvl);
}

enum gdak_log_level gdak_get_log_level(void)
{
	return (enum gdak_log_level)atomic_load(&gdak_log_level_cur);
}

void gdak_log_set_sink(gdak_log_sink_fn fn, void *arg)
{
	pthread_mutex_lock(&log_lock);
	log_sink = fn;
	log_sink_arg = arg;
	pthread_mutex_unlock(&log_lock);
}

void gdak_log_msg(enum gdak_log_level lvl, const char *obj, uint32_t id, const char *func,
		  const char *fmt, ...)
{
	char line[512];
	int n;
	va_list ap;

	if ((unsigned)lvl > GDAK_LOG_DEBUG)
		lvl = GDAK_LOG_DEBUG;
	if (obj)
		n = snprintf(line, sizeof(line), "gdak %c %s 0x%06x %s: ", level_char[lvl], obj, id, func);
	else
		n = snprintf(line, sizeof(line), "gdak %c %s: ", level_char[lvl], func);
	if (n < 0)
		return;
	if ((size_t)n >= sizeof(line))
		n = sizeof(line) - 1;
	va_start(ap, fmt);
	vsnprintf(line + n, sizeof(line) - (size_t)n, fmt, ap);
	va_end(ap);

	pthread_mutex_lock(&log_lock);
	if (log_sink)
		log_sink(lvl, line, log_sink_arg);
	else
		fprintf(stderr, "%s\n", line);
	pthread_mutex_unlock(&log_lock);
}

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

int gdak_log_rl_ok(struct gdak_log_rl *rl, const char *obj, uint32_t id, const char *func)
{
	uint64_t now = now_ns();
	uint64_t win = atomic_load_explicit(&rl->window_ns, memory_order_relaxed);

	if (now - win >= 1000000000u &&
	    atomic_compare_exchange_strong(&rl->window_ns, &win, now)) {
		uint32_t sup = atomic_exchange(&rl->suppressed, 0);
		atomic_store(&rl->in_window, 0);
		if (sup)
			gdak_log_msg(GDAK_LOG_WARN, obj, id, func, "%u similar messages suppressed", sup);
	}
	if (atomic_fetch_add(&rl->in_window, 1) < GDAK_LOG_RL_BURST)
		return 1;
	atomic_fetch_add(&rl->suppressed, 1);
	return 0;
}
