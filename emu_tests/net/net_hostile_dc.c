/* SPDX-License-Identifier: MIT */
/*
 * net_hostile_dc.c - forged DC packets (gdak's DC wire encoding, docs/UDP.md
 * "DC") against a DCT on emu:udp: a wrong access key, a DCT number nobody
 * has, DCETHs cut short, MTU codes outside 1..5, a DC packet to an RC QP
 * and an RC packet to the DCT are each dropped and counted (the key
 * violation by the DCT), the DCT's memory untouched around the one well
 * formed request, which executes and is answered with a DC ACK; its
 * duplicate is ACKed again without executing again, a packet of an older
 * connection is dropped, and a new connection starts the DCI's context
 * over.  A DCI that is nobody's (a forger) can do what the key allows:
 * the access key is DC's authorization.
 */
#include <errno.h>
#include <poll.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include <arpa/inet.h>

#include <gdak/gdak.h>
#include <gdak/nic.h>

#include "gdak_test.h"
#include "net_forge.h"
#include "tr_udp.h"

#define KEY 0x0123456789abcdefull
#define MEM 8192
#define DST 4096 /* where the one good WRITE goes */
#define LEN 64
#define FAKE_DCI 0x4242

static struct forge fg;
static struct gdak_ctx *ctx;
static struct gdak_qp *dct, *rc;
static struct gdak_qp_info di, ri;
static uint8_t *mem;
static struct gdak_mr *mr;

/* A DC WRITE_ONLY to qpn at info's address: DCETH (dclen bytes of it) +
 * RETH + LEN bytes of fill. */
static void dc_write(const struct gdak_qp_info *to, uint8_t opcode, uint32_t qpn, uint64_t key,
		     uint32_t conn, uint8_t mtu, uint32_t psn0, uint32_t psn, uint32_t dclen,
		     uint64_t fill)
{
	uint8_t ext[ROCE_DCETH_LEN + ROCE_RETH_LEN], pay[LEN];
	uint32_t ip;

	dceth_set(ext, key, 0, FAKE_DCI, conn, mtu, psn0);
	reth_set(ext + dclen, (uint64_t)(uintptr_t)(mem + DST), gdak_mr_rkey(mr), LEN);
	gdak_test_fill(pay, LEN, fill);
	memcpy(&ip, to->gid + 12, 4);
	CHECK_EQ(
		forge_send(&fg, ip, to->udp_port, opcode, qpn, psn, ext,
			   dclen + (opcode == (ROCE_DC_BASE | ROCE_WRITE_ONLY) ? ROCE_RETH_LEN : 0),
			   pay, LEN),
		0);
}

/* The next packet to the forger (a DC ACK expected): its opcode, AETH
 * syndrome and PSN. */
static void expect_ack(uint32_t psn)
{
	uint8_t b[ROCE_MAX_PKT];
	struct pollfd p = { .fd = fg.fd, .events = POLLIN };
	ssize_t n;

	REQUIRE(poll(&p, 1, 30000) == 1);
	n = recv(fg.fd, b, sizeof(b), 0);
	REQUIRE(n >= ROCE_BTH_LEN + ROCE_AETH_LEN + ROCE_ICRC_LEN);
	CHECK_EQ(bth_opcode(b), ROCE_DC_BASE | ROCE_ACK);
	CHECK_EQ(bth_qpn(b), FAKE_DCI);
	CHECK_EQ(bth_psn(b), psn);
	CHECK_EQ(aeth_syn(b + ROCE_BTH_LEN) & AETH_TYPE_MASK, AETH_ACK);
}

/* A well-formed DC WRITE to the DCT (connection conn starting at PSN psn0,
 * this one at psn, fill's bytes): ACKed at psn and executed, so mem is want
 * with its bytes at DST. */
static void write_executed(uint8_t *want, uint32_t conn, uint32_t psn0, uint32_t psn, uint64_t fill)
{
	dc_write(&di, ROCE_DC_BASE | ROCE_WRITE_ONLY, di.qpn, KEY, conn, 3, psn0, psn,
		 ROCE_DCETH_LEN, fill);
	expect_ack(psn);
	gdak_test_fill(want + DST, LEN, fill);
	CHECK_MEM(mem, want, MEM);
}

static uint64_t bad_pkts(struct gdak_qp *q)
{
	struct roce_stats st;

	REQUIRE_EQ(nm_tr_udp_qp_stats(q, &st), 0);
	return st.bad_pkts;
}

