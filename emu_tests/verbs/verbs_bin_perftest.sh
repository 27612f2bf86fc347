#!/usr/bin/env bash
# verbs_bin_perftest.sh PROG [plain|trace|wqe_err|faults] - Debian's perftest
# (ib_write_bw, ib_read_bw, ib_send_bw, ib_atomic_bw, ib_write_lat,
# ib_read_lat, ib_send_lat; unmodified) server and client through gdak-run,
# each its own device and RoCEv2 endpoint.
#
#   plain   the default size and -a (every size 2 .. 2^23; ib_atomic_bw,
#           which refuses -a: FETCH_AND_ADD and CMP_AND_SWAP): both sides exit
#           0, the client prints its results table with one numeric row per
#           size, each row with the iterations run (the servers of
#           ib_write_lat and ib_send_lat too); ib_write_bw and ib_send_bw
#           also with 4 QPs (-q 4) and in both directions (-b)
#   trace   the default size with --trace on both sides: gdak-trace reads
#           both traces cleanly, and the WQEs of the program's opcode in the
#           requester's trace are exactly the -n iterations perftest ran;
#           the passive side of the bandwidth tests and of ib_read_lat posts
#           none of them
#   wqe_err the client's 4th WQE completes with REMOTE_ACCESS (--faults
#           err:qp=*,wqe=3,...): perftest reports "Failed status 10"
#           (IBV_WC_REM_ACCESS_ERR) and both sides end, with an error status
#   faults  the default size with 2% of the packets of both sides dropped
#           (--faults pkt_drop): the run still completes with its table, and
#           the traces show request packets sent again
#
# Iterations stay small (-n) so that a run takes seconds on a loaded
# 2-core machine; nothing here depends on timing.
here=$(dirname "$0")
# shellcheck source=verbs_bin_lib.sh
. "$here/verbs_bin_lib.sh"

prog=${1:?usage: verbs_bin_perftest.sh PROG [plain|trace|wqe_err|faults]}
mode=${2:-plain}
case $prog in
ib_write_bw | ib_read_bw | ib_send_bw | ib_atomic_bw) kind=bw ;;
ib_write_lat | ib_read_lat | ib_send_lat) kind=lat ;;
*) echo "unknown perftest program '$prog'" >&2; exit 2 ;;
esac
case $prog in
ib_write_*) wqe_op=RDMA_WRITE ;;
ib_read_*) wqe_op=RDMA_READ ;;
ib_send_*) wqe_op=SEND ;;
ib_atomic_*) wqe_op=ATOMIC_FA ;;
esac
case $mode in plain | trace | faults | wqe_err) ;; *) echo "unknown mode '$mode'" >&2; exit 2 ;; esac
vb_need "$prog" ss
[[ $mode == trace || $mode == faults || $mode == wqe_err ]] && { [[ -x ${GDAK_TRACE_TOOL:-} ]] || { echo "GDAK_TRACE_TOOL not set" >&2; exit 1; }; }
vb_init

vb_gids

# Rows of a perftest results table: "  SIZE  ITERS  number ..." (the lines
# between its header "#bytes ..." and the closing dashes).  A latency row's
# times may read "inf" (stdev "-nan"): perftest's own arithmetic on its
# cycle counter, seen on a starved 2-core host with every iteration done;
# the size and the iteration count still say the row ran.
table_rows() {
	awk '/#bytes/ { t = 1; next }
	     t && /^-+$/ { t = 0 }
	     t && $1 ~ /^[0-9]+$/ && $2 ~ /^[0-9]+$/ && $3 ~ /^([0-9.]+|inf)$/ { print }' "$1"
}

