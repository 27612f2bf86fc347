/* SPDX-License-Identifier: MIT */
/*
 * env.c - the table of gdak's environment variables (gdak/env.h) and the
 * tree's only getenv().
 *
 * Rows are sorted by area, then name.  A reader that needs more than the
 * table can say (GDAK_FAULTS' grammar, GDAK_UDP_RTO_MIN_US at most the
 * timeout) checks that itself, at the same point: gdak_open().
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <gdak/env.h>

#include "gdak_log.h"

/* one row constructor per type */
/* clang-format off */
#define U(n, lo, hi, d, a, doc) {n, GDAK_ENV_UINT, d, lo, hi, NULL, a, doc}
#define B(n, d, a, doc) {n, GDAK_ENV_BOOL, d, 0, 1, NULL, a, doc}
#define C(n, ch, d, a, doc) {n, GDAK_ENV_CHOICE, d, 0, 0, ch, a, doc}
#define T(n, d, a, doc) {n, GDAK_ENV_TEXT, d, 0, 0, NULL, a, doc}
/* clang-format on */

static const struct gdak_env_var table[] = {
	T("GDAK_DEVICE", "emu", "core",
	  "device gdak_open(NULL) opens: emu, emu:udp[:ADDR[:PORT]], "
	  "emu:verbs:DEV, mlx5_N"),
	T("GDAK_BOOTSTRAP_SECRET", "", "core",
	  "TCP bootstrap: a shared secret both sides must "
	  "present in their hello"),
	C("GDAK_LOG", "error|warn|info|debug|0|1|2|3", "warn", "core",
	  "log level (read once, at program start)"),

	T("GDAK_NIC_SCHED", "inherit", "nic",
	  "NIC threads' scheduling policy, applied where permitted (else logged): inherit, "
	  "nice:N (-20..19), fifo[:P] or rr[:P] (P 1..99; a real-time NIC thread never spins)"),
	U("GDAK_NIC_THREADS", 1, 64, "1", "nic", "NIC-model threads the QPs are spread over"),
	B("GDAK_STRICT", "1", "nic",
	  "strict checks (the NIC model as a sanitizer); 0 relaxes them"),
	C("GDAK_POLL", "adaptive|spin", "adaptive", "nic",
	  "doorbell polling: adaptive back-off (spin, yield, sleep) or pure spin"),
	U("GDAK_RNR_TIMEOUT_MS", 0, 3600000, "1000", "nic",
	  "loop transport: how long a SEND waits for a receive WQE before RNR_RETRY_EXC"),
	T("GDAK_FAULTS", "", "nic",
	  "fault injection spec (docs/RELIABILITY.md): err:..., "
	  "delay:..., pkt_drop:p=N%,... separated by ';'"),

	U("GDAK_UDP_RTO_US", 10, 60000000, "10000", "udp", "retransmission timeout, microseconds"),
	U("GDAK_UDP_RTO_MIN_US", 10, 60000000, "", "udp",
	  "floor of the RTT-adaptive timeout, microseconds, at most GDAK_UDP_RTO_US "
	  "(default a tenth of it)"),
	U("GDAK_UDP_WINDOW", 1, 65536, "32", "udp", "packets in flight per QP"),
	C("GDAK_UDP_RETRY", "0|1|2|3|4|5|6|7|forever", "7", "udp",
	  "transport retry count (forever: an emulator extension for lossy tests)"),
	B("GDAK_UDP_LOCAL", "1", "udp",
	  "peers in this process get packets through an in-process inbox; 0: the socket"),

	C("GDAK_VERBS_STAGE", "0|off|all", "0", "verbs",
	  "test hook: all stages every local buffer through bounce rings"),
	U("GDAK_VERBS_BOUNCE", 64, 1ull << 30, "262144", "verbs", "bytes per bounce ring"),
	B("GDAK_VERBS_DMABUF", "1", "verbs",
	  "register GPU memory by dma-buf where possible; "
	  "0 stages it"),

	U("GDAK_IBV_DEVICES", 0, 8, "1", "ibv",
	  "gdak's libibverbs: how many emulated mlx5_N devices "
	  "it lists"),
	B("GDAK_IBV_DIRECT", "1", "ibv",
	  "gdak's libibverbs: a WRITE or READ to a device of another process on "
	  "this host is done by the sender (process_vm_writev/readv), no packet; "
	  "0: UDP"),
	B("GDAK_IBV_INLINE", "0", "ibv",
	  "gdak's libibverbs: 1 = post_send and an empty poll_cq run the NIC "
	  "model's engine in the caller's thread when its NIC thread is idle; "
	  "0 = hand the work to the NIC thread; unset: 1 for WRITE/READ posts "
	  "to a direct-path peer (GDAK_IBV_DIRECT), else 0"),
	T("GDAK_IBV_ADDR", "", "ibv",
	  "gdak's libibverbs: IPv4 address of device 0[,1,...] (default "
	  "the first 127.0.0.N, N >= 2, whose UDP port 4791 is free)"),

	U("GDAK_CUDA_DEVICE", 0, 1023, "0", "cuda",
	  "CUDA device ordinal the NIC model and "
	  "hw_mlx5 use"),
	B("GDAK_CUDA_DMA", "1", "cuda",
	  "move GPU memory with the CUDA driver; 0: host memory "
	  "engine only"),
	U("GDAK_CUDA_COPY_STREAMS", 1, 8, "1", "cuda", "streams a large GPU copy is split over"),
	U("GDAK_CUDA_ASYNC_STREAMS", 1, 8, "4", "cuda", "streams for asynchronous GPU copies"),
	U("GDAK_CUDA_COPY_SPLIT", 4096, 1ull << 40, "4194304", "cuda",
	  "bytes from which a GPU copy is split over the copy streams"),
	C("GDAK_CUDA_BATCH", "off|kernel|memop|copy", "copy", "cuda",
	  "GPU-memory WRITEs of a NIC "
	  "pass: off: one cuMemcpyAsync each; kernel: one copy kernel launch per pass; memop: "
	  "kernel, but a pass of aligned 4/8-byte inline WRITEs as one cuStreamBatchMemOp; "
	  "copy: memops, else one cuMemcpyBatchAsync per pass (no SM; docs/CUDA.md)"),
	B("GDAK_CUDA_GDR", "1", "cuda",
	  "map GPU memory for the CPU with GDRCopy (libgdrapi.so.2) where it and its driver "
	  "exist - what the NIC model allocates, rings in GPU memory, MRs registered on GPU "
	  "memory; 0: never"),
	U("GDAK_CUDA_GDR_MAX", 0, 1ull << 40, "67108864", "cuda",
	  "largest GPU allocation, ring or MR mapped with GDRCopy"),
	B("GDAK_CUDA_STATS", "0", "cuda",
	  "print the CUDA engine's counters (batches, driver calls) to stderr at every emu "
	  "context close and at exit"),
	C("GDAK_CUDA_CQE", "cpu|stream", "stream", "cuda",
	  "with GDAK_CUDA_BATCH: cpu: a CQE behind GPU-memory WRITEs is written once they "
	  "landed; stream: its last 8 bytes are a stream write-value behind them (no CPU "
	  "round trip; docs/CUDA.md)"),
	U("GDAK_CUDA_BATCH_MAX", 8, 262144, "16384", "cuda",
	  "largest copy that goes into a batch; larger ones are a cuMemcpyAsync each"),
	B("GDAK_CUDA_VALUE_FENCES", "0", "cuda",
	  "1: a memory barrier before every value write-value of a memop batch (default: only "
	  "before the first and those meeting an earlier one; docs/CUDA.md)"),
	B("GDAK_CUDA_PASS_WORD", "0", "cuda",
	  "with GDAK_CUDA_CQE=stream: 1: every NIC pass end submits its batch's completion "
	  "word, also between large copies already on the stream (default: with the next "
	  "batch that has work)"),
	B("GDAK_CUDA_SAME", "1", "cuda",
	  "1: a batched GPU copy equal to the last one of its chain (same source, destination "
	  "and length) joins it without the granule table; 0: it goes through the table (A/B)"),
	B("GDAK_CUDA_DTOD", "1", "cuda",
	  "1: a GPU->GPU copy the NIC thread puts on its stream directly (a large WRITE) is a "
	  "cuMemcpyDtoDAsync where the driver has it; 0: a cuMemcpyAsync (A/B)"),
	U("GDAK_CUDA_HOLD", 0, 8, "0", "cuda",
	  "with GDAK_CUDA_CQE=stream: N > 0: a NIC pass end keeps its open batch open while N "
	  "batches are still running on the GPU and the pass added work (0: every pass end "
	  "submits)"),
	B("GDAK_CUDA_CQE_FENCES", "1", "cuda",
	  "with GDAK_CUDA_CQE=stream: 1: a memory barrier before every CQE word of a batch; 0: "
	  "before the first, and before each word of a collapsed CQ's entry"),
	C("GDAK_CUDA_BIG", "auto|driver|kernel", "auto", "cuda",
	  "a GPU->GPU copy too large for a batch (a large WRITE): kernel: one launch of the "
	  "engine's wide copy kernel when both addresses are 16-byte aligned (needs a free SM "
	  "slot); driver: a cuMemcpyDtoDAsync (no SM); auto: kernel with "
	  "GDAK_CUDA_BATCH=kernel|memop, driver with copy (docs/CUDA.md)"),
	B("GDAK_CUDA_PREQUERY", "1", "cuda",
	  "with GDAK_CUDA_CQE=stream: 1: a cuStreamQuery just before the first large GPU copy "
	  "of a burst (a NIC thread's first driver call after a while is slow); 0: none (A/B)"),
	B("GDAK_CUDA_DIRECT_BATCH", "0", "cuda",
	  "with GDAK_CUDA_CQE=stream: 1: equal large GPU->GPU WRITEs of one NIC pass (same "
	  "source, destination and length) go to the driver in one cuMemcpyBatchAsync at the "
	  "pass end instead of a cuMemcpyAsync each (docs/CUDA.md)"),

	T("GDAK_TRACE", "", "trace", "pcapng trace file the NIC model writes (docs/TRACE.md)"),
	C("GDAK_TRACE_CLOCK", "real|fake", "real", "trace",
	  "timestamps: real, or fake "
	  "(reproducible files)"),
	C("GDAK_TRACE_WRITER", "thread|inline", "thread", "trace",
	  "trace encoding on an I/O thread, or inline in the recording thread"),
	C("GDAK_TRACE_FULL", "wait|drop", "wait", "trace",
	  "when every trace buffer is full: the recording thread waits, or records are dropped "
	  "(counted)"),

	T("GDAK_CAPTURE_TRACE", "", "capture", "ring-capture trace file (default: GDAK_TRACE)"),
	U("GDAK_CAPTURE_POLL_US", 10, 1000000, "1000", "capture",
	  "ring capture: longest sleep between ring scans, microseconds"),

	U("GDAK_HW_PORT", 1, 255, "1", "hw", "ConnectX port"),
	U("GDAK_HW_GID_INDEX", 0, 255, "", "hw",
	  "ConnectX GID index (default: the first RoCEv2 "
	  "IPv4 GID)"),
	C("GDAK_HW_QP_PATH", "auto|verbs|devx", "auto", "hw",
	  "ConnectX QP path: auto (DEVX with umem for "
	  "GDAK_QP_F_QUEUES_GPU, else mlx5dv_create_qp + "
	  "init_obj), verbs or devx for every QP"),
	B("GDAK_HW_NO_GPU_MAP", "0", "hw",
	  "1: do not map the rings into the GPU (host memory "
	  "device code)"),

	B("GDAK_PERF_TEST_CORRUPT", "0", "tools",
	  "test hook: gdak-perf corrupts one byte so "
	  "that its verification must fail"),
};

