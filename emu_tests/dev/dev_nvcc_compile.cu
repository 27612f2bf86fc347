/* SPDX-License-Identifier: MIT */
/*
 * dev_nvcc_compile.cu - every device-API function instantiated in __global__
 * kernels (thread, warp and block scopes), so that nvcc compiles all of it
 * to SASS for the configured architecture (sm_90 in CI).  Building this file
 * is the test: the executable launches nothing and exits 0.
 */
#include <stdio.h>

#include <gdak/dev/dev.h>

struct sink {
	uint64_t v[64];
	int rc[64];
};

__global__ void k_low_level(struct gdak_dev_qp *qp, struct sink *o)
{
	struct gdak_dev_sge sge = {0x1000, 64, 1};
	struct gdak_dev_sge two[2] = {sge, sge};
	struct gdak_dev_cqe c;
	uint8_t data[32] = {1, 2, 3};
	uint64_t i = gdak_dev_sq_reserve(qp, 16);
	int k = 0;

	o->v[k++] = gdak_dev_sq_free_bbs(qp);
	o->v[k++] = gdak_dev_wqe_nop(qp, i++, GDAK_DEV_WQE_SIGNAL);
	o->v[k++] = gdak_dev_wqe_write(qp, i++, GDAK_DEV_WQE_FENCE, 1, 2, two, 2);
	o->v[k++] = gdak_dev_wqe_write_imm(qp, i++, 0, 1, 2, &sge, 1, 3);
	o->v[k++] = gdak_dev_wqe_write_inline(qp, i++, 0, 1, 2, data, 12);
	o->v[k++] = gdak_dev_wqe_write_imm_inline(qp, i++, 0, 1, 2, data, 12, 4);
	o->v[k++] = gdak_dev_wqe_send(qp, i++, GDAK_DEV_WQE_SOLICITED, &sge, 1);
	o->v[k++] = gdak_dev_wqe_send_imm(qp, i++, 0, &sge, 1, 5);
	o->v[k++] = gdak_dev_wqe_send_inline(qp, i++, 0, data, 20);
	o->v[k++] = gdak_dev_wqe_send_imm_inline(qp, i++, 0, data, 20, 6);
	o->v[k++] = gdak_dev_wqe_read(qp, i++, 0, 1, 2, &sge, 1);
	o->v[k++] = gdak_dev_wqe_fetch_add(qp, i++, 0, 8, 2, 1, 0x2000, 3);
	o->v[k++] = gdak_dev_wqe_cas(qp, i++, 0, 8, 2, 1, 2, 0x2000, 3);
	o->v[k++] = gdak_dev_wqe_masked_cas(qp, i, 0, 8, 2, 1, 2, 3, 4, 0x2000, 3);
	i += 2;
	o->v[k++] = gdak_dev_wqe_masked_fetch_add(qp, i, 0, 8, 2, 1, 2, 0x2000, 3);
	o->v[k++] = gdak_dev_wqe_bbs_at(qp, i);
	gdak_dev_sq_submit(qp, i, i + 2);
	gdak_dev_sq_update_dbrec(qp, i + 2);
	gdak_dev_sq_ring(qp, i, i + 2, 0);

	o->rc[0] = gdak_dev_cq_poll_one(&qp->scq, qp->sq_done, &c);
	gdak_dev_cq_update_dbrec(&qp->scq);
	o->rc[1] = gdak_dev_sq_drain(qp);
	o->rc[2] = gdak_dev_sq_progress(qp);
	o->rc[3] = gdak_dev_sq_wait_timeout(qp, i, 1000, &c);
	o->rc[4] = gdak_dev_sq_wait(qp, 0, &c);
	o->rc[5] = gdak_dev_cq_error(&qp->scq, &c);
	gdak_dev_cq_abort(&qp->scq);
	o->v[k++] = c.wqe_index;

	o->rc[6] = gdak_dev_rwqe_set(qp, 0, &sge, 1);
	gdak_dev_rq_update_dbrec(qp, 1);
	o->rc[7] = gdak_dev_recv_post(qp, &sge, 1);
	o->rc[8] = gdak_dev_recv_poll(qp, &c);
	o->rc[9] = gdak_dev_recv_wait_timeout(qp, &c, 1000);
	o->rc[10] = gdak_dev_recv_wait(qp, &c);

	/* ordering primitives */
	gdak_dev_barrier_cqe_after_owner();
	o->v[k++] = gdak_dev_load_acquire_u8((const uint8_t *)qp->sq_buf) +
		    gdak_dev_load_relaxed_u8((const uint8_t *)qp->sq_buf) +
		    gdak_dev_load_acquire_u16((const uint16_t *)qp->sq_buf) +
		    gdak_dev_load_relaxed_u32(qp->dbrec) + gdak_dev_load_relaxed_u64(&qp->sq_db);
	gdak_dev_store_release_u16((uint16_t *)qp->sq_buf, 1);
	gdak_dev_store_relaxed_u32(qp->dbrec, 2);
	gdak_dev_store_relaxed_u64(&qp->sq_db, 3);
	gdak_dev_max_u64(&qp->sq_sig, 4);
	o->v[k++] = gdak_dev_now_ns();
}

