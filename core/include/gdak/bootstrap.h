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

#ifdef __cplusplus
}
#endif
#endif /* GDAK_BOOTSTRAP_H */
