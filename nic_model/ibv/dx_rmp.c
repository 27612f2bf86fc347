/* SPDX-License-Identifier: MIT */
/*
 * dx_rmp.c - DEVX RMPs (receive memory pools: the shared receive queue a
 * DEVX program creates over umem, what DPDK's shared RQ and a DC target's
 * receive side use), and the QPs and DCTs attached to one.
 *
 * The ring is the program's: 1 << log_wq_sz WQEs of 1 << log_wq_stride
 * bytes in a umem, and a doorbell record whose first big-endian word
 * counts the WQEs posted (its low 16 bits, as an SRQ's wqe_counter).  A
 * WQE is a 16-byte next segment (mlx5_wqe_srq_next_seg: next_wqe_index at
 * byte 2) and then data segments, a short list ended by MLX5_INVALID_LKEY
 * - unless the RMP is cyclic with basic_cyclic_rcv_wqe, whose WQEs are
 * data segments only.  The NIC consumes as ConnectX does: the first WQE
 * is index 0, the next is the one the consumed WQE's next segment names
 * (linked list) or the following index (cyclic), and a receive CQE names
 * the WQE by its index in the RMP ring (wqe_counter), so the program can
 * give exactly that WQE back to its free list.
 *
 * The NIC model gives every QP its own receive queue; an attached QP gets
 * a small one of the NIC's own (struct dx_rq_att), and the responder's
 * rq_empty hook moves the RMP's next WQE into it when a message needs one
 * (under the QP's resp_lock; the RMP's lock orders QPs of several NIC
 * threads).  The hook writes the QP's receive record, dbrec[0] - for a
 * DEVX RC QP the word of the program's record that ConnectX leaves unused
 * when the QP has no receive queue of its own.
 *
 * The ring and the record may be GPU memory (umem on cudaMalloc memory):
 * the hook then reads the record, and the whole WQE it takes, through the
 * CUDA driver (nm_rg_read) - one device-to-host copy each, when a message
 * needs a WQE and the QP's own queue is empty.
 *
 * Not modelled, refused as ConnectX refuses a bad value (with a log line):
 * striding WQs, signatures, a page offset, WQEs of more than 16 segments.
 * The limit event has no event path here (gdak's DEVX raises no events):
 * lwm is kept and reported, MODIFY_RMP changes it.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <gdak/gdak.h>
#include <gdak/mlx5.h>

#include "dx_loc.h"
#include "nm_ext.h"
#include "nm_loc.h"
#include "gdak_log.h"

enum {
	WQ_LINKED_LIST = 0x0,
	WQ_CYCLIC = 0x1,
	RMPC_RDY = 0x1,
	/* the attached QP's own receive queue: a message takes a WQE as it
	 * arrives, under resp_lock, so one slot at a time is in use */
	ATT_RQ_CNT = 16,
	ATT_RQ_STRIDE = 256,
	/* RMP numbers and gdak's verbs SRQ numbers share qpc.srqn_rmpn_xrqn:
	 * RMPs count from here, verbs SRQs from 1 */
	RMPN_BASE = 0x800000,
};

#define FAIL(st, field, ...) dx_fail(out, outlen, in, inlen, st, 0, field, __VA_ARGS__)

struct dx_rq_att {
	struct dx_obj *rmp;
	struct nm_qp *nq;
	uint8_t *rq; /* ATT_RQ_CNT * ATT_RQ_STRIDE */
	uint16_t ids[ATT_RQ_CNT];
	uint32_t dbrec[2]; /* the DCT's record, when the QP has none of the program's */
};

