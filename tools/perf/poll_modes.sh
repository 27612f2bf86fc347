#!/usr/bin/env bash
# poll_modes.sh - the NIC model's two polling modes side by side, in one run:
# host-thread 8-byte write_lat p50 with --poll spin and --poll adaptive
# (alternating, R runs each, medians), then what an idle NIC thread costs in
# adaptive mode (gdak-perf --idle-ms: QPs connected, nothing posted).
#   tools/perf/poll_modes.sh [GDAK_PERF [RUNS]]
# Exits 1 unless adaptive p50 <= 3 x spin p50 and the idle NIC uses < 5% of
# a core (the targets of docs/BENCHMARKS.md "Polling modes").
set -euo pipefail
perf=${1:-build/default/tools/gdak-perf}
runs=${2:-3}
p50() { # mode -> p50 in ns
	"$perf" -s 8 -n 20000 -r 1 --no-baseline --quiet --json --poll "$1" write_lat |
		sed -n 's/.*"lat_p50_ns": \([0-9.e+]*\).*/\1/p'
}
median() { sort -g | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}'; }
spin=() adapt=()
for ((i = 0; i < runs; i++)); do
	spin+=("$(p50 spin)")
	adapt+=("$(p50 adaptive)")
done
s=$(printf '%s\n' "${spin[@]}" | median)
a=$(printf '%s\n' "${adapt[@]}" | median)
idle=$("$perf" -s 8 -n 1000 -r 1 --no-baseline --quiet --poll adaptive --idle-ms 5000 write_lat |
	sed -n 's/^ idle NIC: \([0-9.]*\)%.*/\1/p')
ratio=$(awk -v a="$a" -v s="$s" 'BEGIN {printf "%.2f", a / s}')
echo "write_lat 8 B p50: spin $(awk -v v="$s" 'BEGIN {printf "%.2f", v / 1000}') us," \
     "adaptive $(awk -v v="$a" 'BEGIN {printf "%.2f", v / 1000}') us (x$ratio; medians of $runs)"
echo "idle NIC thread, adaptive: $idle% of a core"
awk -v r="$ratio" -v i="$idle" 'BEGIN {exit !(r <= 3 && i < 5)}' ||
	{ echo "poll_modes: target missed (adaptive <= 3x spin, idle < 5%)"; exit 1; }
echo "poll_modes: ok"
