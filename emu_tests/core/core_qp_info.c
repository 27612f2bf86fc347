/* SPDX-License-Identifier: MIT */
/*
 * core_qp_info.c - gdak_qp_info_pack/unpack: the 64-byte big-endian record
 * peers exchange out of band.  Round trips, the exact bytes, and corrupt or
 * foreign input rejected with -EPROTO and a message (never accepted, never
 * a crash).
 */
#include <errno.h>
#include <gdak/gdak.h>
#include "gdak_log.h"
#include "gdak_case.h"
#include "gdak_test.h"

static char last_line[512];
static unsigned n_lines;

static void sink(enum gdak_log_level lvl, const char *line, void *arg)
{
	snprintf(last_line, sizeof(last_line), "%s", line);
	n_lines++;
}

static void random_info(struct gdak_qp_info *qi, uint64_t *rng)
{
	memset(qi, 0, sizeof(*qi));
	qi->version = GDAK_QP_INFO_VERSION;
	qi->qpn = (uint32_t)gdak_test_rand(rng) & 0xffffff;
	qi->psn = (uint32_t)gdak_test_rand(rng) & 0xffffff;
	qi->mtu = 256u << (gdak_test_rand(rng) % 5);
	qi->node = gdak_test_rand(rng);
	gdak_test_fill(qi->gid, sizeof(qi->gid), gdak_test_rand(rng));
	qi->udp_port = (uint16_t)gdak_test_rand(rng);
	qi->lid = (uint16_t)gdak_test_rand(rng);
	qi->transport = (uint8_t)(1 + gdak_test_rand(rng) % 4);
	qi->gid_index = (uint8_t)gdak_test_rand(rng);
	qi->qp_type = (uint8_t)(gdak_test_rand(rng) % 3);
	qi->dc_key = gdak_test_rand(rng);
}

static void same(const struct gdak_qp_info *a, const struct gdak_qp_info *b)
{
	CHECK_EQ(a->version, b->version);
	CHECK_EQ(a->qpn, b->qpn);
	CHECK_EQ(a->psn, b->psn);
	CHECK_EQ(a->mtu, b->mtu);
	CHECK_EQ(a->node, b->node);
	CHECK_MEM(a->gid, b->gid, 16);
	CHECK_EQ(a->udp_port, b->udp_port);
	CHECK_EQ(a->lid, b->lid);
	CHECK_EQ(a->transport, b->transport);
	CHECK_EQ(a->gid_index, b->gid_index);
	CHECK_EQ(a->qp_type, b->qp_type);
	CHECK_EQ(a->dc_key, b->dc_key);
}

static void round_trips(void)
{
	uint64_t rng = 42;

	for (int i = 0; i < 500; i++) {
		struct gdak_qp_info in, out;
		uint8_t wire[GDAK_QP_INFO_WIRE_SIZE], wire2[GDAK_QP_INFO_WIRE_SIZE];

		random_info(&in, &rng);
		memset(wire, 0xcc, sizeof(wire));
		gdak_qp_info_pack(&in, wire);
		CHECK_EQ(gdak_qp_info_unpack(wire, &out), 0);
		same(&in, &out);
		/* packing the result gives the same bytes (no uninitialised padding) */
		gdak_qp_info_pack(&out, wire2);
		CHECK_MEM(wire, wire2, sizeof(wire));
	}
	/* the extremes of every field */
	{
		struct gdak_qp_info in = {.version = GDAK_QP_INFO_VERSION, .qpn = 0xffffff,
					  .psn = 0xffffff, .mtu = 4096, .node = ~0ull,
					  .udp_port = 0xffff, .lid = 0xffff, .transport = 0xff,
					  .gid_index = 0xff};
		struct gdak_qp_info out;
		uint8_t wire[GDAK_QP_INFO_WIRE_SIZE];

		memset(in.gid, 0xff, 16);
		gdak_qp_info_pack(&in, wire);
		CHECK_EQ(gdak_qp_info_unpack(wire, &out), 0);
		same(&in, &out);
	}
}

