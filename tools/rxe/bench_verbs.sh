#!/bin/sh
# SPDX-License-Identifier: MIT
#
# bench_verbs.sh BUILD_DIR - bench.sh --verbs (see there): unmodified
# perftest on kernel rxe0, the same perftest through gdak-run, and
# gdak-perf's native path, alternating round by round in one guest boot.
# POSIX sh (the guest's /bin/sh is dash); awk does the arithmetic (the guest
# has no python).

B=${1:?usage: bench_verbs.sh BUILD_DIR}
ROUNDS=${BENCH_ROUNDS:-3}
N8=${BENCH_BW_ITERS:-2000}
N64=${BENCH_BW64_ITERS:-500}
NLAT=${BENCH_LAT_ITERS:-1000}
DEV=${BENCH_DEV:-rxe0}
RUN=$B/tools/gdak-run
PERF=$B/tools/gdak-perf
SA=127.0.0.230
CA=127.0.0.231
OUT=${TMPDIR:-/tmp}/gdak-bench-verbs.$$
for t in "$RUN" "$PERF"; do
	[ -x "$t" ] || { echo "bench_verbs.sh: no $t" >&2; exit 2; }
done
command -v ib_write_bw >/dev/null 2>&1 || { echo "bench_verbs.sh: perftest is not installed" >&2; exit 2; }
mkdir -p "$OUT" || exit 1
trap 'rm -rf "$OUT"' EXIT
port=19800

. "$(dirname "$0")/bench_lib.sh" # iproute2_ip, take_row, f, wait_port

# gdak's devices bind ADDR:4791, which kernel rxe's socket (*:4791) holds
# in the guest: gdak's rows run in a network namespace of their own (its
# own loopback and ports), rxe's in the guest's.  That needs iproute2's ip
# (iproute2_ip), and where no namespace can be made while something holds
# UDP 4791 here, the bench stops: gdak's rows would only fail to bind.
IP=$(iproute2_ip)
NS=""
NSERR="not root"
if [ "$(id -u)" = 0 ]; then
	NSERR="no iproute2 ip (busybox's has no netns)"
	if [ -n "$IP" ]; then
		mkdir -p /run/netns 2>/dev/null
		"$IP" netns del gdakbench$$ 2>/dev/null
		if NSERR=$("$IP" netns add gdakbench$$ 2>&1) &&
			NSERR=$("$IP" -n gdakbench$$ link set lo up 2>&1); then
			NS="$IP netns exec gdakbench$$"
			trap 'rm -rf "$OUT"; "$IP" netns del gdakbench$$ 2>/dev/null' EXIT
			echo "# gdak-run and gdak-perf in network namespace gdakbench$$ ($IP)"
		else
			NSERR="$IP netns add gdakbench$$: $NSERR"
		fi
	fi
fi
if [ -z "$NS" ]; then
	# a wildcard bind of 4791 (0x12B7), as kernel rxe's, in local_address
	if awk 'NR > 1 && $2 ~ /^0+:12B7$/ { f = 1 } END { exit !f }' /proc/net/udp /proc/net/udp6 2>/dev/null ||
		ls /sys/class/infiniband/ 2>/dev/null | grep -q .; then
		echo "bench_verbs.sh: no network namespace for gdak's devices ($NSERR)," \
			"and UDP port 4791 is taken here (kernel RDMA: $(ls /sys/class/infiniband/ 2>/dev/null | tr '\n' ' '))" >&2
		exit 2
	fi
	echo "# no network namespace ($NSERR); UDP 4791 is free here: gdak's rows in this one"
fi
echo "# $(uname -r), $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "# gdak build: $B${BENCH_GDAK_SCHED:+; sched column: gdak-run, inline on, GDAK_NIC_SCHED=$BENCH_GDAK_SCHED}"

