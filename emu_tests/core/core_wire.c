/* SPDX-License-Identifier: MIT */
/*
 * core_wire.c - the RoCEv2 wire facts of <gdak/roce.h> (core/wire/): the
 * frame header builder and the ICRC against bytes written out by hand and an
 * ICRC computed separately (zlib's CRC-32 over the masked headers, done once
 * outside gdak), and the opcode table against IBA's names and lengths.  The
 * trace writer, the RoCE engine and gdak-trace all take these from here, so
 * equal bytes here mean equal bytes in packets and traces.
 */
#include <arpa/inet.h>

#include <gdak/roce.h>
#include "gdak_case.h"
#include "gdak_test.h"

static const struct roce_path path = {
	.sip = 0x0100000a, .dip = 0x0200000a, .sport = 49152, .dport = ROCE_UDP_PORT
};

/* 10.0.0.1:49152 -> 10.0.0.2:4791, 40 bytes of UDP payload, ID 0x1234 */
static const uint8_t frame_want[GDAK_ROCE_FRAME_HDRS] = {
	0x02, 0x00, 0x0a, 0x00, 0x00, 0x02, 0x02, 0x00, 0x0a, 0x00, 0x00, 0x01, 0x08, 0x00,
	0x45, 0x00, 0x00, 0x44, 0x12, 0x34, 0x40, 0x00, 0x40, 0x11, 0x14, 0x73, 0x0a, 0x00,
	0x00, 0x01, 0x0a, 0x00, 0x00, 0x02, 0xc0, 0x00, 0x12, 0xb7, 0x00, 0x30, 0x00, 0x00
};

/* RDMA_WRITE_ONLY without RETH bytes that matter: BTH, then 24 pattern bytes */
static void packet(uint8_t pkt[40])
{
	static const uint8_t bth[ROCE_BTH_LEN] = { 0x0a, 0x40, 0xff, 0xff, 0, 0,
						   0,	 0x11, 0x80, 0,	   0, 5 };

	memcpy(pkt, bth, sizeof(bth));
	for (int i = 0; i < 24; i++)
		pkt[12 + i] = (uint8_t)(i * 7 + 3);
	memset(pkt + 36, 0, 4);
}

static void frame_headers(void)
{
	uint8_t f[GDAK_ROCE_FRAME_HDRS + 8];

	memset(f, 0xee, sizeof(f));
	gdak_roce_frame_hdrs(f, &path, 40, 0x1234);
	CHECK_MEM(f, frame_want, sizeof(frame_want));
	CHECK_EQ(f[GDAK_ROCE_FRAME_HDRS], 0xee); /* nothing written past the headers */
	/* without the checksum: the same but bytes 10..11 of the IPv4 header */
	gdak_roce_ipv4_udp(f + GDAK_ROCE_ETH_LEN, &path, 40, 0x1234, 0);
	CHECK_EQ(f[GDAK_ROCE_ETH_LEN + 10], 0);
	CHECK_EQ(f[GDAK_ROCE_ETH_LEN + 11], 0);
	CHECK_EQ(gdak_roce_ipv4_csum(f + GDAK_ROCE_ETH_LEN), 0x1473);
}

static void icrc_values(void)
{
	uint8_t pkt[40], ip[28 + 40];
	uint16_t id = 0;

	packet(pkt);
	CHECK_EQ(gdak_roce_icrc(&path, pkt, sizeof(pkt)), 0xb496c2c3);
	/* from a frame's own header: its ID is covered */
	gdak_roce_ipv4_udp(ip, &path, sizeof(pkt), 0, 1);
	memcpy(ip + 28, pkt, sizeof(pkt));
	CHECK_EQ(gdak_roce_icrc_ip(ip, sizeof(ip)), 0xb496c2c3);
	gdak_roce_ipv4_udp(ip, &path, sizeof(pkt), 0x1234, 1);
	CHECK_EQ(gdak_roce_icrc_ip(ip, sizeof(ip)), 0xf9bdd8dd);
	CHECK_EQ(gdak_roce_icrc_ip(ip, 28 + ROCE_BTH_LEN + ROCE_ICRC_LEN - 1), 0);
	/* stored least significant byte first; the check solves for the ID */
	pkt[36] = 0xdd, pkt[37] = 0xd8, pkt[38] = 0xbd, pkt[39] = 0xf9;
	CHECK(gdak_roce_icrc_check(&path, pkt, sizeof(pkt), &id));
	CHECK_EQ(id, 0x1234);
	gdak_roce_icrc_set(&path, pkt, sizeof(pkt));
	CHECK_EQ(pkt[36], 0xc3);
	CHECK_EQ(pkt[39], 0xb4);
	CHECK(gdak_roce_icrc_ok(&path, pkt, sizeof(pkt)));
	pkt[20] ^= 1;
	CHECK(!gdak_roce_icrc_ok(&path, pkt, sizeof(pkt)));
}

