/* SPDX-License-Identifier: MIT */
/*
 * trace_roundtrip.c - every record type written through gdak/trace.h comes
 * back from the reader with the same fields and bytes; limits cut and flag;
 * full buffers flush; failed writes are counted and reported by a LOST
 * record; concurrent writers and a concurrent flusher lose nothing.
 */
#include <errno.h>
#include <pthread.h>
#include <arpa/inet.h>

#include "gdak_case.h"
#include "gdak_test.h"
#include "trace_int.h"
#include "trace_util.h"

struct collected {
	struct gdak_trace_item it[64];
	int n;
};

static void collect(const struct gdak_trace_item *it, void *arg)
{
	struct collected *c = arg;

	if (it->kind == GDAK_TITEM_OTHER || c->n >= 64)
		return;
	c->it[c->n++] = *it;
}

static void test_every_record(void)
{
	char *path = tt_tmpname("rt");
	struct gdak_trace_opts o = {.fake_clock = 1};
	struct gdak_trace *t;
	struct gdak_trace_buf *b;
	uint8_t reg[100], wqe[20 * 64], rwqe[32], cqe[64], pkt[100];
	struct collected c = {.n = 0};
	char err[256];
	size_t len;
	uint8_t *file;

	REQUIRE(path);
	gdak_test_fill(reg, sizeof(reg), 1);
	gdak_test_fill(wqe, sizeof(wqe), 2);
	gdak_test_fill(rwqe, sizeof(rwqe), 3);
	gdak_test_fill(cqe, sizeof(cqe), 4);
	gdak_test_fill(pkt, sizeof(pkt), 5);

	REQUIRE_EQ(gdak_trace_open_opts(path, &o, &t), 0);
	CHECK(gdak_trace_generation(t) != 0);
	b = gdak_trace_thread_buf(t, 7);
	REQUIRE(b);
	CHECK(gdak_trace_thread_buf(t, 7) == b);	/* one buffer per thread id */
	gdak_trace_doorbell(b, 0x12, 1, 5, reg, 64);
	gdak_trace_wqe(b, 0x12, 4, wqe, 2);
	gdak_trace_recv_wqe(b, 0x12, 3, rwqe, sizeof(rwqe));
	gdak_trace_cqe(b, 0x12, 0x40, 9, cqe);
	gdak_trace_violation(b, 0x12, 4, "ds_count", 0x02, "DS 9 > 8");
	gdak_trace_fault(b, 0x12, 4, "error_cqe", "syndrome 0x13");
	gdak_trace_qp(b, 0x12, 0x13, "loop", "connected");
	gdak_trace_note(b, "hello \"trace\"");
	gdak_trace_packet(b, 1, inet_addr("10.1.0.1"), inet_addr("10.1.0.2"), 49152, 4791, pkt,
			  sizeof(pkt));
	/* over the limits: cut and flagged */
	gdak_trace_doorbell(b, 0x12, 0, 6, reg, sizeof(reg));
	gdak_trace_wqe(b, 0x12, 6, wqe, 20);
	/* no buffer (tracing off): nothing, no crash */
	gdak_trace_note(NULL, "x");
	gdak_trace_wqe(NULL, 1, 2, wqe, 1);
	gdak_trace_close(t);

	file = tt_slurp(path, &len);
	REQUIRE(file);
	CHECK_EQ(tt_read_all(file, len, collect, &c, err, sizeof(err)), 0);
	REQUIRE_EQ(c.n, 12);

	for (int i = 0; i < 11; i++) {
		if (c.it[i].kind != GDAK_TITEM_RECORD)
			continue;
		CHECK_EQ(c.it[i].hdr.thread_id, 7);
		CHECK_EQ(c.it[i].hdr.seq, (uint64_t)i);	/* packets take a sequence number too */
		CHECK_EQ(c.it[i].hdr.version, GDAK_TRACE_REC_VERSION);
	}
	/* fake clock: 1000 ns per stamp, in the order they were taken */
	CHECK_EQ(c.it[0].hdr.ts_ns, 1000);
	CHECK_EQ(c.it[7].hdr.ts_ns, 8000);
	CHECK_EQ(c.it[8].pkt.ts_ns, 9000);

	CHECK_EQ(c.it[0].hdr.type, GDAK_TREC_DOORBELL);
	CHECK_EQ(c.it[0].hdr.qpn, 0x12);
	CHECK_EQ(c.it[0].u.db.handler, 1);
	CHECK_EQ(c.it[0].u.db.dbrec_pi, 5);
	CHECK_EQ(c.it[0].u.db.reg_len, 64);
	CHECK_MEM(c.it[0].u.db.reg, reg, 64);

	CHECK_EQ(c.it[1].hdr.type, GDAK_TREC_WQE);
	CHECK_EQ(c.it[1].u.wqe.wqe_index, 4);
	CHECK_EQ(c.it[1].u.wqe.len, 128);
	CHECK_EQ(c.it[1].u.wqe.flags, 0);
	CHECK_MEM(c.it[1].u.wqe.bytes, wqe, 128);

	CHECK_EQ(c.it[2].hdr.type, GDAK_TREC_RECV_WQE);
	CHECK_EQ(c.it[2].u.wqe.wqe_index, 3);
	CHECK_EQ(c.it[2].u.wqe.len, sizeof(rwqe));
	CHECK_MEM(c.it[2].u.wqe.bytes, rwqe, sizeof(rwqe));

	CHECK_EQ(c.it[3].hdr.type, GDAK_TREC_CQE);
	CHECK_EQ(c.it[3].u.cqe.cqn, 0x40);
	CHECK_EQ(c.it[3].u.cqe.cq_index, 9);
	CHECK_MEM(c.it[3].u.cqe.cqe, cqe, 64);

	CHECK_EQ(c.it[4].hdr.type, GDAK_TREC_VIOLATION);
	CHECK_EQ(c.it[4].u.viol.wqe_index, 4);
	CHECK_EQ(c.it[4].u.viol.syndrome, 0x02);
	CHECK_EQ(c.it[4].u.viol.name.len, 8);
	CHECK_MEM(c.it[4].u.viol.name.s, "ds_count", 8);
	CHECK_EQ(c.it[4].u.viol.text.len, 8);
	CHECK_MEM(c.it[4].u.viol.text.s, "DS 9 > 8", 8);

	CHECK_EQ(c.it[5].hdr.type, GDAK_TREC_FAULT);
	CHECK_MEM(c.it[5].u.viol.name.s, "error_cqe", 9);
	CHECK_MEM(c.it[5].u.viol.text.s, "syndrome 0x13", 13);

	CHECK_EQ(c.it[6].hdr.type, GDAK_TREC_QP);
	CHECK_EQ(c.it[6].u.qp.peer_qpn, 0x13);
	CHECK_EQ(c.it[6].u.qp.transport.len, 4);
	CHECK_MEM(c.it[6].u.qp.transport.s, "loop", 4);
	CHECK_MEM(c.it[6].u.qp.text.s, "connected", 9);

	CHECK_EQ(c.it[7].hdr.type, GDAK_TREC_NOTE);
	CHECK_EQ(c.it[7].hdr.qpn, GDAK_TRACE_QPN_NONE);
	CHECK_EQ(c.it[7].u.note.text.len, 13);
	CHECK_MEM(c.it[7].u.note.text.s, "hello \"trace\"", 13);

	/* the packet: Ethernet/IPv4/UDP around the payload, direction, thread */
	CHECK_EQ(c.it[8].kind, GDAK_TITEM_PACKET);
	CHECK_EQ(c.it[8].pkt.dir, 1);
	CHECK_EQ(c.it[8].pkt.thread_id, 7);
	CHECK_EQ(c.it[8].pkt.caplen, 14 + 20 + 8 + sizeof(pkt));
	CHECK_EQ(c.it[8].pkt.origlen, 14 + 20 + 8 + sizeof(pkt));
	CHECK_MEM(c.it[8].pkt.frame + 42, pkt, sizeof(pkt));
	{
		const uint8_t *ip = c.it[8].pkt.frame + 14;
		uint32_t s = 0;
		for (int i = 0; i < 20; i += 2)
			s += (uint32_t)(ip[i] << 8 | ip[i + 1]);
		while (s >> 16)
			s = (s & 0xffff) + (s >> 16);
		CHECK_EQ(s, 0xffff);	/* a valid header checksum sums to all ones */
		CHECK_EQ(ip[9], 17);
		CHECK_EQ((ip[22] << 8) | ip[23], 4791);	/* UDP destination port */
		CHECK_EQ((ip[2] << 8) | ip[3], 20 + 8 + sizeof(pkt));
	}

	CHECK_EQ(c.it[9].u.db.reg_len, GDAK_TRACE_MAX_REG);
	CHECK_EQ(c.it[10].u.wqe.len, GDAK_TRACE_MAX_WQEBB * 64);
	CHECK_EQ(c.it[10].u.wqe.flags & GDAK_TRACE_F_TRUNC, GDAK_TRACE_F_TRUNC);
	CHECK_MEM(c.it[10].u.wqe.bytes, wqe, GDAK_TRACE_MAX_WQEBB * 64);

	CHECK_EQ(c.it[11].hdr.type, GDAK_TREC_STATS);
	CHECK_EQ(c.it[11].hdr.thread_id, GDAK_TRACE_THREAD_WRITER);
	CHECK_EQ(c.it[11].u.stats.records, 11);
	CHECK_EQ(c.it[11].u.stats.packets, 1);
	CHECK_EQ(c.it[11].u.stats.lost, 0);
	CHECK_EQ(c.it[11].u.stats.bytes, c.it[11].offset);
	CHECK_EQ(c.it[11].offset + c.it[11].block_len, len);
	CHECK_EQ(c.it[11].hdr.body_len, sizeof(struct gdak_trace_stats_body));
	CHECK_EQ(c.it[11].u.stats.waits, 0);
	CHECK_EQ(c.it[11].u.stats.dropped, 0);

	/* an older writer's STATS stops after packets (40 bytes): still read,
	 * waits and dropped 0; a STATS with non-zero ones reads them back */
	{
		size_t off = (size_t)c.it[11].offset, bl = c.it[11].block_len;
		uint8_t *h = file + off + 12;
		struct collected c2 = {.n = 0};

		trace_put64(h + 32 + 40, 3);	/* waits */
		trace_put64(h + 32 + 48, 2);	/* dropped */
		CHECK_EQ(tt_read_all(file, len, collect, &c2, err, sizeof(err)), 0);
		CHECK_EQ(c2.n, 12);
		CHECK_EQ(c2.it[11].u.stats.waits, 3);
		CHECK_EQ(c2.it[11].u.stats.dropped, 2);

		c2.n = 0;
		trace_put32(h + 4, 40);		/* body_len */
		bl -= 16;
		trace_put32(file + off + 4, (uint32_t)bl);
		trace_put32(file + off + bl - 4, (uint32_t)bl);
		CHECK_EQ(tt_read_all(file, off + bl, collect, &c2, err, sizeof(err)), 0);
		CHECK_EQ(c2.n, 12);
		CHECK_EQ(c2.it[11].hdr.type, GDAK_TREC_STATS);
		CHECK_EQ(c2.it[11].u.stats.records, 11);
		CHECK_EQ(c2.it[11].u.stats.packets, 1);
		CHECK_EQ(c2.it[11].u.stats.waits, 0);
		CHECK_EQ(c2.it[11].u.stats.dropped, 0);
	}

	free(file);
	unlink(path);
	free(path);
}