# pt WAY PROG SIZE ITERS: one perftest pair; WAY rxe or gdak; prints the
# client's data row or "-"
pt() {
	way=$1 prog=$2 size=$3 iters=$4
	port=$((port + 1))
	if [ "$way" = rxe ]; then
		$prog -d "$DEV" -x 1 -F -s "$size" -n "$iters" -p $port >"$OUT/srv" 2>&1 &
		sp=$!
		wait_port $port $sp
		timeout 120 $prog -d "$DEV" -x 1 -F -s "$size" -n "$iters" -p $port 127.0.0.1 \
			>"$OUT/cli" 2>&1
		rc=$?
	else
		# gdak's default (adaptive) polling unless BENCH_GDAK_POLL says
		# otherwise: spinning NIC threads of two processes on the guest's
		# 2 vCPUs starve the pollers they serve
		env="GDAK_POLL=${BENCH_GDAK_POLL:-adaptive}"
		# INL empty: gdak's default (posts to a direct-path peer inline)
		[ -n "${INL:-}" ] && env="$env GDAK_IBV_INLINE=$INL"
		# the direct path (docs/VERBS.md "Threads"): on unless DIRECT=0
		env="$env GDAK_IBV_DIRECT=${DIRECT:-1}"
		# the sched column: the NIC threads' policy (GDAK_NIC_SCHED)
		[ -n "${SCHED:-}" ] && env="$env GDAK_NIC_SCHED=$SCHED"
		$NS env $env timeout 150 "$RUN" --addr $SA -- $prog -d mlx5_0 -x 0 -F -s "$size" \
			-n "$iters" -p $port >"$OUT/srv" 2>&1 &
		sp=$!
		wait_port $port $sp "$NS"
		$NS env $env timeout 120 "$RUN" --addr $CA -- $prog -d mlx5_0 -x 0 -F -s "$size" \
			-n "$iters" -p $port $SA >"$OUT/cli" 2>&1
		rc=$?
	fi
	[ $rc -ne 0 ] && kill $sp 2>/dev/null
	wait $sp 2>/dev/null
	take_row "$OUT/cli" "$size" 5 $rc "$way $prog -s $size" \
		"$(tail -n 2 "$OUT/cli" | tr '\n' ' ')"
}

# gp TEST SIZE ITERS: gdak-perf server + client; prints the client's row or "-"
gp() {
	t=$1 size=$2 iters=$3 extra=""
	port=$((port + 1))
	[ "$t" = write_bw ] && extra="--wqes-per-db 1 --signal-every 1"
	$NS timeout 150 "$PERF" -d emu:udp:$SA --server -p $port -s "$size" -n "$iters" -r 1 \
		--nic-threads 1 --no-baseline $extra "$t" >"$OUT/gsrv" 2>&1 &
	sp=$!
	i=0
	while [ $i -lt 300 ] && ! grep -q 'waiting for a client' "$OUT/gsrv" && kill -0 $sp 2>/dev/null; do
		sleep 0.1
		i=$((i + 1))
	done
	$NS timeout 120 "$PERF" -d emu:udp:$CA -p $port -s "$size" -n "$iters" -r 1 --nic-threads 1 \
		--no-baseline $extra "$t" $SA >"$OUT/gcli" 2>&1
	rc=$?
	[ $rc -ne 0 ] && kill $sp 2>/dev/null
	wait $sp 2>/dev/null
	take_row "$OUT/gcli" "$size" 5 $rc "gdak-perf $t -s $size" \
		"$(tail -n 3 "$OUT/gcli" | tr '\n' ' ')"
}


