/* SPDX-License-Identifier: MIT */
/*
 * seeds.c - gdak-fuzz-seeds DIR: write the generated seed inputs of the
 * three fuzz targets into DIR/trace, DIR/roce and DIR/wqe (which must
 * exist).  Each seed is a small valid program or file that reaches deep
 * into its target; the fuzzer mutates from there.  The committed corpus
 * (emu_tests/fuzz/corpus/) holds these plus inputs found by fuzzing.
 *
 * The program encodings are those documented at the top of fuzz_roce.c and
 * fuzz_wqe.c.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <gdak/mlx5.h>
#include <gdak/trace.h>

#include "roce.h"

static const char *dir;
static unsigned nseeds;

struct prog {
	uint8_t b[4096];
	size_t n;
};

static void emit(struct prog *p, const uint8_t *b, size_t n)
{
	if (p->n + n > sizeof(p->b))
		abort();
	memcpy(p->b + p->n, b, n);
	p->n += n;
}
#define E(p, ...) emit(p, (const uint8_t[]){__VA_ARGS__}, sizeof((const uint8_t[]){__VA_ARGS__}))

static void save(const char *target, const char *name, const void *b, size_t n)
{
	char path[4096];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s/seed-%s", dir, target, name);
	f = fopen(path, "wb");
	if (!f || fwrite(b, 1, n, f) != n || fclose(f)) {
		fprintf(stderr, "gdak-fuzz-seeds: cannot write %s: %s\n", path, strerror(errno));
		exit(1);
	}
	nseeds++;
}

/* ---- wqe: header, 4 receive-WQE key bytes, program ------------------------ */

enum { W_WQE, W_RAW, W_RING, W_REC, W_REG, W_PROXY, W_WAIT, W_POLL, W_PI, W_BF, W_DEREG,
       W_MODIFY, W_RECV, W_CQDB };
/* opcode selectors into fuzz_wqe.c's table */
enum { S_NOP, S_WRITE, S_WRITE_IMM, S_SEND, S_SEND_IMM, S_READ, S_CS, S_FA, S_MCS, S_MFA };
/* key selectors: lkey in bits 0..2, rkey in bits 3..5 */
enum { K_L, K_R, K_RO, K_NLW, K_X, K_RB };
#define KEYS(l, r) ((uint8_t)((l) | (r) << 3))

static void wqe_start(struct prog *p, uint8_t h)
{
	p->n = 0;
	E(p, h, 0, 0, 0, 0);
}

static void wqe(struct prog *p, uint8_t sel, uint8_t fl, uint8_t k, uint16_t len)
{
	E(p, W_WQE, sel, fl, k, 0, 0, 1, 0, 2, (uint8_t)len, (uint8_t)(len >> 8));
	if (sel == S_CS || sel == S_FA)
		E(p, 5, 0);
	if (sel == S_MCS || sel == S_MFA) {
		uint8_t m[32] = {0};
		m[7] = 1;
		m[23] = 0xff;
		emit(p, m, 32);
	}
	if (fl & 4) {
		uint8_t d[256];
		for (unsigned i = 0; i < sizeof(d); i++)
			d[i] = (uint8_t)i;
		emit(p, d, len % 256);
	}
}

static void wqe_finish(struct prog *p, const char *name)
{
	E(p, W_RING, W_WAIT, 3, W_POLL);
	save("wqe", name, p->b, p->n);
}

/* A seed of one WQE under header h, rung and polled. */
static void one_wqe(struct prog *p, uint8_t h, uint8_t sel, uint8_t fl, uint8_t k, uint16_t len,
		    const char *name)
{
	wqe_start(p, h);
	wqe(p, sel, fl, k, len);
	wqe_finish(p, name);
}

