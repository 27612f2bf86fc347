/* SPDX-License-Identifier: MIT */
/*
 * gdak-run - run an unmodified rdma-core program (perftest, ibv_rc_pingpong,
 * pyverbs, ...) on the emulated NIC: put gdak's libibverbs.so.1 and
 * libmlx5.so.1 (lib/gdak/) first on LD_LIBRARY_PATH, set gdak's
 * environment from the options, and exec the program.  docs/VERBS.md.
 *
 *   gdak-run [options] [--] CMD [ARGS...]
 *
 * Every option is checked before anything runs: a wrong one is named on
 * stderr and gdak-run exits 2 without starting the program (a fault spec
 * is parsed by the NIC model's own parsers, so what passes here is what
 * the library will accept).  The library directory is found from where
 * gdak-run itself lives: <bindir>/../lib/gdak in the build tree, the
 * installed <libdir>/gdak relative to <bindir> when installed.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gdak/nic.h>

#include "gdak_libdir.h"
#include "tool_usage.h"
#include "roce/roce.h" /* roce_fault_parse: the udp transport's packet-fault parser */

/* How many devices gdak's libibverbs can show (GDAK_IBV_DEVICES, nic_model/ibv) */
#define MAX_DEVICES 8

static void usage(FILE *f)
{
	fprintf(f,
		"usage: gdak-run [options] [--] CMD [ARGS...]\n"
		"\n"
		"Runs CMD, an unmodified rdma-core program, on gdak's emulated ConnectX\n"
		"(mlx5_0 ...; RoCEv2 on UDP port 4791 of a loopback or host address):\n"
		"gdak's libibverbs.so.1 and libmlx5.so.1 come first on LD_LIBRARY_PATH.\n"
		"\n"
		"  --trace FILE      write a gdak trace (pcapng: WQEs, CQEs, packets) to FILE\n"
		"                    (GDAK_TRACE; read it with gdak-trace or tshark)\n"
		"  --strict          strict checks on (GDAK_STRICT=1, the default)\n"
		"  --no-strict       strict checks off (GDAK_STRICT=0)\n"
		"  --faults SPEC     fault injection (GDAK_FAULTS), e.g. 'pkt_drop:p=1%%,seed=7'\n"
		"                    (docs/UDP.md) or 'err:qp=*,wqe=3,syndrome=REMOTE_ACCESS'\n"
		"                    (docs/RELIABILITY.md); rules joined by ';'\n"
		"  --devices N       show N devices, mlx5_0 .. mlx5_{N-1} (0..%d, default 1;\n"
		"                    GDAK_IBV_DEVICES)\n"
		"  --addr A[,B...]   the devices' IPv4 addresses, one device each (GDAK_IBV_ADDR;\n"
		"                    default: the first free 127.0.0.N, N >= 2, per process)\n"
		"  --log LEVEL       gdak's log level: error, warn, info, debug (GDAK_LOG)\n"
		"  --nic-threads N   NIC-model threads per process (1..64; GDAK_NIC_THREADS)\n"
		"  --poll MODE       NIC threads' idle polling: adaptive (default) or spin\n"
		"                    (a core each; for latency runs; GDAK_POLL)\n"
		"  --print-env       print the environment and command it would run, run nothing\n"
		"  --help            this text\n"
		"\n"
		"Options also take the form --opt=VALUE.  Exit status: CMD's; 2 for a wrong\n"
		"option; 1 when gdak's libraries are missing; 126/127 when CMD cannot be run.\n"
		"gdak-info lists the devices a program would see.\n",
		MAX_DEVICES);
}

/* A wrong command line: says what, returns 2. */
#define bad(...) tool_usage_err("gdak-run", " (gdak-run --help)", __VA_ARGS__)

static int check_trace(const char *path, char *abs, size_t len)
{
	char dir[PATH_MAX], *slash;
	struct stat st;

	if (!*path)
		return bad("--trace: empty file name");
	if (!stat(path, &st) && S_ISDIR(st.st_mode))
		return bad("--trace '%s': is a directory, want a file name", path);
	if (strlen(path) >= sizeof(dir))
		return bad("--trace '%s': name too long", path);
	strcpy(dir, path);
	slash = strrchr(dir, '/');
	if (slash == dir)
		strcpy(dir, "/");
	else if (slash)
		*slash = 0;
	else
		strcpy(dir, ".");
	if (stat(dir, &st) || !S_ISDIR(st.st_mode))
		return bad("--trace '%s': directory '%s' does not exist", path, dir);
	if (access(dir, W_OK | X_OK))
		return bad("--trace '%s': cannot write in '%s': %s", path, dir, strerror(errno));
	/* absolute, so that a program that changes directory still writes it here */
	if (path[0] == '/') {
		snprintf(abs, len, "%s", path);
	} else {
		char cwd[PATH_MAX];

		if (!getcwd(cwd, sizeof(cwd)))
			return bad("--trace '%s': cannot read the current directory", path);
		if ((size_t)snprintf(abs, len, "%s/%s", cwd, path) >= len)
			return bad("--trace '%s': name too long", path);
	}
	return 0;
}