static void test_open_errors(void)
{
	struct gdak_trace *t = (struct gdak_trace *)1;

	CHECK_EQ(gdak_trace_open("-", &t), -EINVAL);
	CHECK(t == NULL);
	CHECK_EQ(gdak_trace_open("", &t), -EINVAL);
	CHECK_EQ(gdak_trace_open("/nonexistent-dir/x.pcapng", &t), -ENOENT);
	CHECK_EQ(gdak_trace_open("/tmp", &t), -EISDIR);
	CHECK(gdak_trace_thread_buf(NULL, 0) == NULL);
	CHECK_EQ(gdak_trace_generation(NULL), 0);
	CHECK_EQ(gdak_trace_flush(NULL), -EINVAL);
	gdak_trace_close(NULL);
	unsetenv("GDAK_TRACE");
	t = (struct gdak_trace *)1;
	CHECK_EQ(gdak_trace_open_env(&t), 0);
	CHECK(t == NULL);
}

struct seqcheck {
	uint64_t next[4];
	uint64_t bad, notes, lost_recs, lost_blocks, stats_lost;
};

static void seq_fn(const struct gdak_trace_item *it, void *arg)
{
	struct seqcheck *s = arg;

	if (it->kind != GDAK_TITEM_RECORD)
		return;
	if (it->hdr.type == GDAK_TREC_LOST) {
		s->lost_recs += it->u.lost.records;
		s->lost_blocks++;
		return;
	}
	if (it->hdr.type == GDAK_TREC_STATS) {
		s->stats_lost = it->u.stats.lost;
		return;
	}
	if (it->hdr.thread_id >= 4) {
		s->bad++;
		return;
	}
	/* a thread's records appear in order; a gap is only allowed across a loss */
	if (it->hdr.seq != s->next[it->hdr.thread_id] && !s->lost_blocks)
		s->bad++;
	s->next[it->hdr.thread_id] = it->hdr.seq + 1;
	s->notes++;
}