static void wqe_seeds(void)
{
	static const char *const hname[] = {"db", "bf", "proxy"};
	struct prog p;
	char name[64];

	for (uint8_t h = 0; h < 3; h++) {
		uint8_t hb = (uint8_t)(h << 2);

		snprintf(name, sizeof(name), "%s-write", hname[h]);
		one_wqe(&p, hb, S_WRITE, 1, KEYS(K_L, K_R), 64, name);

		snprintf(name, sizeof(name), "%s-write-inline", hname[h]);
		one_wqe(&p, hb, S_WRITE, 5, KEYS(K_L, K_R), 40, name);

		wqe_start(&p, hb);
		for (int i = 0; i < 6; i++)
			wqe(&p, (uint8_t)(i % 2 ? S_READ : S_WRITE_IMM), 1, KEYS(K_L, K_R), 128);
		wqe(&p, S_NOP, 1, 0, 0);
		snprintf(name, sizeof(name), "%s-batch", hname[h]);
		wqe_finish(&p, name);
	}
	wqe_start(&p, 0);
	wqe(&p, S_SEND, 1, KEYS(K_L, 0), 100);
	wqe(&p, S_SEND_IMM, 1, KEYS(K_L, 0), 50);
	wqe_finish(&p, "send");

	wqe_start(&p, 0);
	wqe(&p, S_FA, 1, KEYS(K_L, K_R), 8);
	wqe(&p, S_CS, 3, KEYS(K_L, K_R), 8);
	wqe(&p, S_MFA, 1, KEYS(K_L, K_R), 8);
	wqe(&p, S_MCS, 1, KEYS(K_L, K_R), 8);
	wqe_finish(&p, "atomics");

	/* every access error the keys can produce */
	one_wqe(&p, 0, S_WRITE, 1, KEYS(K_L, K_RO), 64, "write-readonly");
	one_wqe(&p, 0, S_READ, 1, KEYS(K_NLW, K_R), 64, "read-no-local-write");
	one_wqe(&p, 0, S_WRITE, 1, KEYS(K_L, K_RB), 64, "write-no-remote-access");
	one_wqe(&p, 0, S_WRITE, 1, (uint8_t)(KEYS(K_L, K_R) | 0x40), 64, "write-past-end");

	/* dereg while referenced, then use */
	wqe_start(&p, 0);
	wqe(&p, S_WRITE, 1, KEYS(K_X, K_R), 64);
	E(&p, W_RING, W_DEREG);
	wqe(&p, S_WRITE, 1, KEYS(K_L, K_X), 64);
	wqe_finish(&p, "dereg");

	/* misbehaving doorbells */
	wqe_start(&p, 0);
	wqe(&p, S_WRITE, 1, KEYS(K_L, K_R), 64);
	E(&p, W_REC, 0, W_WAIT, 3, W_POLL, W_REG, 0, W_WAIT, 3, W_POLL);
	save("wqe", "record-then-register", p.b, p.n);
	wqe_start(&p, 0);
	wqe(&p, S_WRITE, 1, KEYS(K_L, K_R), 64);
	E(&p, W_REC, 0x80, W_WAIT, 3, W_REC, 100, W_WAIT, 3, W_POLL);
	save("wqe", "record-jumps", p.b, p.n);
	wqe_start(&p, 0x08);
	wqe(&p, S_WRITE, 1, KEYS(K_L, K_R), 64);
	E(&p, W_PROXY, 1, 0xff, 0xff, 0, 0, 0, 0, 0, 0, W_WAIT, 3, W_POLL);
	save("wqe", "proxy-garbage", p.b, p.n);
	wqe_start(&p, 0x04);
	wqe(&p, S_WRITE, 5, KEYS(K_L, K_R), 8);
	E(&p, W_REC, 0, W_BF, 0x85, W_WAIT, 3, W_POLL);
	save("wqe", "bf-mismatch", p.b, p.n);
	wqe_start(&p, 0);
	wqe(&p, S_WRITE, 0x09, KEYS(K_L, K_R), 64); /* wrong WQE index: */
	E(&p, 0x34, 0x12);
	wqe_finish(&p, "bad-index");

	/* CQ too small, never consumed */
	wqe_start(&p, 0x20);
	for (int i = 0; i < 5; i++)
		wqe(&p, S_WRITE, 1, KEYS(K_L, K_R), 16);
	E(&p, W_RING, W_WAIT, 3);
	save("wqe", "cq-overrun", p.b, p.n);

	/* ERR, RESET, reconnect, go on */
	wqe_start(&p, 0);
	wqe(&p, S_WRITE, 1, KEYS(K_L, K_R), 64);
	E(&p, W_RING, W_WAIT, 2, W_POLL, W_MODIFY, 0, W_WAIT, 2, W_POLL, W_MODIFY, 1);
	wqe(&p, S_WRITE, 1, KEYS(K_L, K_R), 64);
	wqe_finish(&p, "modify");

	/* unsettled: destroyed with work in flight */
	wqe_start(&p, 0x80);
	for (int i = 0; i < 8; i++)
		wqe(&p, S_WRITE, 1, KEYS(K_L, K_R), 1024);
	E(&p, W_RING);
	save("wqe", "destroy-in-flight", p.b, p.n);
}

