/* SPDX-License-Identifier: MIT */
/*
 * verbs_devx.c - DEVX end to end on gdak's libibverbs + libmlx5, as DOCA
 * GPUNetIO and NVSHMEM's IBGDA drive a ConnectX: the capabilities and the
 * RoCE address by raw PRM commands, a PD, UAR pages, umem, two CQs and two
 * RC QPs created and connected by PRM mailboxes this test builds itself,
 * then WQEs written into the umem rings by hand, the doorbell record and
 * the UAR register rung, and the CQEs read back from the umem, byte for
 * byte: an RDMA WRITE, a SEND into a posted receive, a WRITE rung through
 * the BlueFlame half only (a no-record QP).  Around it: the statuses
 * ConnectX gives for unknown commands, short mailboxes, bad fields and
 * wrong states, the kernel's errnos (EINVAL, EREMOTEIO, EBUSY for
 * objects destroyed while in use), and malformed mailboxes that must
 * never crash.
 */
#define _GNU_SOURCE
#include <endian.h>
#include <errno.h>
#include <sched.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <infiniband/mlx5dv.h>
#include <infiniband/verbs.h>

#include "gdak_cq_ring.h"
#include "gdak_prm.h"
#include "gdak_prm_rc.h"
#include "gdak_test.h"
#include "gdak_test_wqe.h"
#include "gdak_verbs.h"

/* ---- the test's own PRM offsets (mlx5_ifc.h numbering; accessors: gdak_prm.h) ---- */

#define CAP(off, w) 0x80 + (off), (w)
#define CQC(off, w) 0x80 + (off), (w)
#define QPC(off, w) 0xc0 + (off), (w)
#define ADS(off, w) 0xc0 + 0xc0 + (off), (w)

static struct ibv_context *ctx;
static union ibv_gid gid;

/* ---- queries ----------------------------------------------------------------- */

static void query_cap(unsigned type, uint8_t *out, size_t outlen)
{
	uint8_t in[16] = { 0 };

	memset(out, 0, outlen);
	prm_set(in, PRM_OPCODE, 0x100);
	prm_set(in, PRM_OP_MOD, type << 1 | 1);
	CHECK_EQ(mlx5dv_devx_general_cmd(ctx, in, sizeof(in), out, outlen), 0);
	CHECK_EQ(prm_get(out, PRM_STATUS), 0);
}

static void check_queries(void)
{
	static uint8_t out[16 + 4096];
	uint8_t in[16] = { 0 }, ra[16 + 32];

	query_cap(0x0, out, sizeof(out));
	CHECK_EQ(prm_get(out, CAP(0x1b6, 2)), 1);     /* port_type: Ethernet */
	CHECK_EQ(prm_get(out, CAP(0x1fc, 4)), 1);     /* cqe_version */
	CHECK_EQ(prm_get(out, CAP(0x88, 8)), 15);     /* log_max_qp_sz */
	CHECK_EQ(prm_get(out, CAP(0x290, 16)), 1024); /* max_wqe_sz_sq */
	CHECK_EQ(prm_get(out, CAP(0x2b0, 16)), 256);  /* max_wqe_sz_rq */
	CHECK_EQ(prm_get(out, CAP(0x26b, 5)), 9);     /* log_bf_reg_size */
	CHECK_EQ(prm_get(out, CAP(0x21d, 1)), 1);     /* roce */
	CHECK_EQ(prm_get(out, CAP(0x21e, 1)), 1);     /* atomic */
	CHECK_EQ(prm_get(out, CAP(0x200, 1)), 1);     /* compact_address_vector */
	CHECK_EQ(prm_get(out, CAP(0x16a, 1)), 1);     /* rts2rts_qp_dscp */
	query_cap(0x3, out, sizeof(out));
	CHECK_EQ(prm_get(out, CAP(0x90, 16)), 0xf); /* CAS, FA, masked CAS, masked FA */
	CHECK_EQ(prm_get(out, CAP(0xb0, 16)), 0xc); /* 4 and 8 bytes on RC */
	CHECK_EQ(prm_get(out, CAP(0xd0, 16)), 0xc); /* 4 and 8 bytes on DC */
	CHECK_EQ(prm_get(out, CAP(0x40, 2)), 1);    /* 8-byte atomics in host endianness */
	query_cap(0x4, out, sizeof(out));
	CHECK_EQ(prm_get(out, CAP(0xf0, 16)), 255);    /* roce_address_table_size */
	CHECK_EQ(prm_get(out, CAP(0xd0, 16)), 0xc000); /* r_roce_min_src_udp_port */
	CHECK_EQ(prm_get(out, CAP(0xc0, 16)), 0xffff); /* r_roce_max_src_udp_port */
	query_cap(0x20, out, sizeof(out));
	CHECK_EQ(prm_get(out, CAP(0x2e1, 1)), 1); /* send_dbr_mode_no_dbr_ext */

	/* QUERY_ROCE_ADDRESS 0: the GID verbs report, RoCE v2 over IPv4 */
	prm_set(in, PRM_OPCODE, 0x760);
	prm_set(in, 0x5c, 4, 1);
	memset(ra, 0, sizeof(ra));
	CHECK_EQ(mlx5dv_devx_general_cmd(ctx, in, sizeof(in), ra, sizeof(ra)), 0);
	CHECK_MEM(ra + 16, gid.raw, 16);
	CHECK_EQ(prm_get(ra, 0x80 + 0xd8, 8), 2);
	CHECK_EQ(prm_get(ra, 0x80 + 0x90, 16), 0x0200); /* MAC 02:00:<IPv4> */
	CHECK_EQ(prm_get(ra, 0x80 + 0xa0, 32), be32toh(*(uint32_t *)(void *)(gid.raw + 12)));
	prm_set(in, 0x40, 16, 300); /* past the table */
	CHECK_EQ(mlx5dv_devx_general_cmd(ctx, in, sizeof(in), ra, sizeof(ra)), EREMOTEIO);
	CHECK_EQ(prm_get(ra, PRM_STATUS), ST_BAD_PARAM);
	CHECK(prm_get(ra, PRM_SYNDROME) != 0);

	/* QUERY_VPORT_STATE: up; another vport: BAD_PARAM (no e-switch) */
	{
		uint8_t vin[16] = { 0 }, vout[16];
		static uint8_t hout[16 + 0x340 / 8];

		prm_set(vin, PRM_OPCODE, 0x750);
		CHECK_EQ(mlx5dv_devx_general_cmd(ctx, vin, sizeof(vin), vout, sizeof(vout)), 0);
		CHECK_EQ(prm_get(vout, 0x7c, 4), 1);
		CHECK_EQ(prm_get(vout, 0x78, 4), 1);
		prm_set(vin, 0x40, 1, 1);
		prm_set(vin, 0x50, 16, 3);
		CHECK_EQ(mlx5dv_devx_general_cmd(ctx, vin, sizeof(vin), vout, sizeof(vout)),
			 EREMOTEIO);
		CHECK_EQ(prm_get(vout, PRM_STATUS), ST_BAD_PARAM);
		/* QUERY_HCA_VPORT_CONTEXT: the port active, link up, the node GUID */
		memset(vin, 0, sizeof(vin));
		prm_set(vin, PRM_OPCODE, 0x762);
		prm_set(vin, 0x4c, 4, 1);
		CHECK_EQ(mlx5dv_devx_general_cmd(ctx, vin, sizeof(vin), hout, sizeof(hout)), 0);
		CHECK_EQ(prm_get(hout, 0x80 + 0x118, 4), 4);
		CHECK_EQ(prm_get(hout, 0x80 + 0x110, 4), 5);
		CHECK_EQ(((uint64_t)prm_get(hout, 0x80 + 0x1c0, 32) << 32 |
			  prm_get(hout, 0x80 + 0x1e0, 32)),
			 be64toh(ibv_get_device_guid(ctx->device)));
		CHECK_EQ(prm_get(hout, 0x80 + 0x300, 16), 0);
		CHECK_EQ(mlx5dv_devx_general_cmd(ctx, vin, sizeof(vin), hout, 32), EREMOTEIO);
		CHECK_EQ(prm_get(hout, PRM_STATUS), ST_BAD_OUTPUT_LEN);
		prm_set(vin, 0x4c, 4, 2);
		CHECK_EQ(mlx5dv_devx_general_cmd(ctx, vin, sizeof(vin), hout, sizeof(hout)),
			 EREMOTEIO);
		CHECK_EQ(prm_get(hout, PRM_STATUS), ST_BAD_PARAM);
	}
}

