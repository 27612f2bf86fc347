/* SPDX-License-Identifier: MIT */
/*
 * scen_errors.c - a write with a wrong rkey: the responder NAKs it (IBA
 * 9.7.5.2.4, "remote access error"), the requester gets an error CQE with
 * syndrome REMOTE_ACCESS_ERR (0x13) naming the WQE, the QP goes to ERR, the
 * device API's wait returns the error instead of hanging, the host sees the
 * same through gdak_qp_query_error, and the target memory is untouched.
 */
#include <errno.h>
#include <string.h>

#include "gdak_test.h"
#include "scenarios.h"

static uint64_t addr_of(const void *p) { return (uint64_t)(uintptr_t)p; }

struct bad_job {
	int rc, rc_again;
	int64_t idx;
	struct gdak_dev_cqe err, err_again;
};

static void bad_dev(struct scen_pair *p, struct gdak_dev_qp *q, void *arg)
{
	struct bad_job *j = arg;
	struct gdak_dev_sge sge = {addr_of(p->buf[0]), 256, gdak_mr_lkey(p->mr[0])};
	uint32_t nbb = gdak_dev_wqe_bbs_sge(1, 1);
	/* flip index bits of the key, keep its low "key" byte: no MR of
	 * this context has it */
	uint32_t bad = gdak_mr_rkey(p->mr[1]) ^ 0x00a5a500u;
	int64_t idx;

	/* a good write first, so the failing WQE is not at index 0 */
	idx = scen_reserve(q, nbb);
	if (idx < 0)
		return;
	gdak_dev_wqe_write(q, (uint64_t)idx, GDAK_DEV_WQE_SIGNAL, addr_of(p->buf[1]) + 4096,
			   gdak_mr_rkey(p->mr[1]), &sge, 1);
	if (scen_submit_wait(p, q, (uint64_t)idx, (uint64_t)idx + nbb, &j->err))
		return;

	j->idx = idx = scen_reserve(q, nbb);
	if (idx < 0)
		return;
	gdak_dev_wqe_write(q, (uint64_t)idx, GDAK_DEV_WQE_SIGNAL, addr_of(p->buf[1]), bad, &sge, 1);
	j->rc = scen_submit_wait(p, q, (uint64_t)idx, (uint64_t)idx + nbb, &j->err);
	/* a later wait must report the same error at once, never hang */
	j->rc_again = gdak_dev_sq_wait_timeout(q, (uint64_t)idx + nbb, p->cfg->timeout_ns,
					       &j->err_again);
}

int scen_bad_rkey(const struct gdak_scen_cfg *cfg)
{
	struct scen_pair p;
	struct bad_job j = { .rc = 0, .idx = -1 };
	struct gdak_qp_error qe;
	static const uint8_t zero[256];

	if (scen_pair_open(cfg, &p, 0))
		return 0;
	gdak_test_fill(p.buf[0], 256, 7);
	scen_on_device(&p, bad_dev, &j);
	CHECK_EQ(j.idx, 1);
	CHECK_EQ(j.rc, -EIO);
	CHECK_EQ(j.err.opcode, MLX5_CQE_REQ_ERR);
	CHECK_EQ(j.err.syndrome, MLX5_CQE_SYNDROME_REMOTE_ACCESS_ERR);
	CHECK_EQ(j.err.wqe_opcode, MLX5_OPCODE_RDMA_WRITE);
	CHECK_EQ(j.err.wqe_index, 1);
	CHECK_EQ(j.err.qpn, gdak_qp_num(p.qp[0]));
	CHECK_EQ(j.rc_again, -EIO);
	CHECK_EQ(j.err_again.syndrome, MLX5_CQE_SYNDROME_REMOTE_ACCESS_ERR);
	CHECK_MEM(p.buf[1], zero, 256);			/* nothing written */
	CHECK_MEM(p.buf[1] + 4096, p.buf[0], 256);	/* the good write landed */

	CHECK_EQ(gdak_qp_query_error(p.qp[0], &qe), 0);
	CHECK_EQ(qe.state, GDAK_QPS_ERR);
	CHECK_EQ(qe.syndrome, MLX5_CQE_SYNDROME_REMOTE_ACCESS_ERR);
	CHECK_EQ(qe.wqe_index, 1);
	CHECK_EQ(qe.opcode, MLX5_OPCODE_RDMA_WRITE);
	CHECK(qe.text[0] != '\0');
	scen_pair_close(&p);
	return 0;
}