#undef U
#undef B
#undef C
#undef T

const struct gdak_env_var *gdak_env_table(size_t *n)
{
	if (n)
		*n = sizeof(table) / sizeof(table[0]);
	return table;
}

const struct gdak_env_var *gdak_env_find(const char *name)
{
	if (!name)
		return NULL;
	for (size_t i = 0; i < sizeof(table) / sizeof(table[0]); i++)
		if (!strcmp(table[i].name, name))
			return &table[i];
	return NULL;
}

const char *gdak_env_raw(const char *name)
{
	const char *v = getenv(name);

	return v && *v ? v : NULL;
}

/* Index of word s in the '|'-separated list, or -1. */
static int choice_index(const char *list, const char *s)
{
	size_t n = strlen(s);
	int i = 0;

	for (const char *p = list; *p; i++) {
		const char *bar = strchr(p, '|');
		size_t l = bar ? (size_t)(bar - p) : strlen(p);

		if (l == n && !strncasecmp(p, s, n))
			return i;
		if (!bar)
			break;
		p = bar + 1;
	}
	return -1;
}

static int parse_bool(const char *s)
{
	int i = choice_index("0|1|off|on|no|yes|false|true", s);

	return i < 0 ? -1 : i & 1;
}

static int parse_uint(const struct gdak_env_var *v, const char *s, unsigned long long *out)
{
	char *end;
	unsigned long long x;

	if (*s < '0' || *s > '9')
		return -EINVAL;
	errno = 0;
	x = strtoull(s, &end, 10);
	if (errno || *end || x < v->min || x > v->max)
		return -EINVAL;
	*out = x;
	return 0;
}