/* ---- roce ---------------------------------------------------------------------- */

enum { R_INJECT, R_POST, R_PUMP, R_TIME, R_ERROR, R_RECV, R_WIRE };

static void rpost(struct prog *p, uint8_t side, uint8_t op, uint8_t kf, uint16_t len, uint16_t raddr)
{
	E(p, R_POST, side, op, kf, (uint8_t)len, (uint8_t)(len >> 8), (uint8_t)raddr,
	  (uint8_t)(raddr >> 8), 3, 0x10, 0);
}

static void pumps(struct prog *p, int n)
{
	for (int i = 0; i < n; i++)
		E(p, R_PUMP, 31, 0, 0, 0);
}

static void roce_seeds(void)
{
	struct prog p;
	char name[64];

	for (uint8_t op = 0; op < ROCE_WR_NOPS; op++) {
		/* the engine's name of the kind, as a file name: CMP_SWAP ->
		 * cmp-swap; a kind without a name stops the generator */
		const char *en = roce_wr_op_name(op);
		char opn[32];
		size_t k;

		if (!en || !en[0] || !strcmp(en, "UNKNOWN")) {
			fprintf(stderr, "gdak-fuzz-seeds: work-request kind %u has no name\n", op);
			exit(1);
		}
		for (k = 0; en[k] && k < sizeof(opn) - 1; k++)
			opn[k] = en[k] == '_' ? '-' : (char)(en[k] | 0x20);
		opn[k] = 0;
		for (uint8_t mtu = 0; mtu < 5; mtu += 2) {
			p.n = 0;
			E(&p, mtu);
			E(&p, R_RECV, 0x0f);
			rpost(&p, 0, op, 0, 3000, 64);
			rpost(&p, 1, op, 0, 100, 8);
			pumps(&p, 6);
			snprintf(name, sizeof(name), "%s-mtu%u", opn, 256u << mtu);
			save("roce", name, p.b, p.n);
		}
	}
	/* loss, duplication and reordering, then the retransmission timer */
	p.n = 0;
	E(&p, 1, R_RECV, 0x0f);
	rpost(&p, 0, ROCE_WR_WRITE, 0, 2000, 0);
	rpost(&p, 0, ROCE_WR_READ, 0, 1500, 0);
	E(&p, R_PUMP, 31, 0, 0, 0, R_WIRE, 0, R_WIRE, 1, R_WIRE, 2);
	pumps(&p, 2);
	E(&p, R_TIME, 0x10, 0x27);
	pumps(&p, 4);
	save("roce", "loss-retransmit", p.b, p.n);
	/* remote access errors, RNR, corruption */
	p.n = 0;
	E(&p, 2);
	rpost(&p, 0, ROCE_WR_WRITE, 1, 64, 0);
	rpost(&p, 0, ROCE_WR_SEND, 0, 64, 0);
	pumps(&p, 3);
	E(&p, R_TIME, 0x10, 0x27, R_RECV, 0x03);
	pumps(&p, 3);
	save("roce", "errors-rnr", p.b, p.n);
	p.n = 0;
	E(&p, 2);
	rpost(&p, 0, ROCE_WR_WRITE, 0, 700, 0);
	E(&p, R_PUMP, 0x9f, 0x40, 12, 0, R_PUMP, 0x9f, 0x01, 0, 0);
	pumps(&p, 3);
	save("roce", "corrupt", p.b, p.n);
	/* forged packets: every opcode with a fixed-up QPN, PSN, P_Key, ICRC */
	for (unsigned opc = 0; opc <= ROCE_FETCH_ADD; opc++) {
		const struct roce_opinfo *oi = roce_op((uint8_t)opc);
		uint8_t len = (uint8_t)(oi->hdr_len + (oi->mask & ROCE_M_PAYLOAD ? 16 : 0) + 4);

		p.n = 0;
		/* to side 1 (QPN, PSN, P_Key and ICRC fixed up) */
		E(&p, 2, R_RECV, 0x0f, R_INJECT, len, 0, 0x0f | 0x02, (uint8_t)opc, 0x40, 0xff, 0xff,
		  0, 0, 0, 0, 0, 0, 0, 0);
		pumps(&p, 2);
		snprintf(name, sizeof(name), "inject-op%02x", opc);
		save("roce", name, p.b, p.n);
	}
	/* PSNs around the 24-bit wrap */
	p.n = 0;
	E(&p, 0xc1, R_RECV, 0x0f);
	for (int i = 0; i < 4; i++)
		rpost(&p, (uint8_t)(i & 1), ROCE_WR_WRITE, 0, 1500, 0);
	pumps(&p, 8);
	save("roce", "psn-wrap", p.b, p.n);
}

