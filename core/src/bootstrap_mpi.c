/* SPDX-License-Identifier: MIT */
/*
 * bootstrap_mpi.c - the MPI out-of-band exchange (<gdak/bootstrap.h>,
 * library gdak_mpi, built when CMake finds MPI).
 *
 * Jobs launched with mpirun (as NVSHMEM users launch theirs) already have a
 * communicator; QP set-up is then one all-to-all of packed gdak_qp_info
 * records (every rank gives each peer the records meant for it: a full
 * mesh, a ring, anything) and all-gathers of small blobs (addresses,
 * rkeys).  Records travel in gdak_qp_info_pack's fixed big-endian form, so
 * ranks of different builds or byte orders agree, and a damaged record is
 * caught by gdak_qp_info_unpack.  MPI errors come back as return codes
 * (MPI_ERRORS_RETURN on a duplicate of the caller's communicator), never
 * as an abort inside gdak.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <mpi.h>

#include <gdak/bootstrap.h>

#include "gdak_log.h"

/* A private duplicate: our collectives never match the caller's messages,
 * and its error handler is ours to set. */
static int comm_dup(const void *comm, MPI_Comm *out)
{
	MPI_Comm c = comm ? *(const MPI_Comm *)comm : MPI_COMM_WORLD;
	int init = 0, rc;

	MPI_Initialized(&init);
	if (!init) {
		GDAK_ERR("bootstrap", 0, "MPI is not initialised: call MPI_Init first");
		return -EINVAL;
	}
	rc = MPI_Comm_dup(c, out);
	if (rc != MPI_SUCCESS) {
		GDAK_ERR("bootstrap", 0, "MPI_Comm_dup failed (MPI error %d)", rc);
		return -EIO;
	}
	MPI_Comm_set_errhandler(*out, MPI_ERRORS_RETURN);
	return 0;
}

static int mpi_fail(const char *what, int rc)
{
	char msg[MPI_MAX_ERROR_STRING] = "";
	int len = 0;

	MPI_Error_string(rc, msg, &len);
	GDAK_ERR("bootstrap", 0, "%s failed: %s", what, msg);
	return -EIO;
}

int gdak_bootstrap_mpi_exchange_qp_info(const void *comm, const struct gdak_qp_info *to_each,
					struct gdak_qp_info *from_each, unsigned n_per_peer)
{
	uint8_t *sb = NULL, *rb = NULL;
	MPI_Comm c;
	int size = 0, rank = 0, ret, rc;
	size_t total;

	if (!to_each || !from_each || !n_per_peer || n_per_peer > 4096) {
		GDAK_ERR("bootstrap", 0, "bad arguments: records %p/%p, %u per peer (1..4096)",
			 (const void *)to_each, (void *)from_each, n_per_peer);
		return -EINVAL;
	}
	ret = comm_dup(comm, &c);
	if (ret)
		return ret;
	MPI_Comm_size(c, &size);
	MPI_Comm_rank(c, &rank);
	total = (size_t)size * n_per_peer;
	sb = malloc(total * GDAK_QP_INFO_WIRE_SIZE);
	rb = malloc(total * GDAK_QP_INFO_WIRE_SIZE);
	if (!sb || !rb) {
		ret = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < total; i++) {
		static const struct gdak_qp_info none;

		/* an empty slot travels as zeros (a packed record never is) */
		if (!memcmp(&to_each[i], &none, sizeof(none)))
			memset(sb + i * GDAK_QP_INFO_WIRE_SIZE, 0, GDAK_QP_INFO_WIRE_SIZE);
		else
			gdak_qp_info_pack(&to_each[i], sb + i * GDAK_QP_INFO_WIRE_SIZE);
	}
	rc = MPI_Alltoall(sb, (int)(n_per_peer * GDAK_QP_INFO_WIRE_SIZE), MPI_BYTE, rb,
			  (int)(n_per_peer * GDAK_QP_INFO_WIRE_SIZE), MPI_BYTE, c);
	if (rc != MPI_SUCCESS) {
		ret = mpi_fail("MPI_Alltoall of QP info", rc);
		goto out;
	}
	for (size_t i = 0; i < total; i++) {
		/* slots a peer left empty (no QP toward us) stay zero */
		static const uint8_t zero[GDAK_QP_INFO_WIRE_SIZE];
		const uint8_t *p = rb + i * GDAK_QP_INFO_WIRE_SIZE;

		if (!memcmp(p, zero, sizeof(zero))) {
			memset(&from_each[i], 0, sizeof(from_each[i]));
			continue;
		}
		ret = gdak_qp_info_unpack(p, &from_each[i]);
		if (ret) {
			GDAK_ERR("bootstrap", 0, "rank %d: record %zu from rank %zu is not a gdak QP "
				 "info (different gdak versions?)", rank, i % n_per_peer,
				 i / n_per_peer);
			goto out;
		}
	}
	ret = 0;
out:
	free(sb);
	free(rb);
	MPI_Comm_free(&c);
	return ret;
}

int gdak_bootstrap_mpi_allgather(const void *comm, const void *mine, void *all, size_t len)
{
	MPI_Comm c;
	int ret, rc;

	if (!mine || !all || !len || len > (1u << 30)) {
		GDAK_ERR("bootstrap", 0, "bad arguments: %p/%p, %zu bytes", mine, all, len);
		return -EINVAL;
	}
	ret = comm_dup(comm, &c);
	if (ret)
		return ret;
	rc = MPI_Allgather(mine, (int)len, MPI_BYTE, all, (int)len, MPI_BYTE, c);
	ret = rc == MPI_SUCCESS ? 0 : mpi_fail("MPI_Allgather", rc);
	MPI_Comm_free(&c);
	return ret;
}

int gdak_bootstrap_mpi_barrier(const void *comm)
{
	MPI_Comm c;
	int ret, rc;

	ret = comm_dup(comm, &c);
	if (ret)
		return ret;
	rc = MPI_Barrier(c);
	ret = rc == MPI_SUCCESS ? 0 : mpi_fail("MPI_Barrier", rc);
	MPI_Comm_free(&c);
	return ret;
}