static int check_faults(const char *spec)
{
	struct roce_fault *f = NULL;
	int ret;

	if (!*spec)
		return bad("--faults: empty spec");
	/* the NIC model's WQE-level rules (err:, delay:, stall:) ... */
	ret = gdak_nic_set_faults(spec);
	if (ret)
		return bad("--faults '%s': not a valid fault spec (the line above says why)", spec);
	gdak_nic_set_faults(NULL);
	/* ... and the udp transport's packet rules (pkt_*) */
	ret = roce_fault_parse(spec, &f);
	roce_fault_free(f);
	if (ret)
		return bad("--faults '%s': not a valid fault spec (the line above says why)", spec);
	return 0;
}

static int check_devices(const char *v, long *n)
{
	char *end;

	errno = 0;
	*n = strtol(v, &end, 10);
	if (!*v || *end || errno || *n < 0 || *n > MAX_DEVICES)
		return bad("--devices '%s': want a number 0..%d", v, MAX_DEVICES);
	return 0;
}

static int check_addr(const char *v, int *count)
{
	const char *p = v;

	*count = 0;
	if (!*v)
		return bad("--addr: empty");
	while (p) {
		const char *e = strchr(p, ',');
		size_t n = e ? (size_t)(e - p) : strlen(p);
		char one[INET_ADDRSTRLEN + 1];
		struct in_addr a;

		if (!n || n >= sizeof(one))
			return bad("--addr '%s': '%.*s' is not an IPv4 address", v, (int)n, p);
		memcpy(one, p, n);
		one[n] = 0;
		if (inet_pton(AF_INET, one, &a) != 1)
			return bad("--addr '%s': '%s' is not an IPv4 address", v, one);
		if (a.s_addr == htonl(INADDR_ANY) || a.s_addr == htonl(INADDR_BROADCAST) ||
		    (ntohl(a.s_addr) >> 28) == 0xe)
			return bad("--addr '%s': '%s' cannot be a device address", v, one);
		(*count)++;
		p = e ? e + 1 : NULL;
	}
	if (*count > MAX_DEVICES)
		return bad("--addr '%s': %d addresses, at most %d devices", v, *count, MAX_DEVICES);
	return 0;
}

static int check_nic_threads(const char *v)
{
	char *end;
	long n;

	errno = 0;
	n = strtol(v, &end, 10);
	if (!*v || *end || errno || n < 1 || n > 64)
		return bad("--nic-threads '%s': want a number 1..64", v);
	return 0;
}

static int check_poll(const char *v)
{
	if (strcmp(v, "adaptive") && strcmp(v, "spin"))
		return bad("--poll '%s': want adaptive or spin", v);
	return 0;
}

static int check_log(const char *v)
{
	static const char *const lv[] = { "error", "warn", "info", "debug" };

	for (size_t i = 0; i < sizeof(lv) / sizeof(lv[0]); i++)
		if (!strcmp(v, lv[i]))
			return 0;
	return bad("--log '%s': want error, warn, info or debug", v);
}

/* "--opt VALUE" or "--opt=VALUE": the value, or NULL when it is missing. */
static const char *opt_value(int argc, char **argv, int *i, const char *name)
{
	size_t n = strlen(name);
	const char *a = argv[*i];

	if (!strncmp(a, name, n) && a[n] == '=')
		return a + n + 1;
	if (strcmp(a, name))
		return NULL;
	/* "--opt --" is a forgotten value, not a file named "--" */
	if (*i + 1 >= argc || !strcmp(argv[*i + 1], "--"))
		return NULL;
	return argv[++*i];
}

static int is_opt(const char *a, const char *name)
{
	size_t n = strlen(name);

	return !strcmp(a, name) || (!strncmp(a, name, n) && a[n] == '=');
}