/* Failed writes: counted, reported by a LOST record, the rest kept. */
static void test_write_errors(void)
{
	char *path = tt_tmpname("lost");
	struct gdak_trace *t;
	struct gdak_trace_buf *b;
	struct gdak_trace_stats st;
	struct seqcheck s = {.bad = 0};
	size_t len;
	uint8_t *file;

	REQUIRE(path);
	REQUIRE_EQ(gdak_trace_open(path, &t), 0);
	{
		struct gdak_trace *t2;
		char *p2 = tt_tmpname("gen");
		REQUIRE(p2);
		REQUIRE_EQ(gdak_trace_open(p2, &t2), 0);
		CHECK(gdak_trace_generation(t2) > gdak_trace_generation(t));
		gdak_trace_close(t2);
		unlink(p2);
		free(p2);
	}
	b = gdak_trace_thread_buf(t, 0);
	REQUIRE(b);
	gdak_trace_note(b, "a");
	gdak_trace_note(b, "b");
	gdak_trace_note(b, "c");
	gdak_trace_inject_write_errors(t, 1);
	CHECK_EQ(gdak_trace_flush(t), -EIO);
	gdak_trace_get_stats(t, &st);
	CHECK_EQ(st.lost, 3);
	CHECK_EQ(st.records, 0);
	gdak_trace_note(b, "d");
	gdak_trace_note(b, "e");
	CHECK_EQ(gdak_trace_flush(t), 0);
	gdak_trace_get_stats(t, &st);
	CHECK_EQ(st.lost, 3);
	CHECK_EQ(st.records, 3);	/* d, e and the LOST record */
	gdak_trace_close(t);

	file = tt_slurp(path, &len);
	REQUIRE(file);
	CHECK_EQ(tt_read_all(file, len, seq_fn, &s, NULL, 0), 0);
	CHECK_EQ(s.notes, 2);
	CHECK_EQ(s.lost_recs, 3);
	CHECK_EQ(s.lost_blocks, 1);
	CHECK_EQ(s.stats_lost, 3);
	CHECK_EQ(s.next[0], 5);	/* d and e kept their sequence numbers 3, 4 */
	free(file);
	unlink(path);
	free(path);
}

