/* SPDX-License-Identifier: MIT */
/*
 * perf_net.c - server/client mode: the requester QPs in one process (the
 * client, which measures), the target QPs and their memory in another (the
 * server), as perftest does:
 *
 *   server:  gdak-perf -d emu:udp --server [-p PORT] TEST
 *   client:  gdak-perf -d emu:udp [-p PORT] TEST SERVER_ADDR
 *
 * Everything goes over the TCP bootstrap (gdak/bootstrap.h) in fixed-size
 * big-endian messages: a hello that both sides check (same test, QP count,
 * sizes), one record per connection (QP info, target region address, rkey,
 * length), then per round a PREPARE (the server zeroes or fills its target
 * regions) and a CHECK (the server hashes what the round left there and
 * says whether it matches what the client sent), and finally DONE.
 * put_signal_lat (the client would have to watch the server's memory) and
 * send_bw (receive credits would have to travel) stay single-process.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <gdak/bootstrap.h>
#include <gdak/mlx5.h>

#include "perf.h"

#define NET_MAGIC 0x4744414b50455246ull /* "GDAKPERF" */
#define NET_VERSION 1
#define NET_ACCEPT_MS 120000

enum net_cmd { NET_PREPARE = 1, NET_CHECK = 2, NET_DONE = 3 };

/* Every message is this many big-endian 64-bit words. */
#define NET_WORDS 8
struct net_msg {
	uint64_t w[NET_WORDS];
};

static int xchg(struct perf_env *env, const struct net_msg *mine, struct net_msg *theirs)
{
	struct net_msg out, in;
	unsigned i;
	int ret;

	for (i = 0; i < NET_WORDS; i++)
		out.w[i] = gdak_htobe64(mine->w[i]);
	ret = gdak_bootstrap_exchange(env->bs, &out, &in, sizeof(in));
	if (ret) {
		fprintf(stderr, "gdak-perf: the peer went away: %s\n", gdak_strerror(ret));
		return ret;
	}
	for (i = 0; i < NET_WORDS; i++)
		theirs->w[i] = gdak_be64toh(in.w[i]);
	return 0;
}

static uint64_t fnv1a(const uint8_t *p, size_t n)
{
	uint64_t h = 0xcbf29ce484222325ull;

	while (n--)
		h = (h ^ *p++) * 0x100000001b3ull;
	return h;
}

static int hello(struct perf_env *env, const struct perf_opts *o)
{
	struct net_msg m = {{NET_MAGIC, NET_VERSION, (uint64_t)o->test->id, o->qps, o->size_min,
			     o->size_max, o->sq_depth, 0}}, p;
	int ret = xchg(env, &m, &p);

	if (ret)
		return ret;
	if (p.w[0] != NET_MAGIC || p.w[1] != NET_VERSION) {
		fprintf(stderr, "gdak-perf: the peer is not a gdak-perf of this version\n");
		return -EPROTO;
	}
	if (p.w[2] != m.w[2] || p.w[3] != m.w[3] || p.w[4] != m.w[4] || p.w[5] != m.w[5] ||
	    p.w[6] != m.w[6]) {
		const struct perf_test_desc *t = NULL;
		static const char *const names[] = {"write_bw", "write_lat", "read_bw", "read_lat",
						    "atomic_rate", "atomic_lat", "send_bw",
						    "put_signal_lat", "baseline"};

		if (p.w[2] < sizeof(names) / sizeof(names[0]))
			t = perf_test_by_name(names[p.w[2]]);
		fprintf(stderr, "gdak-perf: server and client disagree: here %s, -q %u, sizes "
			"%zu..%zu, --sq-depth %u; the peer %s, -q %llu, sizes %llu..%llu, "
			"--sq-depth %llu\n", o->test->name, o->qps, o->size_min, o->size_max,
			o->sq_depth, t ? t->name : "?", (unsigned long long)p.w[3],
			(unsigned long long)p.w[4], (unsigned long long)p.w[5],
			(unsigned long long)p.w[6]);
		return -EPROTO;
	}
	return 0;
}

