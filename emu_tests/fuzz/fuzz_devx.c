/* SPDX-License-Identifier: MIT */
/*
 * fuzz_devx.c - gdak's DEVX mailbox parser (nic_model/ibv/dx_*.c) through
 * gdak's libmlx5 on an emulated device: fuzzed PRM mailboxes as general
 * commands, creates, modifies, queries and destroys of live objects.
 *
 * The input is a small program of records:
 *   op   0 general_cmd, 1 obj_create, 2 obj_modify, 3 obj_query,
 *        4 obj_destroy (of live object [k]), 5 umem_reg, 6 alloc_uar
 *   k    which live object
 *   fix  bits: 1 the UAR page id, 2 the umem ids, 4 a live CQ's number
 *        (and the SRQ's, for a DCT or a DCI), 8 object [k]'s number patched
 *        into the mailbox where PRM fields name them, so the fuzzer gets
 *        past the existence checks
 *   inlen, outlen (u16 each, capped), then inlen mailbox bytes
 * At the end every live object is destroyed (in any order that works:
 * an object in use is EBUSY and retried once its users are gone).
 *
 * Invariants: every call answers one of the kernel's errnos; EREMOTEIO
 * always comes with a non-zero status in the output mailbox and success
 * with status 0; nothing is written past outlen; every object can be
 * destroyed at the end.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <infiniband/mlx5dv.h>
#include <infiniband/verbs.h>

#include "fuzz.h"

#define MAXOBJ 16
#define MB 0x1100
#define UMEM 65536

static struct ibv_context *ctx;
static struct mlx5dv_devx_uar *uar;
static struct mlx5dv_devx_umem *umem;
static void *umem_buf;
static union ibv_gid gid;
static struct ibv_pd *pd;
static struct ibv_srq *srq; /* what DC mailboxes name (CREATE_DCT, a DCI's srqn) */
static uint32_t srqn;

struct live {
	struct mlx5dv_devx_obj *o;
	uint16_t op; /* the create opcode */
	uint32_t id;
};

