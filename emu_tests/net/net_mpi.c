/* SPDX-License-Identifier: MIT */
/*
 * net_mpi.c - gdak.net.mpiN: N ranks under mpirun on one machine, each with
 * its own NIC model on "emu:udp:127.0.0.1", set up by the MPI bootstrap
 * (gdak_bootstrap_mpi_*: an all-to-all of QP info, an all-gather of buffer
 * keys).  The ranks form a ring: QP "R" of rank k talks to QP "L" of rank
 * k+1.  Each rank puts its pattern into its right neighbour, gets its left
 * neighbour's pattern, fetch-adds and compare-swaps its right neighbour's
 * counter; then every byte and value is checked on both ends.
 *
 *   net_mpi MPIEXEC NP    (as CTest runs it) re-runs itself under
 *                         MPIEXEC --allow-run-as-root --oversubscribe -np NP
 *
 * Exits 77 when gdak was built without MPI or mpirun is missing.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gdak_test.h"

#ifndef GDAK_HAVE_MPI

int main(void)
{
	fprintf(stderr, "skipped: gdak was built without MPI (no gdak_mpi library)\n");
	return 77;
}

#else

#include <mpi.h>

#include <gdak/bootstrap.h>
#include <gdak/gdak.h>

#include "nic_util.h"

#define BUF (1u << 20)
#define IN_OFF 0u		/* the left neighbour's put lands here */
#define PAT_OFF (128u << 10)	/* my pattern: the right neighbour gets it */
#define GET_OFF (256u << 10)	/* my get of the left neighbour's pattern */
#define RES_OFF (512u << 10)	/* atomic results */
#define CNT_OFF (768u << 10)	/* the counter my left neighbour works on */
#define LEN 50000u		/* 49 packets at MTU 1024 */
#define POLL_MS 30000

struct keys { uint64_t addr; uint32_t rkey, rank; };

static int rank, size;

static void expect_ok(struct nu_qp *q, uint16_t idx, const char *what)
{
	struct gdak_mlx5_cqe_fields f = {0};

	nu_ring(q);
	REQUIRE_EQ(nu_poll(q, 0, &f, POLL_MS), 0);
	CHECK_EQ(f.wqe_counter, idx);
	CHECK_EQ(f.opcode, MLX5_CQE_REQ);
	if (f.syndrome)
		fprintf(stderr, "rank %d: %s failed: syndrome 0x%x\n", rank, what, f.syndrome);
	CHECK_EQ(f.syndrome, 0);
}

