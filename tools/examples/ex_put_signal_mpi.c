/* SPDX-License-Identifier: MIT */
/*
 * ex_put_signal_mpi.c - ex_put_signal.c's put+signal, set up by MPI instead
 * of the TCP bootstrap: every rank opens its own NIC model on "emu:udp",
 * the QP info and buffer keys go round in MPI collectives
 * (gdak_bootstrap_mpi_*, library gdak_mpi), and rank 0 puts into rank 1.
 *
 *   build:  target ex_put_signal_mpi, or against an install:
 *           mpicc ex_put_signal_mpi.c $(pkg-config --cflags --libs gdak-mpi)
 *   run:    mpirun -np 2 ./ex_put_signal_mpi
 */
#include <endian.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mpi.h>

#include <gdak/bootstrap.h>
#include <gdak/gdak.h>
#include <gdak/dev/dev.h>

#define LEN 4096
#define SIG_OFF LEN

struct keys {
	uint64_t addr;
	uint32_t rkey;
	uint32_t pad;
};

static int fail(int rank, const char *what, int ret)
{
	fprintf(stderr, "rank %d: %s: %s\n", rank, what, gdak_strerror(ret));
	return 1;
}

static int run(int rank, int size)
{
	struct gdak_qp_info *to = calloc((size_t)size, sizeof(*to));
	struct gdak_qp_info *from = calloc((size_t)size, sizeof(*from));
	struct keys k = { 0 }, *all = calloc((size_t)size, sizeof(*all));
	int peer = rank ^ 1; /* ranks pair up: 0-1, 2-3, ... */
	struct gdak_ctx *ctx;
	struct gdak_qp *qp;
	struct gdak_mr *mr;
	struct gdak_dev_qp *q;
	uint8_t *buf;
	int ret;

	if (!to || !from || !all)
		return 1;
	if ((ret = gdak_open("emu:udp", &ctx)))
		return fail(rank, "emu:udp", ret);
	if ((ret = gdak_mem_alloc(ctx, LEN + 8, GDAK_MEM_HOST, (void **)&buf)) ||
	    (ret = gdak_mr_reg(ctx, buf, LEN + 8, GDAK_ACCESS_ALL, &mr)))
		return fail(rank, "buffer", ret);
	memset(buf, 0, LEN + 8);
	if ((ret = gdak_qp_create(ctx, NULL, &qp)) || (ret = gdak_qp_info(qp, &to[peer])))
		return fail(rank, "QP", ret);

	/* to[r]: my record for rank r (only my peer gets one; the rest stay
	 * zero, "no QP toward you"); from[r]: rank r's record for me. */
	if ((ret = gdak_bootstrap_mpi_exchange_qp_info(NULL, to, from, 1)))
		return fail(rank, "QP info exchange", ret);
	k.addr = htobe64((uintptr_t)buf);
	k.rkey = htobe32(gdak_mr_rkey(mr));
	if ((ret = gdak_bootstrap_mpi_allgather(NULL, &k, all, sizeof(k))))
		return fail(rank, "key exchange", ret);
	if ((ret = gdak_qp_connect(qp, &from[peer])) || (ret = gdak_qp_export(qp, &q)))
		return fail(rank, "connect", ret);
	/* nobody posts before every QP is connected (a QP still in INIT NAKs) */
	if ((ret = gdak_bootstrap_mpi_barrier(NULL)))
		return fail(rank, "barrier", ret);

	if (rank % 2) {
		uint64_t v = gdak_dev_signal_wait_ge((uint64_t *)(void *)(buf + SIG_OFF), 1);
		for (int i = 0; i < LEN; i++)
			if (buf[i] != (uint8_t)(i ^ rank)) {
				fprintf(stderr, "rank %d: byte %d is 0x%02x\n", rank, i, buf[i]);
				return 1;
			}
		printf("rank %d: signal %llu, %d bytes from rank %d checked\n", rank,
		       (unsigned long long)v, LEN, peer);
	} else {
		struct gdak_dev_sge sge = { .addr = (uintptr_t)buf,
					    .len = LEN,
					    .lkey = gdak_mr_lkey(mr) };
		uint64_t raddr = be64toh(all[peer].addr), ticket;
		uint32_t rkey = be32toh(all[peer].rkey);
		struct gdak_dev_cqe err = { 0 };

		for (int i = 0; i < LEN; i++)
			buf[i] = (uint8_t)(i ^ peer);
		ret = gdak_dev_put_signal(q, &sge, raddr, rkey, raddr + SIG_OFF, rkey, 1, 0,
					  &ticket);
		if (!ret)
			ret = gdak_dev_wait(q, ticket, &err);
		if (ret)
			return fail(rank, "put+signal", ret);
		printf("rank %d: put %d bytes + signal to rank %d\n", rank, LEN, peer);
	}
	if ((ret = gdak_bootstrap_mpi_barrier(NULL)))
		return fail(rank, "barrier", ret);
	gdak_qp_destroy(qp);
	gdak_mr_dereg(mr);
	gdak_mem_free(ctx, buf);
	gdak_close(ctx);
	free(to);
	free(from);
	free(all);
	return 0;
}

int main(int argc, char **argv)
{
	int rank, size, ret;

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	if (size % 2) {
		if (!rank)
			fprintf(stderr, "ex_put_signal_mpi: run an even number of ranks\n");
		MPI_Finalize();
		return 2;
	}
	ret = run(rank, size);
	/* one rank's failure fails the job */
	MPI_Allreduce(MPI_IN_PLACE, &ret, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
	if (!rank && !ret)
		printf("ex_put_signal_mpi: ok\n");
	MPI_Finalize();
	return ret;
}
