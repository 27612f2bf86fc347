#!/usr/bin/env bash
# verbs_bin_tshark.sh - what two gdak-run processes put on the wire is
# RoCEv2 that Wireshark's own dissector decodes.  dumpcap captures lo
# (only this test's two addresses) while perftest's ib_write_lat (64 KiB:
# WRITE FIRST/MIDDLE/LAST), ib_send_lat (5000 B: SEND FIRST..LAST),
# ib_read_lat (8 KiB: READ responses FIRST..LAST) and ib_atomic_bw
# (FETCH_ADD) run between them; then, with no -d option (RoCEv2's port
# 4791 is the dissector's own):
#   * every UDP/4791 frame decodes as InfiniBand with a BTH opcode, none
#     malformed or flagged by the expert system;
#   * the opcodes of the four operations and their ACKs are all there;
#   * the ICRC tshark reports for each frame is the one this test computes
#     over the frame's real headers (IBA annex A17.3.3 masking; the
#     dissector itself only shows it), and gdak-trace agrees (icrc=ok);
#   * the capture holds every packet the server's gdak trace recorded (less
#     what the kernel dropped before dumpcap read it, which it reports).
# Needs root (or capture rights) for dumpcap: 77 otherwise.
here=$(dirname "$0")
# shellcheck source=verbs_bin_lib.sh
. "$here/verbs_bin_lib.sh"

vb_need ib_write_lat ib_send_lat ib_read_lat ib_atomic_bw tshark dumpcap python3 ss
[[ -x ${GDAK_TRACE_TOOL:-} ]] || { echo "GDAK_TRACE_TOOL not set" >&2; exit 1; }
vb_init
A=$VB_SRV_ADDR
B=$VB_CLI_ADDR
pcap=$VB_DIR/lo.pcapng
caplog=$VB_DIR/dumpcap.log

probes=0
# a datagram A -> B:9 (discard), not RoCE; from a random source port, which
# tshark's heuristics may take for TZSP, HCrt, ... and call malformed: the
# malformed check below leaves the probes out
probe() {
	python3 -c "
import socket
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind(('$A', 0))
s.sendto(b'gdak probe', ('$B', 9))" 2>/dev/null
	probes=$((probes + 1))
}
captured() { # dumpcap's latest "Packets: N" (0 before its first report)
	local n
	n=$(tr '\r' '\n' <"$caplog" | sed -n 's/.*Packets: \([0-9]*\).*/\1/p' | tail -n 1)
	echo "${n:-0}"
}

# a large kernel buffer (-B MiB): on a loaded machine dumpcap is not always
# scheduled in time, and the kernel drops what its buffer cannot hold
dumpcap -i lo -B 128 -f "udp and host $A and host $B" -w "$pcap" >"$caplog" 2>&1 &
dpid=$!
VB_PIDS="${VB_PIDS:-} $dpid"
# dumpcap reports "Capturing on" before its socket is attached: probe until
# a probe shows (bounded by tries)
started=0
for ((i = 0; i < 200; i++)); do
	kill -0 "$dpid" 2>/dev/null || break
	probe
	sleep 0.05
	if (($(captured) > 0)); then
		started=1
		break
	fi
done
if ((!started)); then
	kill "$dpid" 2>/dev/null
	wait "$dpid"
	cat "$caplog" >&2
	vb_skip "dumpcap cannot capture on lo here (needs root or capture rights)"
fi

sgid=$(vb_gid_index "$A")
cgid=$(vb_gid_index "$B")
[[ -n $sgid && -n $cgid ]]
vb_check $? "RoCE v2 GIDs of $A and $B: indexes '$sgid' '$cgid'"
[[ -n $sgid && -n $cgid ]] || vb_show "$VB_DIR"/devinfo.*