# one line per round and case into $OUT/res: case rxe gdak-run gdak-perf
# (bandwidth: MiB/s, perftest's BW average and gdak-perf's BW avg, both
# 2^20 bytes; latency: t_typical us, perftest's, and gdak-perf's t_typical)
r=1
while [ $r -le "$ROUNDS" ]; do
	for c in "write_bw 8 $N8" "write_bw 65536 $N64" "write_lat 8 $NLAT"; do
		set -- $c
		prog=ib_$1
		a=$(pt rxe $prog "$2" "$3")
		b=$(INL= pt gdak $prog "$2" "$3")
		g=$(gp "$1" "$2" "$3")
		# the same binary with the engine on the NIC thread alone
		# (GDAK_IBV_INLINE=0; the gdak-run column runs gdak's default,
		# where a post to a direct-path peer runs in the program's
		# call: docs/VERBS.md "Threads")
		n=$(INL=0 pt gdak $prog "$2" "$3")
		# the gdak-run command without the direct path (every message
		# over UDP, as up to session 9)
		d=$(INL=1 DIRECT=0 pt gdak $prog "$2" "$3")
		# BENCH_GDAK_SCHED: the gdak-run command once more, inline on,
		# with the NIC threads under that GDAK_NIC_SCHED
		x=-
		[ -n "${BENCH_GDAK_SCHED:-}" ] && x=$(INL=1 SCHED=$BENCH_GDAK_SCHED pt gdak $prog "$2" "$3")
		echo "round $r $prog $2 B: rxe [$a] | gdak-run [$b] | gdak-perf [$g] | gdak-run inline off [$n]" \
			"| gdak-run ${BENCH_GDAK_SCHED:-(no BENCH_GDAK_SCHED)} [$x] | gdak-run direct off [$d]"
		if [ "$1" = write_bw ]; then
			# perftest: #bytes #iters BW_peak BW_avg MsgRate; gdak-perf: #bytes #iters BW_avg ...
			echo "$prog $2|$(f "$a" 4)|$(f "$b" 4)|$(f "$g" 3)|$(f "$n" 4)|$(f "$x" 4)|$(f "$d" 4)" >>"$OUT/res"
		else
			# perftest: #bytes #iters t_min t_max t_typical ...; gdak-perf: the same columns
			echo "$prog $2|$(f "$a" 5)|$(f "$b" 5)|$(f "$g" 5)|$(f "$n" 5)|$(f "$x" 5)|$(f "$d" 5)" >>"$OUT/res"
		fi
	done
	r=$((r + 1))
done

echo
echo "# medians of $ROUNDS rounds; bandwidth MiB/s (higher is better), latency t_typical us (lower is better)"
printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' case rxe gdak-run gdak-perf "gdak-run/gdak-perf" \
	"gdak-run/rxe" "inline-off" "inline-off/rxe" "sched" "sched/rxe" "direct-off" "direct-off/rxe"
for c in "ib_write_bw 8" "ib_write_bw 65536" "ib_write_lat 8"; do
	awk -F'|' -v c="$c" '
		function med(a, n,   i, j, t) {
			for (i = 2; i <= n; i++)
				for (j = i; j > 1 && a[j - 1] > a[j]; j--) { t = a[j]; a[j] = a[j - 1]; a[j - 1] = t }
			return n + 0 == 0 ? "-" : (n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2)
		}
		function q(x, y) { return (x == "-" || y == "-" || y + 0 == 0) ? "-" : sprintf("%.2f", x / y) }
		$1 == c {
			if ($2 != "-") ra[++nr] = $2 + 0
			if ($3 != "-") ga[++ng] = $3 + 0
			if ($4 != "-") pa[++np] = $4 + 0
			if ($5 != "" && $5 != "-") oa[++no] = $5 + 0
			if ($6 != "" && $6 != "-") xa[++nx] = $6 + 0
			if ($7 != "" && $7 != "-") da[++nd] = $7 + 0
		}
		END {
			r = med(ra, nr); g = med(ga, ng); p = med(pa, np); o = med(oa, no)
			x = med(xa, nx); d = med(da, nd)
			printf "%s B\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", c, r, g, p, q(g, p), q(g, r), o,
				q(o, r), x, q(x, r), d, q(d, r)
		}' "$OUT/res"
done
echo "# load $(cut -d' ' -f1-3 /proc/loadavg)"
