/* SPDX-License-Identifier: MIT */
/*
 * dx_obj.c - DEVX objects of one device: the list, umem, UAR pages, PDs,
 * and the dispatch of obj_create / modify / query / destroy by opcode
 * (CQs and QPs: dx_queue.c; DCTs: dx_dct.c).
 *
 * What the kernel decides before a command reaches ConnectX is decided
 * here the same way and answered with its errno, the output mailbox
 * untouched: a create opcode it does not let through obj_create, a modify
 * or query that is not one of the object's, or that names another object
 * (EINVAL).  It also sets the umem_valid bits itself (devx_set_umem_valid):
 * a DEVX queue always lives in umem.  Destroying an object that another
 * still uses fails as ConnectX fails it (RESOURCE_BUSY), which the kernel
 * returns as EBUSY; nothing changes.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dx_loc.h"
#include "gv_loc.h"
#include "gdak_log.h"

static pthread_mutex_t ctxs_lock = PTHREAD_MUTEX_INITIALIZER;
static struct dx_ctx ctxs[GV_MAX_DEVICES];

struct dx_ctx *dx_ctx_of(struct ibv_context *ibctx)
{
	struct gv_device *d = gv_ctx(ibctx)->dev;
	struct dx_ctx *c = &ctxs[d->index];
	union ibv_gid gid;

	pthread_mutex_lock(&ctxs_lock);
	if (!c->dev) {
		pthread_mutex_init(&c->lock, NULL);
		c->dev = d;
		c->g = d->g;
		gv_dev_gid(d, &gid);
		memcpy(c->gid, gid.raw, 16);
		/* the MAC gdak's libibverbs resolves for this GID (gv_misc.c) */
		c->mac[0] = 0x02;
		c->mac[1] = 0x00;
		memcpy(c->mac + 2, gid.raw + 12, 4);
		c->next_id = 1;
		c->uar_fd = -1;
		c->guid = d->guid;
	}
	pthread_mutex_unlock(&ctxs_lock);
	return c;
}

/* ---- the list ------------------------------------------------------------------------ */

struct dx_obj *dx_obj_new(struct dx_ctx *c, enum dx_obj_type type)
{
	struct dx_obj *o = calloc(1, sizeof(*o));

	if (!o)
		return NULL;
	o->c = c;
	o->type = type;
	return o;
}

/* Under c->lock: publish o (its deps already counted). */
void dx_obj_link(struct dx_obj *o)
{
	o->next = o->c->head;
	o->c->head = o;
	o->c->nobj++;
}

/* Under c->lock: unpublish o and release what it held. */
void dx_obj_unlink(struct dx_obj *o)
{
	struct dx_obj **p;

	for (p = &o->c->head; *p; p = &(*p)->next)
		if (*p == o) {
			*p = o->next;
			o->c->nobj--;
			break;
		}
	for (unsigned i = 0; i < DX_MAX_DEPS; i++)
		if (o->deps[i])
			o->deps[i]->users--;
}

/* Under c->lock. */
struct dx_obj *dx_find(struct dx_ctx *c, enum dx_obj_type type, uint32_t id)
{
	for (struct dx_obj *o = c->head; o; o = o->next)
		if (o->type == type && o->id == id)
			return o;
	return NULL;
}

void dx_obj_hold(struct dx_obj *o, struct dx_obj *dep)
{
	for (unsigned i = 0; dep && i < DX_MAX_DEPS; i++)
		if (!o->deps[i]) {
			o->deps[i] = dep;
			dep->users++;
			return;
		}
}

void dx_obj_publish(struct dx_ctx *c, struct dx_obj *o, uint32_t id_base,
		    struct dx_obj *const *deps, size_t n, void *out, size_t outlen)
{
	pthread_mutex_lock(&c->lock);
	if (id_base)
		o->id = id_base | (dx_new_id(c) & 0x7fffff);
	for (size_t i = 0; i < n; i++)
		dx_obj_hold(o, deps[i]);
	dx_obj_link(o);
	pthread_mutex_unlock(&c->lock);
	dx_set(out, outlen, DXF_OUT_OBJ, o->id);
}

/* Under c->lock: a fresh number for a PD, umem or UAR page (never 0:
 * a zero field reads as "none" in several contexts). */
uint32_t dx_new_id(struct dx_ctx *c)
{
	uint32_t id = c->next_id++ & 0xffffff;

	if (!id)
		id = c->next_id++ & 0xffffff;
	return id;
}