# run NAME ITERS EXPECTED_ROWS [perftest options...]
run() {
	local name=$1 iters=$2 want=$3
	shift 3
	local opts="-d mlx5_0 -F -n $iters $*" rc=0 f rows
	vb_pair "$name" "$prog -p @PORT@ -x $sgid $opts" "$prog -p @PORT@ -x $cgid $opts $VB_SRV_ADDR"
	for f in srv cli; do
		local frc
		[[ $f == srv ]] && frc=$VB_SRV_RC || frc=$VB_CLI_RC
		if ((frc != 0)); then
			vb_fail "$prog $name ($f): exited $frc"
			rc=1
		fi
	done
	rows=$(table_rows "$VB_DIR/$name.cli" | wc -l)
	if ((rows == want)); then
		vb_ok "$prog $name: client table has $rows numeric row(s): $(table_rows "$VB_DIR/$name.cli" | head -n 1 | tr -s ' ')"
	else
		vb_fail "$prog $name: client table has $rows numeric row(s), want $want"
		rc=1
	fi
	# every row reports the iterations run: -n per QP, over all QPs
	local q=1 wi bad
	[[ " $* " =~ \ -q\ ([0-9]+)\  ]] && q=${BASH_REMATCH[1]}
	wi=$((iters * q))
	bad=$(table_rows "$VB_DIR/$name.cli" | awk -v w="$wi" '$2 != w' | wc -l)
	if ((rows && bad == 0)); then
		vb_ok "$prog $name: every row reports $wi iterations"
	elif ((rows)); then
		vb_fail "$prog $name: $bad row(s) do not report $wi iterations"
		rc=1
	fi
	# the latency tests' servers print the table too, except ib_read_lat's
	# (its server only answers READs)
	if [[ $kind == lat && $prog != ib_read_lat ]]; then
		rows=$(table_rows "$VB_DIR/$name.srv" | wc -l)
		if ((rows == want)); then
			vb_ok "$prog $name: server table has $rows numeric row(s)"
		else
			vb_fail "$prog $name: server table has $rows numeric row(s), want $want"
			rc=1
		fi
	fi
	((rc)) && vb_show "$VB_DIR/$name.srv" "$VB_DIR/$name.cli"
	return 0
}

# The count of WQEs with opcode OP over all QPs of a trace's summary.
trace_wqes() {
	local file=$1 op=$2
	"$GDAK_TRACE_TOOL" --summary --json "$file" 2>"$file.err" | python3 -c '
import json, sys
op = sys.argv[1]
n = 0
for line in sys.stdin:
    o = json.loads(line)
    if "by_opcode" in o:
        n += o["by_opcode"].get(op, 0)
print(n)' "$op"
}

# trace_ok FILE WHAT: gdak-trace reads FILE cleanly (exit 0)
trace_ok() {
	"$GDAK_TRACE_TOOL" --summary "$1" >"$1.sum" 2>&1
	vb_check $? "$2: gdak-trace --summary reads the trace cleanly: $(tail -n 1 "$1.sum")"
}

iters=200

case $mode in
plain)
	run default $iters 1
	# -a: sizes 2 .. 2^23 (23 rows), few iterations per size (perftest
	# takes at least 5).  ib_atomic_bw refuses -a ("Message size cannot be
	# changed for Atomic tests"): its second run is compare-and-swap
	if [[ $prog == ib_atomic_bw ]]; then
		run cmp_swap $iters 1 -A CMP_AND_SWAP
	else
		run all 5 23 -a
	fi
	# several QPs sharing a CQ, and both directions at once
	if [[ $prog == ib_write_bw || $prog == ib_send_bw ]]; then
		run qps4 $iters 1 -q 4
		run bidir $iters 1 -b
	fi
	;;