const char *gdak_env_allowed(const struct gdak_env_var *v, char *buf, size_t len)
{
	if (!len)
		return buf;
	switch (v->type) {
	case GDAK_ENV_UINT:
		snprintf(buf, len, "%llu..%llu", v->min, v->max);
		break;
	case GDAK_ENV_BOOL:
		snprintf(buf, len, "0|1");
		break;
	case GDAK_ENV_CHOICE:
		snprintf(buf, len, "%s", v->choices);
		break;
	default:
		snprintf(buf, len, "text");
		break;
	}
	return buf;
}

int gdak_env_check_value(const struct gdak_env_var *v, const char *value)
{
	unsigned long long x;

	if (!value || !*value || v->type == GDAK_ENV_TEXT)
		return 0;
	switch (v->type) {
	case GDAK_ENV_UINT:
		return parse_uint(v, value, &x);
	case GDAK_ENV_BOOL:
		return parse_bool(value) < 0 ? -EINVAL : 0;
	case GDAK_ENV_CHOICE:
		return choice_index(v->choices, value) < 0 ? -EINVAL : 0;
	default:
		return 0;
	}
}

static void report_bad(const struct gdak_env_var *v, const char *value)
{
	char allowed[96];

	GDAK_ERR(NULL, 0, "%s='%s' is not allowed: want %s (%s)", v->name, value,
		 gdak_env_allowed(v, allowed, sizeof(allowed)), v->doc);
}

