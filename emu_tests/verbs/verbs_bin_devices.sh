#!/usr/bin/env bash
# verbs_bin_devices.sh - Debian's ibv_devices and ibv_devinfo -v (unmodified)
# through gdak-run: the emulated device looks like a ConnectX-7 in RoCE mode
# to whoever asks - name mlx5_0, a node GUID with Mellanox's OUI, vendor id
# 0x02c9, part id 4129, a firmware version, port 1 ACTIVE with link layer
# Ethernet, and a RoCE v2 GID ::ffff:A.B.C.D for the address gdak-run gave
# it; --devices 2 shows mlx5_0 and mlx5_1 (each its own address, GUID and
# GID); --devices 0 shows none; gdak-info lists the same device (text and
# --json) as a program sees it.
here=$(dirname "$0")
# shellcheck source=verbs_bin_lib.sh
. "$here/verbs_bin_lib.sh"

vb_need ibv_devices ibv_devinfo
vb_init
A=$VB_SRV_ADDR
B=$VB_CLI_ADDR
out=$VB_DIR/out

expect() { # expect WHAT REGEX FILE
	if grep -Eq -- "$2" "$3"; then
		vb_ok "$1: $(grep -Em1 -- "$2" "$3" | tr -s ' \t' ' ')"
	else
		vb_fail "$1: no line matching '$2'"
		VB_SHOW=1
	fi
}

VB_SHOW=0
vb_run "$A" "$out" "" -- ibv_devices
vb_check $? "gdak-run ibv_devices exits 0"
expect "ibv_devices lists mlx5_0 with its GUID" '^[[:space:]]+mlx5_0[[:space:]]+[0-9a-f]{16}$' "$out"
guid0=$(awk '$1 == "mlx5_0" { print $2 }' "$out")
[[ $guid0 == b8cef6* || $guid0 == 248a07* || $guid0 == 0c42a1* || $guid0 == 043f72* ||
	$guid0 == 506b4b* || $guid0 == 98039b* || $guid0 == e41d2d* || $guid0 == 7cfe90* ]]
vb_check $? "mlx5_0's node GUID $guid0 carries a Mellanox/NVIDIA OUI"
((VB_SHOW)) && vb_show "$out"

VB_SHOW=0
vb_run "$A" "$out" "" -- ibv_devinfo -v
vb_check $? "gdak-run ibv_devinfo -v exits 0"
expect "device name" '^hca_id:[[:space:]]+mlx5_0$' "$out"
expect "transport" 'transport:[[:space:]]+InfiniBand \(0\)' "$out"
expect "firmware version" 'fw_ver:[[:space:]]+[0-9]+\.[0-9]+\.[0-9]+' "$out"
expect "node GUID" "node_guid:[[:space:]]+${guid0:0:4}:${guid0:4:4}:${guid0:8:4}:${guid0:12:4}" "$out"
expect "vendor id" 'vendor_id:[[:space:]]+0x0?2c9$' "$out"
expect "ConnectX-7 part id" 'vendor_part_id:[[:space:]]+4129$' "$out"
expect "port 1" '^[[:space:]]+port:[[:space:]]+1$' "$out"
expect "port state" 'state:[[:space:]]+PORT_ACTIVE \(4\)' "$out"
expect "link layer" 'link_layer:[[:space:]]+Ethernet' "$out"
expect "max QPs" 'max_qp:[[:space:]]+[1-9][0-9]*' "$out"
expect "max QP WRs" 'max_qp_wr:[[:space:]]+[1-9][0-9]*' "$out"
expect "max SGEs" 'max_sge:[[:space:]]+[1-9][0-9]*' "$out"
expect "max_qp_rd_atom" 'max_qp_rd_atom:[[:space:]]+[1-9][0-9]*' "$out"
expect "atomic capability" 'atomic_cap:[[:space:]]+ATOMIC_(HCA|GLOB)' "$out"
expect "RoCE v2 GID of the address gdak-run gave" "GID\[ *[0-9]+\]:[[:space:]]+::ffff:$A, RoCE v2" "$out"
((VB_SHOW)) && vb_show "$out"