# each pair's server traces, so that its packets can be counted
n=0
for t in "ib_write_lat -s 65536 -n 10" "ib_send_lat -s 5000 -n 10" "ib_read_lat -s 8192 -n 10" \
	"ib_atomic_bw -n 10"; do
	n=$((n + 1))
	VB_SRV_OPTS="--trace $VB_DIR/srv$n.pcapng" \
		vb_pair "p$n" "$t -d mlx5_0 -F -p @PORT@ -x $sgid" "$t -d mlx5_0 -F -p @PORT@ -x $cgid $A"
	((VB_SRV_RC == 0 && VB_CLI_RC == 0))
	vb_check $? "${t%% *}: server exited $VB_SRV_RC, client $VB_CLI_RC"
	((VB_SRV_RC || VB_CLI_RC)) && vb_show "$VB_DIR/p$n.srv" "$VB_DIR/p$n.cli"
done

# packets the server traces saw (each packet of the session is sent or
# received by the server)
session=0
for ((k = 1; k <= n; k++)); do
	p=$("$GDAK_TRACE_TOOL" --summary "$VB_DIR/srv$k.pcapng" 2>/dev/null |
		sed -n 's/^total: .*packets \([0-9]*\),.*/\1/p')
	session=$((session + ${p:-0}))
done
((session > 0))
vb_check $? "the server traces recorded $session packets"

# the kernel ring hands packets to dumpcap a block at a time, in arrival
# order: once the count covers every probe sent so far plus the session,
# everything is in the file
for ((i = 0; i < 100; i++)); do
	probe
	(($(captured) >= session + probes)) && break
	sleep 0.05
done
kill -INT "$dpid" 2>/dev/null
wait "$dpid"
# what the kernel dropped before dumpcap read it ("received/dropped ... N/M"):
# those frames are missing from the file, which is the capture's loss, not
# the wire's
kdrop=$(tr '\r' '\n' <"$caplog" | sed -n 's|.*received/dropped on interface.*: [0-9]*/\([0-9]*\) .*|\1|p' | tail -n 1)
kdrop=${kdrop:-0}
((kdrop == 0)) || echo "(the kernel dropped $kdrop frames before dumpcap read them)"

# tshark's view: frame number, BTH opcode, the ICRC it shows
tshark -r "$pcap" --disable-protocol rpcordma -Y 'udp.port == 4791' \
	-T fields -e frame.number -e infiniband.bth.opcode -e infiniband.invariant.crc \
	>"$VB_DIR/fields" 2>"$VB_DIR/tshark.err"
vb_check $? "tshark reads the capture"
tshark -r "$pcap" --disable-protocol rpcordma \
	-Y '(_ws.malformed || _ws.expert.severity >= 6291456) && !(udp.dstport == 9)' \
	>"$VB_DIR/flagged" 2>/dev/null
nflag=$(wc -l <"$VB_DIR/flagged")
vb_check $((nflag != 0)) "no frame malformed or flagged by tshark's expert system ($nflag)"
((nflag)) && head -n 5 "$VB_DIR/flagged" >&2

# the frames' bytes for the ICRC check, as a libpcap file (pcapng: gdak-trace's)
tshark -r "$pcap" -F pcap -w "$VB_DIR/lo.pcap" 2>/dev/null
vb_check $? "tshark converts the capture to libpcap for the ICRC check"
python3 - "$VB_DIR/lo.pcap" "$VB_DIR/fields" "$session" "$kdrop" <<'EOF'
import struct, sys, zlib

pcap, fields, session, kdrop = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
fails = 0

def check(cond, what):
    global fails
    print(("ok: " if cond else "FAIL: ") + what, file=sys.stdout if cond else sys.stderr)
    if not cond:
        fails += 1

# the frames, from the libpcap file (Ethernet link type on lo)
frames = {}
with open(pcap, "rb") as f:
    hdr = f.read(24)
    magic, = struct.unpack("<I", hdr[:4])
    end = "<" if magic in (0xA1B2C3D4, 0xA1B23C4D) else ">"
    linktype, = struct.unpack(end + "I", hdr[20:24])
    num = 0
    while True:
        rec = f.read(16)
        if len(rec) < 16:
            break
        _, _, incl, _ = struct.unpack(end + "IIII", rec)
        num += 1
        frames[num] = f.read(incl)
check(linktype == 1, f"capture link type {linktype} (Ethernet)")

