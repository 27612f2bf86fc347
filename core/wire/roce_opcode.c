/* SPDX-License-Identifier: MIT */
/*
 * roce_opcode.c - the RC opcode table (IBA vol. 1 table 39, header layout
 * per 9.2-9.3), with gdak's extended atomics and DC opcodes (docs/UDP.md):
 * what each packet carries, where, and its name.  The
 * engine's packet parser and builders, its logs and gdak-trace all read it.
 */
#include <gdak/roce.h>

#define REQ ROCE_M_REQ
#define RSP ROCE_M_RESP
#define PL ROCE_M_PAYLOAD
#define V ROCE_M_VALID
#define B ROCE_BTH_LEN
#define D ROCE_DCETH_LEN
#define DC ROCE_M_DC
#define DCE ROCE_M_DCETH

/* the DC rows' macro is laid out by hand */
/* clang-format off */
const struct roce_opinfo gdak_roce_optab[256] = {
	[ROCE_SEND_FIRST] = { .name = "SEND_FIRST",
			      .mask = V | REQ | PL | ROCE_M_SEND | ROCE_M_FIRST,
			      .hdr_len = B },
	[ROCE_SEND_MIDDLE] = { .name = "SEND_MIDDLE",
			       .mask = V | REQ | PL | ROCE_M_SEND | ROCE_M_MIDDLE,
			       .hdr_len = B },
	[ROCE_SEND_LAST] = { .name = "SEND_LAST",
			     .mask = V | REQ | PL | ROCE_M_SEND | ROCE_M_LAST,
			     .hdr_len = B },
	[ROCE_SEND_LAST_IMM] = { .name = "SEND_LAST_WITH_IMMEDIATE",
				 .mask = V | REQ | PL | ROCE_M_SEND | ROCE_M_LAST | ROCE_M_IMMDT,
				 .hdr_len = B + ROCE_IMMDT_LEN,
				 .off_immdt = B },
	[ROCE_SEND_ONLY] = { .name = "SEND_ONLY",
			     .mask = V | REQ | PL | ROCE_M_SEND | ROCE_M_ONLY,
			     .hdr_len = B },
	[ROCE_SEND_ONLY_IMM] = { .name = "SEND_ONLY_WITH_IMMEDIATE",
				 .mask = V | REQ | PL | ROCE_M_SEND | ROCE_M_ONLY | ROCE_M_IMMDT,
				 .hdr_len = B + ROCE_IMMDT_LEN,
				 .off_immdt = B },
	[ROCE_WRITE_FIRST] = { .name = "RDMA_WRITE_FIRST",
			       .mask = V | REQ | PL | ROCE_M_WRITE | ROCE_M_FIRST | ROCE_M_RETH,
			       .hdr_len = B + ROCE_RETH_LEN,
			       .off_reth = B },
	[ROCE_WRITE_MIDDLE] = { .name = "RDMA_WRITE_MIDDLE",
				.mask = V | REQ | PL | ROCE_M_WRITE | ROCE_M_MIDDLE,
				.hdr_len = B },
	[ROCE_WRITE_LAST] = { .name = "RDMA_WRITE_LAST",
			      .mask = V | REQ | PL | ROCE_M_WRITE | ROCE_M_LAST,
			      .hdr_len = B },
	[ROCE_WRITE_LAST_IMM] = { .name = "RDMA_WRITE_LAST_WITH_IMMEDIATE",
				  .mask = V | REQ | PL | ROCE_M_WRITE | ROCE_M_LAST | ROCE_M_IMMDT,
				  .hdr_len = B + ROCE_IMMDT_LEN,
				  .off_immdt = B },
	[ROCE_WRITE_ONLY] = { .name = "RDMA_WRITE_ONLY",
			      .mask = V | REQ | PL | ROCE_M_WRITE | ROCE_M_ONLY | ROCE_M_RETH,
			      .hdr_len = B + ROCE_RETH_LEN,
			      .off_reth = B },
	[ROCE_WRITE_ONLY_IMM] = { .name = "RDMA_WRITE_ONLY_WITH_IMMEDIATE",
				  .mask = V | REQ | PL | ROCE_M_WRITE | ROCE_M_ONLY | ROCE_M_RETH |
					  ROCE_M_IMMDT,
				  .hdr_len = B + ROCE_RETH_LEN + ROCE_IMMDT_LEN,
				  .off_reth = B,
				  .off_immdt = B + ROCE_RETH_LEN },
	[ROCE_READ_REQ] = { .name = "RDMA_READ_REQUEST",
			    .mask = V | REQ | ROCE_M_READ | ROCE_M_ONLY | ROCE_M_RETH,
			    .hdr_len = B + ROCE_RETH_LEN,
			    .off_reth = B },
	[ROCE_READ_RESP_FIRST] = { .name = "RDMA_READ_RESPONSE_FIRST",
				   .mask = V | RSP | PL | ROCE_M_READ | ROCE_M_FIRST | ROCE_M_AETH,
				   .hdr_len = B + ROCE_AETH_LEN,
				   .off_aeth = B },
	[ROCE_READ_RESP_MIDDLE] = { .name = "RDMA_READ_RESPONSE_MIDDLE",
				    .mask = V | RSP | PL | ROCE_M_READ | ROCE_M_MIDDLE,
				    .hdr_len = B },
	[ROCE_READ_RESP_LAST] = { .name = "RDMA_READ_RESPONSE_LAST",
				  .mask = V | RSP | PL | ROCE_M_READ | ROCE_M_LAST | ROCE_M_AETH,
				  .hdr_len = B + ROCE_AETH_LEN,
				  .off_aeth = B },
	[ROCE_READ_RESP_ONLY] = { .name = "RDMA_READ_RESPONSE_ONLY",
				  .mask = V | RSP | PL | ROCE_M_READ | ROCE_M_ONLY | ROCE_M_AETH,
				  .hdr_len = B + ROCE_AETH_LEN,
				  .off_aeth = B },
	[ROCE_ACK] = { .name = "ACKNOWLEDGE",
		       .mask = V | RSP | ROCE_M_ACK | ROCE_M_ONLY | ROCE_M_AETH,
		       .hdr_len = B + ROCE_AETH_LEN,
		       .off_aeth = B },
	[ROCE_ATOMIC_ACK] = { .name = "ATOMIC_ACKNOWLEDGE",
			      .mask = V | RSP | ROCE_M_ATOMIC | ROCE_M_ONLY | ROCE_M_AETH |
				      ROCE_M_ATMACK,
			      .hdr_len = B + ROCE_AETH_LEN + ROCE_ATMACK_LEN,
			      .off_aeth = B,
			      .off_atmack = B + ROCE_AETH_LEN },
	[ROCE_CMP_SWAP] = { .name = "COMPARE_SWAP",
			    .mask = V | REQ | ROCE_M_ATOMIC | ROCE_M_ONLY | ROCE_M_ATMETH,
			    .hdr_len = B + ROCE_ATMETH_LEN,
			    .off_atmeth = B },
	[ROCE_FETCH_ADD] = { .name = "FETCH_ADD",
			     .mask = V | REQ | ROCE_M_ATOMIC | ROCE_M_ONLY | ROCE_M_ATMETH,
			     .hdr_len = B + ROCE_ATMETH_LEN,
			     .off_atmeth = B },
	/* gdak's extended atomics (docs/UDP.md "Extended atomics") */
	[ROCE_XMASKED_CMP_SWAP] = { .name = "GDAK_MASKED_COMPARE_SWAP",
				    .mask = V | REQ | ROCE_M_ATOMIC | ROCE_M_ONLY | ROCE_M_XATMETH,
				    .hdr_len = B + ROCE_XATMETH_LEN,
				    .off_atmeth = B },
	[ROCE_XMASKED_FETCH_ADD] = { .name = "GDAK_MASKED_FETCH_ADD",
				     .mask = V | REQ | ROCE_M_ATOMIC | ROCE_M_ONLY | ROCE_M_XATMETH,
				     .hdr_len = B + ROCE_XATMETH_LEN,
				     .off_atmeth = B },
	/* gdak's DC transport (docs/UDP.md "DC"): requests carry a DCETH after
	 * the BTH, so their other headers sit ROCE_DCETH_LEN further on;
	 * responses are laid out as RC's */
#define DQ(rc, nm, m, hl) [ROCE_DC_BASE | (rc)] = { .name = "DC_" nm, .mask = (m) | DC | DCE, .hdr_len = B + D + (hl)
	DQ(ROCE_SEND_FIRST, "SEND_FIRST", V | REQ | PL | ROCE_M_SEND | ROCE_M_FIRST, 0) },
	DQ(ROCE_SEND_MIDDLE, "SEND_MIDDLE", V | REQ | PL | ROCE_M_SEND | ROCE_M_MIDDLE, 0) },
	DQ(ROCE_SEND_LAST, "SEND_LAST", V | REQ | PL | ROCE_M_SEND | ROCE_M_LAST, 0) },
	DQ(ROCE_SEND_LAST_IMM, "SEND_LAST_WITH_IMMEDIATE",
	   V | REQ | PL | ROCE_M_SEND | ROCE_M_LAST | ROCE_M_IMMDT, ROCE_IMMDT_LEN),
	   .off_immdt = B + D },
	DQ(ROCE_SEND_ONLY, "SEND_ONLY", V | REQ | PL | ROCE_M_SEND | ROCE_M_ONLY, 0) },
	DQ(ROCE_SEND_ONLY_IMM, "SEND_ONLY_WITH_IMMEDIATE",
	   V | REQ | PL | ROCE_M_SEND | ROCE_M_ONLY | ROCE_M_IMMDT, ROCE_IMMDT_LEN),
	   .off_immdt = B + D },
	DQ(ROCE_WRITE_FIRST, "RDMA_WRITE_FIRST",
	   V | REQ | PL | ROCE_M_WRITE | ROCE_M_FIRST | ROCE_M_RETH, ROCE_RETH_LEN),
	   .off_reth = B + D },
	DQ(ROCE_WRITE_MIDDLE, "RDMA_WRITE_MIDDLE", V | REQ | PL | ROCE_M_WRITE | ROCE_M_MIDDLE, 0) },
	DQ(ROCE_WRITE_LAST, "RDMA_WRITE_LAST", V | REQ | PL | ROCE_M_WRITE | ROCE_M_LAST, 0) },
	DQ(ROCE_WRITE_LAST_IMM, "RDMA_WRITE_LAST_WITH_IMMEDIATE",
	   V | REQ | PL | ROCE_M_WRITE | ROCE_M_LAST | ROCE_M_IMMDT, ROCE_IMMDT_LEN),
	   .off_immdt = B + D },
	DQ(ROCE_WRITE_ONLY, "RDMA_WRITE_ONLY",
	   V | REQ | PL | ROCE_M_WRITE | ROCE_M_ONLY | ROCE_M_RETH, ROCE_RETH_LEN),
	   .off_reth = B + D },
	DQ(ROCE_WRITE_ONLY_IMM, "RDMA_WRITE_ONLY_WITH_IMMEDIATE",
	   V | REQ | PL | ROCE_M_WRITE | ROCE_M_ONLY | ROCE_M_RETH | ROCE_M_IMMDT,
	   ROCE_RETH_LEN + ROCE_IMMDT_LEN),
	   .off_reth = B + D, .off_immdt = B + D + ROCE_RETH_LEN },
	DQ(ROCE_READ_REQ, "RDMA_READ_REQUEST", V | REQ | ROCE_M_READ | ROCE_M_ONLY | ROCE_M_RETH,
	   ROCE_RETH_LEN),
	   .off_reth = B + D },
	DQ(ROCE_CMP_SWAP, "COMPARE_SWAP", V | REQ | ROCE_M_ATOMIC | ROCE_M_ONLY | ROCE_M_ATMETH,
	   ROCE_ATMETH_LEN),
	   .off_atmeth = B + D },
	DQ(ROCE_FETCH_ADD, "FETCH_ADD", V | REQ | ROCE_M_ATOMIC | ROCE_M_ONLY | ROCE_M_ATMETH,
	   ROCE_ATMETH_LEN),
	   .off_atmeth = B + D },
