/* SPDX-License-Identifier: MIT */
/*
 * dx_field.c - the PRM field table of gdak's DEVX parser and its accessors.
 * Byte order is handled here only: a mailbox is big-endian dwords, a
 * field's bit 0 is the most significant bit of its first dword.
 */
#include <string.h>

#include "dx_loc.h"

#define DX_ROW(id, nm, b, w) [DXF_##id] = { .name = nm, .bit = (b), .width = (w) },
const struct dx_field dx_fields[DXF_COUNT] = { DX_FIELDS(DX_ROW) };
#undef DX_ROW

static uint32_t be32_at(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static void put_be32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}

int dx_fits(size_t len, enum dx_field_id f)
{
	if ((unsigned)f >= DXF_COUNT)
		return 0;
	return (size_t)dx_fields[f].bit + dx_fields[f].width <= len * 8;
}

/* A field of width <= 32 never crosses a dword in the PRM layouts: the
 * table's test checks it, so the accessors read one dword. */
uint32_t dx_get(const void *mb, size_t len, enum dx_field_id f)
{
	const struct dx_field *d;
	unsigned sh;
	uint32_t v;

	if (!dx_fits(len, f) || dx_fields[f].width > 32)
		return 0;
	d = &dx_fields[f];
	v = be32_at((const uint8_t *)mb + d->bit / 32 * 4);
	sh = 32 - d->width - d->bit % 32;
	return d->width == 32 ? v : (v >> sh) & ((1u << d->width) - 1);
}

void dx_set(void *mb, size_t len, enum dx_field_id f, uint32_t v)
{
	const struct dx_field *d;
	uint32_t mask, cur;
	uint8_t *p;
	unsigned sh;

	if (!dx_fits(len, f) || dx_fields[f].width > 32)
		return;
	d = &dx_fields[f];
	p = (uint8_t *)mb + d->bit / 32 * 4;
	sh = 32 - d->width - d->bit % 32;
	mask = d->width == 32 ? 0xffffffffu : ((1u << d->width) - 1) << sh;
	cur = be32_at(p);
	put_be32(p, (cur & ~mask) | ((v << (d->width == 32 ? 0 : sh)) & mask));
}

uint64_t dx_get64(const void *mb, size_t len, enum dx_field_id f)
{
	const uint8_t *p;

	if (!dx_fits(len, f) || dx_fields[f].width != 64)
		return 0;
	p = (const uint8_t *)mb + dx_fields[f].bit / 8;
	return (uint64_t)be32_at(p) << 32 | be32_at(p + 4);
}

void dx_set64(void *mb, size_t len, enum dx_field_id f, uint64_t v)
{
	uint8_t *p;

	if (!dx_fits(len, f) || dx_fields[f].width != 64)
		return;
	p = (uint8_t *)mb + dx_fields[f].bit / 8;
	put_be32(p, (uint32_t)(v >> 32));
	put_be32(p + 4, (uint32_t)v);
}

int dx_get_bytes(const void *mb, size_t len, enum dx_field_id f, uint8_t out[16])
{
	if (!dx_fits(len, f) || dx_fields[f].width != 128) {
		memset(out, 0, 16);
		return -1;
	}
	memcpy(out, (const uint8_t *)mb + dx_fields[f].bit / 8, 16);
	return 0;
}

void dx_set_bytes(void *mb, size_t len, enum dx_field_id f, const uint8_t in[16])
{
	if (dx_fits(len, f) && dx_fields[f].width == 128)
		memcpy((uint8_t *)mb + dx_fields[f].bit / 8, in, 16);
}