static uint16_t be16_at(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

static int wq_ok(const void *in, size_t inlen, void *out, size_t outlen)
{
	unsigned type = dx_get(in, inlen, DXF_WQ_TYPE);
	unsigned lstride = dx_get(in, inlen, DXF_WQ_LOG_STRIDE);
	unsigned lsz = dx_get(in, inlen, DXF_WQ_LOG_SZ);

	if (type != WQ_LINKED_LIST && type != WQ_CYCLIC)
		return FAIL(DX_ST_BAD_PARAM, "rmpc.wq.wq_type",
			    "%u: striding WQs are not executed by gdak's NIC model "
			    "(0 linked list, 1 cyclic)",
			    type);
	if (dx_get(in, inlen, DXF_WQ_SIGNATURE))
		return FAIL(DX_ST_BAD_PARAM, "rmpc.wq.wq_signature",
			    "WQE signatures are not checked by gdak's NIC model");
	if (lsz > 15)
		return FAIL(DX_ST_BAD_PARAM, "rmpc.wq.log_wq_sz", "%u > log_max_srq_sz 15", lsz);
	if (lstride < 4 || lstride > 8)
		return FAIL(DX_ST_BAD_PARAM, "rmpc.wq.log_wq_stride",
			    "%u: a receive WQE is 16 (4) .. 256 (8) bytes here (16 segments at "
			    "most)",
			    lstride);
	if (lstride == 4 && !(type == WQ_CYCLIC && dx_get(in, inlen, DXF_RMPC_BASIC_CYCLIC)))
		return FAIL(DX_ST_BAD_PARAM, "rmpc.wq.log_wq_stride",
			    "4: 16 bytes hold the next segment and no data segment");
	if (dx_get(in, inlen, DXF_WQ_PAGE_OFFSET))
		return FAIL(DX_ST_BAD_PARAM, "rmpc.wq.page_offset", "must be 0 with a umem");
	if (!dx_get(in, inlen, DXF_WQ_WQ_UMEM_VALID) || !dx_get(in, inlen, DXF_WQ_DBR_UMEM_VALID))
		return FAIL(DX_ST_BAD_PARAM, "rmpc.wq.wq_umem_valid",
			    "a DEVX RMP's ring and record are umem (page lists are the kernel's)");
	if (dx_get64(in, inlen, DXF_WQ_DBR_ADDR) % 4)
		return FAIL(DX_ST_BAD_PARAM, "rmpc.wq.dbr_addr", "0x%llx is not 4-byte aligned",
			    (unsigned long long)dx_get64(in, inlen, DXF_WQ_DBR_ADDR));
	if (dx_get(in, inlen, DXF_WQ_LWM) > (1u << lsz))
		return FAIL(DX_ST_BAD_PARAM, "rmpc.wq.lwm", "%u beyond the %u WQEs",
			    dx_get(in, inlen, DXF_WQ_LWM), 1u << lsz);
	return 0;
}

int dx_rmp_create(struct dx_ctx *c, const void *in, size_t inlen, void *out, size_t outlen,
		  struct dx_obj **obj)
{
	struct dx_obj *o, *pd, *wq = NULL, *dbr = NULL;
	uint64_t bytes;
	uint8_t *ring;
	uint32_t *rec;
	int ret, ring_gpu, rec_gpu;

	ret = dx_cmd_begin(in, inlen, DX_RMP_IN_LEN, out, outlen, wq_ok);
	if (ret)
		return ret;
	bytes = (uint64_t)1 << (dx_get(in, inlen, DXF_WQ_LOG_SZ) +
				dx_get(in, inlen, DXF_WQ_LOG_STRIDE));
	pthread_mutex_lock(&c->lock);
	pd = dx_find(c, DX_OBJ_PD, dx_get(in, inlen, DXF_WQ_PD));
	ring = dx_umem_at(c, dx_get(in, inlen, DXF_WQ_WQ_UMEM_ID),
			  dx_get64(in, inlen, DXF_WQ_WQ_UMEM_OFFSET), bytes, &wq);
	rec = dx_umem_at(c, dx_get(in, inlen, DXF_WQ_DBR_UMEM_ID),
			 dx_get64(in, inlen, DXF_WQ_DBR_ADDR), 4, &dbr);
	pthread_mutex_unlock(&c->lock);
	/* a DEVX PD is held; a verbs PD's number (mlx5dv_init_obj) is taken
	 * as for a QP's qpc.pd */
	if (!dx_get(in, inlen, DXF_WQ_PD))
		return FAIL(DX_ST_BAD_RES, "rmpc.wq.pd", "PD 0 does not exist");
	if (!ring)
		return FAIL(DX_ST_BAD_PARAM, "rmpc.wq.wq_umem_id",
			    "umem 0x%x does not hold the %llu-byte ring at offset 0x%llx",
			    dx_get(in, inlen, DXF_WQ_WQ_UMEM_ID), (unsigned long long)bytes,
			    (unsigned long long)dx_get64(in, inlen, DXF_WQ_WQ_UMEM_OFFSET));
	if (!rec)
		return FAIL(DX_ST_BAD_PARAM, "rmpc.wq.dbr_umem_id",
			    "umem 0x%x does not hold the record at 0x%llx",
			    dx_get(in, inlen, DXF_WQ_DBR_UMEM_ID),
			    (unsigned long long)dx_get64(in, inlen, DXF_WQ_DBR_ADDR));
	/* GPU memory (1): the hook reads the record and each WQE it takes
	 * through the CUDA driver; memory it cannot read (GPU memory without
	 * the engine, or none the CPU can load from): refused */
	ring_gpu = dx_ring_kind(c, ring, bytes, "RMP ring");
	if (ring_gpu < 0)
		return FAIL(DX_ST_BAD_PARAM, "rmpc.wq.wq_umem_id",
			    "the ring cannot be read by the NIC model (the line above says why)");
	rec_gpu = dx_ring_kind(c, rec, 4, "RMP record");
	if (rec_gpu < 0)
		return FAIL(DX_ST_BAD_PARAM, "rmpc.wq.dbr_umem_id",
			    "the record cannot be read by the NIC model (the line above says why)");

	o = dx_obj_new(c, DX_OBJ_RMP);
	if (!o)
		return FAIL(DX_ST_NO_RES, NULL, "out of memory");
	pthread_mutex_init(&o->u.rmp.lock, NULL);
	o->u.rmp.ring = ring;
	o->u.rmp.dbrec = rec;
	o->u.rmp.log_sz = dx_get(in, inlen, DXF_WQ_LOG_SZ);
	o->u.rmp.stride = 1u << dx_get(in, inlen, DXF_WQ_LOG_STRIDE);
	o->u.rmp.linked = dx_get(in, inlen, DXF_WQ_TYPE) == WQ_LINKED_LIST;
	o->u.rmp.next_seg = !(dx_get(in, inlen, DXF_WQ_TYPE) == WQ_CYCLIC &&
			      dx_get(in, inlen, DXF_RMPC_BASIC_CYCLIC));
	o->u.rmp.lwm = (uint16_t)dx_get(in, inlen, DXF_WQ_LWM);
	o->u.rmp.ring_gpu = ring_gpu == 1;
	o->u.rmp.rec_gpu = rec_gpu == 1;
	memcpy(o->u.rmp.rmpc, (const uint8_t *)in + DX_RMPC_OFF, DX_RMPC_LEN);
	o->destroy_op = DX_OP_DESTROY_RMP;
	dx_obj_publish(c, o, RMPN_BASE, (struct dx_obj *const[]){ pd, wq, dbr }, 3, out, outlen);
	GDAK_DBG("devx", o->id, "CREATE_RMP: %u WQEs of %u bytes, %s%s%s%s", 1u << o->u.rmp.log_sz,
		 o->u.rmp.stride, o->u.rmp.linked ? "linked list" : "cyclic",
		 o->u.rmp.next_seg ? "" : " (no next segment)",
		 o->u.rmp.ring_gpu ? ", ring in GPU memory" : "",
		 o->u.rmp.rec_gpu ? ", record in GPU memory" : "");
	*obj = o;
	return 0;
}

/* The record's first word (WQEs posted, big-endian): a load, or a read
 * through the CUDA driver when it is GPU memory.  0 or -EIO. */
static int rmp_posted(struct dx_obj *o, uint32_t *posted)
{
	uint32_t be;

	if (!o->u.rmp.rec_gpu) {
		*posted = gdak_be32toh(__atomic_load_n(o->u.rmp.dbrec, __ATOMIC_ACQUIRE));
		return 0;
	}
	if (nm_rg_read(&be, o->u.rmp.dbrec, 4)) {
		GDAK_ERR_RL("devx", o->id, "RMP record at %p (GPU memory): read failed",
			    (void *)o->u.rmp.dbrec);
		return -EIO;
	}
	*posted = gdak_be32toh(be);
	return 0;
}

/* The rmpc as QUERY_RMP and MODIFY_RMP see it: its image, at out's
 * offsets, with the live state and counters. */
static void rmpc_out(struct dx_obj *o, void *out, size_t outlen)
{
	uint32_t posted = 0;

	(void)rmp_posted(o, &posted); /* unreadable: reported as 0 posted */
	memcpy((uint8_t *)out + DX_RMPC_OFF, o->u.rmp.rmpc, DX_RMPC_LEN);
	dx_set(out, outlen, DXF_RMPC_STATE, RMPC_RDY);
	pthread_mutex_lock(&o->u.rmp.lock);
	dx_set(out, outlen, DXF_WQ_HW_COUNTER, o->u.rmp.taken);
	dx_set(out, outlen, DXF_WQ_LWM, o->u.rmp.lwm);
	pthread_mutex_unlock(&o->u.rmp.lock);
	dx_set(out, outlen, DXF_WQ_SW_COUNTER, posted & 0xffff);
}

int dx_rmp_query(struct dx_obj *o, const void *in, size_t inlen, void *out, size_t outlen)
{
	int ret = dx_out_begin(out, outlen, DX_RMP_IN_LEN, in, inlen);

	if (ret)
		return ret;
	rmpc_out(o, out, outlen);
	return 0;
}

int dx_rmp_modify(struct dx_obj *o, const void *in, size_t inlen, void *out, size_t outlen)
{
	unsigned lwm;
	int ret;

	ret = dx_cmd_begin(in, inlen, DX_RMP_IN_LEN, out, outlen, NULL);
	if (ret)
		return ret;
	if (dx_get(in, inlen, DXF_RMP_IN_STATE) != RMPC_RDY)
		return FAIL(DX_ST_BAD_RES_STATE, "modify_rmp_in.rmp_state",
			    "%u: the RMP is in RDY (1)", dx_get(in, inlen, DXF_RMP_IN_STATE));
	if (dx_get(in, inlen, DXF_RMPC_STATE) != RMPC_RDY)
		return FAIL(DX_ST_BAD_PARAM, "rmpc.state", "%u: an RMP moves RDY to RDY only",
			    dx_get(in, inlen, DXF_RMPC_STATE));
	/* the bitmask names what changes; lwm is the one field that can */
	if (dx_get(in, inlen, DXF_RMP_BITMASK_HI) || (dx_get(in, inlen, DXF_RMP_BITMASK_LO) & ~1u))
		return FAIL(DX_ST_BAD_PARAM, "modify_rmp_in.bitmask",
			    "0x%08x%08x: lwm (bit 0) is what MODIFY_RMP changes",
			    dx_get(in, inlen, DXF_RMP_BITMASK_HI),
			    dx_get(in, inlen, DXF_RMP_BITMASK_LO));
	if (!dx_get(in, inlen, DXF_RMP_BITMASK_LWM))
		return 0;
	lwm = dx_get(in, inlen, DXF_WQ_LWM);
	if (lwm > (1u << o->u.rmp.log_sz))
		return FAIL(DX_ST_BAD_PARAM, "rmpc.wq.lwm", "%u beyond the %u WQEs", lwm,
			    1u << o->u.rmp.log_sz);
	pthread_mutex_lock(&o->u.rmp.lock);
	o->u.rmp.lwm = (uint16_t)lwm;
	pthread_mutex_unlock(&o->u.rmp.lock);
	return 0;
}

int dx_rmp_destroy(struct dx_obj *o)
{
	pthread_mutex_destroy(&o->u.rmp.lock);
	return 0;
}

/* ---- attached QPs ------------------------------------------------------------------------ */

/* nm_qp.rq_empty: under the QP's resp_lock, with its receive queue empty. */
static void rmp_take(void *arg)
{
	struct dx_rq_att *t = arg;
	struct dx_obj *o = t->rmp;
	struct nm_qp *nq = t->nq;
	uint32_t n = 1u << o->u.rmp.log_sz, idx, slot, nseg;
	uint16_t posted, avail, next;
	uint32_t rec;
	const uint8_t *w;
	uint8_t *dst, gw[ATT_RQ_STRIDE];

	pthread_mutex_lock(&o->u.rmp.lock);
	if (rmp_posted(o, &rec)) {
		pthread_mutex_unlock(&o->u.rmp.lock);
		return; /* looks empty: the sender sees RNR and retries */
	}
	posted = (uint16_t)rec;
	avail = (uint16_t)(posted - o->u.rmp.taken);
	if (!avail || avail > n) {
		if (avail > n && !o->u.rmp.overrun) {
			/* more posted than the ring holds: WQEs overwritten before the
			 * NIC took them; none is trusted (RNR from here on) */
			o->u.rmp.overrun = true;
			GDAK_WARN("devx", o->id,
				  "RMP record says %u WQEs posted, %u taken: more than the %u the "
				  "ring holds",
				  posted, o->u.rmp.taken, n);
		}
		pthread_mutex_unlock(&o->u.rmp.lock);
		return;
	}
	idx = o->u.rmp.head;
	w = o->u.rmp.ring + (size_t)idx * o->u.rmp.stride;
	if (o->u.rmp.ring_gpu) {
		/* the whole WQE over at once: its next segment and data segments */
		if (nm_rg_read(gw, w, o->u.rmp.stride)) {
			pthread_mutex_unlock(&o->u.rmp.lock);
			GDAK_ERR_RL("devx", o->id, "RMP WQE %u at %p (GPU memory): read failed",
				    idx, (const void *)w);
			return;
		}
		w = gw;
	}
	next = o->u.rmp.linked ? be16_at(w + 2) : (uint16_t)(idx + 1);
	o->u.rmp.head = next & (n - 1);
	o->u.rmp.taken++;
	pthread_mutex_unlock(&o->u.rmp.lock);

	slot = (uint32_t)(nq->rq_ci & (ATT_RQ_CNT - 1));
	dst = t->rq + (size_t)slot * ATT_RQ_STRIDE;
	if (o->u.rmp.next_seg)
		w += 16;
	nseg = (o->u.rmp.stride - (o->u.rmp.next_seg ? 16u : 0u)) / 16;
	memcpy(dst, w, (size_t)nseg * 16);
	if (nseg < ATT_RQ_STRIDE / 16) {
		struct mlx5_wqe_data_seg *end = (void *)(dst + (size_t)nseg * 16);

		memset(end, 0, sizeof(*end));
		end->lkey = gdak_htobe32(MLX5_INVALID_LKEY);
	}
	t->ids[slot] = (uint16_t)idx;
	__atomic_store_n(&nq->dbrec[MLX5_RCV_DBR], gdak_htobe32((uint32_t)(nq->rq_ci + 1) & 0xffff),
			 __ATOMIC_RELEASE);
}

struct dx_rq_att *dx_rq_att_new(struct dx_obj *rmp, struct nm_ext_qp_attr *a)
{
	struct dx_rq_att *t = calloc(1, sizeof(*t));

	if (!t)
		return NULL;
	t->rq = aligned_alloc(64, ATT_RQ_CNT * ATT_RQ_STRIDE);
	if (!t->rq) {
		free(t);
		return NULL;
	}
	memset(t->rq, 0, ATT_RQ_CNT * ATT_RQ_STRIDE);
	t->rmp = rmp;
	a->rq = t->rq;
	a->rq_wqe_cnt = ATT_RQ_CNT;
	a->rq_stride = ATT_RQ_STRIDE;
	if (!a->dbrec)
		a->dbrec = t->dbrec;
	return t;
}

void dx_rq_att_bind(struct dx_rq_att *t, struct gdak_qp *qp)
{
	struct nm_qp *nq = nm_qp_of(qp);

	t->nq = nq;
	dx_rq_att_reset(t);
	nq->rq_wqe_id = t->ids;
	nq->rq_empty_arg = t;
	atomic_store_explicit(&nq->rq_empty, rmp_take, memory_order_release);
}

void dx_rq_att_reset(struct dx_rq_att *t)
{
	/* the QP's receive consumer starts again at 0 (RESET): so does the
	 * record the hook keeps for it */
	__atomic_store_n(&t->nq->dbrec[MLX5_RCV_DBR], 0, __ATOMIC_RELEASE);
}

void dx_rq_att_free(struct dx_rq_att *t)
{
	if (!t)
		return;
	free(t->rq);
	free(t);
}