int main(int argc, char **argv)
{
	static const char *const with_value[] = { "--trace", "--faults",      "--devices", "--addr",
						  "--log",   "--nic-threads", "--poll" };
	const char *trace = NULL, *faults = NULL, *devices = NULL, *addr = NULL, *log = NULL;
	const char *nic_threads = NULL, *poll = NULL;
	char trace_abs[PATH_MAX * 2], libdir[PATH_MAX], ldpath[PATH_MAX * 4], nbuf[24];
	int strict = -1, print_env = 0, i, ret;
	long ndev = -1;

	for (i = 1; i < argc; i++) {
		const char *a = argv[i], *v = NULL;
		int known = 0;

		if (!strcmp(a, "--")) {
			i++;
			break;
		}
		if (a[0] != '-' || !a[1])
			break;
		if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
			usage(stdout);
			return 0;
		}
		if (!strcmp(a, "--strict") || !strcmp(a, "--no-strict")) {
			int s = !strcmp(a, "--strict");

			if (strict >= 0 && strict != s)
				return bad("--strict and --no-strict together");
			strict = s;
			continue;
		}
		if (!strcmp(a, "--print-env")) {
			print_env = 1;
			continue;
		}
		for (size_t k = 0; k < sizeof(with_value) / sizeof(with_value[0]); k++) {
			if (!is_opt(a, with_value[k]))
				continue;
			known = 1;
			v = opt_value(argc, argv, &i, with_value[k]);
			if (!v)
				return bad("%s needs a value", with_value[k]);
			if (k == 0)
				trace = v;
			else if (k == 1)
				faults = v;
			else if (k == 2)
				devices = v;
			else if (k == 3)
				addr = v;
			else if (k == 4)
				log = v;
			else if (k == 5)
				nic_threads = v;
			else
				poll = v;
		}
		if (!known)
			return bad("unknown option '%s'", a);
	}
	if (i >= argc)
		return bad("no program to run");

	if (trace && (ret = check_trace(trace, trace_abs, sizeof(trace_abs))))
		return ret;
	if (devices && (ret = check_devices(devices, &ndev)))
		return ret;
	if (addr) {
		int count;

		if ((ret = check_addr(addr, &count)))
			return ret;
		if (ndev >= 0 && count != ndev)
			return bad("--addr names %d address(es) for --devices %ld", count, ndev);
		ndev = count; /* one device per address */
	}
	if (log && (ret = check_log(log)))
		return ret;
	if (nic_threads && (ret = check_nic_threads(nic_threads)))
		return ret;
	if (poll && (ret = check_poll(poll)))
		return ret;
	if (faults && (ret = check_faults(faults)))
		return ret;

	if (gdak_find_libdir(libdir, sizeof(libdir))) {
		fprintf(stderr,
			"gdak-run: gdak's libibverbs.so.1 is not in %s (build gdak, or install it);\n"
			"  nothing was run\n",
			libdir);
		return 1;
	}
	{
		const char *old = getenv("LD_LIBRARY_PATH");

		snprintf(ldpath, sizeof(ldpath), "%s%s%s", libdir, old && *old ? ":" : "",
			 old ? old : "");
	}
	setenv("LD_LIBRARY_PATH", ldpath, 1);
	if (trace)
		setenv("GDAK_TRACE", trace_abs, 1);
	if (strict >= 0)
		setenv("GDAK_STRICT", strict ? "1" : "0", 1);
	if (faults)
		setenv("GDAK_FAULTS", faults, 1);
	if (ndev >= 0) {
		snprintf(nbuf, sizeof(nbuf), "%ld", ndev);
		setenv("GDAK_IBV_DEVICES", nbuf, 1);
	}
	if (addr)
		setenv("GDAK_IBV_ADDR", addr, 1);
	if (log)
		setenv("GDAK_LOG", log, 1);
	if (nic_threads)
		setenv("GDAK_NIC_THREADS", nic_threads, 1);
	if (poll)
		setenv("GDAK_POLL", poll, 1);

	if (print_env) {
		static const char *const vars[] = { "LD_LIBRARY_PATH",	"GDAK_TRACE",
						    "GDAK_STRICT",	"GDAK_FAULTS",
						    "GDAK_IBV_DEVICES", "GDAK_IBV_ADDR",
						    "GDAK_LOG",		"GDAK_NIC_THREADS",
						    "GDAK_POLL" };

		for (size_t k = 0; k < sizeof(vars) / sizeof(vars[0]); k++)
			if (getenv(vars[k]))
				printf("%s=%s\n", vars[k], getenv(vars[k]));
		for (int k = i; k < argc; k++)
			printf("%s%s", argv[k], k + 1 < argc ? " " : "\n");
		return 0;
	}
	execvp(argv[i], argv + i);
	ret = errno;
	fprintf(stderr, "gdak-run: cannot run '%s': %s\n", argv[i], strerror(ret));
	return ret == ENOENT ? 127 : 126;
}