/* ---- trace ---------------------------------------------------------------------- */

static void trace_seeds(void)
{
	struct gdak_trace_opts o = {.fake_clock = 1};
	char tmp[] = "/tmp/gdak-fuzz-seed-XXXXXX";
	struct gdak_trace *t;
	struct gdak_trace_buf *b;
	struct roce_path path = {.sip = 0x0100000a, .dip = 0x0200000a, .sport = 49152,
				 .dport = ROCE_UDP_PORT};
	uint8_t wqe[128] = {0}, cqe[64] = {0}, pkt[64] = {0}, reg[64] = {0};
	uint8_t *file;
	long len;
	FILE *f;
	int fd = mkstemp(tmp);

	if (fd < 0)
		exit(1);
	if (gdak_trace_open_opts(tmp, &o, &t)) {
		fprintf(stderr, "gdak-fuzz-seeds: cannot open a trace\n");
		exit(1);
	}
	b = gdak_trace_thread_buf(t, 0);
	gdak_trace_qp(b, 0x100, 0x101, "loop", "created");
	{
		struct gdak_mlx5_ctrl c = {.opcode = MLX5_OPCODE_RDMA_WRITE, .qpn = 0x100, .ds = 3,
					   .fm_ce_se = MLX5_WQE_CTRL_CQ_UPDATE};
		gdak_mlx5_ctrl_encode((void *)wqe, &c);
		gdak_mlx5_raddr_encode((void *)(wqe + 16), 0x10000, 0x200);
		gdak_mlx5_data_encode((void *)(wqe + 32), 0x20000, 64, 0x300);
	}
	memcpy(reg, wqe, 64);
	gdak_trace_doorbell(b, 0x100, 0, 1, reg, 8);
	gdak_trace_doorbell(b, 0x100, 1, 2, reg, 64);
	gdak_trace_wqe(b, 0x100, 0, wqe, 2);
	gdak_trace_recv_wqe(b, 0x101, 0, wqe + 32, 16);
	cqe[63] = 0x00;
	cqe[44] = 0x40;
	gdak_trace_cqe(b, 0x100, 0x200, 0, cqe);
	cqe[55] = MLX5_CQE_SYNDROME_REMOTE_ACCESS_ERR;
	cqe[63] = (uint8_t)(MLX5_CQE_REQ_ERR << 4);
	gdak_trace_cqe(b, 0x100, 0x200, 1, cqe);
	gdak_trace_violation(b, 0x100, 1, "bad_rkey", MLX5_CQE_SYNDROME_REMOTE_ACCESS_ERR,
			     "rkey 0x200 is not registered");
	gdak_trace_fault(b, 0x100, 2, "err", "REMOTE_ACCESS");
	/* two NIC passes as BATCH records, the second delta-coded against the
	 * first (a doorbell, its WQE and its CQE each) */
	for (int pass = 0; pass < 2; pass++) {
		gdak_trace_batch_begin(b);
		gdak_trace_doorbell(b, 0x100, 0, (uint16_t)(3 + pass), reg, 8);
		wqe[2] = (uint8_t)(2 + pass); /* ctrl WQE index */
		gdak_trace_wqe(b, 0x100, (uint16_t)(2 + pass), wqe, 1);
		cqe[63] = 0x00;
		cqe[55] = 0;
		cqe[61] = (uint8_t)(2 + pass); /* wqe_counter (big-endian 60..61) */
		gdak_trace_cqe(b, 0x100, 0x200, (uint32_t)(2 + pass), cqe);
		gdak_trace_batch_end(b);
	}
	/* a pass of a device's stream: WQEs and CQEs stepping (REPEAT), a
	 * signaled WQE and a CQE blip among them (OFF) */
	gdak_trace_batch_begin(b);
	gdak_trace_doorbell(b, 0x100, 0, 24, reg, 8);
	for (int i = 0; i < 20; i++) {
		wqe[2] = (uint8_t)(4 + i);
		wqe[11] = i == 9 ? 0x08 : 0;	/* fm_ce_se: CQ update */
		wqe[23] = (uint8_t)(0x40 * i);	/* raddr's low byte, carrying */
		wqe[22] = (uint8_t)(i / 4);
		gdak_trace_wqe(b, 0x100, (uint16_t)(4 + i), wqe, 1);
	}
	for (int i = 0; i < 5; i++) {
		cqe[61] = (uint8_t)(13 + 10 * i);
		cqe[55] = i == 3 ? 0x13 : 0;
		gdak_trace_cqe(b, 0x100, 0x200, (uint32_t)(4 + i), cqe);
	}
	gdak_trace_batch_end(b);
	gdak_trace_note(b, "seed");
	/* a RoCEv2 WRITE ONLY with 16 payload bytes, ICRC right */
	bth_set(pkt, ROCE_WRITE_ONLY, 0, 0, ROCE_PKEY_DEFAULT, 0x101, 1, 5);
	reth_set(pkt + 12, 0x1000, 0x200, 16);
	gdak_roce_icrc_set(&path, pkt, 12 + 16 + 16 + 4);
	gdak_trace_packet(b, 0, path.sip, path.dip, path.sport, path.dport, pkt, 48);
	memset(pkt, 0, sizeof(pkt));
	bth_set(pkt, ROCE_ACK, 0, 0, ROCE_PKEY_DEFAULT, 0x100, 0, 5);
	aeth_set(pkt + 12, AETH_NAK | AETH_NAK_REM_ACCESS, 1);
	gdak_roce_icrc_set(&path, pkt, 20);
	gdak_trace_packet(b, 1, path.dip, path.sip, ROCE_UDP_PORT, 49152, pkt, 20);
	gdak_trace_close(t);

	f = fdopen(fd, "rb");
	if (!f || fseek(f, 0, SEEK_END) || (len = ftell(f)) <= 0 || fseek(f, 0, SEEK_SET))
		exit(1);
	file = malloc((size_t)len);
	if (!file || fread(file, 1, (size_t)len, f) != (size_t)len)
		exit(1);
	fclose(f);
	unlink(tmp);
	save("trace", "all-records", file, (size_t)len);
	/* cut inside a block, and just the section header */
	save("trace", "truncated", file, (size_t)len * 2 / 3);
	save("trace", "header-only", file, file[4] | (size_t)file[5] << 8);
	free(file);
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: gdak-fuzz-seeds DIR (with DIR/trace, DIR/roce, DIR/wqe)\n");
		return 2;
	}
	dir = argv[1];
	wqe_seeds();
	roce_seeds();
	trace_seeds();
	printf("gdak-fuzz-seeds: %u seeds written under %s\n", nseeds, dir);
	return 0;
}