static void exact_bytes(void)
{
	struct gdak_qp_info in = { .version = GDAK_QP_INFO_VERSION,
				   .qpn = 0x123456,
				   .psn = 0xabcdef,
				   .mtu = 1024,
				   .node = 0x0102030405060708ull,
				   .udp_port = 4791,
				   .lid = 0x0a0b,
				   .transport = GDAK_QPI_UDP,
				   .gid_index = 3,
				   .qp_type = GDAK_QPT_DCT,
				   .dc_key = 0x1122334455667788ull };
	uint8_t wire[GDAK_QP_INFO_WIRE_SIZE];
	static const uint8_t zero[4];
	struct gdak_qp_info out;

	for (int i = 0; i < 16; i++)
		in.gid[i] = (uint8_t)(0xa0 + i);
	gdak_qp_info_pack(&in, wire);
	CHECK_MEM(wire, "GDQI", 4);
	CHECK_EQ(wire[7], GDAK_QP_INFO_VERSION);
	CHECK_EQ(wire[8], 0);
	CHECK_EQ(wire[9], 0x12);
	CHECK_EQ(wire[11], 0x56);
	CHECK_EQ(wire[13], 0xab);
	CHECK_EQ(wire[18], 0x04); /* 1024 = 0x400, big-endian */
	CHECK_EQ(wire[20], 0x01);
	CHECK_EQ(wire[27], 0x08);
	CHECK_MEM(wire + 28, in.gid, 16);
	CHECK_EQ(wire[44], 4791 >> 8);
	CHECK_EQ(wire[45], 4791 & 0xff);
	CHECK_EQ(wire[46], 0x0a);
	CHECK_EQ(wire[48], GDAK_QPI_UDP);
	CHECK_EQ(wire[49], 3);
	CHECK_EQ(wire[50], GDAK_QPT_DCT);
	CHECK_EQ(wire[51], 0);
	CHECK_EQ(wire[52], 0x11);
	CHECK_EQ(wire[59], 0x88);
	CHECK_MEM(wire + 60, zero, sizeof(zero));
	/* a version 1 record (no DC fields) reads as RC, reported as version 2 */
	wire[7] = 1;
	CHECK_EQ(gdak_qp_info_unpack(wire, &out), 0);
	CHECK_EQ(out.version, GDAK_QP_INFO_VERSION);
	CHECK_EQ(out.qp_type, GDAK_QPT_RC);
	CHECK_EQ(out.dc_key, 0);
	CHECK_EQ(out.qpn, 0x123456);
	/* a QP type nobody knows */
	wire[7] = GDAK_QP_INFO_VERSION;
	wire[50] = 3;
	CHECK_EQ(gdak_qp_info_unpack(wire, &out), -EPROTO);
}

static void corrupt_rejected(void)
{
	struct gdak_qp_info in = {.version = GDAK_QP_INFO_VERSION, .qpn = 7, .psn = 9, .mtu = 1024};
	struct gdak_qp_info out;
	uint8_t good[GDAK_QP_INFO_WIRE_SIZE], bad[GDAK_QP_INFO_WIRE_SIZE];

	gdak_qp_info_pack(&in, good);

	/* any change to the magic */
	for (int i = 0; i < 4; i++) {
		for (int bit = 0; bit < 8; bit++) {
			memcpy(bad, good, sizeof(bad));
			bad[i] ^= (uint8_t)(1u << bit);
			n_lines = 0;
			CHECK_EQ(gdak_qp_info_unpack(bad, &out), -EPROTO);
			CHECK_EQ(n_lines, 1);
		}
	}
	CHECK(strstr(last_line, "magic") != NULL);

	/* another version */
	memcpy(bad, good, sizeof(bad));
	bad[7] = GDAK_QP_INFO_VERSION + 1;
	CHECK_EQ(gdak_qp_info_unpack(bad, &out), -EPROTO);
	CHECK(strstr(last_line, "version") != NULL);
	bad[7] = 0;
	CHECK_EQ(gdak_qp_info_unpack(bad, &out), -EPROTO);

	/* qpn / psn over 24 bits */
	memcpy(bad, good, sizeof(bad));
	bad[8] = 1;
	CHECK_EQ(gdak_qp_info_unpack(bad, &out), -EPROTO);
	CHECK(strstr(last_line, "24 bits") != NULL);
	memcpy(bad, good, sizeof(bad));
	bad[12] = 0x80;
	CHECK_EQ(gdak_qp_info_unpack(bad, &out), -EPROTO);

	/* all zeros, all ones */
	memset(bad, 0, sizeof(bad));
	CHECK_EQ(gdak_qp_info_unpack(bad, &out), -EPROTO);
	memset(bad, 0xff, sizeof(bad));
	CHECK_EQ(gdak_qp_info_unpack(bad, &out), -EPROTO);

	/* NULL arguments */
	CHECK_EQ(gdak_qp_info_unpack(NULL, &out), -EINVAL);
	CHECK_EQ(gdak_qp_info_unpack(good, NULL), -EINVAL);

	/* and the good record still decodes after all that */
	CHECK_EQ(gdak_qp_info_unpack(good, &out), 0);
	CHECK_EQ(out.qpn, 7);
	CHECK_EQ(out.psn, 9);
}

static const struct gdak_case cases[] = { GDAK_CASE(round_trips), GDAK_CASE(exact_bytes),
					  GDAK_CASE(corrupt_rejected) };

int main(int argc, char **argv)
{
	gdak_log_set_sink(sink, NULL);
	return GDAK_TEST_CASES(argc, argv, cases);
}
