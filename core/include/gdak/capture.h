/* SPDX-License-Identifier: MIT */
/*
 * gdak/capture.h - the ring capture: the WQE/CQE stream of any backend,
 * reconstructed from the rings themselves (docs/CAPTURE.md).
 *
 * The NIC model sees every WQE it executes and traces it (gdak/trace.h).  A
 * real ConnectX does not tell anyone what it fetched, so for the hardware
 * backend the stream has to be read back from memory: a capture thread
 * follows each QP's send doorbell record (the producer index), copies every
 * newly published WQE (sized by its ctrl segment's DS count), scans the
 * completion queues for CQEs newly handed to software (the owner bit of
 * each pass, as device code polls them), and writes ordinary DOORBELL / WQE
 * / CQE records into a pcapng trace that gdak-trace and Wireshark read.
 *
 * A capture samples; it cannot stop the device.  When the device got more
 * than a ring ahead of it (or recycled a slot while it was being copied),
 * the WQEBBs / CQEs it could not see are counted and written as a loss
 * record with the exact count - never dropped silently.
 *
 * With the hardware backend, GDAK_TRACE=path captures every QP of the
 * process this way.  On any backend the calls below capture chosen QPs; on
 * the NIC model that gives a second, independent view of the same stream.
 */
#ifndef GDAK_CAPTURE_H
#define GDAK_CAPTURE_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

struct gdak_ctx;
struct gdak_qp;
struct gdak_capture;
struct gdak_dev_qp; /* <gdak/dev/types.h> */

/* The thread id capture records carry (gdak-trace prints "t256"). */
#define GDAK_CAPTURE_THREAD_ID 256u

enum gdak_capture_flags {
	/* No capture thread: passes run only in gdak_capture_poll() (tests,
	 * or callers that want to sample at points of their choosing). */
	GDAK_CAPTURE_F_MANUAL = 1u << 0,
	/* Timestamps from the trace writer's counter (byte-identical runs). */
	GDAK_CAPTURE_F_FAKE_CLOCK = 1u << 1,
};

enum gdak_capture_ring_flags {
	/* The descriptor's rings and doorbell records are GPU memory: read them
	 * with cuMemcpyDtoHAsync on the capture's own non-blocking stream. */
	GDAK_CAPTURE_RINGS_GPU = 1u << 0,
};

/*
 * Open a capture writing to path (created or truncated).  ctx may be NULL
 * for a capture fed only through gdak_capture_add_dev_qp().  A capture bound
 * to ctx stops (final pass, trace file completed) when ctx is closed; the
 * handle stays valid until gdak_capture_close().  0 or -errno.
 */
int gdak_capture_open(struct gdak_ctx *ctx, const char *path, unsigned flags,
		      struct gdak_capture **cap);

/*
 * Follow qp's send queue and its send and receive CQs from now on (what is
 * already in the rings is not recorded; a CQE not yet consumed is).  qp must
 * belong to the capture's context.  -EEXIST if already captured.
 */
int gdak_capture_add_qp(struct gdak_capture *cap, struct gdak_qp *qp);
/* Stop following qp after one last pass.  Call it before destroying qp
 * (the hardware backend does it for you on gdak_qp_destroy). */
int gdak_capture_remove_qp(struct gdak_capture *cap, struct gdak_qp *qp);

/*
 * Follow the rings a device descriptor names (a gdak_qp_export() result, or
 * one built by other code): sq_buf, sq_wqebb_cnt, dbrec, proxy_pi (CPU_PROXY
 * handler), scq and rcq (cqes, ncqe, dbrec, cqn; rcq when rq_buf is set).
 * flags: enum gdak_capture_ring_flags.  The descriptor and its rings must
 * stay valid until gdak_capture_remove_dev_qp() or gdak_capture_close().
 */
int gdak_capture_add_dev_qp(struct gdak_capture *cap, const struct gdak_dev_qp *dqp,
			    unsigned flags);
int gdak_capture_remove_dev_qp(struct gdak_capture *cap, const struct gdak_dev_qp *dqp);

/* One pass over every ring now, in the calling thread (after the capture
 * thread's current pass, if one runs); records made, or -errno. */
int gdak_capture_poll(struct gdak_capture *cap);
/* A pass, then every buffered record written to the file. */
int gdak_capture_flush(struct gdak_capture *cap);

/* Last pass, stop the thread, write the closing statistics, close the file,
 * free cap.  0, or the first error the capture met (-errno). */
int gdak_capture_close(struct gdak_capture *cap);

struct gdak_capture_stats {
	uint64_t passes;	/* passes over the rings */
	uint64_t doorbells;	/* producer-index changes observed */
	uint64_t wqes;		/* WQE records written */
	uint64_t wqebbs;	/* WQEBBs they hold */
	uint64_t cqes;		/* CQE records written */
	uint64_t lost_wqebbs;	/* WQEBBs overwritten before they could be copied */
	uint64_t lost_cqes;	/* CQEs overwritten before they could be copied */
	uint64_t loss_records;	/* loss records written */
	uint64_t read_errors;	/* failed GPU copies (that pass of that QP skipped) */
};
int gdak_capture_get_stats(struct gdak_capture *cap, struct gdak_capture_stats *st);

/*
 * Test hook: pause (on = 1) parks the capture thread between two passes and
 * returns once it is parked; on = 0 lets it run again.  gdak_capture_poll()
 * still works while paused.  Makes "the capture fell behind" deterministic.
 */
int gdak_capture_pause(struct gdak_capture *cap, int on);

#ifdef __cplusplus
}
#endif
#endif /* GDAK_CAPTURE_H */
