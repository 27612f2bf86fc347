/* SPDX-License-Identifier: MIT */
/*
 * rxe_verbs_2proc.c - gdak.rxe.verbs_2proc: two processes, each with its own
 * NIC model on the verbs transport ("emu:verbs:rxe0"), RDMA each other.
 *
 * What makes it possible: gdak_mr_rkey on an emu:verbs context is the verbs
 * device's rkey (nic_model/tr_verbs_mr.c), so the other process's requests
 * carry a key the device knows.  The parent forks; the two swap their QP
 * info (gdak_qp_info_pack), buffer address and rkey over a socketpair,
 * connect, and then each in turn is the initiator:
 *   WRITE 3000 B, READ 5000 B, fetch-add, compare-swap, SEND_IMM 2500 B into
 *   a receive the target posted, WRITE_IMM 100 B (receive CQE with the
 *   immediate)
 * and the target checks its memory and receive CQEs byte for byte.  Last,
 * the parent WRITEs with a wrong rkey: REMOTE_ACCESS_ERR in the error CQE
 * and its QP in ERR.  Skips (77) without a verbs device rxe0.
 */
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "rxe_util.h"

#define LEN 65536u

struct side {
	struct rx x;
	uint8_t *buf;
	struct gdak_mr *mr;
	int sock;
	uint64_t raddr;
	uint32_t rkey;
	const char *who;
};

static uint64_t at(struct side *s, uint32_t off) { return (uint64_t)(uintptr_t)(s->buf + off); }

static void say(struct side *s, char c)
{
	REQUIRE(write(s->sock, &c, 1) == 1);
}

static char hear(struct side *s)
{
	char c = 0;

	REQUIRE(read(s->sock, &c, 1) == 1);
	return c;
}

/* The initiator's half of one round; seed makes each round's bytes differ. */
static void initiate(struct side *s, uint32_t seed)
{
	struct gdak_dev_cqe err;
	uint32_t lk = gdak_mr_lkey(s->mr);
	uint64_t v;

	REQUIRE(hear(s) == 'R'); /* the target's receives are posted, its data set */
	{
		struct gdak_dev_sge g = { at(s, 0), 3000, lk };
		rx_pattern(s->buf, 3000, seed);
		CHECK_EQ(rx_op(&s->x, MLX5_OPCODE_RDMA_WRITE, &g, 1, s->raddr + 8192, s->rkey, 0,
			       &err), 0);
	}
	{
		struct gdak_dev_sge g = { at(s, 30000), 5000, lk };
		memset(s->buf + 30000, 0, 5000);
		CHECK_EQ(rx_op(&s->x, MLX5_OPCODE_RDMA_READ, &g, 1, s->raddr + 20000, s->rkey, 0,
			       &err), 0);
		CHECK_EQ(rx_pattern_diff(s->buf + 30000, 5000, seed + 1), 0);
	}
	CHECK_EQ(rx_atomic(&s->x, 0, s->raddr + 40000, s->rkey, 5, 0, at(s, 41000), lk, &err), 0);
	memcpy(&v, s->buf + 41000, 8);
	CHECK_EQ(gdak_be64toh(v), 100);
	CHECK_EQ(rx_atomic(&s->x, 1, s->raddr + 40000, s->rkey, 7, 105, at(s, 41008), lk, &err), 0);
	memcpy(&v, s->buf + 41008, 8);
	CHECK_EQ(gdak_be64toh(v), 105);
	{
		struct gdak_dev_sge g = { at(s, 1000), 2500, lk };
		rx_pattern(s->buf + 1000, 2500, seed + 2);
		CHECK_EQ(rx_op(&s->x, MLX5_OPCODE_SEND_IMM, &g, 1, 0, 0, 0xabcd0000 + seed, &err),
			 0);
	}
	{
		struct gdak_dev_sge g = { at(s, 4000), 100, lk };
		rx_pattern(s->buf + 4000, 100, seed + 3);
		CHECK_EQ(rx_op(&s->x, MLX5_OPCODE_RDMA_WRITE_IMM, &g, 1, s->raddr + 61000, s->rkey,
			       77 + seed, &err), 0);
	}
	say(s, 'D');
}

static void target(struct side *s, uint32_t seed)
{
	struct gdak_dev_cqe c;
	uint32_t lk = gdak_mr_lkey(s->mr);
	struct gdak_dev_sge r1 = { at(s, 50000), 4096, lk }, r2 = { at(s, 56000), 64, lk };
	uint64_t v = 100;

	memset(s->buf, 0, LEN);
	rx_pattern(s->buf + 20000, 5000, seed + 1);
	memcpy(s->buf + 40000, &v, 8);
	rx_rq_post(&s->x, &r1, 1);
	rx_rq_post(&s->x, &r2, 1);
	say(s, 'R');
	REQUIRE(hear(s) == 'D');
	CHECK_EQ(rx_pattern_diff(s->buf + 8192, 3000, seed), 0);
	CHECK_EQ(s->buf[8192 + 3000], 0);
	memcpy(&v, s->buf + 40000, 8);
	CHECK_EQ(v, 7);
	CHECK_EQ(rx_rq_poll(&s->x, &c), 1);
	CHECK_EQ(c.opcode, MLX5_CQE_RESP_SEND_IMM);
	CHECK_EQ(c.byte_cnt, 2500);
	CHECK_EQ(c.imm, 0xabcd0000 + seed);
	CHECK_EQ(rx_pattern_diff(s->buf + 50000, 2500, seed + 2), 0);
	CHECK_EQ(rx_rq_poll(&s->x, &c), 1);
	CHECK_EQ(c.opcode, MLX5_CQE_RESP_WR_IMM);
	CHECK_EQ(c.imm, 77 + seed);
	CHECK_EQ(c.byte_cnt, 100);
	CHECK_EQ(rx_pattern_diff(s->buf + 61000, 100, seed + 3), 0);
}