/* Unknown and malformed commands: ConnectX's status, or the kernel's errno. */
static void check_refusals(void)
{
	uint8_t in[64], out[64];

	memset(in, 0, sizeof(in));
	/* not a query the kernel passes through general_cmd */
	prm_set(in, PRM_OPCODE, 0x500);
	CHECK_EQ(mlx5dv_devx_general_cmd(ctx, in, sizeof(in), out, sizeof(out)), EINVAL);
	/* mailboxes shorter than the header */
	prm_set(in, PRM_OPCODE, 0x100);
	CHECK_EQ(mlx5dv_devx_general_cmd(ctx, in, 8, out, sizeof(out)), EINVAL);
	CHECK_EQ(mlx5dv_devx_general_cmd(ctx, in, sizeof(in), out, 8), EINVAL);
	/* a general-range command the device does not have */
	prm_set(in, PRM_OPCODE, 0xb42);
	memset(out, 0xee, sizeof(out));
	CHECK_EQ(mlx5dv_devx_general_cmd(ctx, in, sizeof(in), out, sizeof(out)), EREMOTEIO);
	CHECK_EQ(prm_get(out, PRM_STATUS), ST_BAD_OP);
	/* QUERY_HCA_CAP into a mailbox too small for the capability */
	prm_set(in, PRM_OPCODE, 0x100);
	CHECK_EQ(mlx5dv_devx_general_cmd(ctx, in, sizeof(in), out, sizeof(out)), EREMOTEIO);
	CHECK_EQ(prm_get(out, PRM_STATUS), ST_BAD_OUTPUT_LEN);
	/* a capability type the device does not have */
	{
		static uint8_t big[16 + 4096];

		prm_set(in, PRM_OP_MOD, 0x7 << 1);
		CHECK_EQ(mlx5dv_devx_general_cmd(ctx, in, sizeof(in), big, sizeof(big)), EREMOTEIO);
		CHECK_EQ(prm_get(big, PRM_STATUS), ST_BAD_PARAM);
	}
	/* obj_create: not a create command; a create command gdak does not run */
	prm_set(in, PRM_OPCODE, 0x100);
	errno = 0;
	CHECK(mlx5dv_devx_obj_create(ctx, in, sizeof(in), out, sizeof(out)) == NULL);
	CHECK_EQ(errno, EINVAL);
	prm_set(in, PRM_OPCODE, 0x908); /* CREATE_RQ (Ethernet RQs) */
	errno = 0;
	prm_refused(ctx, in, sizeof(in), ST_BAD_OP);
	/* CREATE_CQ with the input mailbox cut short */
	prm_set(in, PRM_OPCODE, 0x400);
	errno = 0;
	prm_refused(ctx, in, sizeof(in), ST_BAD_INPUT_LEN);
	/* random mailboxes of every opcode the layer knows: no crash, an answer */
	{
		static uint8_t rin[0x200], rout[0x1100];
		static const unsigned ops[] = { 0x100, 0x400, 0x500, 0x502, 0x503, 0x504,
						0x50b, 0x754, 0x760, 0x800, 0x816, 0xb00,
						0x710, 0x712, 0x713, 0x750, 0x762 };
		uint64_t seed = 7;

		for (unsigned i = 0; i < 400; i++) {
			struct mlx5dv_devx_obj *o;
			size_t il = gdak_test_rand(&seed) % sizeof(rin);
			size_t ol = gdak_test_rand(&seed) % sizeof(rout);

			gdak_test_fill(rin, sizeof(rin), seed);
			prm_set(rin, PRM_OPCODE, ops[i % (sizeof(ops) / sizeof(ops[0]))]);
			(void)mlx5dv_devx_general_cmd(ctx, rin, il, rout, ol);
			o = mlx5dv_devx_obj_create(ctx, rin, il, rout, ol);
			if (o)
				CHECK_EQ(mlx5dv_devx_obj_destroy(o), 0);
		}
		gdak_test_passed++;
	}
}

