/* SPDX-License-Identifier: MIT */
/*
 * nm_loop.c - the in-process transport: both QPs live in this process, so
 * a request is applied to the peer directly through its responder, on the
 * requester's NIC thread, and completes inside post_send.
 *
 * Connect looks the peer up in the process-wide QPN registry; the peer's
 * gdak_qp_info.node must be this process's (another process needs
 * "emu:udp").  A peer destroyed while connected disappears from qp->peer
 * (nm_qp.c) and later requests complete with TRANSPORT_RETRY_EXC_ERR, what
 * an RC requester gets from a peer that no longer answers.
 */
#include <errno.h>

#include "nm_dma.h"
#include "nm_loc.h"

static int loop_qp_info(struct nm_qp *qp, struct gdak_qp_info *out)
{
	out->transport = GDAK_QPI_LOOP;
	return 0;
}

static int loop_qp_connect(struct nm_qp *qp, const struct gdak_qp_info *peer)
{
	struct nm_qp *p;

	if (peer->transport != GDAK_QPI_LOOP || peer->node != qp->ctx->node) {
		GDAK_ERR("qp", qp->id, "peer QP 0x%x is not an in-process loop QP (transport %u, "
			 "node %llx, ours %llx): open both sides with \"emu\", or use \"emu:udp\" "
			 "between processes", peer->qpn, peer->transport,
			 (unsigned long long)peer->node, (unsigned long long)qp->ctx->node);
		return -EINVAL;
	}
	p = nm_qp_lookup(peer->qpn);
	if (!p) {
		GDAK_ERR("qp", qp->id, "peer QP 0x%x does not exist (destroyed?)", peer->qpn);
		return -ENOENT;
	}
	atomic_store(&qp->peer, p);
	return 0;
}

/* Resolve every local segment first: a bad lkey fails locally (LOCAL_PROT)
 * before anything reaches the responder, as on hardware. */
static int check_local(struct nm_qp *qp, struct nm_op *op, unsigned need)
{
	for (unsigned i = 0; i < op->nseg; i++) {
		void *a;
		uint32_t l;
		struct nm_mr *mr;
		int r = nm_req_local_sge(qp, op, i, need, &a, &l, &mr, &op->rule);
		if (r)
			return r;
	}
	return 0;
}

static int do_write_send(struct nm_qp *qp, struct nm_qp *peer, struct nm_op *op)
{
	struct nm_resp_msg m;
	uint32_t off = 0;
	int r;

	r = nm_resp_begin_wqe(peer, &m, op->wqe_index, op->opcode, op->raddr, op->rkey, op->len,
			      op->imm);
	if (r) {
		op->rule = m.rule;
		return r;
	}
	if (op->flags & NM_OPF_INLINE) {
		r = nm_resp_write(&m, 0, op->inl, GDAK_MEM_HOST, op->len);
	} else {
		for (unsigned i = 0; i < op->nseg && !r; i++) {
			void *a;
			uint32_t l;
			struct nm_mr *mr;

			r = nm_req_local_sge(qp, op, i, 0, &a, &l, &mr, &op->rule);
			if (!r && l)
				r = nm_resp_write(&m, off, a, mr->kind, l);
			off += l;
		}
	}
	if (r && !op->rule)
		op->rule = m.rule;
	return nm_resp_end(&m, r);
}

static int do_read(struct nm_qp *qp, struct nm_qp *peer, struct nm_op *op)
{
	struct nm_resp_msg m;
	uint32_t off = 0;
	int r;

	r = nm_resp_begin_wqe(peer, &m, op->wqe_index, op->opcode, op->raddr, op->rkey, op->len, 0);
	for (unsigned i = 0; i < op->nseg && !r; i++) {
		void *a;
		uint32_t l;
		struct nm_mr *mr;

		r = nm_req_local_sge(qp, op, i, GDAK_ACCESS_LOCAL_WRITE, &a, &l, &mr, &op->rule);
		if (!r && l)
			r = nm_resp_read(&m, off, a, mr->kind, l);
		off += l;
	}
	if (r && !op->rule)
		op->rule = m.rule;
	return r;
}

static int do_atomic(struct nm_qp *qp, struct nm_qp *peer, struct nm_op *op)
{
	void *a;
	uint32_t l;
	struct nm_mr *mr;
	uint64_t orig, be;
	int r;

	r = nm_req_local_sge(qp, op, 0, GDAK_ACCESS_LOCAL_WRITE, &a, &l, &mr, &op->rule);
	if (r)
		return r;
	r = nm_resp_atomic(peer, op->opcode, op->raddr, op->rkey, op, &orig, &op->rule);
	if (r)
		return r;
	/* ConnectX returns the original value big-endian (network order) */
	be = gdak_htobe64(orig);
	return nm_dma_copy(a, mr->kind, &be, GDAK_MEM_HOST, 8) ? MLX5_CQE_SYNDROME_LOCAL_PROT_ERR : 0;
}

static enum nm_tx_result loop_post_send(struct nm_qp *qp, struct nm_op *op)
{
	struct nm_qp *peer = atomic_load_explicit(&qp->peer, memory_order_acquire);
	int r;

	if (!peer) {
		op->status = MLX5_CQE_SYNDROME_TRANSPORT_RETRY_EXC_ERR;
		op->rule = "peer_gone";
		return NM_TX_DONE;
	}
	switch (op->opcode) {
	case MLX5_OPCODE_RDMA_WRITE:
	case MLX5_OPCODE_RDMA_WRITE_IMM:
	case MLX5_OPCODE_SEND:
	case MLX5_OPCODE_SEND_IMM:
		/* a receive WQE must not be consumed for a request that fails
		 * locally; a plain WRITE checks its segments as it reads them */
		if (!(op->flags & NM_OPF_INLINE) && op->opcode != MLX5_OPCODE_RDMA_WRITE) {
			r = check_local(qp, op, 0);
			if (r)
				break;
		}
		r = do_write_send(qp, peer, op);
		break;
	case MLX5_OPCODE_RDMA_READ:
		r = check_local(qp, op, GDAK_ACCESS_LOCAL_WRITE);
		if (!r)
			r = do_read(qp, peer, op);
		break;
	case MLX5_OPCODE_ATOMIC_CS:
	case MLX5_OPCODE_ATOMIC_FA:
	case MLX5_OPCODE_ATOMIC_MASKED_CS:
	case MLX5_OPCODE_ATOMIC_MASKED_FA:
		r = do_atomic(qp, peer, op);
		break;
	default:
		r = MLX5_CQE_SYNDROME_LOCAL_QP_OP_ERR;
		op->rule = "bad_opcode";
		break;
	}
	if (r == NM_RESP_RNR)
		return NM_TX_BUSY;
	op->status = (uint8_t)r;
	return NM_TX_DONE;
}

const struct nm_transport_ops nm_tr_loop_ops = {
	.name = "loop",
	.qp_info = loop_qp_info,
	.qp_connect = loop_qp_connect,
	.post_send = loop_post_send,
};
