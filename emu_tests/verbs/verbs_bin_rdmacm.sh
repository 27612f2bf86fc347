#!/usr/bin/env bash
# verbs_bin_rdmacm.sh - programs that use librdmacm (Debian rdmacm-utils'
# rping, perftest's -R) through gdak-run.  librdmacm is rdma-core's own and
# needs the kernel's RDMA CM, which a machine without RDMA support lacks:
# the programs must fail cleanly - an error message and an exit status -
# never by a signal.  librdmacm calls into libibverbs on the way
# (ibv_get_sysfs_path, ibv_read_sysfs_file, ibv_get_device_list), so this
# holds gdak's libibverbs to rdma-core's signatures of those.
here=$(dirname "$0")
# shellcheck source=verbs_bin_lib.sh
. "$here/verbs_bin_lib.sh"
vb_need rping
vb_init
out=$VB_DIR/out

# clean NAME CMD...: ends within its timeout, by exit (status < 128), saying why
clean() {
	local name=$1
	shift
	vb_run "$VB_SRV_ADDR" "$out" "" -- "$@"
	local rc=$?
	if ((rc == 124 || rc == 137)); then
		vb_fail "$name: still running after ${VB_TMO}s"
	elif ((rc >= 128)); then
		vb_fail "$name: killed by signal $((rc - 128)) ($(kill -l $((rc - 128)) 2>/dev/null))"
		vb_show "$out"
	elif ((rc == 0)); then
		vb_fail "$name: exit 0 without an RDMA CM"
	elif [[ ! -s $out ]]; then
		vb_fail "$name: exit $rc without a word"
	else
		vb_ok "$name: exit $rc: $(head -n 1 "$out")"
	fi
}

VB_TMO=30
clean "rping -s" rping -s -a "$VB_SRV_ADDR" -C 1
vb_port
if command -v ib_write_bw >/dev/null; then
	clean "ib_write_bw -R" ib_write_bw -d mlx5_0 -x 0 -R -p "$VB_PORT" -n 5
fi
vb_end