/* ---- a DEVX RC QP over umem ------------------------------------------------------- */

#define LOG_SQ 6
#define LOG_RQ 4
#define RQ_STRIDE 64 /* 4 data segments */
#define LOG_CQ 6
#define RQ_BYTES ((1u << LOG_RQ) * RQ_STRIDE)
#define SQ_BYTES ((1u << LOG_SQ) * 64u)

struct dqp {
	struct mlx5dv_devx_uar *uar;
	uint8_t *wq;   /* RQ then SQ */
	uint8_t *cqb;  /* CQEs (send and receive share this CQ) */
	uint32_t *dbr; /* [0..1] QP record, [16..17] CQ record */
	struct mlx5dv_devx_umem *wq_um, *cq_um, *dbr_um;
	struct mlx5dv_devx_obj *cq, *qp;
	uint32_t cqn, qpn, pi, ci, rq_pi;
};

static uint32_t pdn;

static void dqp_create(struct dqp *q, int no_dbrec)
{
	uint8_t in[0x880 / 8 + 16], out[16];

	q->uar = mlx5dv_devx_alloc_uar(ctx, MLX5DV_UAR_ALLOC_TYPE_NC);
	REQUIRE(q->uar != NULL);
	CHECK((char *)q->uar->reg_addr - (char *)q->uar->base_addr == 0x800);
	prm_rc_host_umem(ctx, RQ_BYTES + SQ_BYTES, LOG_CQ, &q->wq, &q->wq_um, &q->cqb, &q->cq_um,
			 &q->dbr, &q->dbr_um);

	q->cq = prm_rc_create_cq(ctx, LOG_CQ, q->uar, q->dbr_um, q->cq_um, &q->cqn);

	prm_rc_fill_qp(in, sizeof(in), pdn, q->uar, q->cqn, q->dbr_um, q->wq_um, LOG_SQ, 0, LOG_RQ);
	prm_set(in, QPC(0x80, 2), no_dbrec ? 1 : 0); /* send_dbr_mode */
	q->qp = mlx5dv_devx_obj_create(ctx, in, 0x880 / 8, out, sizeof(out));
	REQUIRE(q->qp != NULL);
	q->qpn = prm_get(out, PRM_OBJ);
}

static int modify(struct dqp *q, unsigned op, uint8_t *in, size_t inlen, unsigned *status)
{
	uint8_t out[16] = { 0 };
	int ret;

	prm_set(in, PRM_OPCODE, op);
	prm_set(in, PRM_OBJ, q->qpn);
	ret = mlx5dv_devx_obj_modify(q->qp, in, inlen, out, sizeof(out));
	*status = prm_get(out, PRM_STATUS);
	return ret;
}

/* The three transitions' mailboxes, as NVSHMEM's IBGDA fills them. */
static void fill_rst2init(uint8_t *in)
{
	prm_rc_fill_rst2init(in, &prm_rc_ibgda);
}

static void fill_init2rtr(uint8_t *in, uint32_t peer_qpn)
{
	prm_rc_fill_init2rtr(in, &prm_rc_ibgda, peer_qpn, gid.raw);
}

static void fill_rtr2rts(uint8_t *in)
{
	prm_rc_fill_rtr2rts(in, &prm_rc_ibgda);
}

static void connect(struct dqp *q, uint32_t peer_qpn)
{
	uint8_t in[0x800 / 8];
	unsigned st;

	fill_rst2init(in);
	CHECK_EQ(modify(q, 0x502, in, sizeof(in), &st), 0);
	fill_init2rtr(in, peer_qpn);
	CHECK_EQ(modify(q, 0x503, in, sizeof(in), &st), 0);
	fill_rtr2rts(in);
	CHECK_EQ(modify(q, 0x504, in, sizeof(in), &st), 0);
}

static uint32_t query_field(struct dqp *q, unsigned bit, unsigned w)
{
	return prm_rc_query(q->qp, q->qpn, bit, w);
}

/*
 * The optional parameters of RTS2RTS (opt_param_mask at 0x80, the
 * kernel's MLX5_QP_OPTPAR_* bits): what the mask names is taken and
 * QUERY_QP shows it, what it does not name is left as it was; bits that
 * are no optional parameter of the transition, an alternate path (APM, not
 * executed) and a path-migration state other than MIGRATED are BAD_PARAM,
 * changing nothing.  NVSHMEM's and DOCA's RTR2RTS set no optional
 * parameter: their mandatory fields were checked by connect().
 */
