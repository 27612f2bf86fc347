#!/bin/sh
# SPDX-License-Identifier: MIT
#
# bench.sh - gdak's udp transport next to kernel rxe, same sizes, same guest
# boot (issue 9's benchmark target: "aim to match or beat rxe").  Runs inside
# the rxe guest (POSIX sh: the guest's /bin/sh is dash):
#
#   tools/rxe/gdak-rxe-vm --timeout 590 run sh tools/rxe/bench.sh BUILD_DIR [SIZES]
#
# BUILD_DIR holds tools/gdak-perf; SIZES default "8 4096 65536".  For each
# size: ib_write_bw / ib_write_lat (perftest, rxe0 loopback, OOB over
# 127.0.0.1) and gdak-perf write_bw / write_lat on emu:udp with both QPs in
# one process - first the default (the peer's packets through its in-process
# inbox, as rxe loops back packets for its own device), then
# GDAK_UDP_LOCAL=0 (every packet through the kernel's UDP socket), and for
# bandwidth GDAK_NIC_THREADS=2 (requester and responder QP on their own NIC
# threads, as rxe's sender and receiver run in different contexts).  Prints
# one line per measurement and summary tables with the ratios gdak / rxe.
#
# Environment: BENCH_BW_ITERS (2000), BENCH_LAT_ITERS (1000), BENCH_ROUNDS (3,
# gdak-perf's -r), BENCH_REPS (1: the whole set again, rxe and gdak interleaved,
# for a median over reps on a noisy host), BENCH_DEV (rxe0).  Works on the host too (perftest rows then fail with a
# message, where no rxe device exists).
#
#   tools/rxe/gdak-rxe-vm --timeout 590 run sh tools/rxe/bench.sh --verbs BUILD_DIR
#
# --verbs (docs/BENCHMARKS.md "perftest through gdak-run, rxe in the guest"):
# the same unmodified perftest commands three ways, alternating round by
# round in one boot - ib_write_bw 8 B, ib_write_bw 64 KiB, ib_write_lat 8 B,
# server and client as two processes:
#   rxe       perftest on the guest's kernel rxe0 (Debian's libibverbs)
#   gdak-run  the same command through BUILD_DIR/tools/gdak-run (gdak's
#             libibverbs from BUILD_DIR/lib/gdak: the emulated mlx5_0 on
#             127.0.0.230 / .231, RoCEv2 over UDP), gdak's defaults: the
#             direct path, posts to it in the program's call)
#   gdak-perf gdak's native path over the same transport (gdak-perf -d
#             emu:udp:ADDR, server + client, one WQE per doorbell and a CQE
#             per WQE as perftest posts them)
#   inline-off the gdak-run command again with GDAK_IBV_INLINE=0 (the
#             engine on the NIC thread alone, docs/VERBS.md "Threads")
#   direct-off the gdak-run command with GDAK_IBV_INLINE=1 and
#             GDAK_IBV_DIRECT=0: every message over UDP (session 9's path)
# gdak's rows run in a network namespace of their own (kernel rxe holds
# *:4791 in the guest's), made with iproute2's ip taken by path - the
# guest's busybox env and sh run busybox's ip, which has no netns; where
# none can be made while 4791 is taken, bench_verbs.sh stops with exit 2 -
# and prints each round and the medians with the ratios gdak-run / gdak-perf
# and gdak-run / rxe (bandwidth: higher is better; latency: t_typical,
# lower is better).  As tools/verbs_bench.sh on the host, the latency runs
# of gdak's device spin its NIC thread (GDAK_POLL=spin); gdak-perf's latency
# test spins by default.  BENCH_ROUNDS rounds (3); BENCH_BW_ITERS 8-byte
# write_bw iterations (2000), BENCH_BW64_ITERS at 64 KiB (500),
# BENCH_LAT_ITERS (1000); BENCH_GDAK_SCHED adds a column, the gdak-run
# command (inline on) with GDAK_NIC_SCHED set to it (the NIC threads'
# policy, docs/VERBS.md "Threads").  BUILD_DIR must be built without MPI (the guest
# has no libmpi): cmake -B DIR -DGDAK_CUDA=OFF -DGDAK_TESTS=OFF
# -DCMAKE_DISABLE_FIND_PACKAGE_MPI=ON; ninja -C DIR gdak-perf gdak-run
# gdak_ibverbs gdak_mlx5 gdak_efa (perftest links libefa too).

if [ "${1:-}" = "--verbs" ]; then
	shift
	B=${1:?usage: bench.sh --verbs BUILD_DIR}
	exec sh "$(dirname "$0")/bench_verbs.sh" "$B"
fi

B=${1:?usage: bench.sh BUILD_DIR [SIZES]}
SIZES=${2:-"8 4096 65536"}
BW_N=${BENCH_BW_ITERS:-2000}
LAT_N=${BENCH_LAT_ITERS:-1000}
ROUNDS=${BENCH_ROUNDS:-3}
REPS=${BENCH_REPS:-1}
DEV=${BENCH_DEV:-rxe0}
PERF=$B/tools/gdak-perf
OUT=${TMPDIR:-/tmp}/gdak-bench.$$
[ -x "$PERF" ] || { echo "bench.sh: no $PERF" >&2; exit 2; }
mkdir -p "$OUT" || exit 1
trap 'rm -rf "$OUT"' EXIT