/* Create this side's QP of connection i, exchange its record, connect. */
static int setup_conn(struct perf_env *env, const struct perf_opts *o, unsigned i)
{
	struct perf_conn *c = &env->conn[i];
	struct gdak_qp_attr req, tgt;
	struct gdak_qp_info mine, theirs;
	struct gdak_qp *qp;
	struct net_msg m = {{0}}, p;
	int ret;

	perf_qp_attrs(o, i, &req, &tgt);
	ret = gdak_qp_create(env->ctx, env->server ? &tgt : &req, &qp);
	if (ret)
		return ret;
	env->qps_open++;
	if (env->server) {
		void *r;

		c->peer = qp;
		ret = gdak_qp_export(qp, &c->dpeer);
		if (!ret)
			ret = gdak_mem_alloc(env->ctx, env->peer_region, o->mem, &r);
		if (ret)
			return ret;
		c->rbuf = r;
		ret = gdak_mr_reg(env->ctx, c->rbuf, env->peer_region, GDAK_ACCESS_ALL, &c->rmr);
		if (ret)
			return ret;
		c->region = env->peer_region;
		m.w[0] = (uint64_t)(uintptr_t)c->rbuf;
		m.w[1] = gdak_mr_rkey(c->rmr);
		m.w[2] = env->peer_region;
	} else {
		c->qp = qp;
		ret = gdak_qp_export(qp, &c->dqp);
		if (ret)
			return ret;
	}
	/* the QP record (gdak_qp_info_pack form), then the region record */
	ret = gdak_qp_info(qp, &mine);
	if (!ret)
		ret = gdak_bootstrap_exchange_qp_info(env->bs, &mine, &theirs, 1);
	if (!ret)
		ret = xchg(env, &m, &p);
	if (ret)
		return ret;
	if (!env->server) {
		c->raddr = p.w[0];
		c->rkey = (uint32_t)p.w[1];
		env->peer_region = p.w[2];
	}
	return gdak_qp_connect(qp, &theirs);
}

int perf_net_setup(struct perf_env *env, const struct perf_opts *o)
{
	unsigned i;
	int ret;

	if (o->test->id == PERF_PUT_SIGNAL_LAT || o->test->id == PERF_SEND_BW) {
		fprintf(stderr, "gdak-perf: %s runs in one process only (no --server / SERVER_ADDR)\n",
			o->test->name);
		return -ENOTSUP;
	}
	env->server = o->server;
	if (o->server) {
		ret = gdak_bootstrap_listen(NULL, o->port, &env->bs);
		/* under mpirun: tell rank 1 where (or that there is nothing) */
		if (o->mpi && perf_mpi_publish(ret ? 0 : gdak_bootstrap_port(env->bs), !ret) &&
		    !ret)
			ret = -EIO;
		if (ret)
			return ret;
		fprintf(stderr, "gdak-perf: server: %s, waiting for a client on port %u\n",
			o->test->name, gdak_bootstrap_port(env->bs));
		ret = gdak_bootstrap_accept(env->bs, NET_ACCEPT_MS);
	} else if (o->mpi) {
		char host[256];
		uint16_t port;

		ret = perf_mpi_peer(host, sizeof(host), &port);
		if (!ret)
			ret = gdak_bootstrap_connect(host, port, 30000, &env->bs);
	} else {
		ret = gdak_bootstrap_connect(o->peer_addr, o->port, 30000, &env->bs);
	}
	if (ret) {
		fprintf(stderr, "gdak-perf: no %s: %s\n", o->server ? "client came" :
			"server answered", gdak_strerror(ret));
		return ret;
	}
	ret = hello(env, o);
	if (ret)
		return ret;
	if (o->server)
		env->peer_region = perf_max_region(o);
	for (i = 0; i < o->qps; i++) {
		env->nconn++;
		ret = setup_conn(env, o, i);
		if (ret)
			return ret;
	}
	return gdak_bootstrap_barrier(env->bs);
}

/* Server: make the target regions what a round of this test starts from. */
static void prepare_targets(struct perf_env *env, const struct perf_opts *o, size_t size)
{
	size_t len = perf_region_slots(size) * size;
	unsigned i;

	for (i = 0; i < env->nconn; i++) {
		struct perf_conn *c = &env->conn[i];

		if (len > c->region)
			continue; /* the client refuses such a size before asking */
		if (o->test->id == PERF_READ_BW || o->test->id == PERF_READ_LAT)
			perf_fill(c->rbuf, len, PERF_SEED(size));
		else if (o->test->id == PERF_ATOMIC_RATE || o->test->id == PERF_ATOMIC_LAT)
			memset(c->rbuf, 0, 8);
		else
			memset(c->rbuf, 0, len);
	}
}

