#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# run-gpu.sh - the CUDA suite and the CUDA benchmarks on a machine with a GPU,
# logs in one folder, a short summary printed last.
#
#   tools/cuda/run-gpu.sh [--bin DIR | --build DIR] [--out DIR] [--no-bench] [--quick]
#                         [-- PERF_ARGS...]
#   tools/cuda/run-gpu.sh --pack BUILD_DIR DEST
#
# Where the binaries come from:
#   --build DIR  configure and build the tree into DIR (needs nvcc, rdma-core
#                headers and libev; default build/gpu), then run from there
#                with ctest -L cuda
#   --bin DIR    run binaries packed elsewhere with --pack (a GPU machine
#                without libev or a compiler: build where they are, carry DIR)
#   default      --bin .carry/cuda if it holds binaries, else --build build/gpu
# --pack copies the CUDA tests (gdak_cuda_*, gdak_dev_cuda, gdak_capture_cuda),
# gdak-trace (the capture test decodes with it), gdak-perf-cuda and gdak-perf
# (tools/trace_overhead.sh, tools/cuda/trace-overhead.sh) of a build into DEST and
# checks with ldd that they need no library the build machine alone has
# beyond libibverbs (rdma-core) and the C/C++ runtimes.
#
# PERF_ARGS after -- go to gdak-perf-cuda (e.g. -- --nic-threads 1,2).  After
# it, big_bw runs once more with the engine splitting each copy over 4
# streams (GDAK_CUDA_COPY_STREAMS=4), rows noted "split4".
# Environment: GDAK_TEST_TIMEOUT (s per test, 120), GDAK_BENCH_TIMEOUT (s, 300).
# Logs (--out, default ./gpu-logs): env.txt, tests.log, perf.txt, perf.json,
# summary.txt.  Exit status: 0 when every test passed or was skipped and the
# benchmark verified its data, 1 otherwise.
set -u

here=$(cd "$(dirname "$0")/../.." && pwd)
mode=auto bin="" build="" out="gpu-logs" bench=1 quick=0 extra=()

die() { echo "run-gpu.sh: $*" >&2; exit 2; }

pack() {
	local b=$1 d=$2 n=0 missing
	[ -d "$b" ] || die "--pack: build folder '$b' does not exist"
	mkdir -p "$d" || die "--pack: cannot create '$d'"
	for f in "$b"/emu_tests/gdak_cuda_* "$b"/emu_tests/gdak_dev_cuda "$b"/emu_tests/gdak_capture_cuda \
		 "$b"/tools/gdak-trace "$b"/tools/gdak-perf-cuda "$b"/tools/gdak-perf; do
		[ -f "$f" ] && [ -x "$f" ] || continue
		cp "$f" "$d/" && n=$((n + 1))
		missing=$(ldd "$f" | grep 'not found')
		[ -z "$missing" ] || die "--pack: $f needs libraries that are missing: $missing"
	done
	[ "$n" -gt 0 ] || die "--pack: no CUDA binaries in '$b' (built with nvcc? target gdak_cuda_ops)"
	echo "packed $n binaries into $d"
	exit 0
}

while [ $# -gt 0 ]; do
	case $1 in
	--bin) [ $# -ge 2 ] || die "--bin needs a folder"; mode=bin bin=$2; shift 2 ;;
	--build) [ $# -ge 2 ] || die "--build needs a folder"; mode=build build=$2; shift 2 ;;
	--out) [ $# -ge 2 ] || die "--out needs a folder"; out=$2; shift 2 ;;
	--no-bench) bench=0; shift ;;
	--quick) quick=1; shift ;;
	--pack) [ $# -ge 3 ] || die "--pack needs BUILD_DIR DEST"; pack "$2" "$3" ;;
	--) shift; extra=("$@"); break ;;
	-h|--help) sed -n '3,25p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
	*) die "unknown option '$1' (see --help)" ;;
	esac
done

if [ "$mode" = auto ]; then
	if ls "$here"/.carry/cuda/gdak_cuda_* >/dev/null 2>&1; then
		mode=bin bin="$here/.carry/cuda"
	else
		mode=build build="$here/build/gpu"
	fi
fi
mkdir -p "$out" || die "cannot create '$out'"
out=$(cd "$out" && pwd)
summary="$out/summary.txt"
: >"$summary"
say() { echo "$*" >>"$summary"; }

{
	date -u
	uname -a
	nvidia-smi -L 2>&1
	nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv 2>&1
	lscpu 2>/dev/null | grep -E 'Model name|^CPU\(s\)|NUMA node0'
} >"$out/env.txt"