static void setup(struct side *s)
{
	uint8_t wire[GDAK_QP_INFO_WIRE_SIZE + 12], in[GDAK_QP_INFO_WIRE_SIZE + 12];
	struct gdak_qp_info mine, peer;
	uint64_t a;
	uint32_t k;

	REQUIRE(gdak_open("emu:verbs:rxe0", &s->x.ctx) == 0);
	REQUIRE(gdak_mem_alloc(s->x.ctx, LEN, GDAK_MEM_HOST, (void **)&s->buf) == 0);
	memset(s->buf, 0, LEN);
	REQUIRE(gdak_mr_reg(s->x.ctx, s->buf, LEN, GDAK_ACCESS_ALL, &s->mr) == 0);
	REQUIRE(rx_qp(&s->x, 16, 1) == 0);
	REQUIRE(gdak_qp_info(s->x.qp, &mine) == 0);
	gdak_qp_info_pack(&mine, wire);
	a = (uint64_t)(uintptr_t)s->buf;
	k = gdak_mr_rkey(s->mr);
	memcpy(wire + GDAK_QP_INFO_WIRE_SIZE, &a, 8);
	memcpy(wire + GDAK_QP_INFO_WIRE_SIZE + 8, &k, 4);
	REQUIRE(write(s->sock, wire, sizeof(wire)) == (ssize_t)sizeof(wire));
	REQUIRE(read(s->sock, in, sizeof(in)) == (ssize_t)sizeof(in));
	REQUIRE(gdak_qp_info_unpack(in, &peer) == 0);
	memcpy(&s->raddr, in + GDAK_QP_INFO_WIRE_SIZE, 8);
	memcpy(&s->rkey, in + GDAK_QP_INFO_WIRE_SIZE + 8, 4);
	REQUIRE(gdak_qp_connect(s->x.qp, &peer) == 0);
	REQUIRE(gdak_qp_export(s->x.qp, &s->x.q) == 0);
	fprintf(stderr, "%s: pid %d, QP 0x%x -> 0x%x, my rkey 0x%x (lkey 0x%x), peer's 0x%x\n",
		s->who, (int)getpid(), mine.qpn, peer.qpn, k, gdak_mr_lkey(s->mr), s->rkey);
}

static void teardown(struct side *s)
{
	gdak_qp_destroy(s->x.qp);
	CHECK_EQ(gdak_mr_dereg(s->mr), 0);
	gdak_mem_free(s->x.ctx, s->buf);
	gdak_close(s->x.ctx);
}

int main(void)
{
	struct side s = { .sock = -1 };
	int sv[2], status = 0;
	pid_t pid;

	if (!rx_have_device("rxe0"))
		GDAK_TEST_SKIP("no verbs device rxe0 here (the rxe guest has one: "
			       "tools/rxe/gdak-rxe-vm ctest BUILD_DIR)");
	/* the child forks before either process opens anything */
	setenv("GDAK_CUDA_DMA", "0", 1);
	REQUIRE(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
	pid = fork();
	REQUIRE(pid >= 0);
	s.sock = pid ? sv[0] : sv[1];
	close(pid ? sv[1] : sv[0]);
	s.who = pid ? "parent" : "child";
	setup(&s);
	if (pid) {
		struct gdak_dev_cqe err;
		struct gdak_dev_sge g = { at(&s, 0), 64, gdak_mr_lkey(s.mr) };

		initiate(&s, 11);
		target(&s, 21);
		/* a wrong rkey: the device NAKs, the CQE says REMOTE_ACCESS_ERR */
		memset(&err, 0, sizeof(err));
		CHECK(rx_op(&s.x, MLX5_OPCODE_RDMA_WRITE, &g, 1, s.raddr, s.rkey ^ 0x5a00, 0,
			    &err) < 0);
		CHECK_EQ(err.opcode, MLX5_CQE_REQ_ERR);
		CHECK_EQ(err.syndrome, MLX5_CQE_SYNDROME_REMOTE_ACCESS_ERR);
		CHECK_EQ(gdak_qp_state(s.x.qp), GDAK_QPS_ERR);
		say(&s, 'Q');
		CHECK(waitpid(pid, &status, 0) == pid && WIFEXITED(status) &&
		      WEXITSTATUS(status) == 0);
		if (!WIFEXITED(status) || WEXITSTATUS(status))
			fprintf(stderr, "child: status 0x%x\n", status);
	} else {
		target(&s, 11);
		initiate(&s, 21);
		REQUIRE(hear(&s) == 'Q');
	}
	teardown(&s);
	return gdak_test_end();
}