. "$(dirname "$0")/bench_lib.sh"

echo "# $(uname -r), $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg)"

# perftest: server in the background, client prints the data row.
# $1 tool, $2 size, $3 iterations; prints the numbers of the row or "-".
rxe_row() {
	$1 -d "$DEV" -x 1 -F -n "$3" -s "$2" >"$OUT/srv" 2>&1 &
	sp=$!
	sleep 1
	timeout 120 $1 -d "$DEV" -x 1 -F -n "$3" -s "$2" 127.0.0.1 >"$OUT/cli" 2>&1
	rc=$?
	wait $sp 2>/dev/null
	take_row "$OUT/cli" "$2" 4 $rc "$1 -s $2" "$(tail -n 2 "$OUT/cli" | tr '\n' ' ')"
}

# gdak-perf: $1 test, $2 size, $3 iterations, then env assignments
gdak_row() {
	t=$1 s=$2 n=$3
	shift 3
	env "$@" timeout 200 "$PERF" -d emu:udp -r "$ROUNDS" -n "$n" -s "$s" --no-baseline \
		--quiet "$t" >"$OUT/g" 2>&1
	rc=$?
	take_row "$OUT/g" "$s" 4 $rc "gdak-perf $t -s $s $*" \
		"$(grep -iE 'error|fail' "$OUT/g" | head -n 2 | tr '\n' ' ')"
}

ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a == "-" || b == "-" || b + 0 == 0) print "-";
	else printf "%.2f\n", a / b }'; }

for rep in $(seq 1 "$REPS"); do
for s in $SIZES; do
	# ib_write_bw: #bytes #iters BW_peak BW_avg MsgRate (MB = 2^20 bytes)
	r_bw=$(rxe_row ib_write_bw "$s" "$BW_N")
	echo "rxe  ib_write_bw  $s: $r_bw"
	# gdak-perf write_bw: #bytes #iters BW_avg[MiB/s] MsgRate peak ...
	g_bw=$(gdak_row write_bw "$s" "$BW_N")
	echo "gdak write_bw     $s: $g_bw"
	k_bw=$(gdak_row write_bw "$s" "$BW_N" GDAK_UDP_LOCAL=0)
	echo "gdak write_bw     $s GDAK_UDP_LOCAL=0: $k_bw"
	t_bw=$(gdak_row write_bw "$s" "$BW_N" GDAK_NIC_THREADS=2)
	echo "gdak write_bw     $s GDAK_NIC_THREADS=2: $t_bw"
	# ib_write_lat: #bytes #iters t_min t_max t_typical ...
	r_lat=$(rxe_row ib_write_lat "$s" "$LAT_N")
	echo "rxe  ib_write_lat $s: $r_lat"
	# gdak-perf write_lat: #bytes #iters t_min t_max t_typical ...
	g_lat=$(gdak_row write_lat "$s" "$LAT_N")
	echo "gdak write_lat    $s: $g_lat"
	k_lat=$(gdak_row write_lat "$s" "$LAT_N" GDAK_UDP_LOCAL=0)
	echo "gdak write_lat    $s GDAK_UDP_LOCAL=0: $k_lat"

	rb=$(f "$r_bw" 4) gb=$(f "$g_bw" 3) kb=$(f "$k_bw" 3) tb=$(f "$t_bw" 3)
	echo "$rep|$s|$rb|$gb|$(ratio "$gb" "$rb")|$kb|$(ratio "$kb" "$rb")|$tb|$(ratio "$tb" "$rb")" >>"$OUT/bw"
	rm=$(f "$r_lat" 3) gm=$(f "$g_lat" 3) km=$(f "$k_lat" 3)
	rt=$(f "$r_lat" 5) gt=$(f "$g_lat" 5) kt=$(f "$k_lat" 5)
	echo "$rep|$s|$rm / $rt|$gm / $gt|$(ratio "$gm" "$rm") / $(ratio "$gt" "$rt")|$km / $kt|$(ratio "$km" "$rm") / $(ratio "$kt" "$rt")" >>"$OUT/lat"
done
done
echo
echo "# write_bw, MiB/s (perftest's BW average; gdak-perf's BW avg); x = gdak / rxe, higher is better"
echo "rep|size|rxe|gdak|x|gdak GDAK_UDP_LOCAL=0|x|gdak GDAK_NIC_THREADS=2|x" | tr '|' '\t'
tr '|' '\t' <"$OUT/bw"
echo "# write_lat, t_min / t_typical us; x = gdak / rxe, lower is better"
echo "rep|size|rxe|gdak|x|gdak GDAK_UDP_LOCAL=0|x" | tr '|' '\t'
tr '|' '\t' <"$OUT/lat"
echo "# load $(cut -d' ' -f1-3 /proc/loadavg)"
