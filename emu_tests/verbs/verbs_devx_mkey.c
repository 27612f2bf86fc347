/* SPDX-License-Identifier: MIT */
/*
 * verbs_devx_mkey.c - DEVX memory keys on gdak's libmlx5: CREATE_MKEY in
 * MTT mode over a umem (as DPDK's and DOCA's umem mkeys are made), the key
 * the program computes from the returned index and its own mkey_7_0 used
 * as lkey and rkey in WQEs between two DEVX RC QPs, the data byte for
 * byte; QUERY_MKEY; the refusals ConnectX gives (and those of what gdak
 * does not execute, with ConnectX's status); a remote write to an mkey
 * without rw (REMOTE_ACCESS_ERR), a local read beyond the mkey
 * (LOCAL_PROT_ERR), a destroyed mkey's rkey (REMOTE_ACCESS_ERR); the
 * umem busy while an mkey is over it.
 */
#define _GNU_SOURCE
#include <endian.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <infiniband/mlx5dv.h>
#include <infiniband/verbs.h>

#include "gdak_devx_qp.h"
#include "gdak_prm.h"
#include "gdak_prm_rc.h"
#include "gdak_test.h"
#include "gdak_verbs.h"

/* create_mkey_in: mkc at 0x80; the umem after translations_octword_actual_size */
#define MKEY_IN_LEN (0x880 / 8)
#define MKC(off, w) 0x80 + (off), (w)
#define MKC_START 0x80 + 0x80
#define MKC_LEN 0x80 + 0xc0
#define MKEY_UMEM_VALID 0x61, 1
#define MKEY_UMEM_ID 0x320, 32
#define MKEY_UMEM_OFFSET 0x340

enum {
	SYND_LOCAL_PROT = 0x04,	   /* MLX5_CQE_SYNDROME_LOCAL_PROT_ERR */
	SYND_REMOTE_ACCESS = 0x13, /* MLX5_CQE_SYNDROME_REMOTE_ACCESS_ERR */
	MKC_LR = 1,
	MKC_LW = 2,
	MKC_RR = 4,
	MKC_RW = 8,
	MKC_A = 16,
};

static struct ibv_context *ctx;
static union ibv_gid gid;
static uint32_t pdn;

/* CREATE_MKEY as a DEVX program fills it for a umem: MTT, start_addr the
 * umem's address, the rights asked, qpn 0xffffff, 4 KiB pages. */
static void mkey_fill(uint8_t *in, const struct mlx5dv_devx_umem *um, void *addr, uint64_t len,
		      unsigned rights, uint8_t variant)
{
	memset(in, 0, MKEY_IN_LEN);
	prm_set(in, PRM_OPCODE, 0x200);
	prm_set(in, MKEY_UMEM_VALID, 1);
	prm_set(in, MKC(0x16, 2), 1); /* access_mode_1_0: MTT */
	prm_set(in, MKC(0x15, 1), !!(rights & MKC_LR));
	prm_set(in, MKC(0x14, 1), !!(rights & MKC_LW));
	prm_set(in, MKC(0x13, 1), !!(rights & MKC_RR));
	prm_set(in, MKC(0x12, 1), !!(rights & MKC_RW));
	prm_set(in, MKC(0x11, 1), !!(rights & MKC_A));
	prm_set(in, MKC(0x20, 24), 0xffffff);
	prm_set(in, MKC(0x38, 8), variant);
	prm_set(in, MKC(0x68, 24), pdn);
	prm_set64(in, MKC_START, (uintptr_t)addr);
	prm_set64(in, MKC_LEN, len);
	prm_set(in, MKC(0x1a0, 32), (uint32_t)((len + 4095) / 4096 + 1) / 2);
	prm_set(in, MKC(0x1db, 5), 12);
	prm_set(in, MKEY_UMEM_ID, um->umem_id);
	prm_set64(in, MKEY_UMEM_OFFSET, 0);
	prm_set(in, 0x300, 32, (uint32_t)((len + 4095) / 4096 + 1) / 2);
}

/* A created mkey and the key its program computes. */
static struct mlx5dv_devx_obj *mkey_create(const struct mlx5dv_devx_umem *um, void *addr,
					   uint64_t len, unsigned rights, uint8_t variant,
					   uint32_t *key)
{
	uint8_t in[MKEY_IN_LEN], out[16];
	struct mlx5dv_devx_obj *o;

	mkey_fill(in, um, addr, len, rights, variant);
	o = mlx5dv_devx_obj_create(ctx, in, sizeof(in), out, sizeof(out));
	REQUIRE(o != NULL);
	CHECK_EQ(prm_get(out, PRM_STATUS), 0);
	*key = prm_get(out, PRM_OBJ) << 8 | variant;
	CHECK(prm_get(out, PRM_OBJ) != 0);
	return o;
}

