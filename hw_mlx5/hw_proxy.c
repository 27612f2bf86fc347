/* SPDX-License-Identifier: MIT */
/*
 * hw_proxy.c - the CPU-proxy doorbell handler.
 *
 * For hosts where the GPU cannot map the HCA's UAR page (no
 * CU_MEMHOSTREGISTER_IOMEMORY support, or a platform without PCIe
 * peer-to-peer to the NIC's BAR), device code publishes its send producer
 * index in host memory (*proxy_pi) and this thread rings the doorbell for
 * it: doorbell record first, then the doorbell register, as rdma-core does.
 * One thread per context serves every proxied QP.  It polls with back-off
 * (spin, then yield, then short sleeps) so an idle proxy costs little CPU.
 */
#include <errno.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "hw_loc.h"
#include "gdak_log.h"
#include <gdak/mlx5.h>

struct hw_proxy {
	pthread_t thread;
	pthread_mutex_t lock;	/* the list */
	struct hw_qp *qps;
	atomic_int stop;
};

void hw_ring_db(struct hw_qp *hq, uint64_t pi)
{
	uint32_t ctrl[2];
	uint64_t v;

	/* 1. doorbell record: the HCA fetches WQEs up to this index (none where
	 *    the record is GPU memory: the device wrote it before publishing
	 *    pi, hw_devx.c) */
	if (hq->dbrec)
		__atomic_store_n(&hq->dbrec[MLX5_SND_DBR], gdak_mlx5_sq_dbrec_value((uint32_t)pi),
				 __ATOMIC_RELAXED);
	/* 2. the record (and the WQEs the device wrote before publishing pi)
	 *    must be visible before the HCA is told to look */
	hw_wmb_before_db();
	/*
	 * 3. the doorbell: the first 8 bytes of a control segment naming the QP
	 *    and the WQEBB index up to which WQEs are ready (opcode 0), one
	 *    aligned 64-bit store so the HCA never sees half of it
	 */
	ctrl[0] = gdak_htobe32((uint32_t)(pi & 0xffff) << 8);
	ctrl[1] = gdak_htobe32(hq->base.qpn << 8);
	memcpy(&v, ctrl, sizeof(v));
	*(volatile uint64_t *)hq->db_reg = v;
	/* 4. the register is mapped write-combining: push the store out of
	 *    the WC buffer now, so that it reaches the HCA and the next
	 *    doorbell cannot be merged with it (gdak_mmio.h) */
	gdak_wc_flush();
}

static int proxy_pass(struct hw_proxy *px)
{
	int work = 0;

	pthread_mutex_lock(&px->lock);
	for (struct hw_qp *hq = px->qps; hq; hq = hq->proxy_next) {
		/* acquire: pairs with the device's system-scope release of
		 * proxy_pi after its WQE writes */
		uint64_t pi = __atomic_load_n(hq->proxy_pi, __ATOMIC_ACQUIRE);
		if (pi == hq->proxy_last)
			continue;
		if (pi - hq->proxy_last > hq->dqp->sq_wqebb_cnt) {
			GDAK_ERR_RL("qp", hq->base.qpn, "proxy: producer index jumped %llu -> %llu, "
				    "more than the SQ (%u WQEBBs): rung anyway",
				    (unsigned long long)hq->proxy_last, (unsigned long long)pi,
				    hq->dqp->sq_wqebb_cnt);
		}
		hw_ring_db(hq, pi);
		hq->proxy_last = pi;
		work = 1;
	}
	pthread_mutex_unlock(&px->lock);
	return work;
}

static void *proxy_main(void *arg)
{
	struct hw_proxy *px = arg;
	unsigned idle = 0;

	while (!atomic_load_explicit(&px->stop, memory_order_acquire)) {
		if (proxy_pass(px)) {
			idle = 0;
			continue;
		}
		if (++idle < 256) {
#if defined(__x86_64__) || defined(__i386__)
			__asm__ __volatile__("pause");
#endif
		} else if (idle < 4096) {
			sched_yield();
		} else {
			struct timespec ts = {0, 20000};	/* 20 us */
			nanosleep(&ts, NULL);
		}
	}
	return NULL;
}

int hw_proxy_add(struct hw_ctx *hc, struct hw_qp *hq)
{
	struct hw_proxy *px;
	int ret;

	pthread_mutex_lock(&hc->lock);
	px = hc->proxy;
	if (!px) {
		px = calloc(1, sizeof(*px));
		if (!px) {
			pthread_mutex_unlock(&hc->lock);
			return -ENOMEM;
		}
		pthread_mutex_init(&px->lock, NULL);
		ret = pthread_create(&px->thread, NULL, proxy_main, px);
		if (ret) {
			GDAK_ERR("ctx", hc->base.id, "cannot start the CPU-proxy thread: %s",
				 strerror(ret));
			pthread_mutex_destroy(&px->lock);
			free(px);
			pthread_mutex_unlock(&hc->lock);
			return -ret;
		}
		hc->proxy = px;
	}
	pthread_mutex_unlock(&hc->lock);

	pthread_mutex_lock(&px->lock);
	hq->proxy_last = __atomic_load_n(hq->proxy_pi, __ATOMIC_ACQUIRE);
	hq->proxy_next = px->qps;
	px->qps = hq;
	hq->proxied = 1;
	pthread_mutex_unlock(&px->lock);
	return 0;
}

void hw_proxy_remove(struct hw_ctx *hc, struct hw_qp *hq)
{
	struct hw_proxy *px = hc->proxy;

	if (!px)
		return;
	pthread_mutex_lock(&px->lock);
	for (struct hw_qp **pp = &px->qps; *pp; pp = &(*pp)->proxy_next) {
		if (*pp == hq) {
			*pp = hq->proxy_next;
			break;
		}
	}
	hq->proxied = 0;
	pthread_mutex_unlock(&px->lock);
}

void hw_proxy_stop(struct hw_ctx *hc)
{
	struct hw_proxy *px = hc->proxy;

	if (!px)
		return;
	atomic_store_explicit(&px->stop, 1, memory_order_release);
	pthread_join(px->thread, NULL);
	pthread_mutex_destroy(&px->lock);
	free(px);
	hc->proxy = NULL;
}
