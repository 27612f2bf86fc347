/* SPDX-License-Identifier: MIT */
/*
 * dx_mkey.c - DEVX memory keys: CREATE_MKEY, QUERY_MKEY, DESTROY_MKEY.
 *
 * What a DEVX program registers memory with when it does not go through
 * ibv_reg_mr: an mkey in MTT access mode whose translation is a umem
 * (create_mkey_in.mkey_umem_valid, mkey_umem_id / mkey_umem_offset), its
 * rights in mkc.lr / lw / rr / rw / a, its key mkey_index << 8 | mkc.mkey_7_0
 * - the index ConnectX returns, the low byte the program chose.  It
 * becomes a NIC-model memory region with exactly that key, so lkey and
 * rkey in WQEs work as a verbs MR's do, and a request outside its range
 * or rights fails with the syndromes a verbs MR gives (LOCAL_PROT_ERR,
 * REMOTE_ACCESS_ERR).
 *
 * The NIC model translates addresses one to one (a WQE's address is the
 * host address), so the mkey's start_addr must be the address of its umem
 * bytes: a program that maps a umem at another I/O virtual address is
 * refused with a log line saying so (BAD_PARAM), never misexecuted.  Not
 * modelled, refused the same way: the other access modes (PA, KLM, KSM,
 * memic), mkeys owned by UMR (free, umr_en), signature / crypto BSFs,
 * length64, an mkey bound to one QP.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <gdak/gdak.h>

#include "dx_loc.h"
#include "nm_loc.h"
#include "gdak_log.h"

enum {
	MKC_MODE_MTT = 0x1,
	MKC_NO_QP = 0xffffff,
};

#define FAIL(st, field, ...) dx_fail(out, outlen, in, inlen, st, 0, field, __VA_ARGS__)

static int mkc_ok(const void *in, size_t inlen, void *out, size_t outlen)
{
	unsigned mode = dx_get(in, inlen, DXF_MKC_ACCESS_MODE_4_2) << 2 |
			dx_get(in, inlen, DXF_MKC_ACCESS_MODE_1_0);

	if (mode != MKC_MODE_MTT)
		return FAIL(DX_ST_BAD_PARAM, "mkc.access_mode_1_0",
			    "access mode 0x%x: gdak's NIC model executes MTT (0x1) mkeys over "
			    "a umem",
			    mode);
	if (!dx_get(in, inlen, DXF_MKEY_UMEM_VALID))
		return FAIL(DX_ST_BAD_PARAM, "create_mkey_in.mkey_umem_valid",
			    "a DEVX mkey's translation is a umem (page lists are the kernel's)");
	if (dx_get(in, inlen, DXF_MKC_FREE) || dx_get(in, inlen, DXF_MKC_UMR_EN))
		return FAIL(DX_ST_BAD_PARAM, "mkc.umr_en",
			    "mkeys set up by UMR are not executed by gdak's NIC model");
	if (dx_get(in, inlen, DXF_MKC_BSF_EN) || dx_get(in, inlen, DXF_MKC_CRYPTO_EN))
		return FAIL(DX_ST_BAD_PARAM, "mkc.bsf_en",
			    "signature and crypto offloads are not executed by gdak's NIC model");
	if (dx_get(in, inlen, DXF_MKC_LENGTH64))
		return FAIL(DX_ST_BAD_PARAM, "mkc.length64",
			    "a 2^64-byte mkey cannot be over a umem");
	if (dx_get(in, inlen, DXF_MKC_QPN) != MKC_NO_QP)
		return FAIL(DX_ST_BAD_PARAM, "mkc.qpn",
			    "0x%x: mkeys bound to one QP are not executed (0xffffff: any QP)",
			    dx_get(in, inlen, DXF_MKC_QPN));
	if (!dx_get(in, inlen, DXF_MKC_PD))
		return FAIL(DX_ST_BAD_RES, "mkc.pd", "PD 0 does not exist");
	if (dx_get(in, inlen, DXF_MKC_LOG_PAGE_SIZE) < 12 ||
	    dx_get(in, inlen, DXF_MKC_LOG_PAGE_SIZE) > 30)
		return FAIL(DX_ST_BAD_PARAM, "mkc.log_page_size", "%u (12 .. 30)",
			    dx_get(in, inlen, DXF_MKC_LOG_PAGE_SIZE));
	if (!dx_get64(in, inlen, DXF_MKC_LEN))
		return FAIL(DX_ST_BAD_PARAM, "mkc.len", "0 bytes");
	return 0;
}

int dx_mkey_create(struct dx_ctx *c, const void *in, size_t inlen, void *out, size_t outlen,
		   struct dx_obj **obj)
{
	struct dx_obj *o, *umem = NULL, *pd;
	uint64_t start, len, off;
	unsigned access = 0;
	uint8_t *addr;
	int ret;

	ret = dx_cmd_begin(in, inlen, DX_MKEY_IN_LEN, out, outlen, mkc_ok);
	if (ret)
		return ret;
	start = dx_get64(in, inlen, DXF_MKC_START_ADDR);
	len = dx_get64(in, inlen, DXF_MKC_LEN);
	off = dx_get64(in, inlen, DXF_MKEY_UMEM_OFFSET);
	pthread_mutex_lock(&c->lock);
	addr = dx_umem_at(c, dx_get(in, inlen, DXF_MKEY_UMEM_ID), off, len, &umem);
	pd = dx_find(c, DX_OBJ_PD, dx_get(in, inlen, DXF_MKC_PD));
	pthread_mutex_unlock(&c->lock);
	if (!addr)
		return FAIL(DX_ST_BAD_PARAM, "create_mkey_in.mkey_umem_id",
			    "umem 0x%x does not hold %llu bytes at offset 0x%llx",
			    dx_get(in, inlen, DXF_MKEY_UMEM_ID), (unsigned long long)len,
			    (unsigned long long)off);
	if (start != (uintptr_t)addr)
		return FAIL(DX_ST_BAD_PARAM, "mkc.start_addr",
			    "0x%llx: gdak's NIC model maps an mkey one to one onto its umem, "
			    "whose bytes are at %p",
			    (unsigned long long)start, (void *)addr);
	if (dx_get(in, inlen, DXF_MKC_LW))
		access |= GDAK_ACCESS_LOCAL_WRITE;
	if (dx_get(in, inlen, DXF_MKC_RW))
		access |= GDAK_ACCESS_REMOTE_WRITE;
	if (dx_get(in, inlen, DXF_MKC_RR))
		access |= GDAK_ACCESS_REMOTE_READ;
	if (dx_get(in, inlen, DXF_MKC_A))
		access |= GDAK_ACCESS_REMOTE_ATOMIC;

	o = dx_obj_new(c, DX_OBJ_MKEY);
	if (!o)
		return FAIL(DX_ST_NO_RES, NULL, "out of memory");
	ret = nm_mr_reg_variant(c->g, addr, len, access, (int)dx_get(in, inlen, DXF_MKC_MKEY_7_0),
				&o->u.mkey.mr);
	if (ret) {
		free(o);
		return dx_refused(out, outlen, in, inlen, ret, "region");
	}
	memcpy(o->u.mkey.mkc, (const uint8_t *)in + 0x80 / 8, DX_MKC_LEN);
	o->id = gdak_mr_lkey(o->u.mkey.mr) >> 8;
	o->destroy_op = DX_OP_DESTROY_MKEY;
	dx_obj_publish(c, o, 0, (struct dx_obj *const[]){ umem, pd }, 2, out, outlen);
	GDAK_DBG("devx", o->id, "CREATE_MKEY: key 0x%x over %p+%llu, access 0x%x",
		 gdak_mr_lkey(o->u.mkey.mr), (void *)addr, (unsigned long long)len, access);
	*obj = o;
	return 0;
}

int dx_mkey_query(struct dx_obj *o, const void *in, size_t inlen, void *out, size_t outlen)
{
	int ret = dx_out_begin(out, outlen, DX_QUERY_MKEY_OUT_LEN, in, inlen);

	if (ret)
		return ret;
	memcpy((uint8_t *)out + 0x80 / 8, o->u.mkey.mkc, DX_MKC_LEN);
	return 0;
}

int dx_mkey_destroy(struct dx_obj *o)
{
	return gdak_mr_dereg(o->u.mkey.mr);
}
