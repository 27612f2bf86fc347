/* SPDX-License-Identifier: MIT */
/*
 * roce_opcode.c - the RC opcode table (IBA vol. 1 table 39, header layout
 * per 9.2-9.3): what each packet carries, where, and its name.  The packet
 * parser, the builders and the logs all read it.
 */
#include "roce.h"

#define REQ ROCE_M_REQ
#define RSP ROCE_M_RESP
#define PL ROCE_M_PAYLOAD
#define V ROCE_M_VALID
#define B ROCE_BTH_LEN

/* clang-format off */
const struct roce_opinfo roce_optab[256] = {
	[ROCE_SEND_FIRST] = {.name = "SEND_FIRST",
			     .mask = V | REQ | PL | ROCE_M_SEND | ROCE_M_FIRST, .hdr_len = B},
	[ROCE_SEND_MIDDLE] = {.name = "SEND_MIDDLE",
			      .mask = V | REQ | PL | ROCE_M_SEND | ROCE_M_MIDDLE, .hdr_len = B},
	[ROCE_SEND_LAST] = {.name = "SEND_LAST",
			    .mask = V | REQ | PL | ROCE_M_SEND | ROCE_M_LAST, .hdr_len = B},
	[ROCE_SEND_LAST_IMM] = {.name = "SEND_LAST_IMM",
				.mask = V | REQ | PL | ROCE_M_SEND | ROCE_M_LAST | ROCE_M_IMMDT,
				.hdr_len = B + ROCE_IMMDT_LEN, .off_immdt = B},
	[ROCE_SEND_ONLY] = {.name = "SEND_ONLY",
			    .mask = V | REQ | PL | ROCE_M_SEND | ROCE_M_ONLY, .hdr_len = B},
	[ROCE_SEND_ONLY_IMM] = {.name = "SEND_ONLY_IMM",
				.mask = V | REQ | PL | ROCE_M_SEND | ROCE_M_ONLY | ROCE_M_IMMDT,
				.hdr_len = B + ROCE_IMMDT_LEN, .off_immdt = B},
	[ROCE_WRITE_FIRST] = {.name = "WRITE_FIRST",
			      .mask = V | REQ | PL | ROCE_M_WRITE | ROCE_M_FIRST | ROCE_M_RETH,
			      .hdr_len = B + ROCE_RETH_LEN, .off_reth = B},
	[ROCE_WRITE_MIDDLE] = {.name = "WRITE_MIDDLE",
			       .mask = V | REQ | PL | ROCE_M_WRITE | ROCE_M_MIDDLE, .hdr_len = B},
	[ROCE_WRITE_LAST] = {.name = "WRITE_LAST",
			     .mask = V | REQ | PL | ROCE_M_WRITE | ROCE_M_LAST, .hdr_len = B},
	[ROCE_WRITE_LAST_IMM] = {.name = "WRITE_LAST_IMM",
				 .mask = V | REQ | PL | ROCE_M_WRITE | ROCE_M_LAST | ROCE_M_IMMDT,
				 .hdr_len = B + ROCE_IMMDT_LEN, .off_immdt = B},
	[ROCE_WRITE_ONLY] = {.name = "WRITE_ONLY",
			     .mask = V | REQ | PL | ROCE_M_WRITE | ROCE_M_ONLY | ROCE_M_RETH,
			     .hdr_len = B + ROCE_RETH_LEN, .off_reth = B},
	[ROCE_WRITE_ONLY_IMM] = {.name = "WRITE_ONLY_IMM",
				 .mask = V | REQ | PL | ROCE_M_WRITE | ROCE_M_ONLY | ROCE_M_RETH |
					ROCE_M_IMMDT,
				 .hdr_len = B + ROCE_RETH_LEN + ROCE_IMMDT_LEN, .off_reth = B,
				 .off_immdt = B + ROCE_RETH_LEN},
	[ROCE_READ_REQ] = {.name = "READ_REQUEST",
			   .mask = V | REQ | ROCE_M_READ | ROCE_M_ONLY | ROCE_M_RETH,
			   .hdr_len = B + ROCE_RETH_LEN, .off_reth = B},
	[ROCE_READ_RESP_FIRST] = {.name = "READ_RESPONSE_FIRST",
				  .mask = V | RSP | PL | ROCE_M_READ | ROCE_M_FIRST | ROCE_M_AETH,
				  .hdr_len = B + ROCE_AETH_LEN, .off_aeth = B},
	[ROCE_READ_RESP_MIDDLE] = {.name = "READ_RESPONSE_MIDDLE",
				   .mask = V | RSP | PL | ROCE_M_READ | ROCE_M_MIDDLE,
				   .hdr_len = B},
	[ROCE_READ_RESP_LAST] = {.name = "READ_RESPONSE_LAST",
				 .mask = V | RSP | PL | ROCE_M_READ | ROCE_M_LAST | ROCE_M_AETH,
				 .hdr_len = B + ROCE_AETH_LEN, .off_aeth = B},
	[ROCE_READ_RESP_ONLY] = {.name = "READ_RESPONSE_ONLY",
				 .mask = V | RSP | PL | ROCE_M_READ | ROCE_M_ONLY | ROCE_M_AETH,
				 .hdr_len = B + ROCE_AETH_LEN, .off_aeth = B},
	[ROCE_ACK] = {.name = "ACKNOWLEDGE",
		      .mask = V | RSP | ROCE_M_ACK | ROCE_M_ONLY | ROCE_M_AETH,
		      .hdr_len = B + ROCE_AETH_LEN, .off_aeth = B},
	[ROCE_ATOMIC_ACK] = {.name = "ATOMIC_ACKNOWLEDGE",
			     .mask = V | RSP | ROCE_M_ATOMIC | ROCE_M_ONLY | ROCE_M_AETH |
				ROCE_M_ATMACK,
			     .hdr_len = B + ROCE_AETH_LEN + ROCE_ATMACK_LEN, .off_aeth = B,
			     .off_atmack = B + ROCE_AETH_LEN},
	[ROCE_CMP_SWAP] = {.name = "COMPARE_SWAP",
			   .mask = V | REQ | ROCE_M_ATOMIC | ROCE_M_ONLY | ROCE_M_ATMETH,
			   .hdr_len = B + ROCE_ATMETH_LEN, .off_atmeth = B},
	[ROCE_FETCH_ADD] = {.name = "FETCH_ADD",
			    .mask = V | REQ | ROCE_M_ATOMIC | ROCE_M_ONLY | ROCE_M_ATMETH,
			    .hdr_len = B + ROCE_ATMETH_LEN, .off_atmeth = B},
	[ROCE_XMASKED_CMP_SWAP] = {.name = "GDAK_MASKED_COMPARE_SWAP",
				   .mask = V | REQ | ROCE_M_ATOMIC | ROCE_M_ONLY | ROCE_M_XATMETH,
				   .hdr_len = B + ROCE_XATMETH_LEN, .off_atmeth = B},
	[ROCE_XMASKED_FETCH_ADD] = {.name = "GDAK_MASKED_FETCH_ADD",
				    .mask = V | REQ | ROCE_M_ATOMIC | ROCE_M_ONLY | ROCE_M_XATMETH,
				    .hdr_len = B + ROCE_XATMETH_LEN, .off_atmeth = B},
};
/* clang-format on */

