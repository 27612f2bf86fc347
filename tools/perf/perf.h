/* SPDX-License-Identifier: MIT */
/*
 * perf.h - gdak-perf internals: options, results, and the functions each
 * file of tools/perf/ provides, grouped by that file.
 *
 * gdak-perf measures the device API driven by host threads (or, with --cuda,
 * by a CUDA kernel) against the NIC model or a ConnectX, and measures in the
 * same run the baselines the numbers are judged against: the "minimal
 * executor" (the irreducible work per WQE), memcpy bandwidth and a
 * thread-to-thread ping-pong.  Every measured test verifies its last
 * iteration's data; a run that fails verification prints what was wrong and
 * exits non-zero, so a broken path never reports a number.
 */
#ifndef GDAK_PERF_H
#define GDAK_PERF_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <gdak/gdak.h>
#include <gdak/dev/types.h>

/* Exit codes: 0 ok, 1 run or verification failed, 2 bad command line. */
enum { PERF_EXIT_OK = 0, PERF_EXIT_FAIL = 1, PERF_EXIT_USAGE = 2 };

enum perf_test_id {
	PERF_WRITE_BW,
	PERF_WRITE_LAT,
	PERF_READ_BW,
	PERF_READ_LAT,
	PERF_ATOMIC_RATE,
	PERF_ATOMIC_LAT,
	PERF_SEND_BW,
	PERF_PUT_SIGNAL_LAT,
	PERF_DC_PUT_BW,
	PERF_BASELINE,
	PERF_TEST_COUNT,
};

/* What a test reports, which decides its table and baselines. */
enum perf_kind {
	PERF_KIND_BW,	   /* message rate and bandwidth */
	PERF_KIND_LAT,	   /* per-operation latency percentiles */
	PERF_KIND_BASE,	   /* the baselines alone */
};

struct perf_test_desc {
	const char *name;
	enum perf_test_id id;
	enum perf_kind kind;
	int fixed_size;		/* atomics: 8 bytes whatever -s says */
	const char *what;	/* one line for --help */
};

enum perf_poll { PERF_POLL_DEFAULT, PERF_POLL_SPIN, PERF_POLL_ADAPTIVE };

struct perf_opts {
	const struct perf_test_desc *test;
	size_t size_min, size_max;	/* message sizes: powers of two between (or one) */
	int all_sizes;			/* -a */
	uint64_t iters;			/* 0: the test's default */
	unsigned qps;			/* QPs driven */
	unsigned idle_qps;		/* extra QPs opened and left idle */
	unsigned threads;		/* posting threads */
	unsigned wqes_per_db;		/* WQEs per doorbell (rate tests) */
	unsigned signal_every;		/* a CQE every N WQEs (rate tests) */
	unsigned sq_depth;		/* WQEBBs per send queue */
	enum gdak_dev_db_handler handler;
	int nic_threads;		/* 0: the NIC model's default */
	enum perf_poll poll;
	const char *device;		/* NULL: $GDAK_DEVICE or "emu" */
	const char *peer_addr;		/* emu:udp client: server address */
	int server;			/* emu:udp: wait for a client */
	uint16_t port;			/* emu:udp bootstrap port */
	int cuda;			/* --cuda: device code is a kernel */
	enum gdak_mem_kind mem;		/* --mem: where the data buffers live */
	unsigned ctas;			/* --cuda: CTAs (one thread, one QP each) */
	unsigned rounds;		/* baseline/test alternations, median taken */
	int no_baseline;
	int json, csv;
	const char *json_file;		/* --json-file: JSON there, the table on stdout */
	int quiet;			/* no progress on stderr */
	const char *trace;		/* --trace PATH (sets GDAK_TRACE) */
	unsigned idle_ms;		/* --idle-ms: after the test, measure the idle NIC's CPU */
	unsigned duration_ms;		/* -D: iterations calibrated to this long per size */
	int report_gbits;		/* --report_gbits: bandwidth in Gb/s */
	int mpi;			/* launched by mpirun: rank 0 serves, rank 1 measures */
	int port_given;			/* -p on the command line */
	char cmdline[512];		/* the arguments, for the JSON record */
	/* what the NIC model runs with, read back after set-up (emu only) */
	int nic_threads_eff;		/* 0: unknown */
	const char *poll_eff;		/* "spin", "adaptive" or NULL */
};

