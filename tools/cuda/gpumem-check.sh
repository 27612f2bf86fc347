#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# gpumem-check.sh - issue 21 (data in GPU memory) on a GPU machine: the
# GPU-memory tests with the batch engine on and off, then gdak-perf-cuda
# alternating the modes (GDAK_CUDA_BATCH=off / kernel / memop / copy, and
# MODE+stream: that batch mode with GDAK_CUDA_CQE=stream, stream-ordered
# CQEs), and the medians of the target rows next to their same-run
# baselines, with the engine's counters (GDAK_CUDA_STATS=1) of a run 0 of
# each mode that the medians leave out (the counters' clock reads and
# timeline events are driver calls of their own on the 16 MiB row's path).
#
#   tools/cuda/gpumem-check.sh --bin DIR [--out DIR] [--runs N]
#                              [--modes "off copy copy+stream memop+stream kernel+stream"]
#                              [--big-iters N] [--no-tests] [--no-bench]
#
# A mode is BATCH[+CQE][,VAR=VALUE...]: GDAK_CUDA_BATCH=BATCH,
# GDAK_CUDA_CQE=CQE (default cpu) and any further variables, e.g.
# "memop+stream,GDAK_CUDA_VALUE_FENCES=1,GDAK_CUDA_PASS_WORD=1" (the engine
# of the eighth version) next to "memop+stream" for an A/B in one run.
# --big-iters: 16 MiB WRITEs per big_bw row (20).
#
# DIR: binaries packed with tools/cuda/run-gpu.sh --pack (gdak_cuda_*,
# gdak-perf-cuda).  Built elsewhere like this:
#   cmake -S . -B build/cuda -G Ninja -DGDAK_WERROR=ON && cmake --build build/cuda
#   tools/cuda/run-gpu.sh --pack build/cuda .carry/cuda
# then here: tools/cuda/gpumem-check.sh --bin .carry/cuda --out "$OUT"
#
# Runs (about 6-8 minutes on an H200; --runs 3 or --no-tests to stay
# inside a 10-minute device call):
#   tests  gdak_cuda_gpu_batch (kernel, memop, copy, and each +stream),
#          gdak_cuda_gpumem (kernel, memop, copy, off, copy+stream,
#          kernel+stream; with copy and off (+stream) also its fullgpu
#          case: every SM held by the application while the NIC copies), gdak_cuda_dma / _ops / _ctas with
#          GDAK_CUDA_BATCH=kernel, copy and copy+stream (the rest of the suite on the new
#          paths); rings in GPU memory (GDAK_QP_F_QUEUES_GPU): gdak_cuda_gpu_rings
#          and gdak_cuda_handlers / _ctas / _ops with GDAK_TEST_QUEUES_GPU=1;
#          each bounded by GDAK_TEST_TIMEOUT (120 s)
#   perf   N (5) x { off, copy, copy+stream, memop+stream, kernel+stream }
#          alternating (--modes), each one
#          process of gdak-perf-cuda -t lat,bw,big --ctas 64 --nic-threads 1
#          with its own baselines (ping-pong, host-mapped rate, cudaMemcpy
#          D2D, and for the gpu-rings rows the floor: one device-to-host fetch
#          plus one host-to-device CQE delivery); before them run 0 of
#          each mode with GDAK_CUDA_STATS=1 (the "gdak cuda stats" lines of
#          perf-<mode>-0.txt: one per emu context, docs/CUDA.md
#          "Counters"), not in the medians
# Output in --out (default ./gpumem-logs): env.txt, tests.log,
# perf-<mode>-<i>.{txt,json}, summary.txt (printed last).  Exit 0 when every
# test passed and every benchmark row verified its data.
set -u

bin="" out="gpumem-logs" runs=5 tests=1 bench=1 big_iters=20
modes="off copy copy+stream memop+stream kernel+stream"
die() { echo "gpumem-check.sh: $*" >&2; exit 2; }
while [ $# -gt 0 ]; do
	case $1 in
	--bin) [ $# -ge 2 ] || die "--bin needs a folder"; bin=$2; shift 2 ;;
	--out) [ $# -ge 2 ] || die "--out needs a folder"; out=$2; shift 2 ;;
	--runs) [ $# -ge 2 ] || die "--runs needs a number"; runs=$2; shift 2 ;;
	--modes) [ $# -ge 2 ] || die "--modes needs a list"; modes=$2; shift 2 ;;
	--big-iters) [ $# -ge 2 ] || die "--big-iters needs a number"; big_iters=$2; shift 2 ;;
	--no-tests) tests=0; shift ;;
	--no-bench) bench=0; shift ;;
	-h|--help) sed -n '3,50p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
	*) die "unknown option '$1' (see --help)" ;;
	esac
