#!/bin/bash
# net_xatomic_trace.sh FID_ATOMIC GDAK_TRACE LUA - gdak's extended atomics
# (ExtAtomicETH, docs/UDP.md) in a trace: gdak.fid.atomic's emu:udp half
# run with GDAK_TRACE; gdak-trace names the packets and their fields, every
# ICRC is right; tshark (when installed) takes them as InfiniBand without a
# malformed mark, and with tools/gdak-trace.lua decodes each ExtAtomicETH:
# as many as gdak-trace counted, both operand sizes, no expert error.
set -u
fid=$1 tool=$2 lua=$3
dir=$(mktemp -d "${TMPDIR:-/tmp}/gdak-xat.XXXXXX")
trap 'rm -rf "$dir"' EXIT
. "$(dirname "$0")/trace_checks.sh"

GDAK_TRACE=$dir/t.pcapng "$fid" >"$dir/fid.out" 2>&1 || { cat "$dir/fid.out"; bad "fid_atomic failed"; exit 1; }
"$tool" "$dir/t.pcapng" >"$dir/dec.txt" 2>&1 || bad "gdak-trace exit $?"
n_fa4=$(grep -c 'PACKET tx .* GDAK_MASKED_FETCH_ADD .* size=4 ' "$dir/dec.txt")
n_cs4=$(grep -c 'PACKET tx .* GDAK_MASKED_COMPARE_SWAP .* size=4 ' "$dir/dec.txt")
n_x8=$(grep -c 'PACKET tx .* GDAK_MASKED_[A-Z_]* .* size=8 ' "$dir/dec.txt")
n_all=$(grep -c 'PACKET .* GDAK_MASKED_' "$dir/dec.txt")
# gdak.fid.atomic on emu:udp: case_ok (3 4-byte FAs, 3 4-byte CSs, one 8-byte
# FA and CS) and the unaligned 4-byte FA
((n_fa4 == 4)) && ok "gdak-trace: 4 4-byte masked FETCH_ADD sent" || bad "4-byte FA packets: $n_fa4"
((n_cs4 == 3)) && ok "gdak-trace: 3 4-byte masked COMPARE_SWAP sent" || bad "4-byte CS packets: $n_cs4"
((n_x8 == 2)) && ok "gdak-trace: 2 8-byte extended atomics sent" || bad "8-byte packets: $n_x8"
grep -q 'GDAK_MASKED_COMPARE_SWAP .* swap_add=0x9 compare=0x5 swap_mask=0xffffffff compare_mask=0xffffffff' "$dir/dec.txt" &&
	ok "gdak-trace: the ExtAtomicETH fields as posted" || bad "CS fields not decoded"
grep -q 'WQE .* ATOMIC_MASKED_CS .* opmod=8 .* swap=0x9 compare=0x5 swap_mask=0xffffffff' "$dir/dec.txt" &&
	ok "gdak-trace: the 4-byte WQE segment decoded as such" || bad "4-byte WQE not decoded"
if grep 'PACKET' "$dir/dec.txt" | grep -qv 'icrc=ok'; then bad "a packet without icrc=ok"; else ok "every packet icrc=ok"; fi

tshark_or_end
tshark_decode_as "$dir/t.pcapng"
tshark_frames "$dir/t.pcapng" 'infiniband.bth.opcode == 0xd3 || infiniband.bth.opcode == 0xd4' "$n_all" "opcode 0xd3/0xd4"
if tshark -v 2>/dev/null | grep -q 'with Lua\|Lua [0-9]'; then
	tshark -X "lua_script:$lua" -r "$dir/t.pcapng" "${das[@]}" --disable-protocol rpcordma \
		-Y gdak_xatomic -T fields -e gdak.xatomic.opcode -e gdak.xatomic.size \
		-e gdak.xatomic.swap_add -e gdak.xatomic.swap_mask >"$dir/lua.txt" 2>"$dir/lua.err"
	lua_decoded "$dir/lua.txt" "$n_all" "ExtAtomicETHs"
	grep -qP '^0xd3\t2\t0x0+9\t0x0+ffffffff$' "$dir/lua.txt" && ok "Lua: a 4-byte CS with its swap and mask" || bad "Lua: no 4-byte CS line"
	grep -qP '^0xd4\t3\t' "$dir/lua.txt" && ok "Lua: an 8-byte FA" || bad "Lua: no 8-byte FA line"
	lua_unmarked "$lua" "$dir/t.pcapng" 'gdak.xatomic.malformed' "ExtAtomicETH"
else
	echo "tshark without Lua: the dissector check skipped"
fi
trace_checks_end