int perf_net_round(struct perf_env *env, const struct perf_opts *o, size_t size, uint64_t iters)
{
	struct net_msg m = {{NET_PREPARE, size, iters}}, p;
	int ret = xchg(env, &m, &p);

	/* the server prepares between the two: the barrier says it is done */
	return ret ? ret : gdak_bootstrap_barrier(env->bs);
}

int perf_net_verify(struct perf_env *env, const struct perf_opts *o, struct perf_conn *c,
		    unsigned ci, size_t size, uint64_t iters, size_t slots)
{
	size_t n = (iters < slots ? iters : slots) * size;
	struct net_msg m = {{NET_CHECK, ci, 0, 0, 0}}, p, none = {{0}};
	int ret;

	if (perf_test_corrupt())
		c->lbuf[0] ^= 0xff;
	switch (o->test->id) {
	case PERF_READ_BW:
	case PERF_READ_LAT: {
		uint8_t *want = perf_alloc(n);

		if (!want)
			return -ENOMEM;
		perf_fill(want, n, PERF_SEED(size));
		ret = memcmp(c->lbuf, want, n) ? -EIO : 0;
		free(want);
		if (ret)
			perf_verify_fail(o->test->name, size, "connection %u: the bytes read differ "
					 "from the server's", ci);
		return ret;
	}
	case PERF_ATOMIC_RATE:
	case PERF_ATOMIC_LAT: {
		uint64_t fetched;

		memcpy(&fetched, c->lbuf + ((iters - 1) % slots) * 8, 8);
		fetched = gdak_be64toh(fetched);
		if (fetched != iters - 1) {
			perf_verify_fail(o->test->name, size, "connection %u: last fetched value "
					 "%llu, want %llu", ci, (unsigned long long)fetched,
					 (unsigned long long)(iters - 1));
			return -EIO;
		}
		m.w[2] = 1;		/* check the counter */
		m.w[3] = iters;
		break;
	}
	default:
		m.w[2] = 2;		/* check a hash of the first n bytes */
		m.w[3] = n;
		m.w[4] = fnv1a(c->lbuf, n);
		break;
	}
	ret = xchg(env, &m, &p);
	if (!ret)
		ret = xchg(env, &none, &p);	/* the server's verdict */
	if (ret)
		return ret;
	if (p.w[0] != 1) {
		perf_verify_fail(o->test->name, size, "connection %u: the server found %s "
				 "(got 0x%llx, want 0x%llx)", ci,
				 m.w[2] == 1 ? "a wrong counter" : "wrong bytes",
				 (unsigned long long)p.w[1], (unsigned long long)(m.w[2] == 1 ?
										   m.w[3] : m.w[4]));
		return -EIO;
	}
	return 0;
}

int perf_net_serve(struct perf_env *env, const struct perf_opts *o)
{
	struct net_msg none = {{0}}, m;
	unsigned rounds = 0, checks = 0, bad = 0;
	int ret;

	for (;;) {
		ret = xchg(env, &none, &m);
		if (ret)
			return ret;
		if (m.w[0] == NET_DONE)
			break;
		if (m.w[0] == NET_PREPARE) {
			prepare_targets(env, o, m.w[1]);
			rounds++;
			ret = gdak_bootstrap_barrier(env->bs);
		} else if (m.w[0] == NET_CHECK && m.w[1] < env->nconn) {
			struct perf_conn *c = &env->conn[m.w[1]];
			struct net_msg v = {{0}};
			uint64_t got;

			if (m.w[2] == 1)
				memcpy(&got, c->rbuf, 8);
			else
				got = m.w[3] <= c->region ? fnv1a(c->rbuf, m.w[3]) : 0;
			v.w[0] = got == (m.w[2] == 1 ? m.w[3] : m.w[4]);
			v.w[1] = got;
			checks++;
			bad += !v.w[0];
			ret = xchg(env, &v, &m);
		} else {
			fprintf(stderr, "gdak-perf: server: unexpected message %llu from the client\n",
				(unsigned long long)m.w[0]);
			return -EPROTO;
		}
		if (ret)
			return ret;
	}
	fprintf(stderr, "gdak-perf: server: client done; %u rounds, %u checks, %u wrong\n",
		rounds, checks, bad);
	return bad ? -EIO : 0;
}

void perf_net_close(struct perf_env *env, int client)
{
	struct net_msg done = {{NET_DONE}}, p;

	if (client)
		(void)xchg(env, &done, &p);
	gdak_bootstrap_close(env->bs);
	env->bs = NULL;
}
