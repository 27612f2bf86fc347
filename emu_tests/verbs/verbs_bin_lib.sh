# verbs_bin_lib.sh - sourced by the verbs_bin_*.sh tests: Debian's own
# rdma-core programs (ibverbs-utils, perftest, pyverbs) run unmodified
# through gdak-run on the emulated NIC.
#
# The test's environment (emu_tests/verbs/verbs_bin.cmake): GDAK_RUN (gdak-run),
# GDAK_TRACE_TOOL (gdak-trace), VB_NET (1..254, from the build directory's
# path) and VB_SLOT (this test's number): the test's two devices live on
# 127.NET.SLOT.1 and 127.NET.SLOT.2, so tests run by ctest -j never share
# an address, nor do the same tests of two build trees run at once on one
# machine.  The programs' own TCP exchange (-p) takes a port nobody listens
# on, and a pair whose server could not listen is started again on another
# one.  VB_SANITIZED=1: gdak was built with sanitizers, which unmodified
# programs cannot load: skip.
#
# Every program runs under timeout(1); a pair (server + client) is torn
# down as soon as either side fails, so no test outlives its budget.

set -u

vb_fails=0
vb_checks=0
VB_TMO=${VB_TMO:-120}

vb_skip() {
	echo "SKIP: $*" >&2
	exit 77
}

vb_need() {
	local b
	for b in "$@"; do
		command -v "$b" >/dev/null 2>&1 || vb_skip "'$b' is not installed (tools/install-deps.sh installs the optional packages)"
	done
}

vb_init() {
	[[ ${VB_SANITIZED:-0} == 1 ]] && vb_skip "gdak built with sanitizers: unmodified programs cannot load its libraries"
	[[ -x ${GDAK_RUN:-} ]] || { echo "GDAK_RUN='${GDAK_RUN:-}' is not gdak-run" >&2; exit 1; }
	local slot=${VB_SLOT:?VB_SLOT not set} net=${VB_NET:-1}
	((net >= 1 && net <= 254 && slot >= 0 && slot <= 255)) ||
		{ echo "VB_NET=$net / VB_SLOT=$slot out of range" >&2; exit 1; }
	VB_SRV_ADDR=127.$net.$slot.1
	VB_CLI_ADDR=127.$net.$slot.2
	VB_DIR=$(mktemp -d "${TMPDIR:-/tmp}/gdak-vb.XXXXXX")
	trap vb_cleanup EXIT
}

# timeout(1) runs its program in a process group of its own (its PID): a
# test ends each program it started through that group, so nothing of a
# failed run lingers holding its address
vb_kill() {
	kill "-${2:-TERM}" -- "-$1" 2>/dev/null || kill "-${2:-TERM}" "$1" 2>/dev/null
}

vb_cleanup() {
	local p
	for p in ${VB_PIDS:-}; do
		vb_kill "$p" KILL
	done
	if ((vb_fails)) && [[ -d ${VB_DIR:-} ]]; then
		echo "(outputs kept in $VB_DIR)" >&2
	else
		rm -rf "${VB_DIR:-/nonexistent}"
	fi
}

vb_ok() {
	vb_checks=$((vb_checks + 1))
	echo "ok: $*"
}

vb_fail() {
	vb_checks=$((vb_checks + 1))
	vb_fails=$((vb_fails + 1))
	echo "FAIL: $*" >&2
}

vb_end() {
	echo "$((vb_checks - vb_fails)) passed, $vb_fails failed"
	((vb_fails == 0))
	exit $?
}

# vb_check COND_STATUS WHAT: count a check from the status of the last command
vb_check() {
	if [[ $1 == 0 ]]; then vb_ok "$2"; else vb_fail "$2"; fi
}

# A TCP port nobody listens on now, below the kernel's ephemeral range.
vb_port() {
	local i
	for ((i = 0; i < 100; i++)); do
		VB_PORT=$((20000 + (RANDOM % 12000)))
		ss -Hltn "sport = :$VB_PORT" 2>/dev/null | grep -q . || return 0
	done
}

# vb_run ADDR OUTFILE "GDAK-RUN OPTIONS" -- CMD...: CMD through gdak-run on
# a device at ADDR (VB_RUN_OPTS: options for every run)
vb_run() {
	local addr=$1 out=$2 opts=$3
	shift 4
	# shellcheck disable=SC2086
	timeout -k 5 "$VB_TMO" "$GDAK_RUN" --addr "$addr" ${VB_RUN_OPTS:-} $opts -- "$@" >"$out" 2>&1
}

