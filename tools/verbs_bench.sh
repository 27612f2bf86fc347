#!/usr/bin/env bash
# verbs_bench.sh - Debian's perftest through gdak-run against gdak-perf's
# native path, the same operation between two processes over the NIC
# model's RoCEv2/UDP transport, alternating round by round so that both
# see the same machine (docs/BENCHMARKS.md "Unmodified perftest").
#
#   tools/verbs_bench.sh [-r ROUNDS] [-b BUILD_DIR] [--quick] [--no-gdak-perf]
#
# Per round and case: ib_write_bw / ib_write_lat (server + client, each
# gdak-run on its own 127.0.0.N) then gdak-perf -d emu:udp:ADDR (server +
# client).  Prints one line per run and, at the end, the medians and the
# ratio perftest / gdak-perf of the same run.  The cases: write_bw 8 B,
# write_bw 64 KiB, write_lat 8 B.  perftest runs with gdak's default
# polling (its verbs QPs let the NIC thread block when idle; BENCH_GDAK_POLL=spin
# spins it instead); gdak-perf's latency tests spin by default.  Each
# perftest case runs twice, GDAK_IBV_INLINE=1 (the engine in the program's
# post_send / poll_cq) and =0 (on the NIC thread alone); --no-gdak-perf
# leaves gdak-perf out (inline on against off only).
set -u
rounds=3
build=build/default
quick=0
gp=1
while (($#)); do
	case $1 in
	-r) rounds=${2:?}; shift 2 ;;
	-b) build=${2:?}; shift 2 ;;
	--quick) quick=1; shift ;;
	--no-gdak-perf) gp=0; shift ;;
	-h | --help) sed -n '2,18p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
	*) echo "verbs_bench.sh: unknown argument '$1'" >&2; exit 2 ;;
	esac
done
RUN=$build/tools/gdak-run
PERF=$build/tools/gdak-perf
for t in "$RUN" "$PERF"; do
	[[ -x $t ]] || { echo "verbs_bench.sh: $t not built" >&2; exit 1; }
done
command -v ib_write_bw >/dev/null || { echo "verbs_bench.sh: perftest is not installed" >&2; exit 1; }
SA=127.0.0.230 CA=127.0.0.231
port=19700
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
n8=200000 n64k=5000 nlat=20000
((quick)) && n8=20000 n64k=500 nlat=2000

wait_port() { # wait_port PORT PID
	for ((i = 0; i < 600; i++)); do
		ss -Hltn "sport = :$1" 2>/dev/null | grep -q . && return 0
		kill -0 "$2" 2>/dev/null || return 1
		sleep 0.1
	done
	return 1
}

# perftest PROG SIZE ITERS [env...]: prints "rate_mpps bw_mibs" (bw) or "p50 p99" (lat, usec)
perftest() {
	local prog=$1 size=$2 iters=$3 env=${4:-} spid
	port=$((port + 1))
	env $env timeout 300 "$RUN" --addr $SA -- $prog -d mlx5_0 -x 0 -F -s "$size" -n "$iters" \
		-p $port >"$tmp/srv" 2>&1 &
	spid=$!
	wait_port $port $spid || { echo "fail"; return; }
	env $env timeout 300 "$RUN" --addr $CA -- $prog -d mlx5_0 -x 0 -F -s "$size" -n "$iters" \
		-p $port $SA >"$tmp/cli" 2>&1 || { kill $spid 2>/dev/null; wait $spid; echo "fail"; return; }
	wait $spid
	case $prog in
	# " #bytes #iterations BW peak[MB/sec] BW average[MB/sec] MsgRate[Mpps]" (MB = 2^20 B)
	ib_write_bw) awk '$1 ~ /^[0-9]+$/ && NF >= 5 && $2 ~ /^[0-9]+$/ { print $5, $4 }' "$tmp/cli" ;;
	# " #bytes #iterations t_min t_max t_typical t_avg t_stdev 99% 99.9%"
	ib_write_lat) awk '$1 ~ /^[0-9]+$/ && NF >= 9 && $2 ~ /^[0-9]+$/ { print $5, $8 }' "$tmp/cli" ;;
	esac
}

