/* SPDX-License-Identifier: MIT */
/*
 * gdak_prm_rc.h - the mailboxes the DEVX tests send for an RC QP over
 * umem: CREATE_CQ, CREATE_QP and the three transitions, as NVSHMEM's IBGDA
 * and DOCA fill them.  One builder per command; what differs between the
 * tests (PSNs, atomics, read depths, RNR and retry counts, the receive
 * side) is a parameter, so every test sends the fields it always did.
 * The offsets are the tests' own (see gdak_prm.h).  C and CUDA host code.
 */
#ifndef GDAK_PRM_RC_H
#define GDAK_PRM_RC_H

#include <errno.h>
#include <stdint.h>
#include <string.h>

#include <infiniband/mlx5dv.h>

#include "gdak_prm.h"
#include "gdak_test.h"

/* where the contexts start in their mailboxes */
#define PRM_CQC(off, w) 0x80 + (off), (w)
#define PRM_QPC(off, w) 0xc0 + (off), (w)
#define PRM_ADS(off, w) 0xc0 + 0xc0 + (off), (w)

/* ALLOC_PD (0x800) through DEVX: the object, its PD number in *pdn; the
 * test ends (REQUIRE) when it is refused. */
static inline struct mlx5dv_devx_obj *prm_alloc_pd(struct ibv_context *ctx, uint32_t *pdn)
{
	uint8_t in[16], out[16];
	struct mlx5dv_devx_obj *pdo;

	memset(in, 0, sizeof(in));
	prm_set(in, PRM_OPCODE, 0x800);
	pdo = mlx5dv_devx_obj_create(ctx, in, sizeof(in), out, sizeof(out));
	REQUIRE(pdo != NULL);
	*pdn = prm_get(out, PRM_OBJ);
	return pdo;
}

/* Host memory for a QP, registered as umem: wq_len bytes of rings, a CQ
 * of 1 << log_cq CQEs (each INVALID, owner 1), a page of records. */
static inline void prm_rc_host_umem(struct ibv_context *ctx, size_t wq_len, unsigned log_cq,
				    uint8_t **wq, struct mlx5dv_devx_umem **wq_um, uint8_t **cqb,
				    struct mlx5dv_devx_umem **cq_um, uint32_t **dbr,
				    struct mlx5dv_devx_umem **dbr_um)
{
	*wq = (uint8_t *)gdak_test_pages(wq_len);
	*cqb = (uint8_t *)gdak_test_pages((1u << log_cq) * 64);
	*dbr = (uint32_t *)gdak_test_pages(4096);
	for (unsigned i = 0; i < (1u << log_cq); i++)
		(*cqb)[i * 64 + 63] = 0xf1;
	*wq_um = mlx5dv_devx_umem_reg(ctx, *wq, wq_len, IBV_ACCESS_LOCAL_WRITE);
	*cq_um = mlx5dv_devx_umem_reg(ctx, *cqb, (1u << log_cq) * 64, IBV_ACCESS_LOCAL_WRITE);
	*dbr_um = mlx5dv_devx_umem_reg(ctx, *dbr, 4096, IBV_ACCESS_LOCAL_WRITE);
	REQUIRE(*wq_um && *cq_um && *dbr_um);
}

/* CREATE with the mailbox in (len bytes) is refused: no object, errno
 * EREMOTEIO, status st. */
static inline void prm_refused(struct ibv_context *ctx, const void *in, size_t len, unsigned st)
{
	uint8_t out[16] = { 0 };

	errno = 0;
	CHECK(mlx5dv_devx_obj_create(ctx, in, len, out, sizeof(out)) == NULL);
	CHECK_EQ(errno, EREMOTEIO);
	CHECK_EQ(prm_get(out, PRM_STATUS), st);
}

/* CREATE_CQ over umem: the CQ record at dbr_umem + 64. */
static inline void prm_rc_fill_cq(struct ibv_context *ctx, uint8_t *in, size_t len, unsigned log_cq,
				  uint32_t uar_page, uint32_t dbr_umem, uint32_t cq_umem)
{
	uint32_t eqn = 0;

	memset(in, 0, len);
	prm_set(in, PRM_OPCODE, 0x400);
	prm_set(in, PRM_CQC(0x63, 5), log_cq);
	prm_set(in, PRM_CQC(0x68, 24), uar_page);
	CHECK_EQ(mlx5dv_devx_query_eqn(ctx, 0, &eqn), 0);
	prm_set(in, PRM_CQC(0xb8, 8), eqn);
	prm_set(in, PRM_CQC(0x20, 32), dbr_umem);
	prm_set64(in, 0x80 + 0x1c0, 64);
	prm_set(in, 0x2c0, 32, cq_umem);
}

