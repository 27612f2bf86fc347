/* SPDX-License-Identifier: MIT */
/*
 * gdak-trace - print a gdak trace (pcapng, docs/TRACE.md) one decoded line
 * per record, as JSON lines, or as a per-QP summary.
 *
 * Exit status: 0 the whole file read cleanly; 1 the file is truncated or
 * corrupt (what could be read is printed, the problem named by offset on
 * stderr) or cannot be opened; 2 bad command line.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "trace_tool.h"

static volatile sig_atomic_t stop;

static void on_sigint(int sig)
{
	(void)sig;
	stop = 1;
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: gdak-trace [options] FILE\n"
		"Print a gdak trace (pcapng): one decoded line per record and packet.\n"
		"\n"
		"  --json         JSON lines instead of text\n"
		"  --summary      per QP: WQE counts by opcode, bytes, CQEs, errors, first error\n"
		"                 with the WQE it names\n"
		"  --qp N         only records and packets of QP N (decimal or 0x hex)\n"
		"  --opcode NAME  only this WQE opcode (RDMA_WRITE, ATOMIC_FA, ...), CQE opcode\n"
		"                 (REQ, REQ_ERR, ...), record type (DOORBELL, VIOLATION, PACKET,\n"
		"                 ...) or packet opcode (RDMA_WRITE_ONLY, ACKNOWLEDGE, ...)\n"
		"  --errors       only errors: error CQEs, violations, faults, lost records,\n"
		"                 NAKs and packets with a bad ICRC\n"
		"  --follow       keep reading as the file grows; stop on SIGINT\n"
		"  --relative     timestamps as seconds since the file's first record or packet\n"
		"                 (JSON: rel_ns next to ts_ns)\n"
		"  -h, --help     this text\n"
		"\n"
		"Exit status: 0 clean, 1 truncated/corrupt/unreadable file, 2 bad usage.\n"
		"A capture not written by gdak (tshark, dumpcap) has no closing STATS record and\n"
		"is read to its end without complaint.\n");
}

struct run {
	const char *path;
	struct trace_filter filt;
	struct trace_out out;
	struct trace_summary *sum;
	int follow;
	int errors;	/* problems found in the file */
	int closed;	/* the writer's closing STATS record was seen */
	int gdak_recs;	/* gdak records seen: the file is a gdak trace, not a plain capture */
	int gdak_shb;	/* 1/0: the section header names gdak as its writer; -1 not seen */
};

