/* SPDX-License-Identifier: MIT */
/*
 * bad_header.h - a deliberately NOT self-contained header (uses uint32_t and
 * size_t without including <stdint.h>/<stddef.h>).  gdak.core.headers
 * compiles it with the same flags as the real headers and expects failure:
 * that proves the self-containment check can fail.  Never install or include.
 */
#ifndef GDAK_TEST_BAD_HEADER_H
#define GDAK_TEST_BAD_HEADER_H
struct gdak_test_bad {
	uint32_t x;
	size_t n;
};
#endif