# two devices, two addresses
VB_SHOW=0
timeout -k 5 "$VB_TMO" "$GDAK_RUN" --addr "$A,$B" -- ibv_devinfo -v >"$out" 2>&1
vb_check $? "gdak-run --addr A,B ibv_devinfo -v exits 0"
expect "first of two devices" '^hca_id:[[:space:]]+mlx5_0$' "$out"
expect "second of two devices" '^hca_id:[[:space:]]+mlx5_1$' "$out"
awk -v a="::ffff:$A" -v b="::ffff:$B" '
	/^hca_id:/ { dev = $2 }
	/GID\[/ && /RoCE v2/ && index($0, a) { ga = dev }
	/GID\[/ && /RoCE v2/ && index($0, b) { gb = dev }
	END { exit !(ga == "mlx5_0" && gb == "mlx5_1") }' "$out"
vb_check $? "mlx5_0 has the GID of $A, mlx5_1 that of $B"
guids=$(awk '/node_guid:/ { print $2 }' "$out" | sort -u | wc -l)
vb_check $((guids != 2)) "the two devices have distinct node GUIDs ($guids distinct)"
((VB_SHOW)) && vb_show "$out"

timeout -k 5 "$VB_TMO" "$GDAK_RUN" --devices 2 --addr "$A,$B" -- ibv_devices >"$out" 2>&1
n=$(grep -Ec '^[[:space:]]+mlx5_[01][[:space:]]+[0-9a-f]{16}$' "$out")
vb_check $((n != 2)) "gdak-run --devices 2 ibv_devices lists 2 devices ($n)"

# gdak-info shows what such a program sees, with the same environment
if [[ -x ${GDAK_INFO_TOOL:-} ]]; then
	GDAK_IBV_ADDR=$A timeout -k 5 "$VB_TMO" "$GDAK_INFO_TOOL" >"$out" 2>&1
	grep -Eq "^    mlx5_0: node GUID ${guid0:0:4}:${guid0:4:4}:${guid0:8:4}:${guid0:12:4}, vendor 0x02c9 part 4129" "$out" &&
		grep -Eq "GID\[0\] ::ffff:$A \(RoCE v2" "$out"
	vb_check $? "gdak-info lists mlx5_0 with its GUID, ids and the GID of $A"
	GDAK_IBV_ADDR=$A timeout -k 5 "$VB_TMO" "$GDAK_INFO_TOOL" --json 2>/dev/null | python3 -c '
import json, sys
e = json.load(sys.stdin)["emulated_verbs"]
d = e["devices"][0]
ok = (e["libibverbs.so.1"] and e["libmlx5.so.1"] and e["libefa.so.1"] and e["count"] == 1
      and d["name"] == "mlx5_0" and d["gid0"] == "::ffff:" + sys.argv[1]
      and d["link_layer"] == "Ethernet" and d["vendor"] == "0x02c9:4129")
sys.exit(0 if ok else 1)' "$A"
	vb_check $? "gdak-info --json: emulated_verbs with the three libraries and mlx5_0"
	# under gdak-run (it then runs on gdak's libibverbs itself): what those
	# options would show
	timeout -k 5 "$VB_TMO" "$GDAK_RUN" --addr "$A,$B" -- "$GDAK_INFO_TOOL" --json 2>/dev/null |
		python3 -c '
import json, sys
e = json.load(sys.stdin)["emulated_verbs"]
gids = [d.get("gid0") for d in e["devices"]]
sys.exit(0 if e["count"] == 2 and gids == ["::ffff:" + a for a in sys.argv[1:3]] else 1)' "$A" "$B"
	vb_check $? "gdak-run --addr A,B -- gdak-info --json: mlx5_0 and mlx5_1 with the GIDs of A and B"
fi

timeout -k 5 "$VB_TMO" "$GDAK_RUN" --devices 0 -- ibv_devinfo >"$out" 2>&1
grep -q 'No IB devices found' "$out"
vb_check $? "gdak-run --devices 0 ibv_devinfo: 'No IB devices found'"
vb_end
