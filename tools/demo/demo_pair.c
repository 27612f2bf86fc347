/* SPDX-License-Identifier: MIT */
/* demo_pair.c - gdak-demo's two connected QPs, for the host path
 * (demo_main.c) and for the CUDA path when it opens its own (demo_cuda.cu). */
#include "demo.h"

int demo_pair_open(struct demo_pair *p, const char *device, struct gdak_dev_qp **da,
		   struct gdak_dev_qp **db)
{
	struct gdak_qp_attr qa = { .sq_depth = 64, .cq_depth = 64, .nic_thread = -1 };
	struct gdak_qp_attr qb = {
		.sq_depth = 8, .cq_depth = 8, .rq_depth = 64, .rcq_depth = 64, .nic_thread = -1
	};
	struct gdak_qp_info ia, ib;
	int rc;

	if ((rc = gdak_open(device, &p->ctx)) || (rc = gdak_qp_create(p->ctx, &qa, &p->qa)) ||
	    (rc = gdak_qp_create(p->ctx, &qb, &p->qb)) || (rc = gdak_qp_info(p->qa, &ia)) ||
	    (rc = gdak_qp_info(p->qb, &ib)) || (rc = gdak_qp_connect(p->qa, &ib)) ||
	    (rc = gdak_qp_connect(p->qb, &ia)) || (rc = gdak_qp_export(p->qa, da)) ||
	    (rc = gdak_qp_export(p->qb, db)))
		return rc;
	return 0;
}

void demo_pair_close(struct demo_pair *p)
{
	if (p->amr)
		gdak_mr_dereg(p->amr);
	if (p->bmr)
		gdak_mr_dereg(p->bmr);
	if (p->qa)
		gdak_qp_destroy(p->qa);
	if (p->qb)
		gdak_qp_destroy(p->qb);
	if (p->abuf)
		gdak_mem_free(p->ctx, p->abuf);
	if (p->bbuf)
		gdak_mem_free(p->ctx, p->bbuf);
	if (p->ctx)
		gdak_close(p->ctx);
}