/* ---- umem ---------------------------------------------------------------------------- */

int dx_umem_reg(struct dx_ctx *c, void *addr, size_t size, uint32_t access, struct dx_obj **out)
{
	const uint32_t known = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
			       IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC |
			       IBV_ACCESS_RELAXED_ORDERING;
	struct dx_obj *o;
	int ret;

	if (!addr || !size || (access & ~known)) {
		GDAK_ERR("devx", 0, "umem_reg(%p, %zu, access 0x%x): %s", addr, size, access,
			 !addr || !size ? "empty range" : "unknown access bits");
		return -EINVAL;
	}
	/* the one place a umem's memory kind is decided (nm_ext_ring_kind):
	 * 0 host, 1 GPU memory (executed by the GPU-memory ring engine,
	 * nm_ring_gpu.c), or -ENOTSUP (GPU memory without the CUDA engine) */
	ret = dx_ring_kind(c, addr, size, "DEVX umem");
	if (ret < 0)
		return ret;
	o = dx_obj_new(c, DX_OBJ_UMEM);
	if (!o)
		return -ENOMEM;
	o->u.umem.addr = addr;
	o->u.umem.size = size;
	o->u.umem.access = access;
	pthread_mutex_lock(&c->lock);
	o->id = dx_new_id(c);
	dx_obj_link(o);
	pthread_mutex_unlock(&c->lock);
	GDAK_DBG("devx", o->id, "umem %p+%zu", addr, size);
	*out = o;
	return 0;
}

/* Under c->lock: the umem with this id covering [off, off + len). */
void *dx_umem_at(struct dx_ctx *c, uint32_t id, uint64_t off, uint64_t len, struct dx_obj **umem)
{
	struct dx_obj *u = dx_find(c, DX_OBJ_UMEM, id);

	if (!u || off > u->u.umem.size || len > u->u.umem.size - off)
		return NULL;
	*umem = u;
	return (char *)u->u.umem.addr + off;
}

/* ---- UAR pages ------------------------------------------------------------------------- */

/*
 * Each page is page id << 12 of one memory file of the device (created at
 * the first page), mapped shared: mlx5dv_devx_uar.mmap_off is that offset,
 * and mmap(ctx->cmd_fd, mmap_off) - how a ConnectX program maps a UAR a
 * second time, into another address range or for a GPU mapping - gives
 * another view of the same register page, which the NIC model watches.
 */
int dx_uar_alloc(struct dx_ctx *c, unsigned type, struct dx_obj **out)
{
	struct dx_obj *o;
	void *page = MAP_FAILED;
	off_t off;

	o = dx_obj_new(c, DX_OBJ_UAR);
	if (!o)
		return -ENOMEM;
	pthread_mutex_lock(&c->lock);
	if (c->uar_fd < 0)
		c->uar_fd = memfd_create("gdak-uar", MFD_CLOEXEC);
	o->id = dx_new_id(c);
	off = (off_t)o->id << 12;
	if (c->uar_fd >= 0) {
		struct stat st;

		if (!fstat(c->uar_fd, &st) &&
		    (st.st_size >= off + DX_UAR_PAGE || !ftruncate(c->uar_fd, off + DX_UAR_PAGE)))
			page = mmap(NULL, DX_UAR_PAGE, PROT_READ | PROT_WRITE, MAP_SHARED,
				    c->uar_fd, off);
	}
	if (page == MAP_FAILED) {
		pthread_mutex_unlock(&c->lock);
		GDAK_ERR("devx", o->id, "UAR page: %s", strerror(errno));
		free(o);
		return -ENOMEM;
	}
	o->u.uar.page = page;
	o->u.uar.type = type;
	dx_obj_link(o);
	pthread_mutex_unlock(&c->lock);
	*out = o;
	return 0;
}

/* Under c->lock: unmap the page and give its memory back (the file's
 * range stays, a hole). */
void dx_uar_free_page(struct dx_obj *o)
{
	munmap(o->u.uar.page, DX_UAR_PAGE);
	if (o->c->uar_fd >= 0)
		(void)fallocate(o->c->uar_fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
				(off_t)o->id << 12, DX_UAR_PAGE);
}

int dx_uar_fd(struct dx_ctx *c)
{
	int fd;

	pthread_mutex_lock(&c->lock);
	fd = c->uar_fd;
	pthread_mutex_unlock(&c->lock);
	return fd;
}

/* ---- dispatch ---------------------------------------------------------------------------- */