/* The row of name, the value to parse (environment or default) in *s; 1 when
 * that is the default, 2 when there is none. */
static int lookup(const char *name, enum gdak_env_type type, const struct gdak_env_var **vp,
		  const char **s)
{
	const struct gdak_env_var *v = gdak_env_find(name);

	if (!v || v->type != type) {
		GDAK_ERR(NULL, 0, "internal: %s is not a%s variable of the configuration table",
			 name ? name : "(null)", v ? " variable of that type, or not a" : "");
		return -ENOENT;
	}
	*vp = v;
	*s = gdak_env_raw(name);
	if (*s)
		return 0;
	*s = v->def;
	return *v->def ? 1 : 2;
}

int gdak_env_uint(const char *name, unsigned long long *out)
{
	const struct gdak_env_var *v;
	const char *s;
	int from = lookup(name, GDAK_ENV_UINT, &v, &s);

	if (from < 0)
		return from;
	if (from == 2) {
		*out = 0;
		return 1;
	}
	if (parse_uint(v, s, out)) {
		report_bad(v, s);
		return -EINVAL;
	}
	return from;
}

/* gdak_env_bool's and gdak_env_choice's body: the value's index among
 * the type's words (0|1 for a boolean: parse_bool) into *out. */
static int env_index(const char *name, enum gdak_env_type type, int *out)
{
	const struct gdak_env_var *v;
	const char *s;
	int from = lookup(name, type, &v, &s), i;

	if (from < 0)
		return from;
	if (from == 2)
		i = 0;
	else
		i = type == GDAK_ENV_BOOL ? parse_bool(s) : choice_index(v->choices, s);
	if (i < 0) {
		report_bad(v, s);
		return -EINVAL;
	}
	*out = i;
	return from ? 1 : 0;
}

int gdak_env_bool(const char *name, int *out)
{
	return env_index(name, GDAK_ENV_BOOL, out);
}

int gdak_env_choice(const char *name, int *out)
{
	return env_index(name, GDAK_ENV_CHOICE, out);
}

const char *gdak_env_text(const char *name)
{
	const struct gdak_env_var *v = gdak_env_find(name);
	const char *s = gdak_env_raw(name);

	if (!v) {
		GDAK_ERR(NULL, 0, "internal: %s is not in the configuration table",
			 name ? name : "(null)");
		return s;
	}
	if (s)
		return s;
	return *v->def ? v->def : NULL;
}

int gdak_env_validate(void)
{
	int ret = 0;

	for (size_t i = 0; i < sizeof(table) / sizeof(table[0]); i++) {
		const char *s = gdak_env_raw(table[i].name);

		if (s && gdak_env_check_value(&table[i], s)) {
			report_bad(&table[i], s);
			ret = -EINVAL;
		}
	}
	return ret;
}
