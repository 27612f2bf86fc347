/* SPDX-License-Identifier: MIT */
/*
 * scen_atomic.c - 8-byte atomics: fetch-add (with a carry across the 32-bit
 * halves) and compare-swap (a hit and a miss).  The operands travel
 * big-endian in the atomic segment and remote memory is operated on in host
 * byte order, but a ConnectX on a little-endian host writes the fetched
 * (original) value back big-endian (NVIDIA's mlx5 documentation: "the atomic
 * operation replied value is big-endian"; libfabric and Open MPI swap it for
 * that reason), so device code must byte-swap what it fetched.  The emulator
 * models this.
 */
#include <errno.h>
#include <string.h>

#include "gdak_test.h"
#include "scenarios.h"

#define WORD_OFF 8192u

static uint64_t addr_of(const void *p) { return (uint64_t)(uintptr_t)p; }

static uint64_t *word(struct scen_pair *p, int side, uint32_t k)
{
	return (uint64_t *)(void *)(p->buf[side] + WORD_OFF + 8u * k);
}

struct atomic_job {
	int cas;		/* 0: fetch-add, 1: compare-swap */
	int rc[2];
	struct gdak_dev_cqe err;
};

static void atomic_dev(struct scen_pair *p, struct gdak_dev_qp *q, void *arg)
{
	struct atomic_job *j = arg;
	uint32_t nbb = gdak_dev_wqe_bbs_sge(1, 2), lkey = gdak_mr_lkey(p->mr[0]);
	uint32_t rkey = gdak_mr_rkey(p->mr[1]);
	uint64_t raddr = addr_of(word(p, 1, 0));

	/* two steps, each waited for, so the second sees the first's result */
	for (uint32_t k = 0; k < 2; k++) {
		int64_t idx = scen_reserve(q, nbb);
		uint64_t laddr = addr_of(word(p, 0, k));
		if (idx < 0)
			return;
		if (!j->cas)
			gdak_dev_wqe_fetch_add(q, (uint64_t)idx, GDAK_DEV_WQE_SIGNAL, raddr, rkey,
					       k ? 0x100000000ull : 2, laddr, lkey);
		else	/* compare 42 both times: swap 7 hits, swap 9 then misses */
			gdak_dev_wqe_cas(q, (uint64_t)idx, GDAK_DEV_WQE_SIGNAL, raddr, rkey, 42,
					 k ? 9 : 7, laddr, lkey);
		j->rc[k] = scen_submit_wait(p, q, (uint64_t)idx, (uint64_t)idx + nbb, &j->err);
		if (j->rc[k])
			return;
	}
}

static int run_atomic(const struct gdak_scen_cfg *cfg, int cas)
{
	struct scen_pair p;
	struct atomic_job j = { .cas = cas, .rc = { -1, -1 } };

	if (scen_pair_open(cfg, &p, 0))
		return 0;
	*word(&p, 1, 0) = cas ? 42 : 40;
	*word(&p, 1, 1) = 0x5555555555555555ull;	/* the neighbour must survive */
	memset(word(&p, 0, 0), 0xee, 16);
	scen_on_device(&p, atomic_dev, &j);
	CHECK_EQ(j.rc[0], 0);
	CHECK_EQ(j.rc[1], 0);
	if (!cas) {
		CHECK_EQ(gdak_be64toh(*word(&p, 0, 0)), 40);	/* fetched before +2 */
		CHECK_EQ(gdak_be64toh(*word(&p, 0, 1)), 42);	/* fetched before +2^32 */
		CHECK_EQ(*word(&p, 1, 0), 0x10000002aull);	/* carry into the high half */
	} else {
		CHECK_EQ(gdak_be64toh(*word(&p, 0, 0)), 42); /* hit: old value back, 7 stored */
		CHECK_EQ(gdak_be64toh(*word(&p, 0, 1)), 7);  /* miss: current value back */
		CHECK_EQ(*word(&p, 1, 0), 7);	/* and left alone */
	}
	CHECK_EQ(*word(&p, 1, 1), 0x5555555555555555ull);
	scen_pair_close(&p);
	return 0;
}

int scen_fetch_add(const struct gdak_scen_cfg *cfg) { return run_atomic(cfg, 0); }
int scen_compare_swap(const struct gdak_scen_cfg *cfg) { return run_atomic(cfg, 1); }