static void put32(uint8_t *mb, unsigned bit, unsigned w, uint32_t v)
{
	uint8_t *p = mb + bit / 32 * 4;
	uint32_t cur = (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
	unsigned sh = 32 - w - bit % 32;
	uint32_t mask = (w == 32 ? 0xffffffffu : ((1u << w) - 1)) << sh;

	cur = (cur & ~mask) | ((v << sh) & mask);
	p[0] = (uint8_t)(cur >> 24);
	p[1] = (uint8_t)(cur >> 16);
	p[2] = (uint8_t)(cur >> 8);
	p[3] = (uint8_t)cur;
}

static unsigned status_of(const uint8_t *out)
{
	return out[0];
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	struct ibv_device **l;
	int n;

	(void)argc;
	(void)argv;
	l = ibv_get_device_list(&n);
	FUZZ_ASSERT(l && n > 0, "no emulated device");
	ctx = ibv_open_device(l[0]);
	ibv_free_device_list(l);
	FUZZ_ASSERT(ctx, "ibv_open_device");
	FUZZ_ASSERT(ibv_query_gid(ctx, 1, 0, &gid) == 0, "query_gid");
	uar = mlx5dv_devx_alloc_uar(ctx, MLX5DV_UAR_ALLOC_TYPE_NC);
	FUZZ_ASSERT(uar, "alloc_uar");
	FUZZ_ASSERT(posix_memalign(&umem_buf, 4096, UMEM) == 0, "memory");
	memset(umem_buf, 0, UMEM);
	umem = mlx5dv_devx_umem_reg(ctx, umem_buf, UMEM, IBV_ACCESS_LOCAL_WRITE);
	FUZZ_ASSERT(umem, "umem_reg");
	{
		struct ibv_srq_init_attr sa = { .attr = { .max_wr = 16, .max_sge = 1 } };
		struct mlx5dv_srq ds = { .comp_mask = MLX5DV_SRQ_MASK_SRQN };
		struct mlx5dv_obj o = { .srq = { .out = &ds } };

		pd = ibv_alloc_pd(ctx);
		FUZZ_ASSERT(pd, "alloc_pd");
		srq = ibv_create_srq(pd, &sa);
		FUZZ_ASSERT(srq, "create_srq");
		o.srq.in = srq;
		FUZZ_ASSERT(mlx5dv_init_obj(&o, MLX5DV_OBJ_SRQ) == 0, "init_obj srq");
		srqn = ds.srqn;
	}
	return 0;
}

void fuzz_fini(void)
{
	ibv_destroy_srq(srq);
	ibv_dealloc_pd(pd);
	mlx5dv_devx_umem_dereg(umem);
	mlx5dv_devx_free_uar(uar);
	free(umem_buf);
	ibv_close_device(ctx);
}

static int known_errno(int r)
{
	return r == 0 || r == EINVAL || r == EREMOTEIO || r == EBUSY || r == EOPNOTSUPP ||
	       r == ENOMEM || r == ENOTSUP;
}

static void fixup(uint8_t *in, size_t inlen, unsigned fix, const struct live *objs, unsigned n,
		  unsigned k)
{
	unsigned op = (unsigned)in[0] << 8 | in[1];

	if ((fix & 8) && k < n && inlen >= 16)
		put32(in, 0x48, 24, objs[k].id);
	if (op == 0x710 && inlen >= 0x280 / 8 && (fix & 4)) {
		put32(in, 0x80 + 0xa8, 24, srqn); /* dctc.srqn_xrqn */
		for (unsigned i = 0; i < n; i++)
			if (objs[i].op == 0x400) {
				put32(in, 0x80 + 0x48, 24, objs[i].id); /* dctc.cqn */
				break;
			}
	}
	if (inlen < 0x880 / 8)
		return;
	/* the fields of the command the mailbox carries (contexts overlap) */
	if (op == 0x400) {
		if (fix & 1)
			put32(in, 0x80 + 0x68, 24, uar->page_id); /* cqc.uar_page */
		if (fix & 2) {
			put32(in, 0x80 + 0x20, 32, umem->umem_id); /* cqc.dbr_umem_id */
			put32(in, 0x2c0, 32, umem->umem_id);	   /* create_cq_in.cq_umem_id */
		}
	} else if (op == 0x500) {
		if (fix & 1)
			put32(in, 0xc0 + 0x68, 24, uar->page_id); /* qpc.uar_page */
		if (fix & 2) {
			put32(in, 0xc0 + 0x720, 32, umem->umem_id); /* qpc.dbr_umem_id */
			put32(in, 0x840, 32, umem->umem_id);	    /* create_qp_in.wq_umem_id */
		}
		if (fix & 4)
			put32(in, 0xc0 + 0x568, 24, srqn); /* qpc.srqn_rmpn_xrqn */
		for (unsigned i = 0; (fix & 4) && i < n; i++)
			if (objs[i].op == 0x400) {
				put32(in, 0xc0 + 0x3e8, 24, objs[i].id); /* qpc.cqn_snd */
				put32(in, 0xc0 + 0x4e8, 24, objs[i].id); /* qpc.cqn_rcv */
				break;
			}
	}
}

/* A QP connects only to this device: packets never leave 127.0.0.x. */
static void own_gid(uint8_t *in, size_t inlen)
{
	if (inlen >= (0xc0 + 0xc0 + 0x80 + 128) / 8)
		memcpy(in + (0xc0 + 0xc0 + 0x80) / 8, gid.raw, 16);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static uint8_t in[MB], out[MB + 64];
	struct fuzz_in f = { data, size, 0 };
	struct live objs[MAXOBJ];
	unsigned n = 0, steps = 0;

	while (fuzz_more(&f) && steps++ < 64) {
		unsigned op = fuzz_u8(&f) % 7, k = fuzz_u8(&f), fix = fuzz_u8(&f);
		size_t inlen = fuzz_u16(&f) % MB, outlen = fuzz_u16(&f) % MB;
		struct mlx5dv_devx_obj *o;
		int r = 0;

		memset(in, 0, sizeof(in));
		fuzz_bytes(&f, in, inlen);
		k = n ? k % n : 0;
		fixup(in, inlen, fix, objs, n, k);
		memset(out, 0xa5, sizeof(out));
		switch (op) {
		case 0:
			r = mlx5dv_devx_general_cmd(ctx, in, inlen, out, outlen);
			break;
		case 1:
			if (n == MAXOBJ)
				continue;
			o = mlx5dv_devx_obj_create(ctx, in, inlen, out, outlen);
			r = o ? 0 : errno;
			if (o) {
				objs[n].o = o;
				objs[n].op = (uint16_t)(in[0] << 8 | in[1]);
				objs[n].id = (uint32_t)out[9] << 16 | (uint32_t)out[10] << 8 |
					     out[11];
				n++;
			}
			break;
		case 2:
		case 3:
			if (!n)
				continue;
			own_gid(in, inlen);
			r = op == 2 ? mlx5dv_devx_obj_modify(objs[k].o, in, inlen, out, outlen)
				    : mlx5dv_devx_obj_query(objs[k].o, in, inlen, out, outlen);
			break;
		case 4:
			if (!n)
				continue;
			r = mlx5dv_devx_obj_destroy(objs[k].o);
			FUZZ_ASSERT(r == 0 || r == EBUSY, "destroy: %d", r);
			if (!r)
				objs[k] = objs[--n];
			continue;
		case 5: {
			struct mlx5dv_devx_umem *u = mlx5dv_devx_umem_reg(
				ctx, umem_buf, (size_t)(outlen % UMEM), k);

			if (u)
				FUZZ_ASSERT(mlx5dv_devx_umem_dereg(u) == 0, "umem dereg");
			continue;
		}
		default: {
			struct mlx5dv_devx_uar *u = mlx5dv_devx_alloc_uar(ctx,
									  (uint32_t)fix << 24 | k);

			if (u)
				mlx5dv_devx_free_uar(u);
			continue;
		}
		}
		FUZZ_ASSERT(known_errno(r), "op %u: errno %d", op, r);
		for (size_t i = outlen; i < sizeof(out); i++)
			FUZZ_ASSERT(out[i] == 0xa5, "op %u wrote byte %zu past outlen %zu", op, i,
				    outlen);
		if (r == EREMOTEIO)
			FUZZ_ASSERT(outlen >= 16 && status_of(out) != 0, "EREMOTEIO, status 0");
		if (r == 0 && outlen >= 16)
			FUZZ_ASSERT(status_of(out) == 0, "success with status 0x%x",
				    status_of(out));
	}
	/* everything goes, in an order that works (users first) */
	for (unsigned round = 0; n && round < MAXOBJ; round++)
		for (unsigned i = 0; i < n;) {
			if (!mlx5dv_devx_obj_destroy(objs[i].o))
				objs[i] = objs[--n];
			else
				i++;
		}
	FUZZ_ASSERT(n == 0, "%u objects cannot be destroyed", n);
	return 0;
}