status=0
if [ "$mode" = build ]; then
	echo "building into $build" >&2
	if ! cmake -S "$here" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
		-DGDAK_CUDA=ON >"$out/build.log" 2>&1 ||
	   ! cmake --build "$build" -j"$(nproc)" >>"$out/build.log" 2>&1; then
		say "BUILD FAILED (see build.log; a machine without libev or nvcc: build elsewhere,"
		say "  tools/cuda/run-gpu.sh --pack BUILD .carry/cuda, and run with --bin .carry/cuda)"
		tail -20 "$out/build.log"
		cat "$summary"
		exit 1
	fi
	bin="$build/emu_tests"
fi
[ -d "$bin" ] || die "binary folder '$bin' does not exist"
perf="$bin/gdak-perf-cuda"
[ -x "$perf" ] || perf="$build/tools/gdak-perf-cuda"

# ---- tests: every gdak_cuda_* binary and gdak_dev_cuda (the device API in
# kernels against a fake NIC thread), one at a time (they share the GPU) ----
tests_log="$out/tests.log"
: >"$tests_log"
npass=0 nfail=0 nskip=0 failed=""
for t in "$bin"/gdak_cuda_* "$bin"/gdak_dev_cuda "$bin"/gdak_capture_cuda; do
	[ -x "$t" ] || continue
	name=$(basename "$t")
	targs=()
	# the ring-capture test decodes its captures with gdak-trace when given one
	[ "$name" = gdak_capture_cuda ] && [ -x "$bin/gdak-trace" ] && targs=("$bin/gdak-trace")
	start=$(date +%s%N)
	echo "==== $name" >>"$tests_log"
	GDAK_LOG=${GDAK_LOG:-warn} timeout "${GDAK_TEST_TIMEOUT:-120}" "$t" "${targs[@]}" >>"$tests_log" 2>&1
	rc=$?
	ms=$((($(date +%s%N) - start) / 1000000))
	case $rc in
	0) res=PASS; npass=$((npass + 1)) ;;
	77) res=SKIP; nskip=$((nskip + 1)) ;;
	124) res="FAIL (timeout)"; nfail=$((nfail + 1)); failed="$failed $name" ;;
	*) res="FAIL (exit $rc)"; nfail=$((nfail + 1)); failed="$failed $name" ;;
	esac
	echo "==== $name: $res in ${ms} ms" >>"$tests_log"
	printf '%-24s %s %s ms\n' "$name" "$res" "$ms" >>"$summary"
done
[ $nfail -eq 0 ] || status=1

# ---- benchmarks ------------------------------------------------------------
if [ $bench = 1 ]; then
	if [ -x "$perf" ]; then
		args=()
		[ $quick = 1 ] && args=(--lat-iters 2000 --bw-iters 2000 --big-iters 5 --ctas 1,64 --nic-threads 1,2)
		t0=$(date +%s)
		timeout "${GDAK_BENCH_TIMEOUT:-300}" "$perf" "${args[@]}" "${extra[@]}" \
			--json "$out/perf.json" >"$out/perf.txt" 2>"$out/perf.err"
		prc=$?
		case $prc in
		0) ;;
		77) echo "gdak-perf-cuda: skipped (no GPU)" >>"$out/perf.txt" ;;
		*) status=1; echo "gdak-perf-cuda exit $prc" >>"$out/perf.txt" ;;
		esac
		echo "(gdak-perf-cuda: $(($(date +%s) - t0)) s)" >>"$out/perf.txt"
		if [ $prc = 0 ]; then
			GDAK_CUDA_COPY_STREAMS=4 timeout 60 "$perf" -t big \
				$([ $quick = 1 ] && echo --big-iters 5) \
				--json "$out/perf-split4.json" 2>>"$out/perf.err" |
				grep 'big_bw' | sed 's/$/  [split4]/' >>"$out/perf.txt" ||
				echo "split4 big_bw failed" >>"$out/perf.txt"
		fi
	else
		echo "no gdak-perf-cuda in $bin" >"$out/perf.txt"
		status=1
	fi
fi

say "cuda tests: $npass passed, $nfail failed, $nskip skipped${failed:+ (failed:$failed)}"
if [ $bench = 1 ]; then
	cat "$out/perf.txt" >>"$summary"
	[ -s "$out/perf.err" ] && grep -v ' done$' "$out/perf.err" | tail -20 >>"$summary"
fi
# the summary last, so that a caller reading the end of the output sees it
cat "$summary"
exit $status
