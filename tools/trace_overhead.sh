#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# trace_overhead.sh - what GDAK_TRACE costs the NIC model's data path:
# gdak-perf write_bw (message rate) and write_lat (p50) at 8 B, 64 B, 4 KiB
# and 64 KiB, each size run R times without and with a trace, alternating
# (so load changes on a shared machine hit both alike), medians compared.
#
# usage: tools/trace_overhead.sh [-r R] [-w thread|inline] [-o DIR] [-x ARGS] GDAK_PERF
#   -r R    runs per size and mode (7), each gdak-perf -r 3 (its median of 3)
#   -w W    GDAK_TRACE_WRITER for the traced runs (thread)
#   -o DIR  where the traces go (/tmp); each run's trace is removed after it
#   -x ARGS more gdak-perf options for every run, e.g. -x --cuda (a CUDA
#           kernel posts: gdak-perf-cuda on a GPU machine)
# Prints one line per test and size: median off and on and their ratio, the
# best run of each and their ratio (on a shared machine, the runs that other
# load did not disturb), and trace bytes per operation.
set -euo pipefail

runs=7
writer=thread
dir=/tmp
xargs_=()
while getopts "r:w:o:x:h" opt; do
	case $opt in
	r) runs=$OPTARG ;;
	w) writer=$OPTARG ;;
	o) dir=$OPTARG ;;
	x) read -r -a xargs_ <<<"$OPTARG" ;;
	*) sed -n '4,16p' "$0" | sed 's/^# \{0,1\}//'; exit 2 ;;
	esac
done
shift $((OPTIND - 1))
perf=${1:?usage: $0 [-r R] [-w thread|inline] [-o DIR] [-x ARGS] GDAK_PERF}
[[ -x $perf ]] || { echo "trace_overhead: $perf is not executable" >&2; exit 2; }
[[ $runs =~ ^[1-9][0-9]*$ ]] || { echo "trace_overhead: -r wants a positive number" >&2; exit 2; }
trace=$dir/trace_overhead.$$.pcapng
trap 'rm -f "$trace"' EXIT

# one gdak-perf run: prints "value trace_bytes"; col is the CSV column
one() {
	local test=$1 size=$2 iters=$3 col=$4 traced=$5 out bytes=0
	local -a env=(env -u GDAK_TRACE)
	[[ $traced == 1 ]] && env=(env GDAK_TRACE="$trace" GDAK_TRACE_WRITER="$writer")
	out=$("${env[@]}" "$perf" -s "$size" -n "$iters" -r 3 --nic-threads 1 --no-baseline \
		--quiet --csv "${xargs_[@]}" "$test" 2>/dev/null | tail -1)
	if [[ $traced == 1 ]]; then
		bytes=$(stat -c %s "$trace" 2>/dev/null || echo 0)
		rm -f "$trace"
	fi
	awk -F, -v c="$col" -v b="$bytes" '{ print $c, b }' <<<"$out"
}

median() { sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
# the best run: on a shared machine the runs that other load did not disturb
best() { sort -g | awk -v hi="$1" 'NR == 1 { lo = $1 } { last = $1 } END { print hi ? last : lo }'; }

measure() {
	local test=$1 size=$2 iters=$3 col=$4 ops=$5 off="" on="" bytes="" r a b
	for ((r = 0; r < runs; r++)); do
		# alternate which mode goes first
		if ((r % 2)); then
			b=$(one "$test" "$size" "$iters" "$col" 1); a=$(one "$test" "$size" "$iters" "$col" 0)
		else
			a=$(one "$test" "$size" "$iters" "$col" 0); b=$(one "$test" "$size" "$iters" "$col" 1)
		fi
		off+="${a%% *}"$'\n'
		on+="${b%% *}"$'\n'
		bytes+="${b##* }"$'\n'
	done
	local moff mon mbytes boff bon hi=0
	[[ $test == write_bw ]] && hi=1
	moff=$(median <<<"${off%$'\n'}")
	mon=$(median <<<"${on%$'\n'}")
	boff=$(best $hi <<<"${off%$'\n'}")
	bon=$(best $hi <<<"${on%$'\n'}")
	mbytes=$(median <<<"${bytes%$'\n'}")
	awk -v t="$test" -v s="$size" -v a="$moff" -v b="$mon" -v ba="$boff" -v bb="$bon" \
		-v by="$mbytes" -v ops="$ops" -v w="$writer" -v n="$runs" 'BEGIN {
		if (t == "write_bw")
			printf "%-9s %6s B  median: off %7.3f on %7.3f Mpps, on/off %.3f   best: off %7.3f on %7.3f Mpps, on/off %.3f   %5.1f trace B/op (%s, %d runs)\n",
				t, s, a / 1e6, b / 1e6, a ? b / a : 0, ba / 1e6, bb / 1e6, ba ? bb / ba : 0, by / ops, w, n
		else
			printf "%-9s %6s B  median: off %7.0f on %7.0f ns,   on/off %.3f   best: off %7.0f on %7.0f ns,   on/off %.3f   %5.1f trace B/op (%s, p50, %d runs)\n",
				t, s, a, b, a ? b / a : 0, ba, bb, ba ? bb / ba : 0, by / ops, w, n
	}'
}

# iterations per size: each run a fraction of a second on a quiet 2-core VM
# (the trace holds all 3 rounds: 3 x iters operations)
for spec in "8 1000000" "64 1000000" "4096 300000" "65536 50000"; do
	set -- $spec
	measure write_bw "$1" "$2" 10 $(($2 * 3))
done
for size in 8 64 4096 65536; do
	measure write_lat "$size" 50000 18 150000
done
