/* SPDX-License-Identifier: MIT */
/*
 * trace_int.h - internal to the trace writer/reader (core/trace/trace_*.c).
 */
#ifndef GDAK_TRACE_INT_H
#define GDAK_TRACE_INT_H

#include <stdint.h>
#include <gdak/trace.h>
#include <gdak/trace_format.h>

/* trace_write.c: test hook - the next n file writes fail with EIO, as a
 * full or failing disk would make them. */
void gdak_trace_inject_write_errors(struct gdak_trace *t, unsigned n);
/* trace_write.c: test hook - the I/O thread writes nothing while paused
 * (a file slower than the records), so buffers fill up deterministically.
 * gdak_trace_flush() waits for it; gdak_trace_close() ends the pause. */
void gdak_trace_inject_io_pause(struct gdak_trace *t, int pause);

/* trace_write.c: test hook - whether the WQE/CQE run check may use AVX2
 * where the CPU has it (the default, 1) or the portable code (0). */
void gdak_trace_inject_simd(int on);

/* trace_write.c: little-endian stores into a record being built. */
static inline void trace_put16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
}
static inline void trace_put32(uint8_t *p, uint32_t v)
{
	trace_put16(p, (uint16_t)v);
	trace_put16(p + 2, (uint16_t)(v >> 16));
}
static inline void trace_put64(uint8_t *p, uint64_t v)
{
	trace_put32(p, (uint32_t)v);
	trace_put32(p + 4, (uint32_t)(v >> 32));
}
static inline uint16_t trace_get16(const uint8_t *p) { return (uint16_t)(p[0] | p[1] << 8); }
static inline uint32_t trace_get32(const uint8_t *p)
{
	return trace_get16(p) | (uint32_t)trace_get16(p + 2) << 16;
}
static inline uint64_t trace_get64(const uint8_t *p)
{
	return trace_get32(p) | (uint64_t)trace_get32(p + 4) << 32;
}

/* The 64-bit big-endian words ("lanes") a REPEAT sub-record steps
 * (docs/TRACE.md "BATCH"): 64 bytes as 8 such values. */
static inline uint64_t trace_lane(const uint8_t *p)
{
	uint64_t v;

	__builtin_memcpy(&v, p, 8);
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	v = __builtin_bswap64(v);
#endif
	return v;
}
static inline void trace_put_lane(uint8_t *p, uint64_t v)
{
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	v = __builtin_bswap64(v);
#endif
	__builtin_memcpy(p, &v, 8);
}

#endif /* GDAK_TRACE_INT_H */
