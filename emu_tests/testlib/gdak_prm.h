/* SPDX-License-Identifier: MIT */
/*
 * gdak_prm.h - PRM mailbox fields for the DEVX tests, in the numbering
 * mlx5_ifc.h uses: bit 0 is the most significant bit of the first
 * big-endian dword.  The tests keep their own offsets (written from the
 * PRM layouts, not from nic_model/ibv/dx_loc.h), so that a wrong offset
 * in the parser cannot hide behind the same mistake here.
 */
#ifndef GDAK_PRM_H
#define GDAK_PRM_H

#include <endian.h>
#include <stdint.h>

/* a field of w <= 32 bits that does not cross a dword */
static inline void prm_set(void *mb, unsigned bit, unsigned w, uint32_t v)
{
	uint32_t *dw = (uint32_t *)mb + bit / 32;
	unsigned sh = 32 - w - bit % 32;
	uint32_t mask = (w == 32 ? 0xffffffffu : ((1u << w) - 1)) << sh;

	*dw = htobe32((be32toh(*dw) & ~mask) | ((v << sh) & mask));
}

static inline uint32_t prm_get(const void *mb, unsigned bit, unsigned w)
{
	uint32_t v = be32toh(((const uint32_t *)mb)[bit / 32]);

	return w == 32 ? v : (v >> (32 - w - bit % 32)) & ((1u << w) - 1);
}

/* a 64-bit field: two dwords, high first */
static inline void prm_set64(void *mb, unsigned bit, uint64_t v)
{
	prm_set(mb, bit, 32, (uint32_t)(v >> 32));
	prm_set(mb, bit + 32, 32, (uint32_t)v);
}

static inline uint64_t prm_get64(const void *mb, unsigned bit)
{
	return (uint64_t)prm_get(mb, bit, 32) << 32 | prm_get(mb, bit + 32, 32);
}

/* the command header every mailbox starts with */
#define PRM_OPCODE 0x00, 16
#define PRM_OP_MOD 0x30, 16
#define PRM_OBJ 0x48, 24 /* in: the object a command names; out: what CREATE made */
#define PRM_STATUS 0x00, 8
#define PRM_SYNDROME 0x20, 32

/* the command statuses the tests expect (PRM "Command status") */
enum {
	ST_BAD_OP = 0x02,
	ST_BAD_PARAM = 0x03,
	ST_BAD_RES = 0x05,
	ST_BAD_RES_STATE = 0x09,
	ST_BAD_QP_STATE = 0x10,
	ST_BAD_INPUT_LEN = 0x50,
	ST_BAD_OUTPUT_LEN = 0x51,
};

#endif /* GDAK_PRM_H */
