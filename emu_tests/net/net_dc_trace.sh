#!/bin/bash
# net_dc_trace.sh NET_UDP_DC GDAK_TRACE LUA - gdak's DC wire encoding
# (docs/UDP.md "DC") in a trace: net_udp_dc's ops run with GDAK_TRACE;
# gdak-trace names every DC packet and decodes the DCETH (key, DCI, MTU),
# every ICRC is right; tshark (when installed) takes them as InfiniBand
# without a malformed mark, and with tools/gdak-trace.lua decodes each
# DCETH: as many as gdak-trace counted, the keys as posted, no expert error.
set -u
dc=$1 tool=$2 lua=$3
dir=$(mktemp -d "${TMPDIR:-/tmp}/gdak-dc.XXXXXX")
trap 'rm -rf "$dir"' EXIT
. "$(dirname "$0")/trace_checks.sh"

GDAK_TRACE=$dir/t.pcapng "$dc" ops >"$dir/dc.out" 2>&1 || { tail -20 "$dir/dc.out"; bad "net_udp_dc ops failed"; exit 1; }
for side in client server; do
	"$tool" "$dir/t.pcapng.$side" >"$dir/$side.txt" 2>&1 || bad "gdak-trace $side: exit $?"
done
c=$dir/client.txt s=$dir/server.txt
# the client's DCI: 4 rounds x 3 DCTs of WRITE (3 packets), READ, FA, 2 CAS; a 3-packet SEND
n_w=$(grep -c 'PACKET tx .* DC_RDMA_WRITE_FIRST ' "$c")
n_r=$(grep -c 'PACKET tx .* DC_RDMA_READ_REQUEST ' "$c")
n_fa=$(grep -c 'PACKET tx .* DC_FETCH_ADD ' "$c")
n_cs=$(grep -c 'PACKET tx .* DC_COMPARE_SWAP ' "$c")
n_s=$(grep -c 'PACKET tx .* DC_SEND_\(FIRST\|MIDDLE\|LAST\) ' "$c")
((n_w >= 12)) && ok "gdak-trace: $n_w DC WRITEs sent" || bad "DC WRITE_FIRST packets: $n_w"
((n_r >= 12)) && ok "gdak-trace: $n_r DC READ requests" || bad "DC READ packets: $n_r"
((n_fa >= 12 && n_cs >= 24)) && ok "gdak-trace: DC atomics ($n_fa FA, $n_cs CAS)" || bad "DC atomics: $n_fa FA, $n_cs CAS"
((n_s >= 3)) && ok "gdak-trace: the 3-packet DC SEND" || bad "DC SEND packets: $n_s"
grep -q 'PACKET tx .* DC_RDMA_WRITE_FIRST .* dc_key=0x1111222233334444 dc_stream=0 dci=0x[0-9a-f]* dc_conn=[0-9]* dc_mtu=1024 dc_psn0=' "$c" &&
	ok "gdak-trace: the DCETH's fields" || bad "DCETH not decoded"
grep -q 'PACKET tx .* DC_ACKNOWLEDGE .* aeth=ACK' "$s" && ok "gdak-trace: the DCTs' DC ACKs" || bad "no DC ACK in the server's trace"
grep -q 'PACKET tx .* DC_RDMA_READ_RESPONSE_FIRST ' "$s" && grep -q 'PACKET tx .* DC_ATOMIC_ACKNOWLEDGE .* orig=' "$s" &&
	ok "gdak-trace: read responses and atomic ACKs" || bad "no DC read response / atomic ACK"
if cat "$c" "$s" | grep 'PACKET' | grep -qv 'icrc=ok'; then bad "a packet without icrc=ok"; else ok "every packet icrc=ok"; fi
n_all=$(grep -c 'PACKET tx .* DC_' "$c")

tshark_or_end
tshark_decode_as "$dir/t.pcapng.client"
# the client's sent packets: its own port as the UDP source
sp=$(grep -m1 -o 'PACKET tx flow=127\.0\.0\.1:[0-9]*' "$c" | sed 's/.*://')
tshark_frames "$dir/t.pcapng.client" "infiniband.bth.opcode >= 0xe0 && udp.srcport == $sp" "$n_all" "DC opcodes"
if tshark -v 2>/dev/null | grep -q 'with Lua\|Lua [0-9]'; then
	tshark -X "lua_script:$lua" -r "$dir/t.pcapng.client" "${das[@]}" --disable-protocol rpcordma \
		-Y "gdak.dc.key && udp.srcport == $sp" -T fields -e gdak.dc.opcode -e gdak.dc.key -e gdak.dc.mtu \
		>"$dir/lua.txt" 2>"$dir/lua.err"
	lua_decoded "$dir/lua.txt" "$n_all" "DCETHs"
	grep -qP '^0xea\t0x1111222233334444\t3$|^0xe6\t0x1111222233334444\t3$' "$dir/lua.txt" &&
		ok "Lua: a DC WRITE with DCT 0's key and MTU 1024" || bad "Lua: no DC WRITE line"
	grep -qP '^0xf4\t0x0*dc\t3$' "$dir/lua.txt" && ok "Lua: a DC FETCH_ADD to DCT 1" || bad "Lua: no DC FA line"
	lua_unmarked "$lua" "$dir/t.pcapng.client" 'gdak.dc.malformed' "DC packet"
else
	echo "tshark without Lua: the dissector check skipped"
fi
trace_checks_end
