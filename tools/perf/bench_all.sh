#!/bin/sh
# SPDX-License-Identifier: MIT
# bench_all.sh - run the measurements docs/BENCHMARKS.md reports, each saved
# as gdak-perf --json (and the table beside it), then draw the plot.
#
#   tools/perf/bench_all.sh BUILD_DIR OUT_DIR
#
# BUILD_DIR holds tools/gdak-perf (e.g. build/default); OUT_DIR receives
# NAME.json, NAME.txt (the command, the load average, the table) and
# bench.png.  Every command is printed before it runs.  A failed or
# unverified run stops the script with its exit status.
set -eu
if [ $# -ne 2 ]; then
	echo "usage: $0 BUILD_DIR OUT_DIR" >&2
	exit 2
fi
perf="$1/tools/gdak-perf"
out="$2"
[ -x "$perf" ] || { echo "$0: $perf is not built" >&2; exit 2; }
mkdir -p "$out"
here=$(dirname "$0")

run() {
	name=$1
	shift
	echo "+ gdak-perf $*"
	{
		echo "# gdak-perf $*"
		echo "# $(date -u '+%Y-%m-%dT%H:%M:%SZ')  load average: $(cut -d' ' -f1-3 /proc/loadavg)"
	} > "$out/$name.txt"
	"$perf" --quiet --json-file "$out/$name.json" "$@" >> "$out/$name.txt"
	tail -n +3 "$out/$name.txt"
}

# message rate, 8 B RDMA_WRITE, 1 posting thread, 1 NIC thread
run rate_8B_db16 -s 8 -n 1000000 -r 7 --nic-threads 1 --wqes-per-db 16 write_bw
run rate_8B_db1 -s 8 -n 300000 -r 7 --nic-threads 1 --wqes-per-db 1 write_bw
# 1 MiB bandwidth against memcpy
run bw_1M -s 1M -r 7 --nic-threads 1 write_bw
# 8 B latency, pure spin
run lat_8B -s 8 -n 20000 -r 5 --nic-threads 1 --poll spin write_lat
run put_signal_lat_8B -s 8 -n 20000 -r 5 --nic-threads 1 --poll spin put_signal_lat
# one busy QP among 2, 64 and 1024 open QPs (polling cost), RSS
run idle_2 -s 8 -n 300000 -r 7 --nic-threads 1 write_bw
run idle_64 -s 8 -n 300000 -r 7 --nic-threads 1 --idle-qps 62 write_bw
run idle_1024 -s 8 -n 300000 -r 7 --nic-threads 1 --idle-qps 1022 write_bw
# the other tests, 8 B
run read_bw_8B -s 8 -n 300000 -r 5 --nic-threads 1 read_bw
run atomic_rate -n 300000 -r 5 --nic-threads 1 atomic_rate
run send_bw_8B -s 8 -n 300000 -r 5 --nic-threads 1 send_bw
run read_lat_8B -s 8 -n 20000 -r 3 --nic-threads 1 --poll spin read_lat
run atomic_lat -n 20000 -r 3 --nic-threads 1 --poll spin atomic_lat
# RoCEv2 over UDP between two processes on this host (server/client)
net() {
	name=$1
	shift
	"$perf" -d emu:udp --server -p 0 --quiet "$@" 2> "$out/$name.server" &
	spid=$!
	port=
	for _ in 1 2 3 4 5 6 7 8 9 10; do
		port=$(sed -n 's/.*on port \([0-9]*\).*/\1/p' "$out/$name.server")
		[ -n "$port" ] && break
		sleep 0.5
	done
	[ -n "$port" ] || { echo "$0: the $name server did not start" >&2; kill "$spid"; exit 1; }
	run "$name" -d emu:udp -p "$port" "$@" 127.0.0.1
	wait "$spid"
}
net udp_write_bw_8B -s 8 -n 100000 -r 3 --nic-threads 1 write_bw
net udp_write_bw_64K -s 64K -n 2000 -r 3 --nic-threads 1 write_bw
net udp_write_lat_8B -s 8 -n 5000 -r 3 --nic-threads 1 write_lat

# every size, for the plot
run all_write_bw -a -m 4M -r 3 --nic-threads 1 write_bw
run all_baseline -a -m 4M -r 3 baseline

if python3 -c 'import matplotlib' 2>/dev/null; then
	python3 "$here/../plot_bench.py" "$out/all_write_bw.json" "$out/all_baseline.json" \
		-o "$out/bench.png"
else
	echo "$0: matplotlib missing, no plot (apt-get install python3-matplotlib)" >&2
fi