/* The CQ of prm_rc_fill_cq, created; its number in *cqn. */
static inline struct mlx5dv_devx_obj *prm_rc_create_cq(struct ibv_context *ctx, unsigned log_cq,
						       const struct mlx5dv_devx_uar *uar,
						       const struct mlx5dv_devx_umem *dbr_um,
						       const struct mlx5dv_devx_umem *cq_um,
						       uint32_t *cqn)
{
	uint8_t in[0x300 / 8], out[16];
	struct mlx5dv_devx_obj *cq;

	prm_rc_fill_cq(ctx, in, sizeof(in), log_cq, uar->page_id, dbr_um->umem_id, cq_um->umem_id);
	cq = mlx5dv_devx_obj_create(ctx, in, sizeof(in), out, sizeof(out));
	REQUIRE(cq != NULL);
	*cqn = prm_get(out, PRM_OBJ);
	return cq;
}

/* CREATE_QP (RC, pm_state MIGRATED, one CQ for both sides) over umem.
 * The receive side: rmpn != 0 that RMP (rq_type SRQ); else log_rq != 0 a
 * ring of 64-byte WQEs; else none (zero-length RQ). */
static inline void prm_rc_fill_qp(uint8_t *in, size_t len, uint32_t pdn,
				  const struct mlx5dv_devx_uar *uar, uint32_t cqn,
				  const struct mlx5dv_devx_umem *dbr_um,
				  const struct mlx5dv_devx_umem *wq_um, unsigned log_sq,
				  uint32_t rmpn, unsigned log_rq)
{
	memset(in, 0, len);
	prm_set(in, PRM_OPCODE, 0x500);
	prm_set(in, PRM_QPC(0x13, 2), 3);
	prm_set(in, PRM_QPC(0x28, 24), pdn);
	prm_set(in, PRM_QPC(0x51, 4), log_sq);
	if (rmpn) {
		prm_set(in, PRM_QPC(0x565, 3), 1);
		prm_set(in, PRM_QPC(0x568, 24), rmpn);
	} else if (log_rq) {
		prm_set(in, PRM_QPC(0x49, 4), log_rq);
		prm_set(in, PRM_QPC(0x4d, 3), 2); /* stride 16 << 2 */
	} else {
		prm_set(in, PRM_QPC(0x565, 3), 3);
	}
	prm_set(in, PRM_QPC(0x68, 24), uar->page_id);
	prm_set(in, PRM_QPC(0x3e8, 24), cqn);
	prm_set(in, PRM_QPC(0x4e8, 24), cqn);
	prm_set(in, PRM_QPC(0x720, 32), dbr_um->umem_id);
	prm_set(in, 0x840, 32, wq_um->umem_id);
}

/* The connection's parameters the tests choose differently. */
struct prm_rc_conn {
	uint32_t psn;	      /* next_send_psn and next_rcv_psn */
	unsigned atomics;     /* RST2INIT: remote atomics too (rae, atomic_mode 3) */
	unsigned log_rra_max; /* INIT2RTR */
	unsigned min_rnr_nak; /* INIT2RTR */
	unsigned rnr_retry;   /* RTR2RTS */
	unsigned log_sra_max; /* RTR2RTS */
};

/* The connection as NVSHMEM's IBGDA makes it: PSN 0x100, remote atomics,
 * four reads in flight each way, RNR NAK timer 12, RNR retries 7. */
static const struct prm_rc_conn prm_rc_ibgda = {
	.psn = 0x100,
	.atomics = 1,
	.log_rra_max = 2,
	.min_rnr_nak = 12,
	.rnr_retry = 7,
	.log_sra_max = 2,
};

/* RST2INIT: remote read and write (and atomics), port 1. */
static inline void prm_rc_fill_rst2init(uint8_t *in, const struct prm_rc_conn *c)
{
	memset(in, 0, 0x800 / 8);
	prm_set(in, PRM_QPC(0x490, 1), 1);
	prm_set(in, PRM_QPC(0x491, 1), 1);
	if (c->atomics) {
		prm_set(in, PRM_QPC(0x492, 1), 1);
		prm_set(in, PRM_QPC(0x48c, 4), 3);
	}
	prm_set(in, PRM_ADS(0x128, 8), 1);
}