/* One row of output: one message size. */
struct perf_result {
	size_t bytes;
	uint64_t iters;			/* operations per round */
	unsigned rounds;
	unsigned qps;

	/* PERF_KIND_BW: medians over rounds */
	double msg_rate;		/* operations per second */
	double bw;			/* payload bytes per second */
	double peak_msg_rate;		/* best round */

	/* PERF_KIND_LAT: nanoseconds, over every sample of every round */
	double lat_min, lat_max, lat_p50, lat_avg, lat_stdev, lat_p99, lat_p999;

	/* baselines, measured in the same run (0 when not measured) */
	double exec_rate;		/* minimal executor, WQE/s, same WQEs per doorbell */
	unsigned exec_per_db;
	double exec_rate_1, exec_rate_16; /* PERF_KIND_BASE: both doorbell batchings */
	double memcpy_bw;		/* bytes/s, same message size */
	double pingpong_p50, pingpong_p99; /* ns, thread round trip */
	double exec_ratio;		/* msg_rate / exec_rate */
	double memcpy_ratio;		/* bw / memcpy_bw */
	double pingpong_ratio;		/* lat_p50 / pingpong_p50 */
	double rc_rate;			/* dc_put_bw: the same puts on RC QPs, same run */
	double rc_ratio;		/* msg_rate / rc_rate */

	long rss_kib;			/* process RSS after the test (VmRSS) */
	int verified;			/* 1: last iteration's data checked and right */
};

/* ---- perf_cli.c ---------------------------------------------------------- */
/* 0, or PERF_EXIT_USAGE after printing why (or 1 for --help, printed). */
int perf_parse_args(int argc, char **argv, struct perf_opts *o);
const struct perf_test_desc *perf_test_by_name(const char *name);
void perf_usage(FILE *f);

/* ---- perf_util.c --------------------------------------------------------- */
uint64_t perf_now_ns(void);
/* Spin politely: a few pause instructions, then sched_yield, then short
 * sleeps (on a 2-core machine a hard spin starves the other side). */
struct perf_backoff {
	unsigned n;
};
void perf_backoff(struct perf_backoff *b);
static inline void perf_backoff_reset(struct perf_backoff *b) { b->n = 0; }
void perf_fill(void *buf, size_t len, uint64_t seed);
double perf_median(double *v, unsigned n);
/* Sorts v; p in [0,1]. */
double perf_percentile_sorted(const double *v, size_t n, double p);
void perf_lat_summary(double *ns, size_t n, struct perf_result *r);
long perf_rss_kib(void);
/* Page-aligned buffer, as the NIC model's host allocator gives (free()). */
void *perf_alloc(size_t len);
/* Bytes of each buffer region a test of this message size uses: whole
 * message slots, at least one, at most 4 MiB in all (1 MiB + messages get
 * one slot, small ones cycle through many so the copies are not all one
 * cache line). */