# The index of the RoCE v2 GID ::ffff:ADDR, read from ibv_devinfo -v as any
# user would.  Prints it, or nothing.
vb_gid_index() {
	local addr=$1 out=$VB_DIR/devinfo.$1
	vb_run "$addr" "$out" "" -- ibv_devinfo -v || return 1
	awk -v a="::ffff:$addr" '
		/GID\[ *[0-9]+\]:/ {
			line = $0; sub(/.*GID\[ */, "", line); idx = line; sub(/\].*/, "", idx)
			if (index($0, a) && $0 ~ /RoCE v2/) { print idx; exit }
		}' "$out"
}

# sgid and cgid: the GID indexes of VB_SRV_ADDR and VB_CLI_ADDR; without
# both, a failed check, the devinfo output and the end of the test.
vb_gids() {
	sgid=$(vb_gid_index "$VB_SRV_ADDR")
	cgid=$(vb_gid_index "$VB_CLI_ADDR")
	if [[ -z $sgid || -z $cgid ]]; then
		vb_fail "ibv_devinfo -v shows no RoCE v2 GID ::ffff:$VB_SRV_ADDR / ::ffff:$VB_CLI_ADDR"
		vb_show "$VB_DIR"/devinfo.*
		vb_end
	fi
}

# The python3 that imports pyverbs (Debian's pyverbs is built for Debian's
# python3, which need not be the first python3 on PATH: pyenv, venvs);
# nothing when none does.
vb_pyverbs_python() {
	local p
	for p in /usr/bin/python3 python3; do
		if "$p" -c 'import pyverbs.device' 2>/dev/null; then
			echo "$p"
			return
		fi
	done
}

# Wait until a TCP port is listened on (the server is ready for its client),
# or the server PID is gone.  Bounded by VB_TMO.
vb_wait_listen() {
	local port=$1 pid=$2 i
	for ((i = 0; i < VB_TMO * 10; i++)); do
		if ss -Hltn "sport = :$port" 2>/dev/null | grep -q .; then
			return 0
		fi
		kill -0 "$pid" 2>/dev/null || return 1
		sleep 0.1
	done
	return 1
}

# vb_pair NAME "SERVER ARGS" "CLIENT ARGS": the program's server on
# VB_SRV_ADDR and its client on VB_CLI_ADDR, each its own gdak device; @PORT@
# in the arguments is the TCP port of their exchange (VB_PORT).  The client
# is started once the server listens; whichever fails first ends the other.
# A server that ends without listening because the port was taken is
# started again on another port (3 tries).  Outputs: $VB_DIR/NAME.srv,
# $VB_DIR/NAME.cli; sets VB_SRV_RC and VB_CLI_RC.  VB_SRV_OPTS /
# VB_CLI_OPTS: gdak-run options of one side.
vb_pair() {
	local name=$1 srv cli spid try
	for ((try = 1; try <= 3; try++)); do
		vb_port
		srv=${2//@PORT@/$VB_PORT}
		cli=${3//@PORT@/$VB_PORT}
		# shellcheck disable=SC2086
		vb_run "$VB_SRV_ADDR" "$VB_DIR/$name.srv" "${VB_SRV_OPTS:-}" -- $srv &
		spid=$!
		VB_PIDS="${VB_PIDS:-} $spid"
		vb_wait_listen "$VB_PORT" "$spid" && break
		VB_CLI_RC=255
		echo "(server '$srv' never listened on port $VB_PORT)" >"$VB_DIR/$name.cli"
		vb_kill "$spid"
		wait "$spid"
		VB_SRV_RC=$?
		grep -Eqi 'listen|bind|address already in use' "$VB_DIR/$name.srv" || return
		((try < 3)) || return
		echo "($name: port $VB_PORT was taken, again on another)"
	done
	# shellcheck disable=SC2086
	vb_run "$VB_CLI_ADDR" "$VB_DIR/$name.cli" "${VB_CLI_OPTS:-}" -- $cli
	VB_CLI_RC=$?
	if ((VB_CLI_RC != 0)); then
		# the server may wait forever for a client that is gone
		sleep 1
		vb_kill "$spid"
	fi
	wait "$spid"
	VB_SRV_RC=$?
}

# Print the tail of a pair's outputs (after a failure).
vb_show() {
	local f
	for f in "$@"; do
		echo "---- $(basename "$f") (last lines) ----" >&2
		tail -n 25 "$f" >&2
	done
}