static uint32_t le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* Whether a complete Section Header Block's shb_userappl (option 4) starts
 * with "gdak": gdak's writer always puts "gdak VERSION" there; tshark and
 * dumpcap put their own names.  Little-endian sections only (gdak writes
 * those; a big-endian one is not gdak's). */
static int shb_is_gdak(const uint8_t *b, size_t blen)
{
	size_t off = 24;

	if (blen < 28 || le32(b) != 0x0A0D0D0Au || le32(b + 8) != 0x1A2B3C4Du)
		return 0;
	while (off + 4 <= blen - 4) {
		unsigned code = b[off] | b[off + 1] << 8, len = b[off + 2] | b[off + 3] << 8;

		if (code == 0 || off + 4 + len > blen - 4)
			break;
		if (code == 4)
			return len >= 4 && !memcmp(b + off + 4, "gdak", 4);
		off += 4 + ((len + 3u) & ~3u);
	}
	return 0;
}

static void report(struct run *rn, const char *msg)
{
	fflush(stdout);
	fprintf(stderr, "gdak-trace: %s: %s\n", rn->path, msg);
	rn->errors++;
}

static void handle(struct run *rn, const struct gdak_trace_item *it)
{
	if (it->kind == GDAK_TITEM_RECORD && it->hdr.type == GDAK_TREC_STATS)
		rn->closed = 1;
	if (it->kind == GDAK_TITEM_RECORD)
		rn->gdak_recs = 1;
	if (rn->out.relative && !rn->out.have_t0 && it->kind != GDAK_TITEM_OTHER) {
		rn->out.t0 = it->kind == GDAK_TITEM_PACKET ? it->pkt.ts_ns : it->hdr.ts_ns;
		rn->out.have_t0 = 1;
	}
	if (!trace_filter_match(&rn->filt, it))
		return;
	if (rn->sum)
		trace_summary_add(rn->sum, it);
	else
		trace_print_item(&rn->out, it);
}

/* Wait a little for a growing file; on a loaded machine a short sleep is
 * better than spinning (two cores are shared by everything). */
static void follow_wait(void)
{
	struct timespec ts = {.tv_sec = 0, .tv_nsec = 100 * 1000 * 1000};

	fflush(stdout);
	nanosleep(&ts, NULL);
}

static int run_file(struct run *rn)
{
	struct gdak_trace_reader *r = NULL;
	struct gdak_trace_item it;
	size_t cap = 1 << 20, start = 0, end = 0;
	uint64_t base = 0;	/* file offset of buf[start] */
	uint8_t *buf = malloc(cap);
	int fd = open(rn->path, O_RDONLY | O_CLOEXEC);
	int fatal = 0, eof = 0;
	char msg[320];

	if (fd < 0 || !buf || gdak_trace_reader_new(&r)) {
		snprintf(msg, sizeof(msg), "cannot read: %s", strerror(fd < 0 ? errno : ENOMEM));
		report(rn, msg);
		if (fd >= 0)
			close(fd);
		free(buf);
		return 1;
	}
	while (!fatal) {
		ssize_t n;
		size_t used;
		int rc;

		if (rn->gdak_shb < 0 && base == 0 && end - start >= 12 &&
		    end - start >= le32(buf + start + 4))
			rn->gdak_shb = shb_is_gdak(buf + start, le32(buf + start + 4));

		/* parse every complete block in the window */
		while (!fatal && (rc = gdak_trace_reader_next(r, buf + start, end - start, base, &it,
							      &used)) != 0) {
			if (rc == 1) {
				handle(rn, &it);
			} else {
				report(rn, gdak_trace_reader_error(r));
				if (rc != -EBADMSG || !used)
					fatal = 1;
			}
			start += used;
			base += used;
		}
		if (fatal || stop)
			break;
		/* keep the partial block, make room for more */
		if (start) {
			memmove(buf, buf + start, end - start);
			end -= start;
			start = 0;
		}
		if (end == cap) {
			uint8_t *nb = cap < (64u << 20) ? realloc(buf, cap * 2) : NULL;
			if (!nb) {
				snprintf(msg, sizeof(msg), "offset %llu: a block larger than %zu bytes",
					 (unsigned long long)base, cap);
				report(rn, msg);
				break;
			}
			buf = nb;
			cap *= 2;
		}
		n = read(fd, buf + end, cap - end);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			snprintf(msg, sizeof(msg), "offset %llu: read error: %s",
				 (unsigned long long)(base + end), strerror(errno));
			report(rn, msg);
			break;
		}
		if (n == 0) {
			if (rn->follow && !stop) {
				follow_wait();
				continue;
			}
			eof = 1;
			break;
		}
		end += (size_t)n;
	}
	if (eof && end > start) {
		if (end - start >= 8) {
			uint32_t blen = (uint32_t)buf[start + 4] | (uint32_t)buf[start + 5] << 8 |
					(uint32_t)buf[start + 6] << 16 | (uint32_t)buf[start + 7] << 24;
			snprintf(msg, sizeof(msg), "offset %llu: truncated: the file ends %zu bytes "
				 "into a block of %u bytes", (unsigned long long)base, end - start, blen);
		} else {
			snprintf(msg, sizeof(msg), "offset %llu: truncated: the file ends %zu bytes "
				 "into a block header", (unsigned long long)base, end - start);
		}
		report(rn, msg);
	} else if (eof && base == 0) {
		report(rn, "offset 0: empty file, not a pcapng trace");
	} else if (eof && !rn->errors && !rn->closed && (rn->gdak_recs || rn->gdak_shb != 0)) {
		/* gdak_trace_close() always ends a trace with STATS: without it the
		 * file was cut at a block boundary (a crash, a full disk).  A file
		 * with no gdak record at all is another tool's capture (tshark -w of
		 * the RoCE traffic), which never has one. */
		snprintf(msg, sizeof(msg), "offset %llu: the trace ends without the writer's closing "
			 "STATS record: it was cut short, or is still being written (--follow)",
			 (unsigned long long)base);
		report(rn, msg);
	}
	close(fd);
	free(buf);
	gdak_trace_reader_free(r);
	return rn->errors ? 1 : 0;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "json", no_argument, NULL, 'j' },
		{ "summary", no_argument, NULL, 's' },
		{ "qp", required_argument, NULL, 'q' },
		{ "opcode", required_argument, NULL, 'o' },
		{ "errors", no_argument, NULL, 'e' },
		{ "follow", no_argument, NULL, 'f' },
		{ "relative", no_argument, NULL, 'r' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct run rn = { .out = { .f = stdout }, .gdak_shb = -1 };
	int summary = 0, c, rc;
	struct sigaction sa;

	trace_filter_init(&rn.filt);
	opterr = 0;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		char *endp;
		unsigned long v;

		switch (c) {
		case 'j':
			rn.out.json = 1;
			break;
		case 's':
			summary = 1;
			break;
		case 'q':
			errno = 0;
			v = strtoul(optarg, &endp, 0);
			if (errno || !*optarg || *endp || v > 0xffffff) {
				fprintf(stderr, "gdak-trace: --qp '%s' is not a QP number (0..0xffffff)\n",
					optarg);
				return 2;
			}
			rn.filt.has_qp = 1;
			rn.filt.qp = (uint32_t)v;
			break;
		case 'o':
			if (trace_filter_set_opcode(&rn.filt, optarg)) {
				fprintf(stderr, "gdak-trace: --opcode '%s' is not a WQE, CQE, record or "
					"packet opcode name (e.g. RDMA_WRITE, REQ_ERR, DOORBELL)\n", optarg);
				return 2;
			}
			break;
		case 'e':
			rn.filt.errors_only = 1;
			break;
		case 'f':
			rn.follow = 1;
			break;
		case 'r':
			rn.out.relative = 1;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			if (optopt)
				fprintf(stderr, "gdak-trace: option '-%c' is unknown or needs a value\n",
					optopt);
			else
				fprintf(stderr, "gdak-trace: option '%s' is unknown or needs a value\n",
					argv[optind - 1]);
			usage(stderr);
			return 2;
		}
	}
	if (optind != argc - 1) {
		fprintf(stderr, "gdak-trace: %s\n",
			optind >= argc ? "no trace file given" : "more than one trace file given");
		usage(stderr);
		return 2;
	}
	if (summary && rn.follow) {
		fprintf(stderr, "gdak-trace: --summary and --follow cannot be combined\n");
		return 2;
	}
	rn.path = argv[optind];
	if (summary && !(rn.sum = trace_summary_new(rn.out.json))) {
		fprintf(stderr, "gdak-trace: out of memory\n");
		return 1;
	}
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_sigint;
	sigaction(SIGINT, &sa, NULL);	/* no SA_RESTART: a blocked read returns */
	sigaction(SIGTERM, &sa, NULL);

	rc = run_file(&rn);
	if (rn.sum) {
		trace_summary_print(rn.sum, &rn.out);
		trace_summary_free(rn.sum);
	}
	if (fflush(stdout) || ferror(stdout)) {
		fprintf(stderr, "gdak-trace: writing the output failed\n");
		return 1;
	}
	return rc;
}