# gperf TEST SIZE ITERS: the same numbers from gdak-perf's JSON
gperf() {
	local test=$1 size=$2 iters=$3 spid extra=""
	port=$((port + 1))
	[[ $test == write_bw ]] && extra="--wqes-per-db 1 --signal-every 1"
	timeout 300 "$PERF" -d emu:udp:$SA --server -p $port -s "$size" -n "$iters" -r 1 --nic-threads 1 \
		--no-baseline $extra "$test" >"$tmp/gsrv" 2>&1 &
	spid=$!
	sleep 0.2
	for ((i = 0; i < 600; i++)); do
		grep -q 'waiting for a client' "$tmp/gsrv" && break
		kill -0 $spid 2>/dev/null || break
		sleep 0.1
	done
	timeout 300 "$PERF" -d emu:udp:$CA -p $port -s "$size" -n "$iters" -r 1 --nic-threads 1 \
		--no-baseline $extra --json "$test" $SA >"$tmp/gcli" 2>/dev/null ||
		{ kill $spid 2>/dev/null; wait $spid; echo "fail"; return; }
	wait $spid
	python3 - "$tmp/gcli" "$test" <<'EOF'
import json, sys
r = json.load(open(sys.argv[1]))["results"][0]
if sys.argv[2] == "write_bw":
    print(r["msg_rate"] / 1e6, r["bw_bytes_per_s"] / 2**20)
else:
    print(r["lat_p50_ns"] / 1000, r["lat_p99_ns"] / 1000)
EOF
}

declare -A P G O
cases=("write_bw 8 $n8" "write_bw 65536 $n64k" "write_lat 8 $nlat")
echo "load average at start: $(cut -d' ' -f1-3 /proc/loadavg), nproc $(nproc)"
for ((r = 1; r <= rounds; r++)); do
	for c in "${cases[@]}"; do
		set -- $c
		pe="GDAK_POLL=${BENCH_GDAK_POLL:-adaptive}"
		p=$(perftest ib_$1 "$2" "$3" "$pe GDAK_IBV_INLINE=1")
		g=fail
		((gp)) && g=$(gperf "$1" "$2" "$3")
		# the same binary, the engine on the NIC thread alone
		o=$(perftest ib_$1 "$2" "$3" "$pe GDAK_IBV_INLINE=0")
		echo "round $r $1 $2 B: perftest+gdak-run [$p]  gdak-perf [$g]  inline off [$o]  load $(cut -d' ' -f1 /proc/loadavg)"
		P["$1 $2"]+="$p;"
		G["$1 $2"]+="$g;"
		O["$1 $2"]+="$o;"
	done
done
echo "load average at end: $(cut -d' ' -f1-3 /proc/loadavg)"
for c in "${cases[@]}"; do
	set -- $c
	python3 - "$1 $2" "${P["$1 $2"]}" "${G["$1 $2"]}" "${O["$1 $2"]}" <<'EOF'
import statistics, sys
name, p, g, o = sys.argv[1:5]
def med(s, i):
    v = [float(x.split()[i]) for x in s.split(";") if x.strip() and x.strip() != "fail"]
    return statistics.median(v) if v else float("nan")
if name.startswith("write_bw"):
    pr, pb, gr, gb = med(p, 0), med(p, 1), med(g, 0), med(g, 1)
    orr, ob = med(o, 0), med(o, 1)
    print(f"{name} B: perftest {pr:.3f} Mpps {pb:.1f} MiB/s | gdak-perf {gr:.3f} Mpps "
          f"{gb:.1f} MiB/s | ratio {pr / gr:.2f} | inline off {orr:.3f} Mpps {ob:.1f} MiB/s")
else:
    p50, p99, g50, g99 = med(p, 0), med(p, 1), med(g, 0), med(g, 1)
    o50, o99 = med(o, 0), med(o, 1)
    print(f"{name} B: perftest t_typical {p50:.1f} us 99% {p99:.1f} us | gdak-perf p50 "
          f"{g50:.1f} us p99 {g99:.1f} us | ratio {p50 / g50:.2f} | inline off t_typical "
          f"{o50:.1f} us 99% {o99:.1f} us")
EOF
done
