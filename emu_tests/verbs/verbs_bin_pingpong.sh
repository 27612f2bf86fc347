#!/usr/bin/env bash
# verbs_bin_pingpong.sh rc|srq - rdma-core's ibv_rc_pingpong / ibv_srq_pingpong
# (Debian ibverbs-utils, unmodified), server and client as two processes
# through gdak-run, each its own device and RoCEv2 endpoint (127.0.0.N:4791).
# Each run must exit 0 on both sides and print both rate lines ("N bytes in
# S seconds = R Mbit/sec", "N iters in S seconds = U usec/iter") with the
# byte count the options imply.  rc runs the default (with -c: the client
# checks the buffer it received), -e (completion events), -s 65536, -n 2000
# and -N (the ibv_wr_* send API); srq the default (with -c), -e and -q 4
# (QPs sharing the SRQ).
here=$(dirname "$0")
# shellcheck source=verbs_bin_lib.sh
. "$here/verbs_bin_lib.sh"

mode=${1:?usage: verbs_bin_pingpong.sh rc|srq}
case $mode in
rc) prog=ibv_rc_pingpong ;;
srq) prog=ibv_srq_pingpong ;;
*) echo "unknown mode '$mode'" >&2; exit 2 ;;
esac
vb_need "$prog" ss
vb_init

vb_gids
vb_ok "RoCE v2 GIDs: ::ffff:$VB_SRV_ADDR at index $sgid, ::ffff:$VB_CLI_ADDR at index $cgid"

# run NAME SIZE ITERS [extra options]: one server/client exchange
run() {
	local name=$1 size=$2 iters=$3
	shift 3
	local opts="-d mlx5_0 -s $size -n $iters $*" bytes rc=0 f
	vb_pair "$name" "$prog -p @PORT@ -g $sgid $opts" "$prog -p @PORT@ -g $cgid $opts $VB_SRV_ADDR"
	# both directions: each side sends and receives SIZE bytes per iteration
	bytes=$((size * iters * 2))
	for f in srv cli; do
		local out=$VB_DIR/$name.$f frc
		[[ $f == srv ]] && frc=$VB_SRV_RC || frc=$VB_CLI_RC
		if ((frc != 0)); then
			vb_fail "$name: $prog ($f) exited $frc"
			rc=1
			continue
		fi
		if grep -Eq "^$bytes bytes in [0-9.]+ seconds = [0-9.]+ Mbit/sec" "$out" &&
			grep -Eq "^$iters iters in [0-9.]+ seconds = [0-9.]+ usec/iter" "$out"; then
			vb_ok "$name ($f): $(grep -E 'bytes in' "$out")"
		else
			vb_fail "$name ($f): no '$bytes bytes in ... Mbit/sec' and '$iters iters in ...' lines"
			rc=1
		fi
	done
	((rc)) && vb_show "$VB_DIR/$name.srv" "$VB_DIR/$name.cli"
	return 0
}

if [[ $mode == rc ]]; then
	run default 4096 1000 -c
	run events 4096 1000 -e
	run size64k 65536 200
	run iters2000 4096 2000
	run new_send 4096 500 -N
else
	run default 4096 1000 -c
	run events 4096 500 -e
	run qps4 4096 500 -q 4
fi
vb_end