static void check_refusals(const struct mlx5dv_devx_umem *um, uint8_t *addr)
{
	uint8_t in[MKEY_IN_LEN], out[16];

#define REFUSED(status)                                                                       \
	do {                                                                                  \
		errno = 0;                                                                    \
		CHECK(mlx5dv_devx_obj_create(ctx, in, sizeof(in), out, sizeof(out)) == NULL); \
		CHECK_EQ(errno, EREMOTEIO);                                                   \
		CHECK_EQ(prm_get(out, PRM_STATUS), (status));                                 \
	} while (0)

	mkey_fill(in, um, addr, 4096, MKC_LR, 1);
	prm_refused(ctx, in, 0x300 / 8, ST_BAD_INPUT_LEN);
	prm_set(in, MKC(0x16, 2), 2); /* KLM: indirect, not executed */
	REFUSED(ST_BAD_PARAM);
	mkey_fill(in, um, addr, 4096, MKC_LR, 1);
	prm_set(in, MKEY_UMEM_VALID, 0); /* a page list */
	REFUSED(ST_BAD_PARAM);
	mkey_fill(in, um, addr, 4096, MKC_LR, 1);
	prm_set64(in, MKC_START, 0x10000000); /* an I/O address of its own */
	REFUSED(ST_BAD_PARAM);
	mkey_fill(in, um, addr, 3 * 4096, MKC_LR, 1); /* beyond the umem */
	REFUSED(ST_BAD_PARAM);
	mkey_fill(in, um, addr, 4096, MKC_LR, 1);
	prm_set(in, MKC(0x68, 24), 0);
	REFUSED(ST_BAD_RES);
	mkey_fill(in, um, addr, 4096, MKC_LR, 1);
	prm_set(in, MKC(0x10, 1), 1); /* umr_en */
	REFUSED(ST_BAD_PARAM);
	mkey_fill(in, um, addr, 4096, MKC_LR, 1);
	prm_set(in, MKC(0x20, 24), 0x123); /* bound to one QP */
	REFUSED(ST_BAD_PARAM);
	mkey_fill(in, um, addr, 0, MKC_LR, 1);
	REFUSED(ST_BAD_PARAM);
#undef REFUSED
}

static void check_query(struct mlx5dv_devx_obj *o, uint32_t key, void *addr, uint64_t len,
			unsigned rights)
{
	uint8_t in[16] = { 0 }, out[0x280 / 8];

	prm_set(in, PRM_OPCODE, 0x201);
	prm_set(in, PRM_OBJ, key >> 8);
	memset(out, 0xee, sizeof(out));
	CHECK_EQ(mlx5dv_devx_obj_query(o, in, sizeof(in), out, sizeof(out)), 0);
	CHECK_EQ(prm_get(out, PRM_STATUS), 0);
	CHECK_EQ(prm_get(out, MKC(0x16, 2)), 1);
	CHECK_EQ(prm_get(out, MKC(0x38, 8)), key & 0xff);
	CHECK_EQ(prm_get(out, MKC(0x68, 24)), pdn);
	CHECK_EQ(prm_get64(out, MKC_START), (uintptr_t)addr);
	CHECK_EQ(prm_get64(out, MKC_LEN), len);
	CHECK_EQ(prm_get(out, MKC(0x12, 1)), !!(rights & MKC_RW));
	CHECK_EQ(prm_get(out, MKC(0x13, 1)), !!(rights & MKC_RR));
	/* naming another mkey: the kernel's EINVAL */
	prm_set(in, PRM_OBJ, (key >> 8) ^ 1);
	CHECK_EQ(mlx5dv_devx_obj_query(o, in, sizeof(in), out, sizeof(out)), EINVAL);
}

/* Both QPs back to RTS after an error (the PSNs start again on both). */
static void reconnect(struct tqp *a, struct tqp *b)
{
	tqp_reset(a);
	tqp_reset(b);
	tqp_connect(a, b->qpn, 7);
	tqp_connect(b, a->qpn, 7);
}

static void check_err(struct tqp *q, uint32_t idx, uint8_t synd)
{
	struct mlx5_err_cqe *x = (void *)tqp_cqe(q);

	CHECK_EQ(x->op_own >> 4, MLX5_CQE_REQ_ERR);
	CHECK_EQ(x->syndrome, synd);
	CHECK_EQ(be16toh(x->wqe_counter), idx);
	CHECK_EQ(be32toh(x->s_wqe_opcode_qpn) & 0xffffff, q->qpn);
}