static void check_optional_params(struct dqp *q)
{
	uint8_t in[0x800 / 8];
	unsigned st;

	memset(in, 0, sizeof(in));
	prm_set(in, 0x80, 32,
		1u << 6 | 1u << 14 | 1u << 7); /* RNR_TIMEOUT, ACK_TIMEOUT, PRI_PATH */
	prm_set(in, QPC(0x4a3, 5), 18);
	prm_set(in, ADS(0x40, 5), 16);
	prm_set(in, ADS(0x10a, 6), 26); /* dscp (rts2rts_qp_dscp) */
	prm_set(in, QPC(0x38d, 3), 3);	/* retry_count: not named, not taken */
	CHECK_EQ(modify(q, 0x505, in, sizeof(in), &st), 0);
	CHECK_EQ(query_field(q, QPC(0x4a3, 5)), 18);
	CHECK_EQ(query_field(q, ADS(0x40, 5)), 16);
	CHECK_EQ(query_field(q, ADS(0x10a, 6)), 26);
	CHECK_EQ(query_field(q, QPC(0x38d, 3)), 7);
	/* no mask: nothing changes */
	prm_set(in, 0x80, 32, 0);
	prm_set(in, QPC(0x4a3, 5), 1);
	CHECK_EQ(modify(q, 0x505, in, sizeof(in), &st), 0);
	CHECK_EQ(query_field(q, QPC(0x4a3, 5)), 18);
	/* retry_count (bit 12) is RTR2RTS's, not RTS2RTS's; APM; ARMED */
	prm_set(in, 0x80, 32, 1u << 12);
	CHECK_EQ(modify(q, 0x505, in, sizeof(in), &st), EREMOTEIO);
	CHECK_EQ(st, ST_BAD_PARAM);
	CHECK_EQ(query_field(q, QPC(0x38d, 3)), 7);
	prm_set(in, 0x80, 32, 1u << 0);
	CHECK_EQ(modify(q, 0x505, in, sizeof(in), &st), EREMOTEIO);
	CHECK_EQ(st, ST_BAD_PARAM);
	prm_set(in, 0x80, 32, 1u << 10);
	prm_set(in, QPC(0x13, 2), 1);
	CHECK_EQ(modify(q, 0x505, in, sizeof(in), &st), EREMOTEIO);
	CHECK_EQ(st, ST_BAD_PARAM);
	prm_set(in, QPC(0x13, 2), 3);
	CHECK_EQ(modify(q, 0x505, in, sizeof(in), &st), 0);
	CHECK_EQ(query_field(q, QPC(0x0, 4)), 3);
}

static unsigned query_state(struct dqp *q)
{
	return query_field(q, QPC(0x0, 4));
}

/* Post one WQE at q->pi; ring the record and the register (or BlueFlame only). */
static void post(struct dqp *q, uint8_t opcode, const void *laddr, uint32_t lkey, uint32_t len,
		 uint64_t raddr, uint32_t rkey, int bf_only)
{
	uint8_t *w = q->wq + RQ_BYTES + (q->pi % (1u << LOG_SQ)) * 64;
	struct mlx5_wqe_ctrl_seg *c = (void *)w;

	memset(w, 0, 64);
	gdak_tw_segs(w + 16, opcode, raddr, rkey, 0, 0, (uintptr_t)laddr, lkey, len);
	gdak_tw_ctrl(w, q->pi, opcode, q->qpn, opcode == MLX5_OPCODE_SEND ? 2 : 3);
	q->pi++;
	/* release stores, not fences: ThreadSanitizer does not model fences
	 * (gcc refuses atomic_thread_fence under -fsanitize=thread) */
	if (bf_only) {
		/* the whole WQE into the second BlueFlame half, no record: seven
		 * words, then the first with release (the NIC reads it first) */
		uint64_t *bf = (uint64_t *)(void *)((char *)q->uar->base_addr + 0x900);

		for (int i = 1; i < 8; i++)
			__atomic_store_n(bf + i, ((const uint64_t *)(const void *)w)[i],
					 __ATOMIC_RELAXED);
		__atomic_store_n(bf, ((const uint64_t *)(const void *)w)[0], __ATOMIC_RELEASE);
	} else {
		__atomic_store_n(&q->dbr[1], htobe32(q->pi & 0xffff), __ATOMIC_RELEASE);
		__atomic_store_n((uint64_t *)q->uar->reg_addr, *(uint64_t *)(void *)c,
				 __ATOMIC_RELEASE);
	}
}

static void post_recv(struct dqp *q, void *addr, uint32_t lkey, uint32_t len)
{
	gdak_tw_recv(q->wq + (q->rq_pi % (1u << LOG_RQ)) * RQ_STRIDE, (uintptr_t)addr, lkey, len);
	q->rq_pi++;
	__atomic_store_n(&q->dbr[0], htobe32(q->rq_pi & 0xffff), __ATOMIC_RELEASE);
}

/* The next CQE of q's CQ (waits, bounded by the test's timeout only). */
static struct mlx5_cqe64 *next_cqe(struct dqp *q)
{
	struct mlx5_cqe64 *e = gdak_cq_ring_wait(q->cqb, 1u << LOG_CQ, q->ci);

	q->ci++;
	q->dbr[16] = htobe32(q->ci & 0xffffff);
	return e;
}

static void destroy(struct dqp *q)
{
	prm_rc_destroy(q->qp, q->cq, q->wq_um, q->cq_um, q->dbr_um, q->uar);
	free(q->wq);
	free(q->cqb);
	free(q->dbr);
}

static void check_create_refusals(struct dqp *q)
{
	uint8_t in[0x880 / 8];

	/* a QP on a CQ that does not exist: BAD_RES */
	memset(in, 0, sizeof(in));
	prm_set(in, PRM_OPCODE, 0x500);
	prm_set(in, QPC(0x28, 24), pdn);
	prm_set(in, QPC(0x51, 4), LOG_SQ);
	prm_set(in, QPC(0x565, 3), 3); /* zero-size RQ */
	prm_set(in, QPC(0x68, 24), q->uar->page_id);
	prm_set(in, QPC(0x3e8, 24), 0xabcde);
	prm_set(in, QPC(0x720, 32), q->dbr_um->umem_id);
	prm_set(in, 0x840, 32, q->wq_um->umem_id);
	errno = 0;
	prm_refused(ctx, in, sizeof(in), ST_BAD_RES);
	/* UD: not executed by gdak, refused with BAD_PARAM */
	prm_set(in, QPC(0x3e8, 24), q->cqn);
	prm_set(in, QPC(0x8, 8), 0x3);
	prm_refused(ctx, in, sizeof(in), ST_BAD_PARAM);
	/* a send queue larger than the umem */
	prm_set(in, QPC(0x8, 8), 0);
	prm_set(in, QPC(0x51, 4), 12);
	prm_refused(ctx, in, sizeof(in), ST_BAD_PARAM);
	/* 128-byte CQEs */
	memset(in, 0, sizeof(in));
	prm_set(in, PRM_OPCODE, 0x400);
	prm_set(in, CQC(0x8, 3), 1);
	prm_set(in, CQC(0x63, 5), 4);
	prm_set(in, CQC(0x68, 24), q->uar->page_id);
	prm_refused(ctx, in, 0x300 / 8, ST_BAD_PARAM);
}