static int run(void)
{
	struct gdak_qp_attr a = {.sq_depth = 64, .mtu = 1024};
	struct gdak_qp_info *to, *from, mi;
	int right = (rank + 1) % size, left = (rank + size - 1) % size;
	struct keys me, *all;
	struct gdak_ctx *ctx;
	struct gdak_mr *mr;
	struct gdak_qp *qr, *ql;
	struct nu_qp R, L;
	uint8_t *buf, *want;
	uint64_t v;
	uint32_t lk;

	REQUIRE_EQ(gdak_open("emu:udp:127.0.0.1", &ctx), 0);
	REQUIRE_EQ(gdak_mem_alloc(ctx, BUF, GDAK_MEM_HOST, (void **)&buf), 0);
	memset(buf, 0, BUF);
	gdak_test_fill(buf + PAT_OFF, LEN, (uint64_t)rank + 1);
	REQUIRE_EQ(gdak_mr_reg(ctx, buf, BUF, GDAK_ACCESS_ALL, &mr), 0);
	lk = gdak_mr_lkey(mr);
	REQUIRE_EQ(gdak_qp_create(ctx, &a, &qr), 0);
	REQUIRE_EQ(gdak_qp_create(ctx, &a, &ql), 0);
	nu_qp_from(&R, qr);
	nu_qp_from(&L, ql);

	/* slot 0 of a peer: my QP that has it on the right; slot 1: on the left */
	to = calloc((size_t)size * 2, sizeof(*to));
	from = calloc((size_t)size * 2, sizeof(*from));
	all = calloc((size_t)size, sizeof(*all));
	REQUIRE(to && from && all);
	REQUIRE_EQ(gdak_qp_info(qr, &mi), 0);
	to[right * 2 + 0] = mi;
	REQUIRE_EQ(gdak_qp_info(ql, &mi), 0);
	to[left * 2 + 1] = mi;
	REQUIRE_EQ(gdak_bootstrap_mpi_exchange_qp_info(NULL, to, from, 2), 0);
	/* my L pairs with my left neighbour's R, my R with my right one's L */
	CHECK_EQ(from[left * 2 + 0].transport, GDAK_QPI_UDP);
	CHECK_EQ(from[right * 2 + 1].transport, GDAK_QPI_UDP);
	REQUIRE_EQ(gdak_qp_connect(ql, &from[left * 2 + 0]), 0);
	REQUIRE_EQ(gdak_qp_connect(qr, &from[right * 2 + 1]), 0);
	me = (struct keys){.addr = (uintptr_t)buf, .rkey = gdak_mr_rkey(mr), .rank = (uint32_t)rank};
	REQUIRE_EQ(gdak_bootstrap_mpi_allgather(NULL, &me, all, sizeof(me)), 0);
	for (int r = 0; r < size; r++)
		CHECK_EQ(all[r].rank, (uint32_t)r);
	REQUIRE_EQ(gdak_bootstrap_mpi_barrier(NULL), 0);

	/* put: my pattern into my right neighbour */
	expect_ok(&R, nu_post_rdma(&R, MLX5_OPCODE_RDMA_WRITE, buf + PAT_OFF, LEN, lk,
				   all[right].addr + IN_OFF, all[right].rkey, 0, NU_SIG), "put");
	/* get: my left neighbour's pattern */
	expect_ok(&L, nu_post_rdma(&L, MLX5_OPCODE_RDMA_READ, buf + GET_OFF, LEN, lk,
				   all[left].addr + PAT_OFF, all[left].rkey, 0, NU_SIG), "get");
	want = malloc(LEN);
	REQUIRE(want);
	gdak_test_fill(want, LEN, (uint64_t)left + 1);
	CHECK_MEM(buf + GET_OFF, want, LEN);
	/* atomics on my right neighbour's counter (only I touch it) */
	expect_ok(&R, nu_post_atomic(&R, MLX5_OPCODE_ATOMIC_FA, buf + RES_OFF, lk,
				     all[right].addr + CNT_OFF, all[right].rkey, (uint64_t)rank + 5, 0,
				     NU_SIG), "fetch-add");
	CHECK_EQ(be64toh(*(uint64_t *)(void *)(buf + RES_OFF)), 0);
	expect_ok(&R, nu_post_atomic(&R, MLX5_OPCODE_ATOMIC_CS, buf + RES_OFF + 8, lk,
				     all[right].addr + CNT_OFF, all[right].rkey, 1000 + (uint64_t)rank,
				     (uint64_t)rank + 5, NU_SIG), "compare-swap");
	CHECK_EQ(be64toh(*(uint64_t *)(void *)(buf + RES_OFF + 8)), (uint64_t)rank + 5);

	/* everyone is done: check what the left neighbour did to me */
	REQUIRE_EQ(gdak_bootstrap_mpi_barrier(NULL), 0);
	/* this process's NIC thread applied the left neighbour's put and then,
	 * in order on the same QP, its atomics (sequentially consistent
	 * read-modify-writes). The barrier orders that across processes, which
	 * ThreadSanitizer cannot see: reading the counter with acquire first
	 * orders the put's bytes before the check within this process too. */
	v = __atomic_load_n((uint64_t *)(void *)(buf + CNT_OFF), __ATOMIC_ACQUIRE);
	CHECK_EQ(v, 1000 + (uint64_t)left);
	CHECK_MEM(buf + IN_OFF, want, LEN);
	printf("rank %d/%d: put to %d, get from %d, atomics on %d: verified\n", rank, size, right,
	       left, right);
	REQUIRE_EQ(gdak_bootstrap_mpi_barrier(NULL), 0);

	free(want);
	free(to);
	free(from);
	free(all);
	nu_destroy(&R);
	nu_destroy(&L);
	gdak_mr_dereg(mr);
	gdak_mem_free(ctx, buf);
	gdak_close(ctx);
	return 0;
}

/* Not under mpirun: run NP copies of ourselves under it. */
static int launch(const char *self, const char *mpiexec, const char *np)
{
	char path[4096];
	ssize_t n = readlink("/proc/self/exe", path, sizeof(path) - 1);

	if (!mpiexec[0] || access(mpiexec, X_OK)) {
		fprintf(stderr, "skipped: no mpirun ('%s')\n", mpiexec);
		return 77;
	}
	if (n > 0) {
		path[n] = 0;
		self = path;
	}
	/* Open MPI's plugins leak on purpose (LeakSanitizer reports with no
	 * gdak frame in sanitizer builds): leave leak checking to the other
	 * tests, keep the caller's other sanitizer options */
	{
		const char *a = getenv("ASAN_OPTIONS");
		char opt[1024];

		snprintf(opt, sizeof(opt), "%s%sdetect_leaks=0", a ? a : "", a && *a ? ":" : "");
		setenv("ASAN_OPTIONS", opt, 1);
	}
	/* one machine, no network BTLs: shared memory and self only */
	setenv("OMPI_MCA_btl", "self,vader", 0);
	setenv("OMPI_MCA_btl_vader_single_copy_mechanism", "none", 0);
	setenv("OMPI_MCA_rmaps_base_oversubscribe", "1", 0);
	fflush(NULL);
	execl(mpiexec, mpiexec, "--allow-run-as-root", "--oversubscribe", "-np", np, self,
	      (char *)NULL);
	fprintf(stderr, "cannot run %s: %s\n", mpiexec, strerror(errno));
	return 1;
}

int main(int argc, char **argv)
{
	int ret;

	if (!getenv("OMPI_COMM_WORLD_SIZE") && !getenv("PMI_SIZE") && !getenv("PMIX_RANK")) {
		if (argc != 3) {
			fprintf(stderr, "usage: %s MPIEXEC NP\n", argv[0]);
			return 2;
		}
		return launch(argv[0], argv[1], argv[2]);
	}
	alarm(100); /* a hang becomes a failure */
	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	REQUIRE(size >= 2);
	run();
	ret = gdak_test_end();
	/* every rank's verdict: one failure fails the job */
	MPI_Allreduce(MPI_IN_PLACE, &ret, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
	MPI_Finalize();
	return ret;
}

#endif /* GDAK_HAVE_MPI */
