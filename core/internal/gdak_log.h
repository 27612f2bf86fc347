/* SPDX-License-Identifier: MIT */
/*
 * gdak_log.h - logging for people (internal to gdak).
 *
 * GDAK_LOG=error|warn|info|debug (default warn).  Every line starts with the
 * object and the function:  "gdak E qp 0x000012 nm_req_fetch: ...".
 * Data-path call sites use the _RL variants: at most GDAK_LOG_RL_BURST lines
 * per call site per second, then a count of what was suppressed.
 */
#ifndef GDAK_LOG_H
#define GDAK_LOG_H

#include <stdatomic.h>
#include <stdint.h>
#include <gdak/gdak.h>

#define GDAK_LOG_RL_BURST 10

extern _Atomic int gdak_log_level_cur;

void gdak_log_msg(enum gdak_log_level lvl, const char *obj, uint32_t id, const char *func,
		  const char *fmt, ...) __attribute__((format(printf, 5, 6)));

struct gdak_log_rl {
	_Atomic uint64_t window_ns;
	_Atomic uint32_t in_window;
	_Atomic uint32_t suppressed;
};
/* 1 when the line may be printed (and prints a suppression count first). */
int gdak_log_rl_ok(struct gdak_log_rl *rl, const char *obj, uint32_t id, const char *func);

static inline int gdak_log_on(enum gdak_log_level lvl)
{
	return (int)lvl <= atomic_load_explicit(&gdak_log_level_cur, memory_order_relaxed);
}

#define GDAK_LOG(lvl, obj, id, ...)                                              \
	do {                                                                     \
		if (gdak_log_on(lvl))                                            \
			gdak_log_msg((lvl), (obj), (id), __func__, __VA_ARGS__); \
	} while (0)
#define GDAK_ERR(obj, id, ...) GDAK_LOG(GDAK_LOG_ERROR, obj, id, __VA_ARGS__)
#define GDAK_WARN(obj, id, ...) GDAK_LOG(GDAK_LOG_WARN, obj, id, __VA_ARGS__)
#define GDAK_INFO(obj, id, ...) GDAK_LOG(GDAK_LOG_INFO, obj, id, __VA_ARGS__)
#define GDAK_DBG(obj, id, ...) GDAK_LOG(GDAK_LOG_DEBUG, obj, id, __VA_ARGS__)

/* Rate-limited, for the data path. */
#define GDAK_LOG_RL(lvl, obj, id, ...)                                                   \
	do {                                                                             \
		static struct gdak_log_rl rl_;                                           \
		if (gdak_log_on(lvl) && gdak_log_rl_ok(&rl_, (obj), (id), __func__))     \
			gdak_log_msg((lvl), (obj), (id), __func__, __VA_ARGS__);         \
	} while (0)
#define GDAK_ERR_RL(obj, id, ...) GDAK_LOG_RL(GDAK_LOG_ERROR, obj, id, __VA_ARGS__)
#define GDAK_WARN_RL(obj, id, ...) GDAK_LOG_RL(GDAK_LOG_WARN, obj, id, __VA_ARGS__)

/* Test hook: capture log lines instead of writing them to stderr. */
typedef void (*gdak_log_sink_fn)(enum gdak_log_level lvl, const char *line, void *arg);
void gdak_log_set_sink(gdak_log_sink_fn fn, void *arg);

#endif /* GDAK_LOG_H */
