/* SPDX-License-Identifier: MIT */
/* hw_devx.c - path 2 (queues in GPU memory through DEVX): being written. */
#include <errno.h>

#include "hw_loc.h"
#include "gdak_log.h"

int hw_dqp_create(struct hw_qp *hq, struct gdak_dev_qp *tmpl)
{
	GDAK_ERR("ctx", hq->ctx->base.id, "GDAK_QP_F_QUEUES_GPU: the DEVX path is not built yet");
	return -ENOTSUP;
}

void hw_dqp_destroy(struct hw_qp *hq) {}

int hw_dqp_modify(struct hw_qp *hq, enum gdak_qp_state to, const struct gdak_qp_info *peer)
{
	return -ENOTSUP;
}

int hw_dqp_query_state(struct hw_qp *hq, enum gdak_qp_state *state)
{
	return -ENOTSUP;
}

int hw_dqp_read_cqe(struct hw_qp *hq, int recv, uint32_t idx, void *out64)
{
	return -ENOTSUP;
}