struct writer_arg {
	struct gdak_trace *t;
	uint32_t id;
	int n;
};

static void *writer(void *p)
{
	struct writer_arg *a = p;
	struct gdak_trace_buf *b = gdak_trace_thread_buf(a->t, a->id);
	uint8_t w[64] = {0};

	for (int i = 0; i < a->n && b; i++) {
		if (i % 2)
			gdak_trace_note(b, "concurrent writer record");
		else
			gdak_trace_wqe(b, a->id, (uint16_t)i, w, 1);
	}
	return NULL;
}

static _Atomic int flusher_stop;

static void *flusher(void *p)
{
	while (!flusher_stop) {
		gdak_trace_flush(p);
		usleep(200);
	}
	return NULL;
}

/* Two writers filling their buffers several times while a third thread
 * flushes: every record arrives once, in per-thread order. */
static void test_concurrent(void)
{
	enum { N = 30000 };
	char *path = tt_tmpname("mt");
	struct gdak_trace *t;
	struct writer_arg a[2];
	pthread_t th[3];
	struct seqcheck s = {.bad = 0};
	struct gdak_trace_stats st;
	size_t len;
	uint8_t *file;

	REQUIRE(path);
	REQUIRE_EQ(gdak_trace_open(path, &t), 0);
	for (int i = 0; i < 2; i++) {
		a[i] = (struct writer_arg){.t = t, .id = (uint32_t)i + 1, .n = N};
		REQUIRE_EQ(pthread_create(&th[i], NULL, writer, &a[i]), 0);
	}
	REQUIRE_EQ(pthread_create(&th[2], NULL, flusher, t), 0);
	pthread_join(th[0], NULL);
	pthread_join(th[1], NULL);
	flusher_stop = 1;
	pthread_join(th[2], NULL);
	gdak_trace_get_stats(t, &st);
	CHECK(st.flushes > 2);	/* 30000 records of ~60-130 bytes overflow 256 KiB */
	gdak_trace_close(t);

	file = tt_slurp(path, &len);
	REQUIRE(file);
	CHECK_EQ(tt_read_all(file, len, seq_fn, &s, NULL, 0), 0);
	CHECK_EQ(s.bad, 0);
	CHECK_EQ(s.notes, 2 * N);
	CHECK_EQ(s.next[1], N);
	CHECK_EQ(s.next[2], N);
	CHECK_EQ(s.lost_recs, 0);
	free(file);
	unlink(path);
	free(path);
}

