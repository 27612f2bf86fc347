/* SPDX-License-Identifier: MIT */
#include <stdarg.h>
#include <unistd.h>
#include <time.h>
#include "gdak_case.h"
#include "gdak_test.h"

unsigned gdak_test_passed, gdak_test_failed;

void gdak_test_fail(const char *file, int line, const char *fmt, ...)
{
	va_list ap;
	gdak_test_failed++;
	if (gdak_test_case)
		fprintf(stderr, "%s:%d: [case %s] ", file, line, gdak_test_case);
	else
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

char *gdak_test_tmpname(const char *area, const char *tag)
{
	const char *dir = getenv("TMPDIR");
	size_t n = 64 + strlen(area) + strlen(tag) + (dir ? strlen(dir) : 0);
	char *p = malloc(n);
	int fd;

	if (!p)
		return NULL;
	snprintf(p, n, "%s/gdak-%s-%s-XXXXXX", dir && *dir ? dir : "/tmp", area, tag);
	fd = mkstemp(p);
	if (fd < 0) {
		free(p);
		return NULL;
	}
	close(fd);
	return p;
}

int gdak_test_has_line(const char *out, const char *const *needles)
{
	for (const char *l = out; l && *l;) {
		const char *e = strchr(l, '\n');
		size_t len = e ? (size_t)(e - l) : strlen(l);
		int all = 1;

		for (const char *const *nd = needles; *nd && all; nd++) {
			const char *hit = strstr(l, *nd);
			all = hit && hit < l + len;
		}
		if (all)
			return 1;
		l = e ? e + 1 : NULL;
	}
	return 0;
}
