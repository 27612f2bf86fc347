/* SPDX-License-Identifier: MIT */
#include <stdarg.h>
#include <time.h>
#include "gdak_test.h"

unsigned gdak_test_passed, gdak_test_failed;

void gdak_test_fail(const char *file, int line, const char *fmt, ...)
{
	va_list ap;
	gdak_test_failed++;
	fprintf(stderr, "%s:%d: ", file, line);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

int gdak_test_end(void)
{
	printf("%u passed, %u failed\n", gdak_test_passed, gdak_test_failed);
	fflush(stdout);
	return gdak_test_failed ? 1 : 0;
}

uint64_t gdak_test_rand(uint64_t *s)
{
	uint64_t x = *s ? *s : 0x9e3779b97f4a7c15ull;
	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	*s = x;
	return x;
}

void gdak_test_fill(void *buf, size_t len, uint64_t seed)
{
	unsigned char *p = buf;
	uint64_t s = seed * 0x2545f4914f6cdd1dull + 1;
	for (size_t i = 0; i < len; i++) {
		if (!(i & 7))
			gdak_test_rand(&s);
		p[i] = (unsigned char)(s >> ((i & 7) * 8));
	}
}

size_t gdak_test_memdiff(const void *a, const void *b, size_t n)
{
	const unsigned char *x = a, *y = b;
	for (size_t i = 0; i < n; i++)
		if (x[i] != y[i])
			return i;
	return (size_t)-1;
}

uint64_t gdak_test_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}