static void opcode_table(void)
{
	static const struct {
		uint8_t op;
		const char *name;
		uint8_t hdr_len;
		int valid;
	} want[] = {
		{ 0x00, "SEND_FIRST", 12, 1 },
		{ 0x03, "SEND_LAST_WITH_IMMEDIATE", 16, 1 },
		{ 0x05, "SEND_ONLY_WITH_IMMEDIATE", 16, 1 },
		{ 0x06, "RDMA_WRITE_FIRST", 28, 1 },
		{ 0x0b, "RDMA_WRITE_ONLY_WITH_IMMEDIATE", 32, 1 },
		{ 0x0c, "RDMA_READ_REQUEST", 28, 1 },
		{ 0x0e, "RDMA_READ_RESPONSE_MIDDLE", 12, 1 },
		{ 0x10, "RDMA_READ_RESPONSE_ONLY", 16, 1 },
		{ 0x11, "ACKNOWLEDGE", 16, 1 },
		{ 0x12, "ATOMIC_ACKNOWLEDGE", 24, 1 },
		{ 0x13, "COMPARE_SWAP", 40, 1 },
		{ 0x14, "FETCH_ADD", 40, 1 },
		{ 0x16, "SEND_LAST_WITH_INVALIDATE", 16, 0 },
		{ 0x17, "SEND_ONLY_WITH_INVALIDATE", 16, 0 },
		/* gdak's extended atomics: BTH + the 48-byte ExtAtomicETH */
		{ 0xd3, "GDAK_MASKED_COMPARE_SWAP", 60, 1 },
		{ 0xd4, "GDAK_MASKED_FETCH_ADD", 60, 1 },
		/* gdak's DC (docs/UDP.md "DC"): requests BTH + DCETH (20) + RC's,
		 * responses as RC's */
		{ 0xe6, "DC_RDMA_WRITE_FIRST", 48, 1 },
		{ 0xec, "DC_RDMA_READ_REQUEST", 48, 1 },
		{ 0xf1, "DC_ACKNOWLEDGE", 16, 1 },
		{ 0xf2, "DC_ATOMIC_ACKNOWLEDGE", 24, 1 },
		{ 0xf4, "DC_FETCH_ADD", 60, 1 },
		{ 0xf9, "DC_MASKED_FETCH_ADD", 80, 1 },
	};
	unsigned named = 0;

	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		const struct roce_opinfo *oi = roce_op(want[i].op);

		CHECK_STR(gdak_roce_op_name(want[i].op), want[i].name);
		CHECK_EQ(oi->hdr_len, want[i].hdr_len);
		CHECK_EQ(!!(oi->mask & ROCE_M_VALID), want[i].valid);
	}
	for (unsigned op = 0; op < 256; op++)
		named += roce_op((uint8_t)op)->name != NULL;
	/* RC 0x00..0x14, 0x16, 0x17; gdak's 0xd3, 0xd4; DC 0xe0..0xf4, 0xf8, 0xf9 */
	CHECK_EQ(named, 48);
	CHECK_STR(gdak_roce_op_name(0xf5), "UNKNOWN");
	CHECK_STR(gdak_roce_op_name(0x15), "UNKNOWN");
	CHECK_STR(gdak_roce_op_name(0x64), "UNKNOWN"); /* UD: not in the table */
}

static const struct gdak_case cases[] = { GDAK_CASE(frame_headers), GDAK_CASE(icrc_values),
					  GDAK_CASE(opcode_table) };

int main(int argc, char **argv)
{
	return GDAK_TEST_CASES(argc, argv, cases);
}