static struct ibv_qp *verbs_qp(struct ibv_pd *pd, struct ibv_cq *cq)
{
	struct ibv_qp *qp = gdak_vt_rc_qp(pd, cq, 16, 8);

	REQUIRE(qp != NULL);
	return qp;
}

/* DEVX commands on verbs-created objects (mlx5dv_devx_qp/cq_query/modify). */
static void check_verbs_objects(struct ibv_pd *pd)
{
	struct ibv_cq *cq = ibv_create_cq(ctx, 32, NULL, NULL, 0);
	struct ibv_qp_init_attr ia;
	struct ibv_qp_attr qa;
	struct ibv_qp *qp;
	struct mlx5dv_cq dvcq;
	struct mlx5dv_obj obj;
	uint8_t in[0x800 / 8], out[0x880 / 8];

	REQUIRE(cq != NULL);
	qp = verbs_qp(pd, cq);
	memset(&obj, 0, sizeof(obj));
	obj.cq.in = cq;
	obj.cq.out = &dvcq;
	CHECK_EQ(mlx5dv_init_obj(&obj, MLX5DV_OBJ_CQ), 0);

	memset(in, 0, sizeof(in));
	prm_set(in, PRM_OPCODE, 0x50b);
	prm_set(in, PRM_OBJ, qp->qp_num);
	CHECK_EQ(mlx5dv_devx_qp_query(qp, in, 16, out, sizeof(out)), 0);
	CHECK_EQ(prm_get(out, QPC(0x0, 4)), 0);		  /* RESET */
	CHECK_EQ(prm_get(out, QPC(0x3e8, 24)), dvcq.cqn); /* cqn_snd */
	CHECK_EQ(prm_get(out, QPC(0x4e8, 24)), dvcq.cqn); /* cqn_rcv */
	CHECK(prm_get(out, QPC(0x51, 4)) >= 4);		  /* 16 WRs: 16 WQEBBs at least */
	memset(&qa, 0, sizeof(qa));
	qa.qp_state = IBV_QPS_INIT;
	qa.port_num = 1;
	qa.qp_access_flags = IBV_ACCESS_REMOTE_WRITE;
	CHECK_EQ(
		ibv_modify_qp(qp, &qa,
			      IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS),
		0);
	CHECK_EQ(mlx5dv_devx_qp_query(qp, in, 16, out, sizeof(out)), 0);
	CHECK_EQ(prm_get(out, QPC(0x0, 4)), 1);	  /* INIT */
	CHECK_EQ(prm_get(out, QPC(0x491, 1)), 1); /* rwe */
	CHECK_EQ(prm_get(out, QPC(0x490, 1)), 0); /* rre */
	/* another QP's number: the kernel's EINVAL */
	prm_set(in, PRM_OBJ, qp->qp_num ^ 1);
	CHECK_EQ(mlx5dv_devx_qp_query(qp, in, 16, out, sizeof(out)), EINVAL);
	/* INIT2RTR naming port 0: ConnectX's BAD_PARAM, the QP stays in INIT */
	memset(in, 0, sizeof(in));
	prm_set(in, PRM_OPCODE, 0x503);
	prm_set(in, PRM_OBJ, qp->qp_num);
	CHECK_EQ(mlx5dv_devx_qp_modify(qp, in, sizeof(in), out, 16), EREMOTEIO);
	CHECK_EQ(prm_get(out, PRM_STATUS), ST_BAD_PARAM);
	memset(&qa, 0, sizeof(qa));
	CHECK_EQ(ibv_query_qp(qp, &qa, IBV_QP_STATE, &ia), 0);
	CHECK_EQ(qa.qp_state, IBV_QPS_INIT);
	/* 2ERR through DEVX: verbs see ERR */
	prm_set(in, PRM_OPCODE, 0x507);
	CHECK_EQ(mlx5dv_devx_qp_modify(qp, in, 16, out, 16), 0);
	memset(&qa, 0, sizeof(qa));
	CHECK_EQ(ibv_query_qp(qp, &qa, IBV_QP_STATE, &ia), 0);
	CHECK_EQ(qa.qp_state, IBV_QPS_ERR);
	/* QUERY_CQ of the verbs CQ */
	memset(in, 0, 16);
	prm_set(in, PRM_OPCODE, 0x402);
	prm_set(in, PRM_OBJ, dvcq.cqn);
	CHECK_EQ(mlx5dv_devx_cq_query(cq, in, 16, out, sizeof(out)), 0);
	CHECK_EQ(1u << prm_get(out, CQC(0x63, 5)), dvcq.cqe_cnt);
	CHECK_EQ(ibv_destroy_qp(qp), 0);
	CHECK_EQ(ibv_destroy_cq(cq), 0);
}

static int vmodify(struct ibv_qp *qp, unsigned op, uint8_t *in, size_t inlen, unsigned *status)
{
	uint8_t out[16] = { 0 };
	int ret;

	prm_set(in, PRM_OPCODE, op);
	prm_set(in, PRM_OBJ, qp->qp_num);
	ret = mlx5dv_devx_qp_modify(qp, in, inlen, out, sizeof(out));
	*status = prm_get(out, PRM_STATUS);
	return ret;
}

