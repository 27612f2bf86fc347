/* SPDX-License-Identifier: MIT */
/*
 * perf_mpi.c - gdak-perf started by mpirun:
 *
 *   mpirun -np 2 gdak-perf -d emu:udp write_bw
 *
 * is the server/client pair of perf_net.c without typing it twice: rank 0
 * serves (as --server, on any free port unless -p is given), rank 1 is the
 * client that measures and prints.  MPI carries one thing only, rank 0's
 * host name and bootstrap port (a broadcast); everything else goes over the
 * TCP bootstrap as in a run by hand.  Built with MPI when CMake finds it
 * (GDAK_PERF_MPI); without, a run under mpirun says so instead of running
 * two unrelated single-process tests.
 */
#define _GNU_SOURCE /* sched_getaffinity */
#include <gdak/env.h>
#include <errno.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "perf.h"

#ifdef GDAK_PERF_MPI
#include <mpi.h>
#endif

int perf_mpi_launched(void)
{
	/* the launchers' own variables (Open MPI, PMI, PMIx, MPICH) */
	return gdak_env_raw("OMPI_COMM_WORLD_SIZE") || gdak_env_raw("PMI_SIZE") ||
	       gdak_env_raw("PMIX_RANK") || gdak_env_raw("MPI_LOCALNRANKS");
}

#ifdef GDAK_PERF_MPI

static int mpi_up;

static void fini(void)
{
	int done = 0;

	MPI_Finalized(&done);
	if (mpi_up && !done)
		MPI_Finalize();
}

int perf_mpi_init(int *argc, char ***argv, struct perf_opts *o)
{
	int rank = 0, size = 0;

	if (MPI_Init(argc, argv) != MPI_SUCCESS) {
		fprintf(stderr, "gdak-perf: MPI_Init failed\n");
		return PERF_EXIT_FAIL;
	}
	mpi_up = 1;
	atexit(fini);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	if (size == 1)
		return 0; /* mpirun -np 1: an ordinary run */
	if (size != 2) {
		if (!rank)
			fprintf(stderr,
				"gdak-perf: under mpirun, run 2 ranks (-np 2): rank 0 serves, "
				"rank 1 measures; this job has %d\n",
				size);
		return PERF_EXIT_USAGE;
	}
	if (o->server || o->peer_addr) {
		if (!rank)
			fprintf(stderr,
				"gdak-perf: under mpirun the ranks pick their roles (rank 0 "
				"serves): drop --server / SERVER_ADDR\n");
		return PERF_EXIT_USAGE;
	}
	if (o->test->kind == PERF_KIND_BASE) {
		if (!rank)
			fprintf(stderr, "gdak-perf: baseline runs in one process (not under "
					"mpirun -np 2)\n");
		return PERF_EXIT_USAGE;
	}
	{
		/* mpirun binds each rank to a core by default: the NIC threads
		 * then share it with the posting thread, which measures the
		 * binding, not gdak */
		cpu_set_t cs;

		if (!sched_getaffinity(0, sizeof(cs), &cs) && CPU_COUNT(&cs) < 2 &&
		    sysconf(_SC_NPROCESSORS_ONLN) > 1)
			fprintf(stderr,
				"gdak-perf: rank %d: mpirun bound this rank to one CPU, "
				"which its NIC threads share with the posting thread; "
				"mpirun --bind-to none lets them spread\n",
				rank);
	}
	o->mpi = 1;
	o->server = rank == 0;
	if (!o->server)
		o->peer_addr = "(rank 0)"; /* perf_mpi_peer() gives the real one */
	else if (!o->port_given)
		o->port = 0;
	if (o->server)
		o->quiet = 1; /* the client reports progress */
	return 0;
}

/* rank 0's host name and port, as one fixed-size broadcast */
struct where {
	char host[256];
	uint32_t port;
	int32_t ok;
};

static int published;

int perf_mpi_publish(uint16_t port, int ok)
{
	struct where w = { .port = port, .ok = ok };

	published = 1;
	if (gethostname(w.host, sizeof(w.host) - 1))
		snprintf(w.host, sizeof(w.host), "localhost");
	return MPI_Bcast(&w, sizeof(w), MPI_BYTE, 0, MPI_COMM_WORLD) == MPI_SUCCESS ? 0 : -EIO;
}

void perf_mpi_unblock(const struct perf_opts *o)
{
	if (o->mpi && o->server && !published)
		perf_mpi_publish(0, 0);
}

int perf_mpi_peer(char *host, size_t len, uint16_t *port)
{
	struct where w;
	char me[256] = "";

	if (MPI_Bcast(&w, sizeof(w), MPI_BYTE, 0, MPI_COMM_WORLD) != MPI_SUCCESS)
		return -EIO;
	if (!w.ok) {
		fprintf(stderr, "gdak-perf: rank 0 could not start serving\n");
		return -ECONNREFUSED;
	}
	w.host[sizeof(w.host) - 1] = '\0';
	gethostname(me, sizeof(me) - 1);
	/* the same host: loopback, which needs no name resolution */
	snprintf(host, len, "%s", strcmp(me, w.host) ? w.host : "127.0.0.1");
	*port = (uint16_t)w.port;
	return 0;
}

#else /* !GDAK_PERF_MPI */

int perf_mpi_init(int *argc, char ***argv, struct perf_opts *o)
{
	fprintf(stderr,
		"gdak-perf: started by mpirun, but this gdak-perf was built without MPI: "
		"run 'gdak-perf -d emu:udp --server TEST' and 'gdak-perf -d emu:udp TEST HOST' by "
		"hand, or rebuild with MPI (libopenmpi-dev)\n");
	return PERF_EXIT_USAGE;
}

int perf_mpi_publish(uint16_t port, int ok)
{
	return -ENOTSUP;
}

void perf_mpi_unblock(const struct perf_opts *o) {}

int perf_mpi_peer(char *host, size_t len, uint16_t *port)
{
	return -ENOTSUP;
}

#endif
