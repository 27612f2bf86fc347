/* SPDX-License-Identifier: MIT */
/*
 * gdak_backend.h - what a backend implements (internal to gdak).
 *
 * core/ validates arguments, normalises attributes and enforces the QP state
 * machine; a backend sees only well-formed requests.  Backend objects embed
 * the base structs below as their first member.
 */
#ifndef GDAK_BACKEND_H
#define GDAK_BACKEND_H

#include <pthread.h>
#include <stdatomic.h>
#include <gdak/gdak.h>

#include "gdak_log.h"

struct gdak_backend_ops;

struct gdak_ctx {
	const struct gdak_backend_ops *ops;
	uint32_t id;	 /* process-unique, for logs */
	char device[64]; /* device string after defaults */
};

struct gdak_mr {
	struct gdak_ctx *ctx;
	void *addr;
	size_t len;
	unsigned access;
	uint32_t lkey;
	uint32_t rkey;
};

struct gdak_qp {
	struct gdak_ctx *ctx;
	uint32_t qpn;
	_Atomic int state;	  /* enum gdak_qp_state; the NIC may move it to ERR */
	struct gdak_qp_attr attr; /* normalised */
};

struct gdak_backend_ops {
	const char *name;
	/* 1 when this backend serves the device string */
	int (*match)(const char *device);
	int (*open)(const char *device, struct gdak_ctx **ctx);
	void (*close)(struct gdak_ctx *ctx);

	int (*mem_alloc)(struct gdak_ctx *ctx, size_t len, enum gdak_mem_kind kind, void **addr);
	int (*mem_free)(struct gdak_ctx *ctx, void *addr);
	enum gdak_mem_kind (*mem_kind_of)(struct gdak_ctx *ctx, const void *addr);
	int (*mr_reg)(struct gdak_ctx *ctx, void *addr, size_t len, unsigned access,
		      struct gdak_mr **mr);
	int (*mr_dereg)(struct gdak_mr *mr);

	int (*qp_create)(struct gdak_ctx *ctx, const struct gdak_qp_attr *attr,
			 struct gdak_qp **qp);
	int (*qp_destroy)(struct gdak_qp *qp);
	int (*qp_info)(struct gdak_qp *qp, struct gdak_qp_info *out);
	/* one legal transition; peer is non-NULL for ->RTR */
	int (*qp_modify)(struct gdak_qp *qp, enum gdak_qp_state to,
			 const struct gdak_qp_info *peer);
	int (*qp_export)(struct gdak_qp *qp, struct gdak_dev_qp **dqp);
	int (*qp_query_error)(struct gdak_qp *qp, struct gdak_qp_error *err);
};

/* The backends compiled in, NULL-terminated, in matching order: generated
 * at configure time from the components' gdak_register_backend() calls
 * (cmake/GdakBackends.cmake). */
extern const struct gdak_backend_ops *const gdak_backend_table[];
/* The NIC model's table (its gdak_nic_* API checks a QP is one of its own). */
extern const struct gdak_backend_ops gdak_nm_backend_ops;

/*
 * Observers of objects going away: core calls them before the backend
 * destroys a QP or closes a context, whatever the backend.  The ring capture
 * (core/trace) registers one when its first capture opens, so that it makes
 * its last pass over a QP's rings before they are freed; core names no
 * observer itself.  Registering the same observer again does nothing; at
 * most GDAK_MAX_OBSERVERS, never removed.  0 or -ENOSPC.
 */
struct gdak_obj_observer {
	void (*qp_destroy)(struct gdak_qp *qp);
	void (*ctx_close)(struct gdak_ctx *ctx);
};
#define GDAK_MAX_OBSERVERS 4
int gdak_observer_add(const struct gdak_obj_observer *o);

/*
 * What gdak_mem_alloc handed out on a context: the list a backend keeps for
 * its mem_free and mem_kind_of, under its context's lock.  A backend's own
 * record embeds the block as its first member.
 */
struct gdak_mem_block {
	struct gdak_mem_block *next;
	void *addr;
	size_t len;
	enum gdak_mem_kind kind;
};

static inline void gdak_mem_block_push(struct gdak_mem_block **list, struct gdak_mem_block *b)
{
	b->next = *list;
	*list = b;
}

/* gdak_mem_free's look-up on ctx: unlink the block that starts at addr and
 * return it, or NULL (logged) when none does; lock is the one that guards
 * the list. */
static inline struct gdak_mem_block *gdak_mem_block_take(const struct gdak_ctx *ctx,
							 pthread_mutex_t *lock,
							 struct gdak_mem_block **list,
							 const void *addr)
{
	struct gdak_mem_block *b = NULL;

	pthread_mutex_lock(lock);
	for (struct gdak_mem_block **pp = list; *pp; pp = &(*pp)->next) {
		if ((*pp)->addr == addr) {
			b = *pp;
			*pp = b->next;
			break;
		}
	}
	pthread_mutex_unlock(lock);
	if (!b)
		GDAK_ERR("ctx", ctx->id, "%p was not returned by gdak_mem_alloc on this context",
			 addr);
	return b;
}

/* 1 and the kind of the block that holds addr in *kind, or 0 when no block
 * of *list does; lock is the one that guards the list. */
static inline int gdak_mem_block_kind(pthread_mutex_t *lock, struct gdak_mem_block *const *list,
				      const void *addr, enum gdak_mem_kind *kind)
{
	int found = 0;

	pthread_mutex_lock(lock);
	for (const struct gdak_mem_block *b = *list; b && !found; b = b->next) {
		if ((uintptr_t)addr >= (uintptr_t)b->addr &&
		    (uintptr_t)addr < (uintptr_t)b->addr + b->len) {
			*kind = b->kind;
			found = 1;
		}
	}
	pthread_mutex_unlock(lock);
	return found;
}

/* A fresh process-unique id for logs. */
uint32_t gdak_next_obj_id(void);

#endif /* GDAK_BACKEND_H */