/* One packet through gdak_trace_packet_id (id) or gdak_trace_packet (id < 0),
 * read back: *out gets its decoded headers, frame_id the frame's IPv4 ID. */
static void packet_roundtrip(const uint8_t *pkt, size_t n, int id, struct trace_roce_pkt *out,
			     uint16_t *frame_id, uint8_t *ipudp)
{
	char *path = tt_tmpname("ipid");
	struct gdak_trace *t;
	struct gdak_trace_buf *b;
	struct collected c = {.n = 0};
	const char *why = NULL;
	char err[256];
	size_t len;
	uint8_t *file;

	REQUIRE(path);
	REQUIRE_EQ(gdak_trace_open(path, &t), 0);
	b = gdak_trace_thread_buf(t, 0);
	REQUIRE(b);
	if (id >= 0)
		gdak_trace_packet_id(b, 1, inet_addr("10.1.0.1"), inet_addr("10.1.0.2"), 53504, 4791,
				     pkt, (uint32_t)n, (uint16_t)id);
	else
		gdak_trace_packet(b, 1, inet_addr("10.1.0.1"), inet_addr("10.1.0.2"), 53504, 4791,
				  pkt, (uint32_t)n);
	gdak_trace_close(t);
	file = tt_slurp(path, &len);
	REQUIRE(file);
	CHECK_EQ(tt_read_all(file, len, collect, &c, err, sizeof(err)), 0);
	for (int i = 0; i < c.n; i++) {
		if (c.it[i].kind != GDAK_TITEM_PACKET)
			continue;
		const uint8_t *f = c.it[i].pkt.frame;

		CHECK_EQ(trace_roce_decode(f, c.it[i].pkt.caplen, c.it[i].pkt.origlen, out, &why), 0);
		*frame_id = (uint16_t)(f[14 + 4] << 8 | f[14 + 5]);
		memcpy(ipudp, f + 14, 28);
	}
	free(file);
	unlink(path);
	free(path);
}

/* A received packet's ICRC covers the sender's IPv4 ID (rxe numbers its
 * datagrams): recorded with that ID the frame's ICRC checks out, recorded
 * with ID 0 it does not. */
static void test_packet_ip_id(void)
{
	uint8_t pkt[12 + 4 + 4], ip[28 + sizeof(pkt)];
	struct trace_roce_pkt d;
	uint16_t fid = 0;
	uint32_t icrc;

	memset(pkt, 0, sizeof(pkt));
	pkt[0] = 0x11;			/* RC ACKNOWLEDGE */
	pkt[2] = pkt[3] = 0xff;
	pkt[7] = 0x42;			/* dest QP */
	pkt[11] = 7;			/* PSN */
	pkt[12] = 0x1f;			/* AETH: ACK */
	/* the headers the writer puts around it with ID 0xbeef, then the ICRC
	 * over them as the sender's kernel would compute it */
	packet_roundtrip(pkt, sizeof(pkt), 0xbeef, &d, &fid, ip);
	CHECK_EQ(fid, 0xbeef);
	memcpy(ip + 28, pkt, sizeof(pkt));
	icrc = gdak_roce_icrc_ip(ip, sizeof(ip));
	for (int i = 0; i < 4; i++)
		pkt[sizeof(pkt) - 4 + i] = (uint8_t)(icrc >> 8 * i);

	packet_roundtrip(pkt, sizeof(pkt), 0xbeef, &d, &fid, ip);
	CHECK_EQ(fid, 0xbeef);
	CHECK_EQ(d.icrc_ok, 1);
	CHECK_EQ(d.src_port, 53504);
	CHECK_EQ(d.psn, 7);
	packet_roundtrip(pkt, sizeof(pkt), -1, &d, &fid, ip);
	CHECK_EQ(fid, 0);
	CHECK_EQ(d.icrc_ok, 0);
}

static const struct gdak_case cases[] = {
	GDAK_CASE(test_every_record), GDAK_CASE(test_open_errors),  GDAK_CASE(test_write_errors),
	GDAK_CASE(test_concurrent),   GDAK_CASE(test_packet_ip_id),
};

int main(int argc, char **argv)
{
	return GDAK_TEST_CASES(argc, argv, cases);
}
