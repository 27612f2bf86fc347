-- SPDX-License-Identifier: MIT
-- gdak-trace.lua - Wireshark/tshark dissector for gdak's trace records
-- (pcapng Custom Blocks with PEN 32473, docs/TRACE.md "gdak records").
--
--   tshark -X lua_script:tools/gdak-trace.lua -r run.pcapng -V -Y gdak
--   wireshark -X lua_script:tools/gdak-trace.lua run.pcapng
-- or copy it to ~/.local/lib/wireshark/plugins/.
--
-- It shows the record header and each body's fixed fields, strings and raw
-- bytes.  Opcode and syndrome *names* come from gdak-trace (one table, in
-- core/src/mlx5_names.c); here they are shown as numbers.  Every length is
-- checked against the block before use: a bad one gets an expert note.

local GDAK_PEN = 32473

local gdak = Proto("gdak", "gdak NIC-model trace record")

local rec_types = {
	[1] = "DOORBELL", [2] = "WQE", [3] = "CQE", [4] = "VIOLATION", [5] = "FAULT",
	[6] = "LOST", [7] = "QP", [8] = "RECV_WQE", [9] = "NOTE", [10] = "STATS",
}
local handlers = { [0] = "DB", [1] = "BF", [2] = "CPU_PROXY" }

local pf = {
	type = ProtoField.uint8("gdak.type", "Record type", base.DEC, rec_types),
	version = ProtoField.uint8("gdak.version", "Version"),
	hdr_len = ProtoField.uint16("gdak.hdr_len", "Header length"),
	body_len = ProtoField.uint32("gdak.body_len", "Body length"),
	ts = ProtoField.uint64("gdak.ts_ns", "Timestamp (ns)"),
	thread = ProtoField.uint32("gdak.thread", "NIC thread"),
	qpn = ProtoField.uint32("gdak.qpn", "QPN", base.HEX),
	seq = ProtoField.uint64("gdak.seq", "Sequence"),
	dbrec_pi = ProtoField.uint16("gdak.db.pi", "Doorbell record PI"),
	handler = ProtoField.uint8("gdak.db.handler", "Handler", base.DEC, handlers),
	flags = ProtoField.uint16("gdak.flags", "Flags", base.HEX),
	reg_len = ProtoField.uint16("gdak.db.reg_len", "Register bytes"),
	reg = ProtoField.bytes("gdak.db.reg", "Register write"),
	wqe_index = ProtoField.uint16("gdak.wqe_index", "WQE index"),
	len = ProtoField.uint32("gdak.len", "Raw length"),
	wqe = ProtoField.bytes("gdak.wqe", "WQE bytes"),
	wqe_opcode = ProtoField.uint8("gdak.wqe.opcode", "WQE opcode", base.HEX),
	wqe_ds = ProtoField.uint8("gdak.wqe.ds", "WQE DS count"),
	cqn = ProtoField.uint32("gdak.cqe.cqn", "CQN", base.HEX),
	cq_index = ProtoField.uint32("gdak.cqe.index", "CQ index"),
	cqe = ProtoField.bytes("gdak.cqe", "CQE bytes"),
	cqe_opcode = ProtoField.uint8("gdak.cqe.opcode", "CQE opcode"),
	cqe_syndrome = ProtoField.uint8("gdak.cqe.syndrome", "CQE syndrome", base.HEX),
	syndrome = ProtoField.uint8("gdak.syndrome", "Syndrome", base.HEX),
	name = ProtoField.string("gdak.name", "Rule / kind"),
	text = ProtoField.string("gdak.text", "Text"),
	peer = ProtoField.uint32("gdak.qp.peer", "Peer QPN", base.HEX),
	transport = ProtoField.string("gdak.qp.transport", "Transport"),
	lost = ProtoField.uint64("gdak.lost.records", "Lost records"),
	lost_bytes = ProtoField.uint64("gdak.lost.bytes", "Lost bytes"),
	st_records = ProtoField.uint64("gdak.stats.records", "Records"),
	st_bytes = ProtoField.uint64("gdak.stats.bytes", "File bytes"),
	st_lost = ProtoField.uint64("gdak.stats.lost", "Lost"),
	st_flushes = ProtoField.uint64("gdak.stats.flushes", "Flushes"),
	st_packets = ProtoField.uint64("gdak.stats.packets", "Packets"),
}
gdak.fields = pf

local ef_short = ProtoExpert.new("gdak.short", "gdak record shorter than its lengths say",
				 expert.group.MALFORMED, expert.severity.ERROR)
gdak.experts = { ef_short }

local f_pen = Field.new("frame.cb_pen")

-- add a counted string; returns the next offset or nil when it overruns
local function add_str(tree, field, body, off, n)
	if off + n > body:len() then return nil end
	if n > 0 then tree:add(field, body(off, n)) end
	return off + n
end