__global__ void k_high_level(struct gdak_dev_qp *qp, uint64_t *sig, uint64_t *res,
			     struct sink *o)
{
	struct gdak_dev_sge sge = {0x1000, 64, 1};
	struct gdak_dev_cqe c;
	uint64_t t = 0, old = 0;
	uint32_t tid = threadIdx.x;

	o->rc[0] = gdak_dev_put(qp, &sge, 1, 2, 0, &t);
	o->rc[1] = gdak_dev_put_inline(qp, &tid, 4, 1, 2, 0, &t);
	o->rc[2] = gdak_dev_put_value(qp, 7, 8, 1, 2, 0, &t);
	o->rc[3] = gdak_dev_put_signal(qp, &sge, 1, 2, 8, 2, 1, 0, &t);
	o->rc[4] = gdak_dev_get(qp, &sge, 1, 2, 0, &t);
	o->rc[5] = gdak_dev_wait(qp, t, &c);
	o->rc[6] = gdak_dev_wait_timeout(qp, t, 1000, &c);
	o->rc[7] = gdak_dev_quiet(qp, &c);
	o->rc[8] = gdak_dev_quiet_timeout(qp, 1000, &c);
	o->rc[9] = gdak_dev_fetch_add(qp, 8, 2, 1, res, 3, &old);
	o->rc[10] = gdak_dev_fetch_add_timeout(qp, 8, 2, 1, res, 3, &old, 1000, &c);
	o->rc[11] = gdak_dev_compare_swap(qp, 8, 2, 1, 2, res, 3, &old);
	o->rc[12] = gdak_dev_compare_swap_timeout(qp, 8, 2, 1, 2, res, 3, &old, 1000, &c);
	o->rc[13] = gdak_dev_fetch_add_nbi(qp, 8, 2, 1, res, 3, 0, &t);
	o->rc[14] = gdak_dev_compare_swap_nbi(qp, 8, 2, 1, 2, res, 3, 0, &t);
	o->rc[15] = gdak_dev_signal_wait_timeout(sig, GDAK_DEV_CMP_EQ, 3, 1000, &old);
	o->v[0] = gdak_dev_signal_wait_ge(sig, 1);
	gdak_dev_signal_wait_eq(sig, 1);
	o->rc[16] = gdak_dev_send(qp, &sge, 0, &t);
	o->rc[17] = gdak_dev_send_imm(qp, &sge, 9, 0, &t);
	o->rc[18] = gdak_dev_send_inline(qp, &tid, 4, 0, &t);
	o->v[1] = gdak_dev_amo_result(res) + old + t;
}

__global__ void k_warp(struct gdak_dev_qp *qp, uint64_t *res, struct sink *o)
{
	struct gdak_dev_sge sge = {0x1000u + threadIdx.x * 64u, 64, 1};
	struct gdak_dev_cqe c;
	uint64_t t = 0;
	int rc = gdak_dev_put_warp(qp, &sge, 1, 2, 0, &t);
	rc |= gdak_dev_put_value_warp(qp, threadIdx.x, 1, 2, 0, &t);
	rc |= gdak_dev_get_warp(qp, &sge, 1, 2, 0, &t);
	rc |= gdak_dev_fetch_add_nbi_warp(qp, 8, 2, 1, res + threadIdx.x, 3, 0, &t);
	rc |= gdak_dev_wait_warp(qp, t, &c);
	rc |= gdak_dev_quiet_warp(qp, &c);
	o->rc[threadIdx.x & 63] = rc;
}

__global__ void k_block(struct gdak_dev_qp *qp, struct sink *o)
{
	struct gdak_dev_sge sge = {0x1000u + threadIdx.x * 64u, 64, 1};
	struct gdak_dev_cqe c;
	uint64_t t = 0;
	int rc = gdak_dev_put_block(qp, &sge, 1, 2, 0, &t);
	rc |= gdak_dev_put_value_block(qp, threadIdx.x, 1, 2, GDAK_DEV_WQE_SIGNAL, &t);
	rc |= gdak_dev_get_block(qp, &sge, 1, 2, 0, &t);
	rc |= gdak_dev_quiet_block(qp, &c);
	o->rc[threadIdx.x & 63] = rc;
}

int main(void)
{
	/* Compiling the kernels above is the test; print their names so the
	 * linker keeps them. */
	printf("gdak device API compiled under nvcc: %p %p %p %p\n", (void *)k_low_level,
	       (void *)k_high_level, (void *)k_warp, (void *)k_block);
	return 0;
}