/* INIT2RTR to peer over the RoCE GID, MTU 1024. */
static inline void prm_rc_fill_init2rtr(uint8_t *in, const struct prm_rc_conn *c, uint32_t peer,
					const uint8_t gid[16])
{
	memset(in, 0, 0x800 / 8);
	prm_set(in, PRM_QPC(0x40, 3), 3);
	prm_set(in, PRM_QPC(0x43, 5), 30);
	prm_set(in, PRM_QPC(0xa8, 24), peer);
	prm_set(in, PRM_QPC(0x4a8, 24), c->psn);
	prm_set(in, PRM_QPC(0x488, 3), c->log_rra_max);
	prm_set(in, PRM_QPC(0x4a3, 5), c->min_rnr_nak);
	prm_set(in, PRM_ADS(0x128, 8), 1);
	prm_set(in, PRM_ADS(0x28, 1), 1);
	prm_set(in, PRM_ADS(0x58, 8), 64);
	memcpy(in + (0xc0 + 0xc0 + 0x80) / 8, gid, 16);
}

/* RTR2RTS: retry count 7, ack timeout 14. */
static inline void prm_rc_fill_rtr2rts(uint8_t *in, const struct prm_rc_conn *c)
{
	memset(in, 0, 0x800 / 8);
	prm_set(in, PRM_QPC(0x3c8, 24), c->psn);
	prm_set(in, PRM_QPC(0x38d, 3), 7);
	prm_set(in, PRM_QPC(0x390, 3), c->rnr_retry);
	prm_set(in, PRM_ADS(0x40, 5), 14);
	prm_set(in, PRM_QPC(0x388, 3), c->log_sra_max);
}

/* MODIFY_QP op on qp (its number qpn) with the mailbox in. */
static inline void prm_rc_modify(struct mlx5dv_devx_obj *qp, uint32_t qpn, unsigned op, uint8_t *in)
{
	uint8_t out[16] = { 0 };

	prm_set(in, PRM_OPCODE, op);
	prm_set(in, PRM_OBJ, qpn);
	CHECK_EQ(mlx5dv_devx_obj_modify(qp, in, 0x800 / 8, out, sizeof(out)), 0);
}

/* RST2INIT, INIT2RTR to peer, RTR2RTS. */
static inline void prm_rc_connect(struct mlx5dv_devx_obj *qp, uint32_t qpn,
				  const struct prm_rc_conn *c, uint32_t peer, const uint8_t gid[16])
{
	uint8_t in[0x800 / 8];

	prm_rc_fill_rst2init(in, c);
	prm_rc_modify(qp, qpn, 0x502, in);
	prm_rc_fill_init2rtr(in, c, peer, gid);
	prm_rc_modify(qp, qpn, 0x503, in);
	prm_rc_fill_rtr2rts(in, c);
	prm_rc_modify(qp, qpn, 0x504, in);
}

/* A field of QUERY_QP's answer. */
static inline uint32_t prm_rc_query(struct mlx5dv_devx_obj *qp, uint32_t qpn, unsigned bit,
				    unsigned w)
{
	uint8_t in[16] = { 0 };
	static uint8_t out[0x880 / 8];

	prm_set(in, PRM_OPCODE, 0x50b);
	prm_set(in, PRM_OBJ, qpn);
	CHECK_EQ(mlx5dv_devx_obj_query(qp, in, sizeof(in), out, sizeof(out)), 0);
	return prm_get(out, bit, w);
}

/* The QP (when there is one) and its CQ, the three umem registrations
 * and the UAR; the memory under the umem is the caller's to free. */
static inline void prm_rc_destroy(struct mlx5dv_devx_obj *qp, struct mlx5dv_devx_obj *cq,
				  struct mlx5dv_devx_umem *wq_um, struct mlx5dv_devx_umem *cq_um,
				  struct mlx5dv_devx_umem *dbr_um, struct mlx5dv_devx_uar *uar)
{
	struct mlx5dv_devx_umem *um[] = { wq_um, cq_um, dbr_um };

	if (qp)
		CHECK_EQ(mlx5dv_devx_obj_destroy(qp), 0);
	CHECK_EQ(mlx5dv_devx_obj_destroy(cq), 0);
	for (unsigned i = 0; i < 3; i++)
		CHECK_EQ(mlx5dv_devx_umem_dereg(um[i]), 0);
	mlx5dv_devx_free_uar(uar);
}

#endif /* GDAK_PRM_RC_H */