int main(void)
{
	struct mlx5dv_devx_obj *pdo, *mk_src, *mk_dst, *mk_ro;
	struct mlx5dv_devx_umem *src_um, *dst_um;
	uint8_t *src, *dst, out[16];
	uint32_t k_src, k_dst, k_ro;
	struct mlx5_cqe64 *e;
	struct tqp a, b;

	ctx = gdak_vt_open_first();
	REQUIRE_EQ(ibv_query_gid(ctx, 1, 0, &gid), 0);
	pdo = prm_alloc_pd(ctx, &pdn);

	src = gdak_test_pages(8192);
	dst = gdak_test_pages(8192);
	src_um = mlx5dv_devx_umem_reg(ctx, src, 8192, IBV_ACCESS_LOCAL_WRITE);
	dst_um = mlx5dv_devx_umem_reg(ctx, dst, 8192,
				      IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
					      IBV_ACCESS_REMOTE_READ);
	REQUIRE(src_um && dst_um);
	check_refusals(src_um, src);

	/* the source: local read only, 6000 bytes of its umem; the target
	 * page: local and remote write and read; the page after it: remote
	 * read only (a second mkey over the same umem) */
	mk_src = mkey_create(src_um, src, 6000, MKC_LR, 0x11, &k_src);
	mk_dst = mkey_create(dst_um, dst, 4096, MKC_LR | MKC_LW | MKC_RR | MKC_RW, 0xa5, &k_dst);
	{
		uint8_t mi[MKEY_IN_LEN];

		/* the second half of dst_um: offset 4096, start_addr its address */
		mkey_fill(mi, dst_um, dst + 4096, 4096, MKC_LR | MKC_RR, 0x3c);
		prm_set64(mi, MKEY_UMEM_OFFSET, 4096);
		mk_ro = mlx5dv_devx_obj_create(ctx, mi, sizeof(mi), out, sizeof(out));
		REQUIRE(mk_ro != NULL);
		k_ro = prm_get(out, PRM_OBJ) << 8 | 0x3c;
	}
	CHECK(k_src != k_dst && k_dst != k_ro);
	check_query(mk_dst, k_dst, dst, 4096, MKC_LR | MKC_LW | MKC_RR | MKC_RW);
	check_query(mk_ro, k_ro, dst + 4096, 4096, MKC_LR | MKC_RR);
	/* the umem is the mkeys' now */
	CHECK_EQ(mlx5dv_devx_umem_dereg(dst_um), EBUSY);

	memset(&a, 0, sizeof(a));
	memset(&b, 0, sizeof(b));
	a.ctx = b.ctx = ctx;
	a.gid = b.gid = gid.raw;
	a.pdn = b.pdn = pdn;
	REQUIRE_EQ(tqp_create(&a, 0, out), 0);
	REQUIRE_EQ(tqp_create(&b, 0, out), 0);
	tqp_connect(&a, b.qpn, 7);
	tqp_connect(&b, a.qpn, 7);

	/* WRITE through both keys, then READ back through them */
	gdak_test_fill(src, 8192, 31);
	tqp_post(&a, MLX5_OPCODE_RDMA_WRITE, src + 100, k_src, 3000, (uintptr_t)(dst + 500), k_dst);
	e = tqp_cqe(&a);
	CHECK_EQ(e->op_own >> 4, MLX5_CQE_REQ);
	CHECK_EQ(be16toh(e->wqe_counter), 0);
	CHECK_MEM(dst + 500, src + 100, 3000);
	CHECK_EQ(dst[499], 0);
	CHECK_EQ(dst[3500], 0);
	memcpy(dst + 4096, src, 512);
	tqp_post(&b, MLX5_OPCODE_RDMA_READ, dst, k_dst, 512, (uintptr_t)(dst + 4096), k_ro);
	e = tqp_cqe(&b);
	CHECK_EQ(e->op_own >> 4, MLX5_CQE_REQ);
	CHECK_EQ(be32toh(e->byte_cnt), 512);
	CHECK_MEM(dst, src, 512);

	/* 1. a remote write to the read-only mkey */
	tqp_post(&a, MLX5_OPCODE_RDMA_WRITE, src, k_src, 64, (uintptr_t)(dst + 4096), k_ro);
	check_err(&a, 1, SYND_REMOTE_ACCESS);
	reconnect(&a, &b);
	/* 2. a local read past the source mkey's 6000 bytes (inside its umem) */
	tqp_post(&a, MLX5_OPCODE_RDMA_WRITE, src + 5000, k_src, 2000, (uintptr_t)dst, k_dst);
	check_err(&a, 0, SYND_LOCAL_PROT);
	reconnect(&a, &b);
	/* 3. a destroyed mkey's rkey */
	CHECK_EQ(mlx5dv_devx_obj_destroy(mk_dst), 0);
	tqp_post(&a, MLX5_OPCODE_RDMA_WRITE, src, k_src, 64, (uintptr_t)dst, k_dst);
	check_err(&a, 0, SYND_REMOTE_ACCESS);

	tqp_destroy(&a);
	tqp_destroy(&b);
	CHECK_EQ(mlx5dv_devx_umem_dereg(dst_um), EBUSY); /* mk_ro still */
	CHECK_EQ(mlx5dv_devx_obj_destroy(mk_ro), 0);
	CHECK_EQ(mlx5dv_devx_obj_destroy(mk_src), 0);
	CHECK_EQ(mlx5dv_devx_umem_dereg(dst_um), 0);
	CHECK_EQ(mlx5dv_devx_umem_dereg(src_um), 0);
	CHECK_EQ(mlx5dv_devx_obj_destroy(pdo), 0);
	free(src);
	free(dst);
	ibv_close_device(ctx);
	return gdak_test_end();
}