/* The create commands the kernel passes through mlx5dv_devx_obj_create
 * (devx_is_obj_create_cmd), and which of them gdak executes. */
static int create_kind(unsigned op)
{
	switch (op) {
	case DX_OP_ALLOC_PD:
	case DX_OP_ALLOC_TRANSPORT_DOMAIN:
	case DX_OP_CREATE_CQ:
	case DX_OP_CREATE_QP:
	case DX_OP_CREATE_DCT:
	case DX_OP_CREATE_RMP:
	case DX_OP_CREATE_MKEY:
		return 2;
	case DX_OP_CREATE_SRQ: /* its ring is a page list, no umem: CREATE_RMP is DEVX's */
	case DX_OP_CREATE_GENERAL_OBJECT:
	case 0x705: /* CREATE_XRC_SRQ */
	case 0x717: /* CREATE_XRQ */
	case 0x771: /* ALLOC_Q_COUNTER */
	case 0x80e: /* ALLOC_XRCD */
	case 0x900: /* CREATE_TIR */
	case 0x904: /* CREATE_SQ */
	case 0x908: /* CREATE_RQ */
	case 0x912: /* CREATE_TIS */
	case 0x916: /* CREATE_RQT */
	case 0x930: /* CREATE_FLOW_TABLE */
	case 0x933: /* CREATE_FLOW_GROUP */
	case 0x936: /* SET_FLOW_TABLE_ENTRY */
	case 0x939: /* ALLOC_FLOW_COUNTER */
	case 0x93d: /* ALLOC_PACKET_REFORMAT_CONTEXT */
	case 0x940: /* ALLOC_MODIFY_HEADER_CONTEXT */
		return 1;
	default:
		return 0;
	}
}

static int simple_create(struct dx_ctx *c, enum dx_obj_type type, const void *in, size_t inlen,
			 void *out, size_t outlen, struct dx_obj **obj)
{
	int ret = dx_out_begin(out, outlen, DX_HDR_OUT_LEN, in, inlen);
	struct dx_obj *o;

	if (ret)
		return ret;
	o = dx_obj_new(c, type);
	if (!o)
		return dx_fail(out, outlen, in, inlen, DX_ST_NO_RES, 0, NULL, "out of memory");
	pthread_mutex_lock(&c->lock);
	o->id = dx_new_id(c);
	dx_obj_link(o);
	pthread_mutex_unlock(&c->lock);
	o->destroy_op = dx_get(in, inlen, DXF_IN_OPCODE) + 1; /* DEALLOC_PD, ... */
	dx_set(out, outlen, DXF_OUT_OBJ, o->id);
	*obj = o;
	return 0;
}

int dx_obj_create(struct dx_ctx *c, const void *in, size_t inlen, void *out, size_t outlen,
		  struct dx_obj **obj)
{
	unsigned op;
	int kind;

	*obj = NULL;
	if (!in || !out || inlen < DX_HDR_IN_LEN || outlen < DX_HDR_OUT_LEN)
		return -EINVAL;
	op = dx_get(in, inlen, DXF_IN_OPCODE);
	kind = create_kind(op);
	if (!kind) {
		GDAK_INFO("devx", op, "obj_create: %s (0x%x) is not a create command: EINVAL",
			  dx_op_name(op), op);
		return -EINVAL;
	}
	if (kind == 1)
		return dx_fail(out, outlen, in, inlen, DX_ST_BAD_OP, 0, "in.opcode",
			       "a create command gdak's device does not execute");
	switch (op) {
	case DX_OP_ALLOC_PD:
		return simple_create(c, DX_OBJ_PD, in, inlen, out, outlen, obj);
	case DX_OP_ALLOC_TRANSPORT_DOMAIN:
		return simple_create(c, DX_OBJ_TD, in, inlen, out, outlen, obj);
	case DX_OP_CREATE_CQ:
		return dx_cq_create(c, in, inlen, out, outlen, obj);
	case DX_OP_CREATE_DCT:
		return dx_dct_create(c, in, inlen, out, outlen, obj);
	case DX_OP_CREATE_RMP:
		return dx_rmp_create(c, in, inlen, out, outlen, obj);
	case DX_OP_CREATE_MKEY:
		return dx_mkey_create(c, in, inlen, out, outlen, obj);
	default: /* DX_OP_CREATE_QP */
		return dx_qp_create(c, in, inlen, out, outlen, obj);
	}
}

/* The object a modify / query names must be this one (devx_is_valid_obj_id). */
static int names_obj(const struct dx_obj *o, const void *in, size_t inlen)
{
	return dx_get(in, inlen, DXF_IN_OBJ) == o->id;
}

