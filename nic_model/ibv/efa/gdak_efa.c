/* SPDX-License-Identifier: MIT */
/*
 * gdak_efa.c - gdak's libefa.so.1: the efadv_* entry points rdma-core 44's
 * libefa exports (EFA_1.0 .. EFA_1.2), each answering as the real libefa
 * answers for a device that is not an EFA: EOPNOTSUPP, or NULL with errno
 * EOPNOTSUPP.
 *
 * Why it exists: Debian's perftest links libefa.so.1 as well as
 * libmlx5.so.1, and rdma-core's libefa imports libibverbs' private
 * IBVERBS_PRIVATE_34 internals, which gdak's libibverbs.so.1 does not
 * export, so perftest would not start.  gdak's devices are never EFAs, so
 * this is all libefa will ever need to say.  GDAK_LOG=info|debug names each
 * refused call on stderr.  docs/VERBS.md.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <infiniband/efadv.h>

#include "gv_private.h"

/*
 * gdak's libibverbs logs it (GDAK_LOG is read by the configuration table).
 * Weak, and libibverbs not linked: this library also loads where rdma-core's
 * libibverbs is the process's (a sanitizer build's tests), and is silent
 * there.
 */
#pragma weak gdak_ibv_note

static void note(const char *func)
{
	if (gdak_ibv_note)
		gdak_ibv_note(func, "not supported: gdak's devices are not EFAs");
}

#include "provider_stub.h"

/* ---- EFA_1.0 ---- */

struct ibv_qp *efadv_create_driver_qp(struct ibv_pd *ibvpd, struct ibv_qp_init_attr *attr,
				      uint32_t driver_qp_type)
{
	return no_object(__func__);
}

/* ---- EFA_1.1 ---- */

struct ibv_qp *efadv_create_qp_ex(struct ibv_context *ibvctx, struct ibv_qp_init_attr_ex *attr_ex,
				  struct efadv_qp_init_attr *efa_attr, uint32_t inlen)
{
	return no_object(__func__);
}

int efadv_query_device(struct ibv_context *ibvctx, struct efadv_device_attr *attr, uint32_t inlen)
{
	return not_supported(__func__);
}

int efadv_query_ah(struct ibv_ah *ibvah, struct efadv_ah_attr *attr, uint32_t inlen)
{
	return not_supported(__func__);
}

/* ---- EFA_1.2 ---- */

struct ibv_cq_ex *efadv_create_cq(struct ibv_context *ibvctx, struct ibv_cq_init_attr_ex *attr_ex,
				  struct efadv_cq_init_attr *efa_attr, uint32_t inlen)
{
	return no_object(__func__);
}

/* rdma-core finds its own CQ around the pointer; no CQ here is an EFA's */
struct efadv_cq *efadv_cq_from_ibv_cq_ex(struct ibv_cq_ex *ibvcqx)
{
	return no_object(__func__);
}
