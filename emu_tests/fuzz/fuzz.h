/* SPDX-License-Identifier: MIT */
/*
 * fuzz.h - what the gdak fuzz targets share.
 *
 * Each target (fuzz_*.c) defines LLVMFuzzerTestOneInput and, optionally,
 * LLVMFuzzerInitialize and fuzz_fini.  Built with clang and -fsanitize=fuzzer
 * (-DGDAK_FUZZ=ON, preset `fuzz`) it is a libFuzzer binary; in every build it
 * is also linked with replay.c, a main() that runs each file of the seed
 * corpus once, so CTest replays the corpus everywhere (label fuzz).
 *
 * An invariant that does not hold ends the process with abort(): libFuzzer
 * saves the input as a crash, the replay driver fails the test.
 */
#ifndef GDAK_FUZZ_H
#define GDAK_FUZZ_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);
/* Release what LLVMFuzzerInitialize set up (replay driver only: libFuzzer
 * never returns from its loop), so leak checkers see a clean exit. */
void fuzz_fini(void);

#define FUZZ_ASSERT(cond, ...)                                                          \
	do {                                                                            \
		if (!(cond)) {                                                          \
			fprintf(stderr, "fuzz invariant failed at %s:%d: %s: ", __FILE__, \
				__LINE__, #cond);                                       \
			fprintf(stderr, __VA_ARGS__);                                   \
			fputc('\n', stderr);                                            \
			abort();                                                        \
		}                                                                       \
	} while (0)

/* A cursor over the fuzz input: reads past the end return zeros. */
struct fuzz_in {
	const uint8_t *p;
	size_t n, off;
};

static inline int fuzz_more(const struct fuzz_in *in) { return in->off < in->n; }

static inline uint8_t fuzz_u8(struct fuzz_in *in)
{
	return in->off < in->n ? in->p[in->off++] : 0;
}

static inline uint16_t fuzz_u16(struct fuzz_in *in)
{
	uint16_t v = fuzz_u8(in);
	return (uint16_t)(v | fuzz_u8(in) << 8);
}

static inline uint32_t fuzz_u32(struct fuzz_in *in)
{
	uint32_t v = fuzz_u16(in);
	return v | (uint32_t)fuzz_u16(in) << 16;
}

static inline uint64_t fuzz_u64(struct fuzz_in *in)
{
	uint64_t v = fuzz_u32(in);
	return v | (uint64_t)fuzz_u32(in) << 32;
}

/* Copy up to n bytes (zero-filled past the end of the input). */
static inline void fuzz_bytes(struct fuzz_in *in, void *dst, size_t n)
{
	uint8_t *d = dst;
	for (size_t i = 0; i < n; i++)
		d[i] = fuzz_u8(in);
}

#endif
