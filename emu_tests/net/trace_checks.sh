# trace_checks.sh - sourced by the net_*_trace.sh tests: their verdict
# (ok / bad, counted in fails) and the Wireshark half every one of them
# runs over a capture: decode gdak's UDP ports as InfiniBand, count the
# frames a filter selects against what gdak-trace counted, and find no
# malformed frame.
fails=0
ok() { echo "ok: $*"; }
bad() { echo "FAIL: $*" >&2; fails=$((fails + 1)); }

# No tshark: say so and end the test with what the gdak-trace half found.
tshark_or_end() {
	if ! command -v tshark >/dev/null 2>&1; then
		echo "tshark not installed: the Wireshark checks skipped"
		echo "$fails failed"
		exit $((fails != 0))
	fi
}

# das: tshark's decode-as arguments for every UDP port in PCAP.
tshark_decode_as() {
	local p
	das=()
	for p in $(tshark -r "$1" -Y udp -T fields -e udp.srcport -e udp.dstport 2>/dev/null | tr '\t' '\n' | sort -u); do
		das+=(-d "udp.port==$p,infiniband")
	done
}

# tshark_frames PCAP FILTER WANT WHAT: FILTER selects WANT frames of PCAP
# (WHAT names them), and none of PCAP's frames is malformed.
tshark_frames() {
	local n m
	n=$(tshark -r "$1" "${das[@]}" --disable-protocol rpcordma -Y "$2" 2>/dev/null | wc -l)
	((n == $3)) && ok "tshark: $n InfiniBand frames with $4" || bad "tshark saw $n of $3"
	m=$(tshark -r "$1" "${das[@]}" --disable-protocol rpcordma -Y '_ws.malformed' 2>/dev/null | wc -l)
	((m == 0)) && ok "tshark: nothing malformed" || bad "tshark: $m malformed frames"
}

# lua_decoded TXT WANT WHAT: the dissector's field lines in TXT are WANT
# (WHAT names them); else its stderr (TXT's .err beside it) is shown.
lua_decoded() {
	local nl
	nl=$(wc -l <"$1")
	((nl == $2)) && ok "Lua: $nl $3 decoded" || { cat "${1%.txt}.err"; bad "Lua decoded $nl of $2"; }
}

# lua_unmarked LUA PCAP FILTER WHAT: the dissector LUA marks none of PCAP's
# frames with its malformed field FILTER.
lua_unmarked() {
	local e
	e=$(tshark -X "lua_script:$1" -r "$2" "${das[@]}" -Y "$3" 2>/dev/null | wc -l)
	((e == 0)) && ok "Lua: no $4 marked malformed" || bad "Lua: $e marked malformed"
}

# The verdict: how many checks failed, and the exit status that says so.
trace_checks_end() {
	echo "$fails failed"
	exit $((fails != 0))
}
