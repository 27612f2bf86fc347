#!/usr/bin/env bash
# verbs_bin_noemu.sh - programs that need what gdak does not emulate (UD,
# UC and XRC QPs: ibv_ud_pingpong, ibv_uc_pingpong, ibv_xsrq_pingpong,
# perftest -c UD / -c UC), server and client through gdak-run: each side
# must end by itself with an exit status - 0 if the feature has come to
# work, else an error with a message - never by a signal or by the
# timeout.  (rdma-core answers EOPNOTSUPP for a QP type a device lacks;
# the programs report it and exit.)
here=$(dirname "$0")
# shellcheck source=verbs_bin_lib.sh
. "$here/verbs_bin_lib.sh"
vb_need ibv_ud_pingpong ss
vb_init
VB_TMO=60

# ends NAME "SERVER CMD" "CLIENT CMD": both sides end by themselves
ends() {
	local name=$1 srv=$2 cli=$3 f rc
	vb_pair "$name" "$srv" "$cli"
	for f in srv cli; do
		[[ $f == srv ]] && rc=$VB_SRV_RC || rc=$VB_CLI_RC
		if ((rc == 255)) && [[ $f == cli ]] && grep -q 'never listened' "$VB_DIR/$name.cli"; then
			vb_ok "$name ($f): not started, the server had already ended"
		elif ((rc == 124 || rc == 137 || rc == 143)); then
			vb_fail "$name ($f): did not end by itself ($rc)"
			vb_show "$VB_DIR/$name.$f"
		elif ((rc > 128)); then
			vb_fail "$name ($f): killed by signal $((rc - 128))"
			vb_show "$VB_DIR/$name.$f"
		elif ((rc != 0)) && [[ ! -s $VB_DIR/$name.$f ]]; then
			vb_fail "$name ($f): exit $rc without a word"
		else
			vb_ok "$name ($f): exit $rc: $(grep -v '^ *-*$' "$VB_DIR/$name.$f" | head -n 1)"
		fi
	done
}

ends ud_pingpong "ibv_ud_pingpong -g 0 -p @PORT@" "ibv_ud_pingpong -g 0 -p @PORT@ $VB_SRV_ADDR"
ends uc_pingpong "ibv_uc_pingpong -g 0 -p @PORT@" "ibv_uc_pingpong -g 0 -p @PORT@ $VB_SRV_ADDR"
if command -v ibv_xsrq_pingpong >/dev/null; then
	ends xsrq_pingpong "ibv_xsrq_pingpong -g 0 -p @PORT@" "ibv_xsrq_pingpong -g 0 -p @PORT@ $VB_SRV_ADDR"
fi
if command -v ib_send_bw >/dev/null; then
	ends send_bw_ud "ib_send_bw -d mlx5_0 -x 0 -F -c UD -s 1024 -n 20 -p @PORT@" \
		"ib_send_bw -d mlx5_0 -x 0 -F -c UD -s 1024 -n 20 -p @PORT@ $VB_SRV_ADDR"
	ends write_bw_uc "ib_write_bw -d mlx5_0 -x 0 -F -c UC -n 20 -p @PORT@" \
		"ib_write_bw -d mlx5_0 -x 0 -F -c UC -n 20 -p @PORT@ $VB_SRV_ADDR"
fi
vb_end
