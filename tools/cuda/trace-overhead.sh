#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# trace-overhead.sh - what GDAK_TRACE costs when CUDA kernels drive the NIC
# model: gdak-perf-cuda's latency and rate tests run R times without and with
# a trace, alternating, and the medians of each row compared (write_lat and
# pingpong: p50; write_bw: message rate).
#
# usage: tools/cuda/trace-overhead.sh [-r R] [-o DIR] GDAK_PERF_CUDA [ARGS...]
#   -r R    runs per mode (5)
#   -o DIR  where the traces and the runs' JSON go (a temporary folder, removed)
#   ARGS    more gdak-perf-cuda options (default: -t lat,bw --ctas 1,64
#           --nic-threads 1 --lat-iters 20000 --bw-iters 20000)
# Prints one line per row: median off, median on, on/off, trace bytes per
# operation of the last traced run.  Exit 1 when a run fails.
set -euo pipefail

runs=5 dir=""
while getopts "r:o:h" opt; do
	case $opt in
	r) runs=$OPTARG ;;
	o) dir=$OPTARG ;;
	*) sed -n '4,15p' "$0" | sed 's/^# \{0,1\}//'; exit 2 ;;
	esac
done
shift $((OPTIND - 1))
perf=${1:?usage: $0 [-r R] [-o DIR] GDAK_PERF_CUDA [ARGS...]}
shift
[[ -x $perf ]] || { echo "trace-overhead: $perf is not executable" >&2; exit 2; }
[[ $runs =~ ^[1-9][0-9]*$ ]] || { echo "trace-overhead: -r wants a positive number" >&2; exit 2; }
args=("$@")
((${#args[@]})) || args=(-t lat,bw --ctas 1,64 --nic-threads 1 --lat-iters 20000 --bw-iters 20000)
if [[ -z $dir ]]; then
	dir=$(mktemp -d)
	trap 'rm -rf "$dir"' EXIT
fi
mkdir -p "$dir"

one() {	# mode run
	local env=(env -u GDAK_TRACE)
	[[ $1 == on ]] && env=(env GDAK_TRACE="$dir/trace.pcapng")
	rm -f "$dir/trace.pcapng"
	"${env[@]}" "$perf" "${args[@]}" --json "$dir/$1.$2.json" >/dev/null 2>"$dir/$1.$2.err" || {
		echo "trace-overhead: run $2 ($1) failed:" >&2
		tail -5 "$dir/$1.$2.err" >&2
		exit 1
	}
	[[ $1 == on ]] && stat -c %s "$dir/trace.pcapng" >"$dir/bytes"
	return 0
}

for ((r = 0; r < runs; r++)); do
	if ((r % 2)); then one on $r; one off $r; else one off $r; one on $r; fi
done

# rows: "mode key value ops"; key = test|variant|ctas|nic_threads
for f in "$dir"/on.*.json "$dir"/off.*.json; do
	m=${f##*/}; m=${m%%.*}
	awk -v m="$m" -F'"' '/"test":/ {
		test = $4; variant = $8
		match($0, /"ctas": [0-9]+/); ctas = substr($0, RSTART + 8, RLENGTH - 8)
		match($0, /"nic_threads": [0-9]+/); nt = substr($0, RSTART + 15, RLENGTH - 15)
		match($0, /"ops": [0-9]+/); ops = substr($0, RSTART + 7, RLENGTH - 7)
		match($0, /"lat_p50_ns": [0-9.]+/); lat = substr($0, RSTART + 14, RLENGTH - 14)
		match($0, /"msg_rate": [0-9.e+]+/); rate = substr($0, RSTART + 12, RLENGTH - 12)
		if (test == "big_bw" || test == "big_base") next
		printf "%s\t%s|%s|%s|%s\t%s\t%s\n", m, test, variant, ctas, nt,
			test == "write_bw" ? rate / 1e6 : lat, ops
	}' "$f"
done | sort -t$'\t' -k2,2 -k1,1 | awk -F'\t' '
function median(s,   n, a, i, t, j) {
	n = split(s, a, " ")
	for (i = 2; i <= n; i++) { t = a[i]; for (j = i - 1; j >= 1 && a[j] + 0 > t + 0; j--) a[j + 1] = a[j]; a[j + 1] = t }
	return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
}
{ v[$2 "\t" $1] = v[$2 "\t" $1] " " $3; keys[$2] = 1; ops[$2] = $4 }
END {
	for (k in keys) {
		split(k, p, "|")
		off = median(v[k "\toff"]); on = median(v[k "\ton"])
		unit = p[1] == "write_bw" ? "Mmsg/s" : "ns p50"
		printf "%-9s %-34s ctas %3s nic %s  off %9.2f  on %9.2f %-6s  on/off %.3f\n",
			p[1], p[2], p[3], p[4], off, on, unit, off ? on / off : 0
	}
}' | sort
echo "last traced run: $(cat "$dir/bytes" 2>/dev/null || echo 0) trace bytes, $runs runs per mode"