size_t perf_region_slots(size_t size);
/* Progress on stderr, at most once a second (unless quiet). */
void perf_progress(const struct perf_opts *o, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
void perf_progress_done(const struct perf_opts *o);
/* Report a verification failure: prints it and remembers it for the exit code. */
void perf_verify_fail(const char *test, size_t size, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
unsigned perf_verify_failures(void);
/* Test hook: GDAK_PERF_TEST_CORRUPT=1 damages one destination byte after each
 * run, so the smoke test can prove a broken path reports no number. */
int perf_test_corrupt(void);
/* Every QP the run holds open (requesters, targets, idle), for the output. */
void perf_set_qps_open(unsigned n);
unsigned perf_qps_open(void);

/* ---- perf_exec.c: the minimal executor ------------------------------------ */
/* Two threads, a ring of `ring` mlx5-shaped 64-byte RDMA_WRITE WQEs (the
 * test's send-queue size: the ring couples producer and consumer as the SQ
 * couples poster and NIC) built with the <gdak/mlx5.h> helpers; the consumer
 * decodes each, bounds-checks it against one region and copies its bytes.
 * 0 and *rate in WQE/s, or a negative errno (a verification failure is
 * reported) when the copied bytes are wrong. */
int perf_exec_run(size_t size, uint64_t wqes, unsigned per_db, unsigned ring, double *rate);

/* ---- perf_base.c: the other baselines ------------------------------------ */
/* memcpy bandwidth over the same buffer layout as the tests (bytes/s). */
int perf_memcpy_run(size_t size, uint64_t iters, double *bw);
/* Two threads bouncing a flag: round-trip p50/p99 in ns. */
int perf_pingpong_run(uint64_t iters, double *p50, double *p99);

/* ---- perf_run.c: sizes, rounds, baselines around a test ------------------- */
typedef int (*perf_test_fn)(void *env, const struct perf_opts *o, size_t size,
			    uint64_t iters, struct perf_result *round, double *lat_ns);
int perf_run_sizes(const struct perf_opts *o, void *env, perf_test_fn fn,
		   struct perf_result **out, size_t *nout);
uint64_t perf_default_iters(const struct perf_opts *o, size_t size);

/* ---- perf_emu.c: set-up for tests through gdak_open + the device API ------ */
/* One measured connection: a requester QP (posted on) and its loopback or
 * remote target QP, each with a buffer region registered for every access. */
struct perf_conn {
	struct gdak_qp *qp, *peer;	/* peer: NULL when the target is remote */
	struct gdak_dev_qp *dqp, *dpeer;
	uint8_t *lbuf, *rbuf;		/* local (source/landing) and target regions;
					 * rbuf NULL when the target is another process */
	struct gdak_mr *lmr, *rmr;
	size_t region;			/* bytes in each region */
	uint64_t raddr;			/* the target region as WQEs address it */
	uint32_t rkey;
	_Atomic uint64_t recv_posted;	/* send_bw: receive WQEs the target posted (credits) */
	uint64_t recv_base;		/* send_bw: recv_posted when the round began */
};

struct perf_env {
	struct gdak_ctx *ctx;
	struct perf_conn *conn;		/* o->qps of them */
	unsigned nconn;
	struct gdak_qp **idle;		/* --idle-qps, connected in pairs */
	unsigned nidle;
	unsigned qps_open;		/* every QP this run has open */
	struct gdak_bootstrap *bs;	/* server/client mode (emu:udp between processes) */
	size_t peer_region;		/* client: bytes of each target region at the server */
	int server;			/* this process is the server */
};

int perf_env_open(const struct perf_opts *o, struct perf_env **env);
void perf_env_close(struct perf_env *env);
/* Attributes of connection i's requester QP and of its target QP: both on
 * NIC thread i (modulo the thread count), so busy QPs spread over the NIC
 * threads instead of following creation order. */
void perf_qp_attrs(const struct perf_opts *o, unsigned i, struct gdak_qp_attr *req,
		   struct gdak_qp_attr *tgt);
/* Largest target region (+64) any size of this run needs. */
size_t perf_max_region(const struct perf_opts *o);
/* Make every connection's regions hold at least `region` bytes. */
int perf_env_regions(struct perf_env *env, const struct perf_opts *o, size_t region);
/* Say why a QP stopped (its error state, syndrome, rule) on stderr. */
void perf_report_qp_error(const char *test, struct perf_conn *c, int rc);
/* The perf_test_fn for o->test: dispatches to perf_emu_rate.c / perf_emu_lat.c. */
int perf_emu_test(void *env, const struct perf_opts *o, size_t size, uint64_t iters,
		  struct perf_result *round, double *lat_ns);

/* Seed of the data pattern a test of this size moves (both processes of a
 * server/client run derive the same bytes from it). */
#define PERF_SEED(size) ((uint64_t)(size) + 7)
/* The server's local buffer for a round (perf_net_round): zeroed where
 * the client reads or updates it (zero), else the pattern of size. */
void perf_server_fill(struct perf_conn *c, size_t len, int zero, size_t size);
/* A round's buffers before the clock starts, slots of size bytes: an RDMA
 * READ (read) fetches the pattern into a zeroed local buffer; an atomic
 * test (atomic) starts from a zero remote word and zeroed 8-byte result
 * slots; else the local pattern goes to a zeroed remote buffer (and tail
 * bytes past it).  A client without the remote buffer (c->rbuf NULL)
 * leaves that to the server (perf_server_fill). */
void perf_prepare(struct perf_conn *c, size_t slots, size_t size, int read, int atomic,
		  size_t tail);

/* ---- perf_net.c: server/client mode over the TCP bootstrap ----------------- */
/* Both sides: connect to / wait for the peer, agree on the test, create this
 * side's QPs, exchange and connect them. */
int perf_net_setup(struct perf_env *env, const struct perf_opts *o);
/* Client: have the server prepare its target regions for a round. */
int perf_net_round(struct perf_env *env, const struct perf_opts *o, size_t size, uint64_t iters);
/* Client, after a round: check what the server holds (and the local result
 * of reads and atomics) against what the round must have left there. */
int perf_net_verify(struct perf_env *env, const struct perf_opts *o, struct perf_conn *c,
		    unsigned ci, size_t size, uint64_t iters, size_t slots);
/* Server: answer the client's rounds until it says it is done. */
int perf_net_serve(struct perf_env *env, const struct perf_opts *o);
/* Client: tell the server the run is over; both: close the bootstrap. */
void perf_net_close(struct perf_env *env, int client);

/* ---- perf_emu_rate.c: write_bw, read_bw, atomic_rate, send_bw ------------ */
int perf_emu_rate(struct perf_env *env, const struct perf_opts *o, size_t size, uint64_t iters,
		  struct perf_result *round);

/* ---- perf_emu_dc.c: dc_put_bw ---------------------------------------------- */
int perf_emu_dc(struct perf_env *env, const struct perf_opts *o, size_t size, uint64_t iters,
		struct perf_result *round);
/* perf_env_close: the DCIs and DCTs go first */
void perf_emu_dc_close(struct perf_env *env);

/* ---- perf_emu_lat.c: write_lat, read_lat, atomic_lat, put_signal_lat ------- */
int perf_emu_lat(struct perf_env *env, const struct perf_opts *o, size_t size, uint64_t iters,
		 double *lat_ns);

/* ---- perf_mpi.c: started by mpirun (rank 0 serves, rank 1 measures) -------- */
/* Whether the environment says mpirun started this process. */
int perf_mpi_launched(void);
/* MPI_Init and the roles; 0, or an exit code after saying why. */
int perf_mpi_init(int *argc, char ***argv, struct perf_opts *o);
/* rank 0, listening (ok) or failed to: tell rank 1 where. */
int perf_mpi_publish(uint16_t port, int ok);
/* rank 0 failed before it could publish: let rank 1 stop waiting. */
void perf_mpi_unblock(const struct perf_opts *o);
/* rank 1: where rank 0 listens. */
int perf_mpi_peer(char *host, size_t len, uint16_t *port);

/* ---- perf_output.c ------------------------------------------------------- */
void perf_print(FILE *f, const struct perf_opts *o, const struct perf_result *r, size_t n);
void perf_print_json(FILE *f, const struct perf_opts *o, const struct perf_result *r, size_t n);
void perf_print_csv(FILE *f, const struct perf_opts *o, const struct perf_result *r, size_t n);
/* "AMD EPYC" from /proc/cpuinfo; "unknown" otherwise. */
const char *perf_cpu_model(void);

#endif /* GDAK_PERF_H */