done
[ -n "$bin" ] && [ -d "$bin" ] || die "--bin DIR (packed binaries) is required"
bin=$(cd "$bin" && pwd)
mkdir -p "$out" || die "cannot create '$out'"
out=$(cd "$out" && pwd)
summary="$out/summary.txt"
: >"$summary"
say() { echo "$*" | tee -a "$summary" >/dev/null; }
# the environment of a mode: BATCH[+CQE][,VAR=VALUE...]
mode_env() {
	local m=${1%%,*} extra="" b q=cpu
	[ "$m" != "$1" ] && extra=$(echo "${1#*,}" | tr ',' ' ')
	b=${m%%+*}
	[ "$b" != "$m" ] && q=${m#*+}
	echo "GDAK_CUDA_BATCH=$b GDAK_CUDA_CQE=$q $extra"
}
status=0

{
	date -u
	uname -a
	nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv 2>&1
	lscpu 2>/dev/null | grep -E 'Model name|^CPU\(s\)'
	ls -l "$bin"
} >"$out/env.txt" 2>&1

# ---- tests ----
if [ $tests = 1 ]; then
	log="$out/tests.log"
	: >"$log"
	run_test() { # MODE BINARY [VAR=VALUE ...]
		local mode=$1 name=$2 rc t0 t1 line
		shift 2
		[ -x "$bin/$name" ] || { say "test $name ($mode): MISSING"; status=1; return; }
		echo "==== $name $(mode_env $mode) $*" >>"$log"
		t0=$(date +%s)
		env "$@" GDAK_LOG=${GDAK_LOG:-warn} $(mode_env $mode) \
			timeout "${GDAK_TEST_TIMEOUT:-120}" "$bin/$name" >>"$log" 2>&1
		rc=$?
		t1=$(date +%s)
		line=$(grep -E '[0-9]+ passed, [0-9]+ failed' "$log" | tail -1)
		case $rc in
		0) say "test $name ($mode $*): ok, $line, $((t1 - t0)) s" ;;
		77) say "test $name ($mode): SKIPPED (no GPU?)"; status=1 ;;
		124) say "test $name ($mode): TIMEOUT after $((t1 - t0)) s"; status=1 ;;
		*) say "test $name ($mode): FAILED rc=$rc ($line)"; status=1 ;;
		esac
	}
	for m in kernel memop copy kernel+stream memop+stream copy+stream; do
		run_test $m gdak_cuda_gpu_batch
	done
	for m in kernel memop copy off copy+stream kernel+stream; do run_test $m gdak_cuda_gpumem; done
	for m in kernel copy copy+stream; do
		run_test $m gdak_cuda_dma
		run_test $m gdak_cuda_ops
		run_test $m gdak_cuda_ctas
	done
	# rings in GPU memory
	run_test kernel gdak_cuda_gpu_rings
	for t in handlers ctas ops; do
		run_test kernel gdak_cuda_$t GDAK_TEST_QUEUES_GPU=1
	done
fi

# ---- benchmarks ----
if [ $bench = 0 ]; then
	say "exit status $status"
	cat "$summary"
	exit $status
fi
perf="$bin/gdak-perf-cuda"
[ -x "$perf" ] || { say "gdak-perf-cuda missing in $bin"; cat "$summary"; exit 1; }

