/* SPDX-License-Identifier: MIT */
/*
 * hw_prm_test.c - gdak.hw.prm: the DEVX path's PRM command encoding, checked
 * without hardware: the field encoder against hand-computed big-endian
 * bytes, and the command field tables for overlaps and overruns.
 */
#include <string.h>

#include "gdak_test.h"
#include "hw_loc.h"

int main(void)
{
	uint8_t b[64];
	char why[160];

	/* opcode: 16 bits at bit 0 -> bytes 0..1, big-endian */
	memset(b, 0, sizeof(b));
	hw_prm_set(b, 0x000, 16, 0x0500);
	CHECK_EQ(b[0], 0x05);
	CHECK_EQ(b[1], 0x00);
	/* a 24-bit QPN at bit 0x48 -> bytes 9..11 */
	hw_prm_set(b, 0x048, 24, 0xabcdef);
	CHECK_EQ(b[8], 0x00);
	CHECK_EQ(b[9], 0xab);
	CHECK_EQ(b[10], 0xcd);
	CHECK_EQ(b[11], 0xef);
	/* a 5-bit field at bit 0x63 (e.g. log_cq_size): bits 3..7 of byte 12 */
	hw_prm_set(b, 0x063, 5, 0x1f);
	CHECK_EQ(b[12], 0x1f);
	hw_prm_set(b, 0x060, 3, 0x5);		/* its neighbour keeps it */
	CHECK_EQ(b[12], 0xbf);
	CHECK_EQ(hw_prm_get(b, 0x063, 5), 0x1f);
	CHECK_EQ(hw_prm_get(b, 0x060, 3), 0x5);
	/* values wider than the field are cut, not spilled */
	hw_prm_set(b, 0x070, 4, 0xff);
	CHECK_EQ(b[14], 0xf0);
	CHECK_EQ(b[13], 0x00);
	CHECK_EQ(b[15], 0x00);
	/* a full dword */
	hw_prm_set(b, 0x0a0, 32, 0x01020304);
	CHECK_EQ(b[20], 0x01);
	CHECK_EQ(b[23], 0x04);
	CHECK_EQ(hw_prm_get(b, 0x0a0, 32), 0x01020304);

	CHECK_EQ(hw_devx_layout_check(why, sizeof(why)), 0);
	printf("layout: %s\n", why);
	return gdak_test_end();
}
