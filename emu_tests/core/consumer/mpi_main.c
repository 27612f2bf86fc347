/* SPDX-License-Identifier: MIT */
/*
 * mpi_main.c - the consumer project's MPI program: links the installed
 * gdak_mpi (gdak::mpi, or pkg-config gdak-mpi) and uses the MPI bootstrap
 * as a user would: every rank opens its NIC model on emu:udp, creates one QP
 * toward its peer (rank ^ 1), the QP infos go through
 * gdak_bootstrap_mpi_exchange_qp_info, the QPNs through an all-gather, and
 * each rank checks that the record it got is its peer's.
 *   mpirun -np 2 ./gdak_consumer_mpi    prints "mpi consumer ok" on rank 0
 */
#include <stdio.h>
#include <stdlib.h>

#include <mpi.h>

#include <gdak/bootstrap.h>
#include <gdak/gdak.h>

int main(int argc, char **argv)
{
	struct gdak_qp_info to[64] = { { 0 } }, from[64];
	uint32_t qpns[64], mine;
	struct gdak_ctx *ctx;
	struct gdak_qp *qp;
	int rank, size, peer, bad = 0;

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	peer = rank ^ 1;
	if (size % 2 || size > 64 || gdak_open("emu:udp", &ctx) || gdak_qp_create(ctx, NULL, &qp) ||
	    gdak_qp_info(qp, &to[peer])) {
		fprintf(stderr, "rank %d: set-up failed (run 2..64 ranks, an even number)\n", rank);
		MPI_Abort(MPI_COMM_WORLD, 1);
	}
	mine = gdak_qp_num(qp);
	if (gdak_bootstrap_mpi_exchange_qp_info(NULL, to, from, 1) ||
	    gdak_bootstrap_mpi_allgather(NULL, &mine, qpns, sizeof(mine)) ||
	    gdak_bootstrap_mpi_barrier(NULL))
		bad = 1;
	else if (from[peer].qpn != qpns[peer] || from[peer].transport != GDAK_QPI_UDP ||
		 gdak_qp_connect(qp, &from[peer]))
		bad = 1;
	if (bad)
		fprintf(stderr, "rank %d: the MPI bootstrap gave a wrong record\n", rank);
	gdak_qp_destroy(qp);
	gdak_close(ctx);
	MPI_Allreduce(MPI_IN_PLACE, &bad, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
	if (!rank)
		printf(bad ? "mpi consumer FAILED\n" : "mpi consumer ok\n");
	MPI_Finalize();
	return bad;
}
