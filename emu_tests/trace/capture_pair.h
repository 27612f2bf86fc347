/* SPDX-License-Identifier: MIT */
/*
 * capture_pair.h - the setting of the tests that capture or trace a NIC
 * model run (capture_emu.c, capture_hooks.c, capture_loss.c, trace_emu.c):
 * a context on the NIC model, a source buffer registered for local access,
 * a target buffer registered for everything, and a connected pair of QPs.
 */
#ifndef GDAK_CAPTURE_TEST_PAIR_H
#define GDAK_CAPTURE_TEST_PAIR_H

#include <gdak/gdak.h>

#include "gdak_test.h"
#include "nic_util.h"

struct cp_pair {
	struct gdak_ctx *ctx;
	uint8_t *src, *dst;	/* len bytes each */
	struct gdak_mr *ms, *md;
	struct nu_qp a, b;	/* a's writes land in b's memory */
};

static inline void cp_open(struct cp_pair *p, size_t len, const struct gdak_qp_attr *attr)
{
	REQUIRE_EQ(gdak_open("emu", &p->ctx), 0);
	REQUIRE_EQ(gdak_mem_alloc(p->ctx, len, GDAK_MEM_HOST, (void **)&p->src), 0);
	REQUIRE_EQ(gdak_mem_alloc(p->ctx, len, GDAK_MEM_HOST, (void **)&p->dst), 0);
	REQUIRE_EQ(gdak_mr_reg(p->ctx, p->src, len, GDAK_ACCESS_LOCAL_WRITE, &p->ms), 0);
	REQUIRE_EQ(gdak_mr_reg(p->ctx, p->dst, len, GDAK_ACCESS_ALL, &p->md), 0);
	REQUIRE_EQ(nu_pair(p->ctx, attr, &p->a, &p->b), 0);
}

/* All of it gone; a.qpn and b.qpn stay readable (the files name them). */
static inline void cp_close(struct cp_pair *p)
{
	nu_destroy(&p->a);
	nu_destroy(&p->b);
	gdak_mr_dereg(p->ms);
	gdak_mr_dereg(p->md);
	gdak_mem_free(p->ctx, p->src);
	gdak_mem_free(p->ctx, p->dst);
	gdak_close(p->ctx);
}

#endif