def icrc_of(frame):
    """The RoCEv2 ICRC over the IPv4/UDP/BTH headers and the payload, with
    the variant fields masked (IBA annex A17.3.3): 8 bytes of ones for the
    absent LRH, IPv4 TOS, TTL and checksum, UDP checksum and the BTH's
    reserved byte all ones.  Returns (computed, carried) as wire bytes."""
    ip = bytearray(frame[14:])
    ihl = (ip[0] & 0x0F) * 4
    total = struct.unpack(">H", ip[2:4])[0]
    ip = ip[:total]
    masked = bytearray(ip[:-4])
    masked[1] = 0xFF                     # TOS
    masked[8] = 0xFF                     # TTL
    masked[10:12] = b"\xff\xff"          # header checksum
    masked[ihl + 6:ihl + 8] = b"\xff\xff"  # UDP checksum
    masked[ihl + 8 + 4] = 0xFF           # BTH resv8a
    crc = zlib.crc32(b"\xff" * 8 + bytes(masked)) & 0xFFFFFFFF
    return struct.pack("<I", crc), bytes(ip[-4:])

names = {0x00: "SEND_FIRST", 0x01: "SEND_MIDDLE", 0x02: "SEND_LAST", 0x04: "SEND_ONLY",
         0x06: "WRITE_FIRST", 0x07: "WRITE_MIDDLE", 0x08: "WRITE_LAST", 0x0A: "WRITE_ONLY",
         0x0C: "READ_REQUEST", 0x0D: "READ_RESP_FIRST", 0x0E: "READ_RESP_MIDDLE",
         0x0F: "READ_RESP_LAST", 0x10: "READ_RESP_ONLY", 0x11: "ACK", 0x12: "ATOMIC_ACK",
         0x13: "CMP_SWAP", 0x14: "FETCH_ADD"}
count = {}
nframes = noop = bad_icrc = shown = 0
for line in open(fields):
    parts = line.rstrip("\n").split("\t")
    nframes += 1
    try:
        num, op = int(parts[0]), int(parts[1], 0)
        shown_crc = int(parts[2], 0)
    except (ValueError, IndexError):
        noop += 1
        continue
    count[op] = count.get(op, 0) + 1
    computed, carried = icrc_of(frames[num])
    # tshark shows the four ICRC bytes as a big-endian number
    if not (computed == carried and shown_crc == int.from_bytes(carried, "big")):
        bad_icrc += 1
        if shown < 5:
            shown += 1
            print(f"frame {num}: opcode {op:#x}: tshark shows ICRC {shown_crc:#010x}, frame "
                  f"carries {carried.hex()}, computed {computed.hex()}", file=sys.stderr)

check(nframes > 0, f"{nframes} UDP/4791 frames")
check(noop == 0, f"every UDP/4791 frame has a BTH opcode and an ICRC in tshark ({noop} not)")
check(bad_icrc == 0, f"the ICRC tshark reports is correct in every frame ({bad_icrc} not)")
print("opcodes: " + ", ".join(f"{names.get(o, hex(o))}={n}" for o, n in sorted(count.items())))
for op in (0x06, 0x07, 0x08, 0x00, 0x02, 0x0C, 0x0D, 0x0F, 0x11, 0x12, 0x14):
    check(count.get(op, 0) > 0, f"opcode {names[op]} on the wire ({count.get(op, 0)})")
if kdrop == 0:
    check(nframes == session, f"the capture's {nframes} RoCE frames are the {session} packets "
          "the server traces recorded")
else:
    # the capture lost frames of its own: only fewer can be there, never more
    check(session - kdrop <= nframes <= session, f"the capture's {nframes} RoCE frames: the "
          f"{session} packets the server traces recorded less at most the {kdrop} the kernel "
          "dropped before dumpcap read them")
sys.exit(1 if fails else 0)
EOF
vb_check $? "the capture decodes as RoCEv2 with correct ICRCs (lines above)"

# gdak's own decoder over the kernel's real headers: every packet icrc=ok
"$GDAK_TRACE_TOOL" "$pcap" >"$VB_DIR/decoded" 2>/dev/null
tot=$(grep -c 'icrc=' "$VB_DIR/decoded")
ok=$(grep -c 'icrc=ok' "$VB_DIR/decoded")
((tot > 0 && tot == ok))
vb_check $? "gdak-trace over the capture: $ok of $tot packets icrc=ok"
vb_end