#undef DQ
	[ROCE_DC_XMASKED_CMP_SWAP] = { .name = "DC_MASKED_COMPARE_SWAP",
				       .mask = V | REQ | ROCE_M_ATOMIC | ROCE_M_ONLY |
					       ROCE_M_XATMETH | DC | DCE,
				       .hdr_len = B + D + ROCE_XATMETH_LEN,
				       .off_atmeth = B + D },
	[ROCE_DC_XMASKED_FETCH_ADD] = { .name = "DC_MASKED_FETCH_ADD",
					.mask = V | REQ | ROCE_M_ATOMIC | ROCE_M_ONLY |
						ROCE_M_XATMETH | DC | DCE,
					.hdr_len = B + D + ROCE_XATMETH_LEN,
					.off_atmeth = B + D },
	[ROCE_DC_BASE | ROCE_READ_RESP_FIRST] = { .name = "DC_RDMA_READ_RESPONSE_FIRST",
						  .mask = V | RSP | PL | ROCE_M_READ |
							  ROCE_M_FIRST | ROCE_M_AETH | DC,
						  .hdr_len = B + ROCE_AETH_LEN,
						  .off_aeth = B },
	[ROCE_DC_BASE | ROCE_READ_RESP_MIDDLE] = { .name = "DC_RDMA_READ_RESPONSE_MIDDLE",
						   .mask = V | RSP | PL | ROCE_M_READ |
							   ROCE_M_MIDDLE | DC,
						   .hdr_len = B },
	[ROCE_DC_BASE | ROCE_READ_RESP_LAST] = { .name = "DC_RDMA_READ_RESPONSE_LAST",
						 .mask = V | RSP | PL | ROCE_M_READ | ROCE_M_LAST |
							 ROCE_M_AETH | DC,
						 .hdr_len = B + ROCE_AETH_LEN,
						 .off_aeth = B },
	[ROCE_DC_BASE | ROCE_READ_RESP_ONLY] = { .name = "DC_RDMA_READ_RESPONSE_ONLY",
						 .mask = V | RSP | PL | ROCE_M_READ | ROCE_M_ONLY |
							 ROCE_M_AETH | DC,
						 .hdr_len = B + ROCE_AETH_LEN,
						 .off_aeth = B },
	[ROCE_DC_BASE | ROCE_ACK] = { .name = "DC_ACKNOWLEDGE",
				      .mask = V | RSP | ROCE_M_ACK | ROCE_M_ONLY | ROCE_M_AETH | DC,
				      .hdr_len = B + ROCE_AETH_LEN,
				      .off_aeth = B },
	[ROCE_DC_BASE | ROCE_ATOMIC_ACK] = { .name = "DC_ATOMIC_ACKNOWLEDGE",
					     .mask = V | RSP | ROCE_M_ATOMIC | ROCE_M_ONLY |
						     ROCE_M_AETH | ROCE_M_ATMACK | DC,
					     .hdr_len = B + ROCE_AETH_LEN + ROCE_ATMACK_LEN,
					     .off_aeth = B,
					     .off_atmack = B + ROCE_AETH_LEN },
	/* decoded and named (gdak-trace), not executed: no ROCE_M_VALID */
	[ROCE_SEND_LAST_INV] = { .name = "SEND_LAST_WITH_INVALIDATE",
				 .mask = REQ | PL | ROCE_M_SEND | ROCE_M_LAST | ROCE_M_IETH,
				 .hdr_len = B + ROCE_IETH_LEN,
				 .off_ieth = B },
	[ROCE_SEND_ONLY_INV] = { .name = "SEND_ONLY_WITH_INVALIDATE",
				 .mask = REQ | PL | ROCE_M_SEND | ROCE_M_ONLY | ROCE_M_IETH,
				 .hdr_len = B + ROCE_IETH_LEN,
				 .off_ieth = B },
};
/* clang-format on */

const char *gdak_roce_op_name(uint8_t opcode)
{
	return gdak_roce_optab[opcode].name ? gdak_roce_optab[opcode].name : "UNKNOWN";
}

/* IBA table 45: RNR NAK timer field -> minimum wait.  Code 0 is the longest
 * (655.36 ms); 1..31 grow from 0.01 ms to 491.52 ms. */
static const uint32_t rnr_10us[32] = {
	65536, 1,    2,	   3,	 4,    6,     8,     12,    16,	   24,	  32,
	48,    64,   96,   128,	 192,  256,   384,   512,   768,   1024,  1536,
	2048,  3072, 4096, 6144, 8192, 12288, 16384, 24576, 32768, 49152,
};

uint64_t gdak_roce_rnr_timer_ns(unsigned code)
{
	/* table values are in units of 10 us */
	return (uint64_t)rnr_10us[code & 31] * 10000;
}