local function dissect_body(t, ty, body, item)
	local n = body:len()
	local function need(k)
		if n < k then item:add_proto_expert_info(ef_short) return false end
		return true
	end
	if ty == 1 then
		if not need(8) then return "" end
		local rl = body(4, 2):le_uint()
		t:add_le(pf.dbrec_pi, body(0, 2))
		t:add_le(pf.handler, body(2, 1))
		t:add_le(pf.reg_len, body(4, 2))
		if 8 + rl > n then item:add_proto_expert_info(ef_short) return "" end
		if rl > 0 then t:add(pf.reg, body(8, rl)) end
		return string.format("pi=%d handler=%s", body(0, 2):le_uint(),
				     handlers[body(2, 1):uint()] or "?")
	elseif ty == 2 or ty == 8 then
		if not need(8) then return "" end
		local l = body(4, 4):le_uint()
		t:add_le(pf.wqe_index, body(0, 2))
		t:add_le(pf.flags, body(2, 2))
		t:add_le(pf.len, body(4, 4))
		if 8 + l > n then item:add_proto_expert_info(ef_short) return "" end
		if l > 0 then t:add(pf.wqe, body(8, l)) end
		if ty == 2 and l >= 16 then
			-- ctrl segment: opmod_idx_opcode (be32) low byte, qpn_ds (be32) low 6 bits
			t:add(pf.wqe_opcode, body(8 + 3, 1))
			t:add(pf.wqe_ds, body(8 + 7, 1), bit.band(body(8 + 7, 1):uint(), 0x3f))
			return string.format("idx=%d opcode=0x%02x", body(0, 2):le_uint(),
					     body(8 + 3, 1):uint())
		end
		return string.format("idx=%d len=%d", body(0, 2):le_uint(), l)
	elseif ty == 3 then
		if not need(72) then return "" end
		t:add_le(pf.cqn, body(0, 4))
		t:add_le(pf.cq_index, body(4, 4))
		t:add(pf.cqe, body(8, 64))
		local op = bit.rshift(body(8 + 63, 1):uint(), 4)
		t:add(pf.cqe_opcode, body(8 + 63, 1), op)
		if op == 13 or op == 14 then
			t:add(pf.cqe_syndrome, body(8 + 55, 1))
			return string.format("cqe opcode=%d syndrome=0x%02x wqe_counter=%d", op,
					     body(8 + 55, 1):uint(), body(8 + 60, 2):uint())
		end
		return string.format("cqe opcode=%d wqe_counter=%d", op, body(8 + 60, 2):uint())
	elseif ty == 4 or ty == 5 then
		if not need(8) then return "" end
		t:add_le(pf.wqe_index, body(0, 2))
		if ty == 4 then t:add(pf.syndrome, body(2, 1)) end
		local o = add_str(t, pf.name, body, 8, body(4, 2):le_uint())
		if o then o = add_str(t, pf.text, body, o, body(6, 2):le_uint()) end
		if not o then item:add_proto_expert_info(ef_short) return "" end
		return string.format("idx=%d %s", body(0, 2):le_uint(),
				     body(8, body(4, 2):le_uint()):string())
	elseif ty == 7 then
		if not need(8) then return "" end
		t:add_le(pf.peer, body(0, 4))
		local o = add_str(t, pf.transport, body, 8, body(4, 2):le_uint())
		if o then o = add_str(t, pf.text, body, o, body(6, 2):le_uint()) end
		if not o then item:add_proto_expert_info(ef_short) end
		return string.format("peer=0x%06x", body(0, 4):le_uint())
	elseif ty == 9 then
		if not need(8) then return "" end
		if not add_str(t, pf.text, body, 8, body(0, 2):le_uint()) then
			item:add_proto_expert_info(ef_short)
		end
		return ""
	elseif ty == 6 then
		if not need(16) then return "" end
		t:add_le(pf.lost, body(0, 8))
		t:add_le(pf.lost_bytes, body(8, 8))
		return string.format("lost %s records", tostring(body(0, 8):le_uint64()))
	elseif ty == 10 then
		if not need(40) then return "" end
		t:add_le(pf.st_records, body(0, 8))
		t:add_le(pf.st_bytes, body(8, 8))
		t:add_le(pf.st_lost, body(16, 8))
		t:add_le(pf.st_flushes, body(24, 8))
		t:add_le(pf.st_packets, body(32, 8))
		return string.format("records=%s lost=%s", tostring(body(0, 8):le_uint64()),
				     tostring(body(16, 8):le_uint64()))
	end
	return ""
end

function gdak.dissector(tvb, pinfo, tree)
	local pen = f_pen()
	if not pen or pen.value ~= GDAK_PEN then return end
	local item = tree:add(gdak, tvb())
	if tvb:len() < 32 then
		item:add_proto_expert_info(ef_short)
		return
	end
	local ty = tvb(0, 1):uint()
	local hdr_len = tvb(2, 2):le_uint()
	local body_len = tvb(4, 4):le_uint()
	item:add(pf.type, tvb(0, 1))
	item:add(pf.version, tvb(1, 1))
	item:add_le(pf.hdr_len, tvb(2, 2))
	item:add_le(pf.body_len, tvb(4, 4))
	item:add_le(pf.ts, tvb(8, 8))
	item:add_le(pf.thread, tvb(16, 4))
	item:add_le(pf.qpn, tvb(20, 4))
	item:add_le(pf.seq, tvb(24, 8))
	pinfo.cols.protocol = "gdak"
	if hdr_len < 32 or hdr_len + body_len > tvb:len() then
		item:add_proto_expert_info(ef_short)
		return
	end
	local info = ""
	if body_len > 0 then
		info = dissect_body(item, ty, tvb(hdr_len, body_len):tvb(), item)
	end
	local qpn = tvb(20, 4):le_uint()
	pinfo.cols.info = string.format("%s %s %s", rec_types[ty] or ("REC_" .. ty),
					qpn == 0xffffffff and "" or string.format("qp 0x%06x", qpn), info)
end

register_postdissector(gdak)
