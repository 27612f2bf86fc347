#!/usr/bin/env bash
# verbs_bin_qptypes.sh - QP types the emulated device does not run (UC, UD,
# XRC; docs/VERBS.md "QP types"): Debian's own programs asking for them get
# the answer a kernel RDMA stack gives for an unsupported type, EOPNOTSUPP,
# and end at once with their own error and a non-zero exit - none waits,
# none crashes:
#   ibv_uc_pingpong, ibv_ud_pingpong   "Couldn't create QP", exit 1, gdak's
#                                      line names the type and EOPNOTSUPP
#   ibv_xsrq_pingpong                  "Couldn't Open the XRC Domain 95"
#                                      (95 = EOPNOTSUPP, printed by it)
#   ib_send_bw -c UD, ib_write_bw -c UC, ib_send_lat -c UD (server and
#   client)                            "Failed to create QP", exit 1 on both
#   ib_send_bw -c XRC                  "Error opening XRC domain", exit 1
#   pyverbs (if installed)             QP(UC / UD / XRC_SEND) raises with
#                                      errno EOPNOTSUPP; RC still creates
here=$(dirname "$0")
# shellcheck source=verbs_bin_lib.sh
. "$here/verbs_bin_lib.sh"
vb_need ibv_uc_pingpong ibv_ud_pingpong
vb_init
VB_TMO=60

for t in uc:UC:3 ud:UD:4; do
	p=${t%%:*} name=${t#*:} name=${name%%:*} num=${t##*:}
	out=$VB_DIR/$p.out
	vb_run "$VB_SRV_ADDR" "$out" "" -- "ibv_${p}_pingpong" -g 1
	rc=$?
	[[ $rc == 1 ]] && vb_ok "ibv_${p}_pingpong: exit 1 (no hang, no crash)" ||
		{ vb_fail "ibv_${p}_pingpong: exit $rc, want 1"; vb_show "$out"; }
	grep -q "Couldn't create QP" "$out" && vb_ok "ibv_${p}_pingpong: Couldn't create QP" ||
		vb_fail "ibv_${p}_pingpong: no 'Couldn't create QP'"
	grep -q "QP type $num ($name) is not supported" "$out" && grep -q EOPNOTSUPP "$out" &&
		vb_ok "ibv_${p}_pingpong: gdak names $name and EOPNOTSUPP" ||
		{ vb_fail "ibv_${p}_pingpong: gdak's line does not name $name / EOPNOTSUPP"; vb_show "$out"; }
done

if command -v ibv_xsrq_pingpong >/dev/null 2>&1; then
	out=$VB_DIR/xsrq.out
	vb_run "$VB_SRV_ADDR" "$out" "" -- ibv_xsrq_pingpong
	rc=$?
	((rc != 0 && rc < 124)) && vb_ok "ibv_xsrq_pingpong: exit $rc" || vb_fail "ibv_xsrq_pingpong: exit $rc"
	grep -q "Couldn't Open the XRC Domain 95" "$out" &&
		vb_ok "ibv_xsrq_pingpong: ibv_open_xrcd failed with errno 95 (EOPNOTSUPP)" ||
		{ vb_fail "ibv_xsrq_pingpong: not errno 95"; vb_show "$out"; }
fi

if command -v ib_send_bw >/dev/null 2>&1; then
	for t in "ib_send_bw -c UD" "ib_write_bw -c UC" "ib_send_lat -c UD"; do
		n=${t// /_}
		vb_pair "$n" "$t -p @PORT@" "$t -p @PORT@ $VB_SRV_ADDR"
		[[ $VB_SRV_RC == 1 && $VB_CLI_RC == 1 ]] && vb_ok "$t: server and client exit 1" ||
			{ vb_fail "$t: server exit $VB_SRV_RC, client $VB_CLI_RC"; vb_show "$VB_DIR/$n.srv" "$VB_DIR/$n.cli"; }
		grep -q "Failed to create QP" "$VB_DIR/$n.srv" && grep -q "Failed to create QP" "$VB_DIR/$n.cli" &&
			vb_ok "$t: both say Failed to create QP" || vb_fail "$t: no 'Failed to create QP'"
	done
	t="ib_send_bw -c XRC" n=xrc
	vb_pair "$n" "$t -p @PORT@" "$t -p @PORT@ $VB_SRV_ADDR"
	[[ $VB_SRV_RC == 1 && $VB_CLI_RC == 1 ]] && vb_ok "$t: server and client exit 1" ||
		{ vb_fail "$t: server exit $VB_SRV_RC, client $VB_CLI_RC"; vb_show "$VB_DIR/$n.srv" "$VB_DIR/$n.cli"; }
	grep -q "Error opening XRC domain" "$VB_DIR/$n.cli" && vb_ok "$t: Error opening XRC domain" ||
		vb_fail "$t: no 'Error opening XRC domain'"
fi

py=$(vb_pyverbs_python)
if [[ -n $py ]]; then
	out=$VB_DIR/py.out
	timeout -k 5 "$VB_TMO" "$GDAK_RUN" --addr "$VB_SRV_ADDR" -- "$py" - >"$out" 2>&1 <<'PY'
import errno
import pyverbs.enums as e
from pyverbs.cq import CQ
from pyverbs.device import Context, get_device_list
from pyverbs.pd import PD
from pyverbs.pyverbs_error import PyverbsRDMAError
from pyverbs.qp import QP, QPCap, QPInitAttr

ctx = Context(name=get_device_list()[0].name.decode())
pd = PD(ctx)
cq = CQ(ctx, 16)
cap = QPCap(max_send_wr=4, max_recv_wr=4)
for name, t in (("UC", e.IBV_QPT_UC), ("UD", e.IBV_QPT_UD), ("XRC_SEND", e.IBV_QPT_XRC_SEND)):
    try:
        QP(pd, QPInitAttr(qp_type=t, scq=cq, rcq=cq, cap=cap))
        print(f"{name}: created")
    except PyverbsRDMAError as ex:
        print(f"{name}: errno {ex.error_code} {errno.errorcode.get(ex.error_code, '?')}")
QP(pd, QPInitAttr(qp_type=e.IBV_QPT_RC, scq=cq, rcq=cq, cap=cap))
print("RC: created")
PY
	for name in UC UD XRC_SEND; do
		grep -q "^$name: errno 95 " "$out" && vb_ok "pyverbs: $name QP -> errno 95 (EOPNOTSUPP)" ||
			{ vb_fail "pyverbs: $name QP"; vb_show "$out"; }
	done
	grep -q "^RC: created" "$out" && vb_ok "pyverbs: RC QP created" || { vb_fail "pyverbs: RC QP"; vb_show "$out"; }
fi
vb_end
