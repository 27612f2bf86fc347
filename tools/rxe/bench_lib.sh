# SPDX-License-Identifier: MIT
#
# bench_lib.sh - what bench.sh, bench_verbs.sh and sched_probe.sh share:
# reading a benchmark's log the same way, waiting for a server, and finding
# iproute2's ip for a network namespace.
# Sourced (POSIX sh); the functions set no variables but row, i and p.

# iproute2's ss, for wait_port (the guest's busybox has none)
if [ -z "${SS:-}" ]; then
	SS=ss
	for p in /bin/ss /sbin/ss /usr/bin/ss /usr/sbin/ss; do
		[ -x "$p" ] && SS=$p && break
	done
fi

# iproute2_ip: the path of iproute2's ip, or nothing.  Looked up by path
# and never busybox's: busybox's ip has no netns, and the guest's
# busybox-static prefers its own applets - run through busybox's env or
# sh, "ip" is busybox's even where iproute2's is installed.
iproute2_ip() {
	for p in /sbin/ip /bin/ip /usr/sbin/ip /usr/bin/ip; do
		[ -x "$p" ] || continue
		case $(readlink -f "$p") in */busybox*) continue ;; esac
		echo "$p"
		return
	done
}

# wait_port PORT PID [NS]: wait (at most 30 s) until TCP port PORT is
# listened on (in namespace NS, a command prefix, when given); 1 when pid
# PID is gone first or the time is up.  Without ss, 1 s and then on.
wait_port() {
	i=0
	while [ $i -lt 300 ]; do
		if command -v "$SS" >/dev/null 2>&1; then
			${3:-} "$SS" -Hltn "sport = :$1" 2>/dev/null | grep -q . && return 0
		elif [ $i -ge 10 ]; then
			return 0
		fi
		kill -0 "$2" 2>/dev/null || return 1
		sleep 0.1
		i=$((i + 1))
	done
	return 1
}

# take_row FILE SIZE NF RC WHAT WHY: the data row of SIZE (its first field,
# at least NF fields) in FILE; "-" when RC is not 0 or there is none, with
# "# WHAT failed (rc RC): WHY" on stderr.
take_row() {
	row=$(awk -v s="$2" -v n="$3" '$1 == s && NF >= n { print; exit }' "$1")
	if [ "$4" -ne 0 ] || [ -z "$row" ]; then
		echo "# $5 failed (rc $4): $6" >&2
		echo "-"
		return
	fi
	echo "$row"
}

# f ROW K: field K of ROW ("-" stays "-")
f() { [ "$1" = "-" ] && echo "-" || echo "$1" | awk -v k="$2" '{ print $k }'; }