int dx_obj_modify(struct dx_obj *o, const void *in, size_t inlen, void *out, size_t outlen)
{
	unsigned op;

	if (!o || !in || !out || inlen < DX_HDR_IN_LEN || outlen < DX_HDR_OUT_LEN)
		return -EINVAL;
	op = dx_get(in, inlen, DXF_IN_OPCODE);
	if (o->type == DX_OBJ_QP && dx_qp_is_modify(op) && names_obj(o, in, inlen))
		return dx_qp_modify(o, in, inlen, out, outlen);
	if (o->type == DX_OBJ_DCT &&
	    (op == DX_OP_DRAIN_DCT || op == DX_OP_ARM_DCT_FOR_KEY_VIOLATION) &&
	    names_obj(o, in, inlen))
		return dx_dct_modify(o, in, inlen, out, outlen);
	if (o->type == DX_OBJ_RMP && op == DX_OP_MODIFY_RMP && names_obj(o, in, inlen))
		return dx_rmp_modify(o, in, inlen, out, outlen);
	if (o->type == DX_OBJ_CQ && op == DX_OP_MODIFY_CQ && names_obj(o, in, inlen))
		return dx_fail(out, outlen, in, inlen, DX_ST_BAD_OP, 0, "in.opcode",
			       "MODIFY_CQ (moderation, resize) is not executed by gdak's device");
	GDAK_INFO("devx", o->id, "obj_modify: %s (0x%x) is not a modify of this object: EINVAL",
		  dx_op_name(op), op);
	return -EINVAL;
}

int dx_obj_query(struct dx_obj *o, const void *in, size_t inlen, void *out, size_t outlen)
{
	unsigned op;

	if (!o || !in || !out || inlen < DX_HDR_IN_LEN || outlen < DX_HDR_OUT_LEN)
		return -EINVAL;
	op = dx_get(in, inlen, DXF_IN_OPCODE);
	if (o->type == DX_OBJ_QP && op == DX_OP_QUERY_QP && names_obj(o, in, inlen))
		return dx_qp_query(o, in, inlen, out, outlen);
	if (o->type == DX_OBJ_CQ && op == DX_OP_QUERY_CQ && names_obj(o, in, inlen))
		return dx_cq_query(o, in, inlen, out, outlen);
	if (o->type == DX_OBJ_DCT && op == DX_OP_QUERY_DCT && names_obj(o, in, inlen))
		return dx_dct_query(o, in, inlen, out, outlen);
	if (o->type == DX_OBJ_RMP && op == DX_OP_QUERY_RMP && names_obj(o, in, inlen))
		return dx_rmp_query(o, in, inlen, out, outlen);
	if (o->type == DX_OBJ_MKEY && op == DX_OP_QUERY_MKEY && names_obj(o, in, inlen))
		return dx_mkey_query(o, in, inlen, out, outlen);
	GDAK_INFO("devx", o->id, "obj_query: %s (0x%x) is not a query of this object: EINVAL",
		  dx_op_name(op), op);
	return -EINVAL;
}

int dx_obj_destroy(struct dx_obj *o)
{
	struct dx_ctx *c;
	int ret = 0;

	if (!o)
		return -EINVAL;
	c = o->c;
	pthread_mutex_lock(&c->lock);
	if (o->users) {
		pthread_mutex_unlock(&c->lock);
		GDAK_INFO("devx", o->id,
			  "destroy: %u object(s) still use it: RESOURCE_BUSY (EBUSY); destroy "
			  "them first",
			  o->users);
		return -EBUSY;
	}
	switch (o->type) {
	case DX_OBJ_CQ:
		ret = dx_cq_destroy(o);
		break;
	case DX_OBJ_QP:
		ret = dx_qp_destroy(o);
		break;
	case DX_OBJ_DCT:
		ret = dx_dct_destroy(o);
		break;
	case DX_OBJ_RMP:
		ret = dx_rmp_destroy(o);
		break;
	case DX_OBJ_MKEY:
		ret = dx_mkey_destroy(o);
		break;
	case DX_OBJ_UAR:
		dx_uar_free_page(o);
		break;
	default:
		break;
	}
	if (!ret)
		dx_obj_unlink(o);
	pthread_mutex_unlock(&c->lock);
	if (!ret)
		free(o);
	return ret;
}

uint32_t dx_obj_id(const struct dx_obj *o)
{
	return o->id;
}
