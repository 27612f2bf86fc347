#!/bin/sh
# SPDX-License-Identifier: MIT
#
# sched_probe.sh BUILD_DIR NICWATCH [POLICIES] - why gdak-run is slow in
# the rxe guest (docs/BENCHMARKS.md "Session 9"): the guest's scheduler
# settings, then perftest pairs through gdak-run with nicwatch (built from
# tools/rxe/nicwatch.c on the host) watching the NIC threads - their wait
# on a run queue per slice, context switches - and applying each POLICY to
# them by hand (none, fifo:P, rr:P, nice:N; default "none fifo:1 nice:-20
# none"), or through gdak's own setting (sched:VALUE runs both sides with
# GDAK_NIC_SCHED=VALUE); a "pin," prefix runs the server on CPU 0 and the
# client on CPU 1 (taskset), rxe's pair too; an "inl," prefix runs gdak
# with GDAK_IBV_INLINE=1.  PROBE_WAKEPROBE=PATH (tools/rxe/wakeprobe.c,
# built on the host) first measures a wakeup per message without gdak.
# Runs in the guest:
#
#   tools/rxe/gdak-rxe-vm --timeout 560 run sh tools/rxe/sched_probe.sh \
#       build/rxebench build/nicwatch
#
# Environment: PROBE_CASES (default "write_lat:8:1000 write_bw:8:2000"),
# PROBE_ENV (more assignments for both gdak-run sides, e.g. GDAK_NIC_SCHED=...).

B=${1:?usage: sched_probe.sh BUILD_DIR NICWATCH [POLICIES]}
W=${2:?usage: sched_probe.sh BUILD_DIR NICWATCH [POLICIES]}
POLS=${3:-"none fifo:1 nice:-20 none"}
CASES=${PROBE_CASES:-"write_lat:8:1000 write_bw:8:2000"}
RUN=$B/tools/gdak-run
SA=127.0.0.230
CA=127.0.0.231
OUT=${TMPDIR:-/tmp}/gdak-probe.$$
mkdir -p "$OUT" || exit 1
port=19900

echo "# $(uname -a)"
echo "# load $(cut -d' ' -f1-3 /proc/loadavg), $(nproc) CPUs"
echo "# cmdline: $(cat /proc/cmdline)"
mount -t debugfs none /sys/kernel/debug 2>/dev/null
for f in /proc/sys/kernel/sched_rt_runtime_us /proc/sys/kernel/sched_rt_period_us \
	/proc/sys/kernel/sched_autogroup_enabled /sys/kernel/debug/sched/preempt \
	/sys/kernel/debug/sched/latency_ns /sys/kernel/debug/sched/min_granularity_ns \
	/sys/kernel/debug/sched/wakeup_granularity_ns /sys/kernel/debug/sched/features \
	/sys/devices/system/clocksource/clocksource0/current_clocksource; do
	echo "# $f: $(cat "$f" 2>/dev/null)"
done
echo "# ulimit -r: $(ulimit -r 2>/dev/null)"

. "$(dirname "$0")/bench_lib.sh" # iproute2_ip, wait_port

IP=$(iproute2_ip)
NS=""
if [ -n "$IP" ] && mkdir -p /run/netns && "$IP" netns add gdakprobe$$ &&
	"$IP" -n gdakprobe$$ link set lo up; then
	NS="$IP netns exec gdakprobe$$"
	trap 'rm -rf "$OUT"; "$IP" netns del gdakprobe$$ 2>/dev/null' EXIT
else
	echo "# no network namespace: gdak's rows only where UDP 4791 is free" >&2
	trap 'rm -rf "$OUT"' EXIT
fi

# one: WAY(rxe|gdak) POLICY PROG SIZE ITERS
one() {
	way=$1 pol=$2 prog=$3 size=$4 iters=$5
	port=$((port + 1))
	ts0="" ts1="" genv=""
	case $pol in pin,*) ts0="taskset -c 0" ts1="taskset -c 1" pol=${pol#pin,} ;; esac
	case $pol in inl,*) genv="GDAK_IBV_INLINE=1" pol=${pol#inl,} ;; esac
	case $pol in sched:*) genv="$genv GDAK_NIC_SCHED=${pol#sched:}" pol=none ;; esac
	nic=2
	[ "$way" = rxe ] && nic=0
	"$W" 200 "$pol" "$prog" $nic >"$OUT/w" 2>&1 &
	wp=$!
	if [ "$way" = rxe ]; then
		$ts0 $prog -d rxe0 -x 1 -F -s "$size" -n "$iters" -p $port >"$OUT/srv" 2>&1 &
		sp=$!
		wait_port $port $sp
		timeout 120 $ts1 $prog -d rxe0 -x 1 -F -s "$size" -n "$iters" -p $port 127.0.0.1 \
			>"$OUT/cli" 2>&1
		rc=$?
	else
		$NS env $PROBE_ENV $genv timeout 150 $ts0 "$RUN" --addr $SA -- $prog -d mlx5_0 -x 0 -F \
			-s "$size" -n "$iters" -p $port >"$OUT/srv" 2>&1 &
		sp=$!
		wait_port $port $sp "$NS"
		$NS env $PROBE_ENV $genv timeout 120 $ts1 "$RUN" --addr $CA -- $prog -d mlx5_0 -x 0 -F \
			-s "$size" -n "$iters" -p $port $SA >"$OUT/cli" 2>&1
		rc=$?
	fi
	[ $rc -ne 0 ] && kill $sp 2>/dev/null
	wait $sp 2>/dev/null
	# the threads are gone; nicwatch kept their last numbers
	kill $wp 2>/dev/null
	wait $wp 2>/dev/null
	echo "== $way $prog -s $size -n $iters policy $pol${ts0:+ pinned}${genv:+ $genv} rc $rc, load $(cut -d' ' -f1-3 /proc/loadavg)"
	awk -v s="$size" '$1 == s && NF >= 5' "$OUT/cli"
	[ $rc -ne 0 ] && tail -n 3 "$OUT/cli" && tail -n 3 "$OUT/srv"
	grep -i "gdak.*\(sched\|nice\|priority\)" "$OUT/cli" "$OUT/srv" | head -n 4
	cat "$OUT/w"
}

if [ -n "${PROBE_WAKEPROBE:-}" ]; then
	for m in poll block nic nic:fifo poll nic nic:fifo; do
		timeout 100 "$PROBE_WAKEPROBE" ${m%:*} ${PROBE_WAKE_ITERS:-2000} \
			$(case $m in *:fifo) echo fifo ;; esac)
	done
	echo "# load $(cut -d' ' -f1-3 /proc/loadavg)"
fi
for c in $CASES; do
	IFS=: read t s n <<EOF
$c
EOF
	one rxe none ib_$t "$s" "$n"
	[ -n "${PROBE_PIN_RXE:-}" ] && one rxe pin,none ib_$t "$s" "$n"
	for pol in $POLS; do
		one gdak "$pol" ib_$t "$s" "$n"
	done
done
echo "# load $(cut -d' ' -f1-3 /proc/loadavg)"