/* op with the mailbox in is BAD_PARAM, and qp stays in state. */
static void vrefused(struct ibv_qp *qp, unsigned op, uint8_t *in, enum ibv_qp_state state)
{
	struct ibv_qp_attr at;
	struct ibv_qp_init_attr ia;
	unsigned st;

	CHECK_EQ(vmodify(qp, op, in, 0x800 / 8, &st), EREMOTEIO);
	CHECK_EQ(st, ST_BAD_PARAM);
	CHECK_EQ(ibv_query_qp(qp, &at, IBV_QP_STATE, &ia), 0);
	CHECK_EQ(at.qp_state, state);
}

/* One completion of cq (waits, bounded by the test's timeout only). */
static void poll1(struct ibv_cq *cq, struct ibv_wc *wc)
{
	int n;

	while ((n = ibv_poll_cq(cq, 1, wc)) == 0)
		sched_yield();
	REQUIRE_EQ(n, 1);
}

/* Two ibv_create_qp QPs connected only by mlx5dv_devx_qp_modify, as NVSHMEM
 * drives its verbs-created QPs, then traffic posted with ibv_post_send. */
static void check_verbs_devx_connect(struct ibv_pd *pd, struct ibv_mr *mr, uint8_t *buf)
{
	struct ibv_cq *ca = ibv_create_cq(ctx, 32, NULL, NULL, 0);
	struct ibv_cq *cb = ibv_create_cq(ctx, 32, NULL, NULL, 0);
	struct ibv_qp *qa, *qb, *bad;
	struct ibv_qp_init_attr ia;
	struct ibv_qp_attr at;
	struct ibv_sge sge;
	struct ibv_send_wr wr, *bwr;
	struct ibv_recv_wr rwr, *brwr;
	struct ibv_wc wc;
	uint8_t in[0x800 / 8], out[0x880 / 8];
	unsigned st;

	REQUIRE(ca != NULL && cb != NULL);
	qa = verbs_qp(pd, ca);
	qb = verbs_qp(pd, cb);

	/* from a state the QP is not in: BAD_QP_STATE; a short mailbox: BAD_INPUT_LEN */
	fill_rtr2rts(in);
	CHECK_EQ(vmodify(qa, 0x504, in, sizeof(in), &st), EREMOTEIO);
	CHECK_EQ(st, ST_BAD_QP_STATE);
	fill_rst2init(in);
	CHECK_EQ(vmodify(qa, 0x502, in, 16, &st), EREMOTEIO);
	CHECK_EQ(st, ST_BAD_INPUT_LEN);
	/* pkey_index 1: BAD_PARAM, still RESET */
	prm_set(in, ADS(0x10, 16), 1);
	CHECK_EQ(vmodify(qa, 0x502, in, sizeof(in), &st), EREMOTEIO);
	CHECK_EQ(st, ST_BAD_PARAM);
	CHECK_EQ(ibv_query_qp(qa, &at, IBV_QP_STATE, &ia), 0);
	CHECK_EQ(at.qp_state, IBV_QPS_RESET);

	fill_rst2init(in);
	CHECK_EQ(vmodify(qa, 0x502, in, sizeof(in), &st), 0);
	CHECK_EQ(vmodify(qb, 0x502, in, sizeof(in), &st), 0);
	memset(&at, 0, sizeof(at));
	CHECK_EQ(ibv_query_qp(qa, &at, IBV_QP_STATE | IBV_QP_ACCESS_FLAGS, &ia), 0);
	CHECK_EQ(at.qp_state, IBV_QPS_INIT);
	CHECK_EQ(at.qp_access_flags,
		 IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC);
	/* mtu 0 and log_rra_max 5: BAD_PARAM each, the QP stays in INIT */
	fill_init2rtr(in, qb->qp_num);
	prm_set(in, QPC(0x40, 3), 0);
	vrefused(qa, 0x503, in, IBV_QPS_INIT);
	fill_init2rtr(in, qb->qp_num);
	prm_set(in, QPC(0x488, 3), 5);
	vrefused(qa, 0x503, in, IBV_QPS_INIT);

	fill_init2rtr(in, qb->qp_num);
	CHECK_EQ(vmodify(qa, 0x503, in, sizeof(in), &st), 0);
	fill_init2rtr(in, qa->qp_num);
	CHECK_EQ(vmodify(qb, 0x503, in, sizeof(in), &st), 0);
	/* log_sra_max 5: BAD_PARAM, still RTR */
	fill_rtr2rts(in);
	prm_set(in, QPC(0x388, 3), 5);
	vrefused(qa, 0x504, in, IBV_QPS_RTR);
	fill_rtr2rts(in);
	CHECK_EQ(vmodify(qa, 0x504, in, sizeof(in), &st), 0);
	CHECK_EQ(vmodify(qb, 0x504, in, sizeof(in), &st), 0);
	fill_rtr2rts(in);
	CHECK_EQ(vmodify(qa, 0x505, in, sizeof(in), &st), 0);

	/* the verbs view of what the mailboxes said */
	memset(&at, 0, sizeof(at));
	CHECK_EQ(ibv_query_qp(qa, &at,
			      IBV_QP_STATE | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
				      IBV_QP_SQ_PSN | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
				      IBV_QP_TIMEOUT | IBV_QP_MIN_RNR_TIMER | IBV_QP_AV |
				      IBV_QP_MAX_QP_RD_ATOMIC | IBV_QP_MAX_DEST_RD_ATOMIC,
			      &ia),
		 0);
	CHECK_EQ(at.qp_state, IBV_QPS_RTS);
	CHECK_EQ(at.path_mtu, IBV_MTU_1024);
	CHECK_EQ(at.dest_qp_num, qb->qp_num);
	CHECK_EQ(at.rq_psn, 0x100);
	CHECK_EQ(at.sq_psn, 0x100);
	CHECK_EQ(at.retry_cnt, 7);
	CHECK_EQ(at.rnr_retry, 7);
	CHECK_EQ(at.timeout, 14);
	CHECK_EQ(at.min_rnr_timer, 12);
	CHECK_EQ(at.max_rd_atomic, 4);
	CHECK_EQ(at.max_dest_rd_atomic, 4);
	CHECK_EQ(at.ah_attr.grh.hop_limit, 64);
	CHECK_MEM(at.ah_attr.grh.dgid.raw, gid.raw, 16);
	/* and the DEVX view */
	memset(in, 0, 16);
	prm_set(in, PRM_OPCODE, 0x50b);
	prm_set(in, PRM_OBJ, qa->qp_num);
	CHECK_EQ(mlx5dv_devx_qp_query(qa, in, 16, out, sizeof(out)), 0);
	CHECK_EQ(prm_get(out, QPC(0x0, 4)), 3);
	CHECK_EQ(prm_get(out, QPC(0xa8, 24)), qb->qp_num);
	CHECK_EQ(prm_get(out, QPC(0x40, 3)), 3);

	/* RDMA WRITE qa -> qb's memory */
	gdak_test_fill(buf + 32768, 3000, 21);
	memset(buf + 40960, 0, 4096);
	sge.addr = (uintptr_t)(buf + 32768);
	sge.length = 3000;
	sge.lkey = mr->lkey;
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = 0x1111;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.opcode = IBV_WR_RDMA_WRITE;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.wr.rdma.remote_addr = (uintptr_t)(buf + 40960);
	wr.wr.rdma.rkey = mr->rkey;
	CHECK_EQ(ibv_post_send(qa, &wr, &bwr), 0);
	poll1(ca, &wc);
	CHECK_EQ(wc.status, IBV_WC_SUCCESS);
	CHECK_EQ(wc.opcode, IBV_WC_RDMA_WRITE);
	CHECK_EQ(wc.wr_id, 0x1111);
	CHECK_EQ(wc.qp_num, qa->qp_num);
	CHECK_MEM(buf + 40960, buf + 32768, 3000);
	CHECK_EQ(buf[40960 + 3000], 0);

	/* SEND qa -> qb into a posted receive */
	gdak_test_fill(buf + 49152, 512, 22);
	memset(buf + 53248, 0, 1024);
	sge.addr = (uintptr_t)(buf + 53248);
	sge.length = 1024;
	memset(&rwr, 0, sizeof(rwr));
	rwr.wr_id = 0x2222;
	rwr.sg_list = &sge;
	rwr.num_sge = 1;
	CHECK_EQ(ibv_post_recv(qb, &rwr, &brwr), 0);
	sge.addr = (uintptr_t)(buf + 49152);
	sge.length = 512;
	wr.wr_id = 0x3333;
	wr.opcode = IBV_WR_SEND;
	CHECK_EQ(ibv_post_send(qa, &wr, &bwr), 0);
	poll1(ca, &wc);
	CHECK_EQ(wc.status, IBV_WC_SUCCESS);
	CHECK_EQ(wc.opcode, IBV_WC_SEND);
	CHECK_EQ(wc.wr_id, 0x3333);
	poll1(cb, &wc);
	CHECK_EQ(wc.status, IBV_WC_SUCCESS);
	CHECK_EQ(wc.opcode, IBV_WC_RECV);
	CHECK_EQ(wc.wr_id, 0x2222);
	CHECK_EQ(wc.byte_len, 512);
	CHECK_EQ(wc.qp_num, qb->qp_num);
	CHECK_EQ(wc.src_qp, qa->qp_num);
	CHECK_MEM(buf + 53248, buf + 49152, 512);
	CHECK_EQ(buf[53248 + 512], 0);

	/* a GID verbs cannot reach (not IPv4-mapped): BAD_PARAM naming rgid */
	bad = verbs_qp(pd, ca);
	fill_rst2init(in);
	CHECK_EQ(vmodify(bad, 0x502, in, sizeof(in), &st), 0);
	fill_init2rtr(in, qb->qp_num);
	memset(in + (0xc0 + 0xc0 + 0x80) / 8, 0xfe, 16);
	CHECK_EQ(vmodify(bad, 0x503, in, sizeof(in), &st), EREMOTEIO);
	CHECK_EQ(st, ST_BAD_PARAM);
	CHECK_EQ(ibv_query_qp(bad, &at, IBV_QP_STATE, &ia), 0);
	CHECK_EQ(at.qp_state, IBV_QPS_INIT);

	/* RTS2RTS on the verbs QP: what opt_param_mask names (min_rnr_nak,
	 * bit 6) and verbs can change reaches ibv_query_qp; a field not named
	 * does not (ack_timeout without bit 14 is still 14); an alternate path
	 * (bit 0): BAD_PARAM, nothing changes */
	fill_rtr2rts(in);
	prm_set(in, 0x80, 32, 1u << 6);
	prm_set(in, QPC(0x4a3, 5), 20);
	prm_set(in, ADS(0x40, 5), 9);
	CHECK_EQ(vmodify(qa, 0x505, in, sizeof(in), &st), 0);
	CHECK_EQ(ibv_query_qp(qa, &at, IBV_QP_MIN_RNR_TIMER | IBV_QP_TIMEOUT, &ia), 0);
	CHECK_EQ(at.min_rnr_timer, 20);
	CHECK_EQ(at.timeout, 14);
	prm_set(in, 0x80, 32, 1u << 0 | 1u << 6);
	prm_set(in, QPC(0x4a3, 5), 3);
	CHECK_EQ(vmodify(qa, 0x505, in, sizeof(in), &st), EREMOTEIO);
	CHECK_EQ(st, ST_BAD_PARAM);
	CHECK_EQ(ibv_query_qp(qa, &at, IBV_QP_MIN_RNR_TIMER, &ia), 0);
	CHECK_EQ(at.min_rnr_timer, 20);
	/* RRE alone named (bit 1): remote read flips, write and atomic stay */
	{
		unsigned before;

		CHECK_EQ(ibv_query_qp(qa, &at, IBV_QP_ACCESS_FLAGS, &ia), 0);
		before = at.qp_access_flags;
		CHECK(before & IBV_ACCESS_REMOTE_WRITE);
		fill_rtr2rts(in);
		prm_set(in, 0x80, 32, 1u << 1);
		prm_set(in, QPC(0x490, 1), !(before & IBV_ACCESS_REMOTE_READ));
		CHECK_EQ(vmodify(qa, 0x505, in, sizeof(in), &st), 0);
		CHECK_EQ(ibv_query_qp(qa, &at, IBV_QP_ACCESS_FLAGS, &ia), 0);
		CHECK_EQ(at.qp_access_flags, before ^ IBV_ACCESS_REMOTE_READ);
	}

	CHECK_EQ(ibv_destroy_qp(bad), 0);
	CHECK_EQ(ibv_destroy_qp(qa), 0);
	CHECK_EQ(ibv_destroy_qp(qb), 0);
	CHECK_EQ(ibv_destroy_cq(ca), 0);
	CHECK_EQ(ibv_destroy_cq(cb), 0);
}