const char *roce_op_name(uint8_t opcode)
{
	return roce_optab[opcode].name ? roce_optab[opcode].name : "UNKNOWN";
}

/* clang-format off */
static const char *const wr_op_names[ROCE_WR_NOPS] = {
	[ROCE_WR_SEND] = "SEND", [ROCE_WR_SEND_IMM] = "SEND_IMM", [ROCE_WR_WRITE] = "WRITE",
	[ROCE_WR_WRITE_IMM] = "WRITE_IMM", [ROCE_WR_READ] = "READ",
	[ROCE_WR_CMP_SWAP] = "CMP_SWAP", [ROCE_WR_FETCH_ADD] = "FETCH_ADD",
	[ROCE_WR_XMASKED_CS] = "MASKED_CMP_SWAP", [ROCE_WR_XMASKED_FA] = "MASKED_FETCH_ADD",
};
/* clang-format on */

const char *roce_wr_op_name(unsigned op)
{
	return op < ROCE_WR_NOPS ? wr_op_names[op] : "UNKNOWN";
}

/* IBA table 45: RNR NAK timer field -> minimum wait.  Code 0 is the longest
 * (655.36 ms); 1..31 grow from 0.01 ms to 491.52 ms. */
static const uint32_t rnr_10us[32] = {
	65536, 1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128, 192,
	256, 384, 512, 768, 1024, 1536, 2048, 3072, 4096, 6144, 8192, 12288, 16384, 24576,
	32768, 49152,
};

uint64_t roce_rnr_timer_ns(unsigned code)
{
	/* table values are in units of 10 us */
	return (uint64_t)rnr_10us[code & 31] * 10000;
}