# field FILE VARIANT KEY: the number KEY of the JSON row whose variant is VARIANT
field() {
	grep -F "\"variant\": \"$2\"" "$1" 2>/dev/null | head -1 |
		sed -n "s/.*\"$3\": \([-0-9.e+]*\).*/\1/p"
}
median() { sort -g | awk '{v[NR] = $1} END {if (NR) print v[int((NR + 1) / 2)]; else print "-"}'; }
# row FILE PROGRAM [NAME VARIANT KEY]...: the awk PROGRAM run once with each
# NAME set to field FILE VARIANT KEY (0 when the row or key is absent)
row() {
	local j=$1 prog=$2 v args=()
	shift 2
	while [ $# -ge 3 ]; do
		v=$(field "$j" "$2" "$3")
		args+=(-v "$1=${v:-0}")
		shift 3
	done
	awk "${args[@]}" "BEGIN { $prog }"
}
# medians FILE COLUMN...: the median of each COLUMN of FILE, on one line
medians() {
	local f=$1 k m=""
	shift
	for k in "$@"; do
		m="$m $(awk -v k="$k" '{print $k}' "$f" | median)"
	done
	echo "$m"
}

for i in $(seq 0 "$runs"); do
	for mode in $modes; do
		j="$out/perf-$mode-$i.json"
		env GDAK_LOG=${GDAK_LOG:-warn} $(mode_env $mode) GDAK_CUDA_STATS=$((i == 0)) \
			timeout "${GDAK_BENCH_TIMEOUT:-150}" \
			"$perf" -t lat,bw,big --ctas 64 --nic-threads 1 --lat-iters 3000 \
			--bw-iters 2000 --big-iters "$big_iters" --json "$j" >"$out/perf-$mode-$i.txt" 2>&1
		rc=$?
		if [ $rc != 0 ]; then
			say "perf run $i ($mode): rc=$rc (see perf-$mode-$i.txt)"
			status=1
		fi
		if grep -q '"verified": false' "$j" 2>/dev/null; then
			say "perf run $i ($mode): a row did not verify its data"
			status=1
		fi
	done
done

say ""
say "per run: mode run | gpu-mem rate M/s | host-mapped rate M/s | gpu/mapped |" \
    "lat gpu-dst p50 us (x pp) | lat gpu-dst local-desc p50 us (x pp) | pp p50 us |" \
    "16 MiB pipelined / cudaMemcpy"
for mode in $modes; do
	: >"$out/.m-$mode"
	for i in $(seq 1 "$runs"); do
		line=$(row "$out/perf-$mode-$i.json" 'printf "%.3f %.3f %.3f %.2f %.2f %.2f %.2f %.2f %.3f",
				rg / 1e6, rm / 1e6, (rm > 0 ? rg / rm : 0), lg / 1e3, lgr,
				ll / 1e3, llr, pp / 1e3, bg' \
			rg "DB gpu-mem put 8B" msg_rate rm "DB mapped put 8B" msg_rate \
			lg "DB gpu-dst gpu-desc" lat_p50_ns lgr "DB gpu-dst gpu-desc" pingpong_ratio \
			ll "DB gpu-dst local-desc" lat_p50_ns llr "DB gpu-dst local-desc" pingpong_ratio \
			pp "DB gpu-dst gpu-desc" pingpong_p50_ns bg "gpu->gpu pipelined" memcpy_ratio)
		echo "$line" >>"$out/.m-$mode"
		set -- $line
		say "  $mode $i | $1 | $2 | $3 | $4 ($5x) | $6 ($7x) | $8 | $9"
	done
done
say ""
: >"$out/.targets"
say "medians of $runs runs (target: gpu-mem rate >= 5 M/s and >= 0.25x mapped;"
say "  latency <= 1.5x ping-pong; 16 MiB >= 0.9x median and >= 0.8x every run):"
for mode in $modes; do
	set -- $(medians "$out/.m-$mode" 1 2 3 5 7 8 9)
	minbig=$(awk '{print $9}' "$out/.m-$mode" | sort -g | head -1)
	say "  $mode: gpu-mem $1 M/s, mapped $2 M/s (x$3), lat gpu-desc x$4, local-desc x$5," \
	    "pp $6 us, 16 MiB x$7 (lowest x$minbig)"
	echo "$mode $* $minbig" >>"$out/.targets"
done
say ""
say "targets (issue 21; medians of $runs runs, ratios to the same run's baselines):"
say "  mode | 64 CTAs gpu-mem M/s (x mapped): >= 5 and >= 0.25x |" \
    "lat p50 x pp (gpu-desc / local-desc): <= 1.5x | 16 MiB x cudaMemcpy D2D (lowest): >= 0.9 (>= 0.8)"
while read -r mode rg rm rr lg ll pp bg lo; do
	say "  $(awk -v mode="$mode" -v rg="$rg" -v rr="$rr" -v lg="$lg" -v ll="$ll" \
		-v bg="$bg" -v lo="$lo" 'function ok(c) { return c ? "met" : "NOT met" }
		BEGIN { printf "%s | %s (x%s): %s | x%s / x%s: %s | x%s (x%s): %s", mode, rg, rr,
			ok(rg >= 5 && rr >= 0.25), lg, ll, ok(lg <= 1.5 || ll <= 1.5), bg, lo,
			ok(bg >= 0.9 && lo >= 0.8) }')"
done <"$out/.targets"
rm -f "$out"/.m-* "$out/.targets"
say ""
say "floors of the GPU-memory rows (same run): write-value floors p50 us (x pp): host word /"
say "  value + host word / value + cqe + done (the engine's batch) | lat gpu-desc and local-desc"
say "  x that last floor | 16 MiB: a thread's copies + flag while a kernel waits, x cudaMemcpy |"
say "  16 MiB pipelined x that floor"
for mode in $modes; do
	: >"$out/.f-$mode"
	for i in $(seq 1 "$runs"); do
		line=$(row "$out/perf-$mode-$i.json" 'printf "%.2f %.2f %.2f %.2f %.2f %.2f %.2f %.2f %.3f %.3f",
				w0 / 1e3, w0r, w1 / 1e3, w1r, w2 / 1e3, w2r,
				(w2 > 0 ? lg / w2 : 0), (w2 > 0 ? ll / w2 : 0), bf,
				(bf > 0 ? bg / bf : 0)' \
			w0 "wv host word" lat_p50_ns w0r "wv host word" pingpong_ratio \
			w1 "wv gpu value + host word" lat_p50_ns \
			w1r "wv gpu value + host word" pingpong_ratio \
			w2 "wv value + cqe + done" lat_p50_ns w2r "wv value + cqe + done" pingpong_ratio \
			lg "DB gpu-dst gpu-desc" lat_p50_ns ll "DB gpu-dst local-desc" lat_p50_ns \
			bf "thread copies+flag, kernel waits" memcpy_ratio \
			bg "gpu->gpu pipelined" memcpy_ratio)
		echo "$line" >>"$out/.f-$mode"
		set -- $line
		say "  $mode $i | $1 ($2x) / $3 ($4x) / $5 ($6x) | x$7 / x$8 | x$9 | x${10}"
	done
	set -- $(medians "$out/.f-$mode" 1 3 5 6 7 8 9 10)
	say "  $mode medians: floors $1 / $2 / $3 us (last x$4 pp), lat x$5 / x$6 floor," \
	    "16 MiB floor x$7, pipelined x$8 floor"
done
rm -f "$out"/.f-*
say ""
say "16 MiB timeline of each run (GPU clock from the kernel's start):"
for mode in $modes; do
	for i in $(seq 1 "$runs"); do
		grep -h 'big_bw gpu->gpu pipelined: first post' "$out/perf-$mode-$i.txt" 2>/dev/null |
			sed "s/^gdak-perf-cuda: big_bw gpu->gpu pipelined: /  $mode $i: /" |
			tee -a "$summary" >/dev/null
	done
done
say ""
say "rings in GPU memory (target: PROXY gpu-rings p50 <= 1.5x the floor, 64 CTAs >= 2 M/s):"
say "  mode run | floor p50 us | PROXY p50 us (x floor) | DB p50 us (x floor) |" \
    "BF p50 us (x floor) | 64 CTAs gpu-rings M/s"
for mode in $modes; do
	: >"$out/.r-$mode"
	for i in $(seq 1 "$runs"); do
		line=$(row "$out/perf-$mode-$i.json" 'printf "%.2f %.2f %.2f %.2f %.2f %.2f %.2f %.3f",
				fl / 1e3, px / 1e3, pr, db / 1e3, dr, bf / 1e3, br, gr / 1e6' \
			fl "d2h fetch + h2d cqe" lat_p50_ns px "PROXY gpu-rings gpu-desc" lat_p50_ns \
			pr "PROXY gpu-rings gpu-desc" pingpong_ratio db "DB gpu-rings gpu-desc" lat_p50_ns \
			dr "DB gpu-rings gpu-desc" pingpong_ratio bf "BF gpu-rings gpu-desc" lat_p50_ns \
			br "BF gpu-rings gpu-desc" pingpong_ratio gr "DB gpu-rings put 8B" msg_rate)
		echo "$line" >>"$out/.r-$mode"
		set -- $line
		say "  $mode $i | $1 | $2 ($3x) | $4 ($5x) | $6 ($7x) | $8"
	done
	set -- $(medians "$out/.r-$mode" 1 3 5 7 8)
	say "  $mode medians: floor $1 us, PROXY x$2, DB x$3, BF x$4, 64 CTAs $5 M/s"
done
rm -f "$out"/.r-*
say ""
say "engine counters, run 0 of each mode (one line per emu context the run closed;"
say "  the write_bw context is the one with the most batched copies):"
for mode in $modes; do
	grep -h '^gdak cuda stats' "$out/perf-$mode-0.txt" 2>/dev/null | sed "s/^/  $mode: /" |
		tee -a "$summary" >/dev/null
done
say ""
say "exit status $status"
cat "$summary"
exit $status