int main(void)
{
	struct gdak_qp_attr a = { .type = GDAK_QPT_DCT, .dc_key = KEY };
	struct gdak_nic_dc_stats st;
	uint8_t want[MEM], pay[LEN];
	uint64_t bad0, rbad0;
	const uint8_t W = ROCE_DC_BASE | ROCE_WRITE_ONLY;

	REQUIRE_EQ(gdak_open("emu:udp:127.0.0.1", &ctx), 0);
	REQUIRE_EQ(gdak_mem_alloc(ctx, MEM, GDAK_MEM_HOST, (void **)&mem), 0);
	gdak_test_fill(mem, MEM, 5);
	memcpy(want, mem, MEM);
	REQUIRE_EQ(gdak_mr_reg(ctx, mem, MEM, GDAK_ACCESS_ALL, &mr), 0);
	REQUIRE_EQ(gdak_qp_create(ctx, &a, &dct), 0);
	REQUIRE_EQ(gdak_qp_connect(dct, NULL), 0);
	REQUIRE_EQ(gdak_qp_info(dct, &di), 0);
	/* an RC QP connected to itself: served, so that its socket is read */
	REQUIRE_EQ(gdak_qp_create(ctx, NULL, &rc), 0);
	REQUIRE_EQ(gdak_qp_info(rc, &ri), 0);
	REQUIRE_EQ(gdak_qp_connect(rc, &ri), 0);
	REQUIRE_EQ(forge_open(&fg, "127.0.0.1"), 0);
	bad0 = bad_pkts(dct);
	rbad0 = bad_pkts(rc);

	/* the wrong key: dropped unanswered, counted by the DCT */
	dc_write(&di, W, di.qpn, KEY ^ 1, 1, 3, 100, 100, ROCE_DCETH_LEN, 1);
	/* a DCT number nobody has, at the DCT's port */
	dc_write(&di, W, di.qpn ^ 0x800000, KEY, 1, 3, 100, 100, ROCE_DCETH_LEN, 2);
	/* DCETHs cut short: the packet ends inside it */
	for (uint32_t l = 0; l < ROCE_DCETH_LEN; l += 7) {
		uint8_t ext[ROCE_DCETH_LEN];
		uint32_t ip;

		dceth_set(ext, KEY, 0, FAKE_DCI, 1, 3, 100);
		memcpy(&ip, di.gid + 12, 4);
		CHECK_EQ(forge_send(&fg, ip, di.udp_port, W, di.qpn, 100, ext, l, NULL, 0), 0);
	}
	/* MTU codes outside 1..5 */
	dc_write(&di, W, di.qpn, KEY, 1, 0, 100, 100, ROCE_DCETH_LEN, 3);
	dc_write(&di, W, di.qpn, KEY, 1, 7, 100, 100, ROCE_DCETH_LEN, 4);
	/* an RC WRITE to the DCT, a DC WRITE to an RC QP */
	{
		uint8_t reth[ROCE_RETH_LEN];
		uint32_t ip;

		reth_set(reth, (uint64_t)(uintptr_t)(mem + DST), gdak_mr_rkey(mr), LEN);
		gdak_test_fill(pay, LEN, 6);
		memcpy(&ip, di.gid + 12, 4);
		CHECK_EQ(forge_send(&fg, ip, di.udp_port, ROCE_WRITE_ONLY, di.qpn, 100, reth,
				    sizeof(reth), pay, LEN),
			 0);
	}
	dc_write(&ri, W, ri.qpn, KEY, 1, 3, 100, 100, ROCE_DCETH_LEN, 7);

	/* the well-formed request: executed, ACKed - and every packet before
	 * it on this socket was handled by then */
	write_executed(want, 10, 500, 500, 8);
	CHECK_EQ(gdak_nic_dc_stats(dct, &st), 0);
	CHECK_EQ(st.key_violations, 1);
	/* nobody's number, 3 cut DCETHs, 2 MTU codes, the RC packet */
	CHECK_EQ(bad_pkts(dct) - bad0, 7);
	/* the RC QP's socket is another thread's: wait for it (bounded) */
	for (int i = 0; i < 30000 && bad_pkts(rc) == rbad0; i++)
		usleep(1000);
	CHECK_EQ(bad_pkts(rc) - rbad0, 1);
	CHECK_EQ(gdak_qp_state(dct), GDAK_QPS_RTR);

	/* its duplicate (other bytes, same PSN): ACKed again, not executed */
	dc_write(&di, W, di.qpn, KEY, 10, 3, 500, 500, ROCE_DCETH_LEN, 9);
	expect_ack(500);
	CHECK_MEM(mem, want, MEM);
	/* an older connection's packet is dropped; the current one goes on */
	dc_write(&di, W, di.qpn, KEY, 9, 3, 400, 400, ROCE_DCETH_LEN, 10);
	write_executed(want, 10, 500, 501, 11);
	/* a newer connection starts the context over at its first PSN */
	write_executed(want, 11, 7000, 7000, 12);
	CHECK_EQ(gdak_nic_dc_stats(dct, &st), 0);
	CHECK_EQ(st.key_violations, 1);
	CHECK_EQ(gdak_qp_state(dct), GDAK_QPS_RTR);

	forge_close(&fg);
	CHECK_EQ(gdak_qp_destroy(rc), 0);
	CHECK_EQ(gdak_qp_destroy(dct), 0);
	CHECK_EQ(gdak_mr_dereg(mr), 0);
	CHECK_EQ(gdak_mem_free(ctx, mem), 0);
	gdak_close(ctx);
	return gdak_test_end();
}
