/* SPDX-License-Identifier: MIT */
/*
 * gdak/bootstrap.h - out-of-band set-up: exchange gdak_qp_info records (and
 * any small blobs: buffer addresses, rkeys) between two processes over TCP,
 * server/client like perftest.
 *
 *   server:  gdak_bootstrap_listen(NULL, 18515, &bs);   (port 0: any free one,
 *            gdak_bootstrap_port() says which) then gdak_bootstrap_accept(bs, ms)
 *   client:  gdak_bootstrap_connect("10.0.0.1", 18515, ms, &bs)  (retries until
 *            the server listens or ms pass)
 *   both:    gdak_bootstrap_exchange_qp_info(bs, mine, theirs, n); ...
 *            gdak_bootstrap_close(bs);
 *
 * or, for jobs started by mpirun, MPI collectives (gdak_bootstrap_mpi_*,
 * below; library gdak_mpi).
 *
 * Every call returns 0 or a negative errno (-ETIMEDOUT, -ECONNREFUSED,
 * -EPROTO for a peer speaking something else or disagreeing on n) and logs
 * why.  Records travel in gdak_qp_info_pack's fixed big-endian form.
 */
#ifndef GDAK_BOOTSTRAP_H
#define GDAK_BOOTSTRAP_H

#include <stddef.h>
#include <stdint.h>

#include <gdak/gdak.h>

#ifdef __cplusplus
extern "C" {
#endif

struct gdak_bootstrap;

#define GDAK_BOOTSTRAP_PORT 18515 /* perftest's default, for familiarity */

int gdak_bootstrap_listen(const char *host, uint16_t port, struct gdak_bootstrap **bs);
uint16_t gdak_bootstrap_port(const struct gdak_bootstrap *bs);
int gdak_bootstrap_accept(struct gdak_bootstrap *bs, int timeout_ms);
int gdak_bootstrap_connect(const char *host, uint16_t port, int timeout_ms,
			   struct gdak_bootstrap **bs);
/* Send ours, receive theirs: n records each way (both sides pass the same n). */
int gdak_bootstrap_exchange_qp_info(struct gdak_bootstrap *bs, const struct gdak_qp_info *mine,
				    struct gdak_qp_info *theirs, unsigned n);
/* Send len bytes, receive len bytes (both sides pass the same len). */
int gdak_bootstrap_exchange(struct gdak_bootstrap *bs, const void *mine, void *theirs, size_t len);
/* Both sides reached this point. */
int gdak_bootstrap_barrier(struct gdak_bootstrap *bs);
/* Timeout of each exchange (default 30000 ms). */
void gdak_bootstrap_set_timeout(struct gdak_bootstrap *bs, int timeout_ms);
void gdak_bootstrap_close(struct gdak_bootstrap *bs);

/*
 * MPI bootstrap: in library gdak_mpi (CMake target gdak::mpi, pkg-config
 * gdak-mpi; link it, not only gdak), built and installed when MPI is found.  The caller has called MPI_Init; comm points to an MPI_Comm
 * (NULL: MPI_COMM_WORLD).  Collective: every rank of comm calls them.
 * Returns 0 or a negative errno (-EINVAL, -ENOMEM, -EIO for an MPI error,
 * -EPROTO for a record that is not a gdak QP info), with the reason logged.
 *
 *   to_each[r * n + i]    my i-th record for rank r (zeroed: none)
 *   from_each[r * n + i]  rank r's i-th record for me (zeroed: none)
 */
int gdak_bootstrap_mpi_exchange_qp_info(const void *comm, const struct gdak_qp_info *to_each,
					struct gdak_qp_info *from_each, unsigned n_per_peer);
/* all[r * len ...] = rank r's len bytes of mine (addresses, rkeys). */
int gdak_bootstrap_mpi_allgather(const void *comm, const void *mine, void *all, size_t len);
int gdak_bootstrap_mpi_barrier(const void *comm);

#ifdef __cplusplus
}
#endif
#endif /* GDAK_BOOTSTRAP_H */