trace)
	# each side its own file (gdak-run makes the names absolute)
	strc=$VB_DIR/srv.pcapng
	ctrc=$VB_DIR/cli.pcapng
	VB_SRV_OPTS="--trace $strc" VB_CLI_OPTS="--trace $ctrc" run traced $iters 1
	trace_ok "$strc" "server trace"
	trace_ok "$ctrc" "client trace"
	c=$(trace_wqes "$ctrc" "$wqe_op")
	s=$(trace_wqes "$strc" "$wqe_op")
	# perftest posts exactly -n of its operation (the latency tests: each
	# side -n for WRITE/SEND ping-pong, the client -n for READ)
	if ((c == iters)); then
		vb_ok "client trace: $c $wqe_op WQEs for -n $iters"
	else
		vb_fail "client trace: $c $wqe_op WQEs for -n $iters"
		cat "$ctrc.sum" >&2
	fi
	case $prog in
	ib_write_lat | ib_send_lat)
		if ((s == iters)); then
			vb_ok "server trace: $s $wqe_op WQEs for -n $iters"
		else
			vb_fail "server trace: $s $wqe_op WQEs for -n $iters"
			cat "$strc.sum" >&2
		fi
		;;
	*)
		if ((s == 0)); then
			vb_ok "server trace: no $wqe_op WQEs (the server of $prog only answers)"
		else
			vb_fail "server trace: $s $wqe_op WQEs from the passive side"
			cat "$strc.sum" >&2
		fi
		;;
	esac
	;;
faults)
	# each side drops 2% of what it sends (its own seed), and traces, so
	# that the recovery can be seen: a request packet sent again
	strc=$VB_DIR/srv.pcapng
	ctrc=$VB_DIR/cli.pcapng
	VB_SRV_OPTS="--trace $strc --faults pkt_drop:p=2%,seed=$((2 * VB_SLOT + 1))" \
		VB_CLI_OPTS="--trace $ctrc --faults pkt_drop:p=2%,seed=$((2 * VB_SLOT + 2))" \
		run lossy $iters 1
	resent=0
	for t in "$strc" "$ctrc"; do
		r=$("$GDAK_TRACE_TOOL" "$t" 2>/dev/null | awk '
			$5 == "PACKET" && $6 == "tx" && $8 !~ /ACKNOWLEDGE/ {
				psn = ""
				for (i = 9; i <= NF; i++) if ($i ~ /^psn=/) psn = $i
				if (seen[$8 " " psn]++) n++
			}
			END { print n + 0 }')
		resent=$((resent + r))
	done
	if ((resent > 0)); then
		vb_ok "$resent request packets were sent again after the injected losses"
	else
		vb_fail "no request packet was sent again: were packets dropped at all?"
	fi
	;;
wqe_err)
	# an injected error CQE on the client's WQE 3: the program sees the
	# verbs status the syndrome maps to, its QP in ERR, and stops
	ctrc=$VB_DIR/cli.pcapng
	VB_CLI_OPTS="--trace $ctrc --faults err:qp=*,wqe=3,syndrome=REMOTE_ACCESS"
	vb_pair err "$prog -p @PORT@ -x $sgid -d mlx5_0 -F -n $iters" \
		"$prog -p @PORT@ -x $cgid -d mlx5_0 -F -n $iters $VB_SRV_ADDR"
	((VB_CLI_RC != 0 && VB_CLI_RC < 124))
	vb_check $? "client ends with an error status ($VB_CLI_RC), not a timeout or signal"
	((VB_SRV_RC < 124))
	vb_check $? "server ends by itself ($VB_SRV_RC)"
	grep -q 'Failed status 10' "$VB_DIR/err.cli"
	vb_check $? "client: $(grep -m1 'Failed status' "$VB_DIR/err.cli")"
	"$GDAK_TRACE_TOOL" --summary "$ctrc" >"$ctrc.sum" 2>&1
	grep -q 'first error: .*REMOTE_ACCESS' "$ctrc.sum" && grep -q 'cqe_errors [1-9]' "$ctrc.sum"
	vb_check $? "client trace: the error CQE and its syndrome ($(grep -m1 'first error' "$ctrc.sum"))"
	((vb_fails)) && vb_show "$VB_DIR/err.srv" "$VB_DIR/err.cli" "$ctrc.sum"
	;;
esac
vb_end
