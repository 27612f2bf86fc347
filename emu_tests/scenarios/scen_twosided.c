/* SPDX-License-Identifier: MIT */
/*
 * scen_twosided.c - SEND / receive: a gathered SEND into a larger receive
 * buffer, SEND with immediate, and an inline SEND; the target checks the
 * receive CQE's opcode, byte count, immediate and QP number, and the bytes.
 */
#include <errno.h>
#include <string.h>

#include "gdak_test.h"
#include "scenarios.h"

#define RECV_OFF 4096u
#define RECV_LEN 256u

static uint64_t addr_of(const void *p) { return (uint64_t)(uintptr_t)p; }

struct sr_job {
	int rc[3], rrc[3];
	struct gdak_dev_cqe err, cqe[3];
};

static const uint32_t send_len[3] = {200, 16, 12};

static void sr_dev(struct scen_pair *p, struct gdak_dev_qp *q, void *arg)
{
	struct sr_job *j = arg;
	uint32_t lkey = gdak_mr_lkey(p->mr[0]);

	for (uint32_t k = 0; k < 3; k++) {
		struct gdak_dev_sge sge = {addr_of(p->buf[0]) + 1024u * k, send_len[k], lkey};
		uint32_t nbb = k == 2 ? gdak_dev_wqe_bbs_inline(0, send_len[k])
				      : gdak_dev_wqe_bbs_sge(0, 1);
		int64_t idx;

		scen_rq_post(p->dq[1], addr_of(p->buf[1]) + RECV_OFF + RECV_LEN * k, RECV_LEN,
			     gdak_mr_lkey(p->mr[1]));
		idx = scen_reserve(q, nbb);
		if (idx < 0)
			return;
		if (k == 0)
			gdak_dev_wqe_send(q, (uint64_t)idx, GDAK_DEV_WQE_SIGNAL, &sge, 1);
		else if (k == 1)
			gdak_dev_wqe_send_imm(q, (uint64_t)idx, GDAK_DEV_WQE_SIGNAL, &sge, 1,
					      0xcafef00du);
		else
			gdak_dev_wqe_send_inline(q, (uint64_t)idx, GDAK_DEV_WQE_SIGNAL,
						 p->buf[0] + 1024u * k, send_len[k]);
		j->rc[k] = scen_submit_wait(p, q, (uint64_t)idx, (uint64_t)idx + nbb, &j->err);
		j->rrc[k] = scen_rq_poll(p, p->dq[1], &j->cqe[k]);
		if (j->rc[k] || j->rrc[k] != 1)
			return;
	}
}

int scen_send_recv(const struct gdak_scen_cfg *cfg)
{
	struct scen_pair p;
	struct sr_job j = { .rc = { -1, -1, -1 }, .rrc = { -1, -1, -1 } };
	static const uint8_t zero[RECV_LEN];
	static const uint8_t opc[3] = {MLX5_CQE_RESP_SEND, MLX5_CQE_RESP_SEND_IMM,
				       MLX5_CQE_RESP_SEND};

	if (scen_pair_open(cfg, &p, 8))
		return 0;
	gdak_test_fill(p.buf[0], 4096, 6);
	scen_on_device(&p, sr_dev, &j);
	for (uint32_t k = 0; k < 3; k++) {
		uint8_t *rb = p.buf[1] + RECV_OFF + RECV_LEN * k;
		CHECK_EQ(j.rc[k], 0);
		CHECK_EQ(j.rrc[k], 1);
		CHECK_EQ(j.cqe[k].opcode, opc[k]);
		CHECK_EQ(j.cqe[k].byte_cnt, send_len[k]);
		CHECK_EQ(j.cqe[k].qpn, gdak_qp_num(p.qp[1]));
		CHECK_EQ(j.cqe[k].wqe_index, k);	/* receive WQEs complete in order */
		CHECK_MEM(rb, p.buf[0] + 1024u * k, send_len[k]);
		CHECK_MEM(rb + send_len[k], zero, RECV_LEN - send_len[k]);
	}
	CHECK_EQ(j.cqe[1].imm, 0xcafef00du);
	scen_pair_close(&p);
	return 0;
}