int main(void)
{
	struct ibv_pd *pd;
	struct ibv_mr *mr;
	struct mlx5dv_devx_obj *pdo;
	struct dqp a, b;
	uint8_t *buf, in[0x800 / 8];
	struct mlx5_cqe64 *e;
	unsigned st;

	pd = gdak_vt_open_pd(&ctx, &gid);
	buf = gdak_test_pages(65536);
	mr = ibv_reg_mr(pd, buf, 65536,
			IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ);
	REQUIRE(mr != NULL);

	check_queries();
	check_refusals();
	check_verbs_objects(pd);
	check_verbs_devx_connect(pd, mr, buf);

	pdo = prm_alloc_pd(ctx, &pdn);
	CHECK(pdn != 0);

	memset(&a, 0, sizeof(a));
	memset(&b, 0, sizeof(b));
	dqp_create(&a, 0);
	dqp_create(&b, 1);
	check_create_refusals(&a);
	CHECK_EQ(query_state(&a), 0);

	/* INIT2RTR from RESET: BAD_QP_STATE, nothing changes */
	memset(in, 0, sizeof(in));
	CHECK_EQ(modify(&a, 0x503, in, sizeof(in), &st), EREMOTEIO);
	CHECK_EQ(st, ST_BAD_QP_STATE);
	/* a modify naming another QP: the kernel's EINVAL */
	{
		uint8_t o2[16];

		prm_set(in, PRM_OPCODE, 0x502);
		prm_set(in, PRM_OBJ, b.qpn);
		CHECK_EQ(mlx5dv_devx_obj_modify(a.qp, in, sizeof(in), o2, sizeof(o2)), EINVAL);
	}
	connect(&a, b.qpn);
	connect(&b, a.qpn);
	CHECK_EQ(query_state(&a), 3);
	CHECK_EQ(query_state(&b), 3);
	check_optional_params(&a);

	/* RDMA WRITE a -> b: data and the requester CQE */
	gdak_test_fill(buf, 4096, 11);
	post(&a, MLX5_OPCODE_RDMA_WRITE, buf, mr->lkey, 3000, (uintptr_t)(buf + 8192), mr->rkey, 0);
	e = next_cqe(&a);
	CHECK_EQ(e->op_own >> 4, MLX5_CQE_REQ);
	CHECK_EQ(be16toh(e->wqe_counter), 0);
	CHECK_EQ(be32toh(e->sop_drop_qpn) & 0xffffff, a.qpn);
	CHECK_MEM(buf + 8192, buf, 3000);

	/* SEND a -> b into a posted receive: both CQEs */
	gdak_test_fill(buf + 16384, 512, 12);
	post_recv(&b, buf + 20480, mr->lkey, 1024);
	post(&a, MLX5_OPCODE_SEND, buf + 16384, mr->lkey, 512, 0, 0, 0);
	e = next_cqe(&a);
	CHECK_EQ(e->op_own >> 4, MLX5_CQE_REQ);
	CHECK_EQ(be16toh(e->wqe_counter), 1);
	e = next_cqe(&b);
	CHECK_EQ(e->op_own >> 4, MLX5_CQE_RESP_SEND);
	CHECK_EQ(be32toh(e->byte_cnt), 512);
	CHECK_EQ(be16toh(e->wqe_counter), 0);
	CHECK_EQ(be32toh(e->sop_drop_qpn) & 0xffffff, b.qpn);
	CHECK_MEM(buf + 20480, buf + 16384, 512);

	/* b has no send record (NO_DBR_EXT): a WRITE rung by BlueFlame alone */
	gdak_test_fill(buf + 24576, 256, 13);
	post(&b, MLX5_OPCODE_RDMA_WRITE, buf + 24576, mr->lkey, 256, (uintptr_t)(buf + 28672),
	     mr->rkey, 1);
	e = next_cqe(&b);
	CHECK_EQ(e->op_own >> 4, MLX5_CQE_REQ);
	CHECK_EQ(be32toh(e->sop_drop_qpn) & 0xffffff, b.qpn);
	CHECK_MEM(buf + 28672, buf + 24576, 256);

	/* 2ERR, QUERY_QP says ERR; 2RST, RESET */
	memset(in, 0, sizeof(in));
	CHECK_EQ(modify(&a, 0x507, in, 16, &st), 0);
	CHECK_EQ(query_state(&a), 6);
	CHECK_EQ(modify(&a, 0x50a, in, 16, &st), 0);
	CHECK_EQ(query_state(&a), 0);

	/* wrong order: the CQ and the umem a QP uses are busy */
	CHECK_EQ(mlx5dv_devx_obj_destroy(a.cq), EBUSY);
	CHECK_EQ(mlx5dv_devx_umem_dereg(a.wq_um), EBUSY);
	CHECK_EQ(mlx5dv_devx_obj_destroy(pdo), EBUSY);
	destroy(&a);
	destroy(&b);
	CHECK_EQ(mlx5dv_devx_obj_destroy(pdo), 0);

	ibv_dereg_mr(mr);
	ibv_dealloc_pd(pd);
	free(buf);
	ibv_close_device(ctx);
	return gdak_test_end();
}
