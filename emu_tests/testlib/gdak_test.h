/* SPDX-License-Identifier: MIT */
/*
 * gdak_test.h - the few macros every gdak test uses.
 *
 * A failed check prints file:line, the expression and the values, counts a
 * failure and (CHECK) carries on or (REQUIRE) ends the test.  main() ends with
 * `return gdak_test_end();`, which prints "N passed, N failed" and exits 1 on
 * any failure.  A test that cannot run here calls GDAK_TEST_SKIP(why): exit 77.
 */
#ifndef GDAK_TEST_H
#define GDAK_TEST_H

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

extern unsigned gdak_test_passed, gdak_test_failed;

void gdak_test_fail(const char *file, int line, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
int gdak_test_end(void);
/* Deterministic pseudo-random bytes (xorshift) for data patterns. */
void gdak_test_fill(void *buf, size_t len, uint64_t seed);
uint64_t gdak_test_rand(uint64_t *state);
/* n zeroed bytes on a page boundary (umem, rings); REQUIREd, free() them. */
void *gdak_test_pages(size_t n);
/* Monotonic nanoseconds. */
uint64_t gdak_test_now_ns(void);

#define GDAK_TEST_SKIP(...)                                            \
	do {                                                           \
		fprintf(stderr, "SKIP: " __VA_ARGS__);                 \
		fprintf(stderr, "\n");                                 \
		exit(77);                                              \
	} while (0)

#define CHECK(cond)                                                               \
	((cond) ? (void)gdak_test_passed++                                        \
		: gdak_test_fail(__FILE__, __LINE__, "CHECK(%s) failed", #cond))
#define REQUIRE(cond)                                                             \
	do {                                                                      \
		if (cond) {                                                       \
			gdak_test_passed++;                                       \
		} else {                                                          \
			gdak_test_fail(__FILE__, __LINE__, "REQUIRE(%s) failed", #cond); \
			exit(gdak_test_end() ? 1 : 1);                            \
		}                                                                 \
	} while (0)
#define CHECK_EQ(a, b)                                                                        \
	do {                                                                                  \
		uint64_t va_ = (uint64_t)(a), vb_ = (uint64_t)(b);                            \
		if (va_ == vb_)                                                               \
			gdak_test_passed++;                                                   \
		else                                                                          \
			gdak_test_fail(__FILE__, __LINE__, "CHECK_EQ(%s, %s): 0x%" PRIx64     \
				       " != 0x%" PRIx64, #a, #b, va_, vb_);                   \
	} while (0)
#define REQUIRE_EQ(a, b)                                                                      \
	do {                                                                                  \
		uint64_t va_ = (uint64_t)(a), vb_ = (uint64_t)(b);                            \
		if (va_ == vb_) {                                                             \
			gdak_test_passed++;                                                   \
		} else {                                                                      \
			gdak_test_fail(__FILE__, __LINE__, "REQUIRE_EQ(%s, %s): 0x%" PRIx64   \
				       " != 0x%" PRIx64, #a, #b, va_, vb_);                   \
			exit(1);                                                              \
		}                                                                             \
	} while (0)
#define CHECK_MEM(a, b, n)                                                                    \
	do {                                                                                  \
		size_t off_ = gdak_test_memdiff((a), (b), (n));                               \
		if (off_ == (size_t)-1)                                                       \
			gdak_test_passed++;                                                   \
		else                                                                          \
			gdak_test_fail(__FILE__, __LINE__, "CHECK_MEM(%s, %s, %zu): first "   \
				       "difference at byte %zu", #a, #b, (size_t)(n), off_);  \
	} while (0)
#define CHECK_STR(a, b)                                                                       \
	do {                                                                                  \
		const char *sa_ = (a), *sb_ = (b);                                            \
		if (sa_ && sb_ && !strcmp(sa_, sb_))                                          \
			gdak_test_passed++;                                                   \
		else                                                                          \
			gdak_test_fail(__FILE__, __LINE__, "CHECK_STR(%s, %s): '%s' != '%s'", \
				       #a, #b, sa_ ? sa_ : "(null)", sb_ ? sb_ : "(null)");   \
	} while (0)

/* Offset of the first differing byte, or (size_t)-1 when equal. */
size_t gdak_test_memdiff(const void *a, const void *b, size_t n);
/* A fresh temporary file, created empty: $TMPDIR (or /tmp)/gdak-AREA-TAG-XXXXXX;
 * free() the name.  NULL on failure. */
char *gdak_test_tmpname(const char *area, const char *tag);
/* This process's resident set (VmRSS) in KiB, -1 when unknown. */
long gdak_test_rss_kib(void);
/* Run cmd through sh, its standard output into out (cap bytes, always
 * NUL-terminated; the rest is dropped); its exit status, -1 when it did not
 * exit.  Fails the test (REQUIRE) when it cannot be started. */
int gdak_test_popen(const char *cmd, char *out, size_t cap);
/* Run tshark over the capture at pcap (the RPC-over-RDMA heuristic off, so
 * random payloads stay RoCE; filter a display filter, or NULL for every
 * frame) and call fn(op, arg) for each frame it prints, in order: op the
 * frame's BTH opcode, -1 when it has none (fn NULL: none called).  CHECKs
 * that tshark exited 0; returns the number of frames. */
unsigned gdak_test_tshark_opcodes(const char *pcap, const char *filter,
				  void (*fn)(int op, void *arg), void *arg);
/* How many frames of the capture at pcap tshark flags malformed or with an
 * expert warning or error (the first few printed); CHECKs that it exited 0. */
unsigned gdak_test_tshark_flagged(const char *pcap);
/* The whole file at path in memory, NUL-terminated (one byte past *len),
 * for free(); NULL when it cannot be read. */
void *gdak_test_slurp(const char *path, size_t *len);
/* How many times needle occurs in s, not overlapping. */
int gdak_test_count(const char *s, const char *needle);
/* 1 when one line of out contains every needle (a NULL-terminated list). */
int gdak_test_has_line(const char *out, const char *const *needles);
/* Write n bytes from in to fd, then read n bytes from it into out (a swap
 * with the process at the other end): 0, or -1 when either fails. */
int gdak_test_xfer(int fd, void *out, const void *in, size_t n);
/* gdak_test_xfer of one byte, mine for the peer's: what the peer sent
 * (0..255), or -1 when the swap fails. */
int gdak_test_swap_byte(int fd, char mine);
/* Two processes over a socketpair: child(fd) runs in a forked child, which
 * then exits with its gdak_test_end(); parent(fd) runs here.  Then the child
 * is waited for and CHECKed to have exited 0 (its exit code or signal named
 * when not); gdak_test_end()'s result. */
int gdak_test_2proc(void (*child)(int fd), void (*parent)(int fd));

#endif
