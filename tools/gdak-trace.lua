-- SPDX-License-Identifier: MIT
-- gdak-trace.lua - Wireshark/tshark dissector for gdak's trace records
-- (pcapng Custom Blocks with PEN 32473, docs/TRACE.md "gdak records").
--
--   tshark -X lua_script:tools/gdak-trace.lua -r run.pcapng -V -Y gdak
--   wireshark -X lua_script:tools/gdak-trace.lua run.pcapng
-- or copy it to ~/.local/lib/wireshark/plugins/.
--
-- It shows the record header and each body's fixed fields, strings and raw
-- bytes, opcodes and syndromes by name.  The names are a copy of gdak's one
-- table (core/src/mlx5_names.c, what gdak-trace prints); gdak.trace.lua_names
-- fails when the copy below differs from it.  Every length is checked against
-- the block before use: a bad one gets an expert note.
--
-- PEN 32473: Wireshark's own pcapng dissector names it "Example Enterprise
-- Number" (RFC 5612 reserves it for documentation); gdak has no IANA number
-- of its own yet and uses that one.  The "gdak" tree says so.

local GDAK_PEN = 32473

-- names: generated from gdak_mlx5_opcode_name / _cqe_opcode_name /
-- _syndrome_name (every code with a name)
local wqe_ops = {
	[0x00] = "NOP",
	[0x01] = "SEND_INVAL",
	[0x08] = "RDMA_WRITE",
	[0x09] = "RDMA_WRITE_IMM",
	[0x0a] = "SEND",
	[0x0b] = "SEND_IMM",
	[0x0e] = "TSO",
	[0x0f] = "WAIT",
	[0x10] = "RDMA_READ",
	[0x11] = "ATOMIC_CS",
	[0x12] = "ATOMIC_FA",
	[0x14] = "ATOMIC_MASKED_CS",
	[0x15] = "ATOMIC_MASKED_FA",
	[0x19] = "FMR",
	[0x1b] = "LOCAL_INVAL",
	[0x1f] = "CONFIG_CMD",
	[0x20] = "SET_PSV",
	[0x23] = "DUMP",
	[0x25] = "UMR",
	[0x28] = "TAG_MATCHING",
	[0x2c] = "FLOW_TBL_ACCESS",
	[0x2f] = "MMO",
}
local cqe_ops = {
	[0] = "REQ",
	[1] = "RESP_WR_IMM",
	[2] = "RESP_SEND",
	[3] = "RESP_SEND_IMM",
	[4] = "RESP_SEND_INV",
	[5] = "RESIZE_CQ",
	[6] = "NO_PACKET",
	[12] = "SIG_ERR",
	[13] = "REQ_ERR",
	[14] = "RESP_ERR",
	[15] = "INVALID",
}
local syndromes = {
	[0x01] = "LOCAL_LENGTH_ERR",
	[0x02] = "LOCAL_QP_OP_ERR",
	[0x04] = "LOCAL_PROT_ERR",
	[0x05] = "WR_FLUSH_ERR",
	[0x06] = "MW_BIND_ERR",
	[0x10] = "BAD_RESP_ERR",
	[0x11] = "LOCAL_ACCESS_ERR",
	[0x12] = "REMOTE_INVAL_REQ_ERR",
	[0x13] = "REMOTE_ACCESS_ERR",
	[0x14] = "REMOTE_OP_ERR",
	[0x15] = "TRANSPORT_RETRY_EXC_ERR",
	[0x16] = "RNR_RETRY_EXC_ERR",
	[0x22] = "REMOTE_ABORTED_ERR",
}

local gdak = Proto("gdak", "gdak NIC-model trace record")

-- as gdak-trace names an unknown code: its value shows
local function opname(v) return wqe_ops[v] or string.format("OPCODE_0x%02x", v) end
local function cqename(v) return cqe_ops[v] or string.format("CQE_0x%x", v) end
local function syndname(v) return syndromes[v] or string.format("SYNDROME_0x%02x", v) end

local rec_types = {
	[1] = "DOORBELL", [2] = "WQE", [3] = "CQE", [4] = "VIOLATION", [5] = "FAULT",
	[6] = "LOST", [7] = "QP", [8] = "RECV_WQE", [9] = "NOTE", [10] = "STATS",
	[11] = "BATCH",
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
	wqe_opcode = ProtoField.uint8("gdak.wqe.opcode", "WQE opcode", base.HEX, wqe_ops),
	wqe_ds = ProtoField.uint8("gdak.wqe.ds", "WQE DS count"),
	cqn = ProtoField.uint32("gdak.cqe.cqn", "CQN", base.HEX),
	cq_index = ProtoField.uint32("gdak.cqe.index", "CQ index"),
	cqe = ProtoField.bytes("gdak.cqe", "CQE bytes"),
	cqe_opcode = ProtoField.uint8("gdak.cqe.opcode", "CQE opcode", base.DEC, cqe_ops),
	cqe_syndrome = ProtoField.uint8("gdak.cqe.syndrome", "CQE syndrome", base.HEX, syndromes),
	syndrome = ProtoField.uint8("gdak.syndrome", "Syndrome", base.HEX, syndromes),
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
	st_waits = ProtoField.uint64("gdak.stats.waits", "Waits for the file"),
	st_dropped = ProtoField.uint64("gdak.stats.dropped", "Dropped (lossy mode)"),
	b_count = ProtoField.uint32("gdak.batch.count", "Records in the batch"),
	b_flags = ProtoField.uint32("gdak.batch.flags", "Flags (0x1: goes on from the previous batch)", base.HEX),
	b_ref = ProtoField.uint64("gdak.batch.ref_seq", "Previous batch's last record"),
	sub = ProtoField.bytes("gdak.sub", "Batched record"),
	sub_type = ProtoField.uint8("gdak.sub.type", "Type", base.DEC, rec_types, 0x0f),
	sub_qpn = ProtoField.uint32("gdak.sub.qpn", "QPN", base.HEX),
	sub_pred = ProtoField.bool("gdak.sub.predicted", "Index predicted", 8, nil, 0x40),
	sub_repeat = ProtoField.uint16("gdak.sub.repeat", "Records repeating the last step"),
	nbb = ProtoField.uint8("gdak.wqe.wqebbs", "WQEBBs"),
}
gdak.fields = pf

local ef_short = ProtoExpert.new("gdak.short", "gdak record shorter than its lengths say",
				 expert.group.MALFORMED, expert.severity.ERROR)
local ef_noref = ProtoExpert.new("gdak.noref", "BATCH coded against a batch that is not in the capture",
				 expert.group.UNDECODED, expert.severity.WARN)
gdak.experts = { ef_short, ef_noref }

local f_pen = Field.new("frame.cb_pen")
local dissect_batch
-- the record header being dissected: a batch's first sub-records are about
-- its QPN; its thread, sequence number and frame key the references below
local hdr_qpn, hdr_thread, hdr_seq, cur_frame, cur_visited
-- A BATCH with flag 0x1 codes its first WQE/CQE against the previous BATCH
-- of its thread: tstate holds each thread's references as the first,
-- in-order pass left them; fstart what a continuing frame started from, for
-- when Wireshark dissects it again out of order.
local tstate, fstart = {}, {}
function gdak.init() tstate, fstart = {}, {} end

-- add a counted string; returns the next offset or nil when it overruns
local function add_str(tree, field, body, off, n)
	if off + n > body:len() then return nil end
	if n > 0 then tree:add(field, body(off, n)) end
	return off + n
end


-- BATCH (docs/TRACE.md): sub-records, WQEs/CQEs delta-coded against the
-- previous one.  Rebuilds each WQE/CQE and shows it as its own data source.
local function undelta(body, off, ref)
	local n = body:len()
	if off >= n then return nil end
	local out = {}
	for i = 0, 63 do out[i] = ref[i] end
	local wm = body(off, 1):uint()
	off = off + 1
	for w = 0, 7 do
		if bit.band(wm, bit.lshift(1, w)) ~= 0 then
			if off >= n then return nil end
			local bm = body(off, 1):uint()
			off = off + 1
			for i = 0, 7 do
				if bit.band(bm, bit.lshift(1, i)) ~= 0 then
					if off >= n then return nil end
					out[8 * w + i] = body(off, 1):uint()
					off = off + 1
				end
			end
		end
	end
	return off, out
end

local function zeros() local z = {} for i = 0, 63 do z[i] = 0 end return z end

local function bytes_of(bbs, nbb)
	local ba = ByteArray.new()
	ba:set_size(64 * nbb)
	for j = 0, nbb - 1 do
		for i = 0, 63 do ba:set_index(64 * j + i, bbs[j][i]) end
	end
	return ba
end

-- REPEAT: 64 bytes as eight big-endian 64-bit lanes, x + sign * y modulo
-- 2^64 each (byte by byte with carry: Lua 5.2 numbers are doubles)
local function lanes_op(x, y, sign)
	local out = {}
	for w = 0, 7 do
		local carry = 0
		for i = 7, 0, -1 do
			local v = x[8 * w + i] + sign * y[8 * w + i] + carry
			carry = math.floor(v / 256)
			out[8 * w + i] = v - 256 * carry
		end
	end
	return out
end
local function lanes_step(prev, cur) return lanes_op(cur, prev, -1) end
local function lanes_add(ref, st) return lanes_op(ref, st, 1) end

local ref_keys = { "wref_bbs", "wref_idx", "wref_qpn", "wref_fl", "cref", "cref_cqn", "cref_idx",
		   "wbase", "wbase_idx", "wbase_qpn", "wstep", "wstep_idx",
		   "cbase", "cbase_idx", "cbase_cqn", "cstep", "cstep_idx" }

local function copy_refs(r)
	local c = { wref = {} }
	for _, key in ipairs(ref_keys) do c[key] = r[key] end
	for j = 0, r.wref_bbs - 1 do c.wref[j] = r.wref[j] end
	return c
end

dissect_batch = function(t, body, item)
	local n = body:len()
	if n < 8 then item:add_proto_expert_info(ef_short) return "" end
	local count = body(0, 4):le_uint()
	local flags = body(4, 4):le_uint()
	t:add_le(pf.b_count, body(0, 4))
	t:add_le(pf.b_flags, body(4, 4))
	local off, qpn = 8, hdr_qpn
	local R	-- the references, as the writer had them
	if bit.band(flags, 1) ~= 0 then
		if n < 16 then item:add_proto_expert_info(ef_short) return "" end
		t:add_le(pf.b_ref, body(8, 8))
		off = 16
		if not cur_visited then
			local ts = tstate[hdr_thread]
			if ts and ts.valid and ts.last_seq == body(8, 8):le_uint64() then
				R = copy_refs(ts)
				fstart[cur_frame] = copy_refs(ts)
			end
		elseif fstart[cur_frame] then
			R = copy_refs(fstart[cur_frame])
		end
		if not R then
			item:add_proto_expert_info(ef_noref)
			return string.format("%d records, coded against a batch not in the capture", count)
		end
	else
		R = { wref = {}, wref_bbs = 0, wref_idx = 0, wref_qpn = nil, wref_fl = 0, cref = nil,
		      cref_cqn = 0, cref_idx = 0 }
	end
	local nw, nc, nd = 0, 0, 0
	local all_ok = true
	-- the progressions (docs/TRACE.md "REPEAT and OFF"): after a WQE/CQE
	-- sub-record, off = it was OFF (the base steps past it)
	local function set_wqe(bbs, nbb, idx, fl, q, off)
		if off then
			R.wbase = lanes_add(R.wbase, R.wstep)
			R.wbase_idx = (R.wbase_idx + R.wstep_idx) % 65536
		elseif nbb == 1 and fl == 0 then
			if R.wbase and R.wbase_qpn == q then
				R.wstep, R.wstep_idx = lanes_step(R.wbase, bbs[0]), (idx - R.wbase_idx) % 65536
			else
				R.wstep = nil
			end
			R.wbase, R.wbase_idx, R.wbase_qpn = bbs[0], idx, q
		else
			R.wbase, R.wstep = nil, nil
		end
		R.wref, R.wref_bbs, R.wref_idx, R.wref_qpn, R.wref_fl = bbs, nbb, idx, q, fl
	end
	local function set_cqe(out, cqn, ci, off)
		if off then
			R.cbase = lanes_add(R.cbase, R.cstep)
			R.cbase_idx = (R.cbase_idx + R.cstep_idx) % 4294967296
		else
			if R.cbase and R.cbase_cqn == cqn then
				R.cstep, R.cstep_idx = lanes_step(R.cbase, out), (ci - R.cbase_idx) % 4294967296
			else
				R.cstep = nil
			end
			R.cbase, R.cbase_idx, R.cbase_cqn = out, ci, cqn
		end
		R.cref, R.cref_cqn, R.cref_idx = out, cqn, ci
	end
	local function show_wqe(st, q, idx, bbs, nbb)
		if nbb > 0 then
			local tv = bytes_of(bbs, nbb):tvb("WQE " .. idx)
			st:add(pf.wqe, tv())
			st:add(pf.wqe_opcode, tv(3, 1))
			return string.format("WQE %s idx=%d %s", q, idx, opname(bbs[0][3]))
		end
		return string.format("WQE %s idx=%d (no bytes)", q, idx)
	end
	local function show_cqe(st, q, cqn, ci, out)
		local tv = bytes_of({[0] = out}, 1):tvb("CQE " .. ci)
		st:add(pf.cqe, tv())
		local op = bit.rshift(out[63], 4)
		st:add(pf.cqe_opcode, tv(63, 1), op)
		if op == 13 or op == 14 then
			st:add(pf.cqe_syndrome, tv(55, 1))
			return string.format("CQE %s cqn=0x%x index=%d %s syndrome=%s", q, cqn, ci,
					     cqename(op), syndname(out[55]))
		end
		return string.format("CQE %s cqn=0x%x index=%d %s", q, cqn, ci, cqename(op))
	end
	local k = 1
	while k <= count do
		local start = off
		if off >= n then item:add_proto_expert_info(ef_short) break end
		local tag = body(off, 1):uint()
		local ty = bit.band(tag, 0x0f)
		local st = t:add(pf.sub, body(off, 1))
		st:add(pf.sub_type, body(off, 1))
		off = off + 1
		if bit.band(tag, 0x80) ~= 0 then
			if off + 4 > n then item:add_proto_expert_info(ef_short) break end
			st:add_le(pf.sub_qpn, body(off, 4))
			qpn = body(off, 4):le_uint()
			off = off + 4
		end
		local q = string.format("qp 0x%06x", qpn or 0)
		local bad = false
		local adv = 1
		if bit.band(tag, 0x20) ~= 0 then
			-- REPEAT: rep records, each the previous one advanced by the last step
			local rep = (off + 2 <= n) and body(off, 2):le_uint() or 0
			if bit.band(tag, 0x50) ~= 0 or rep == 0 or rep > count - k + 1 or
			   (ty == 2 and (not R.wstep or R.wbase_qpn ~= qpn)) or
			   (ty == 3 and not R.cstep) or (ty ~= 2 and ty ~= 3) then
				bad = true
			else
				st:add_le(pf.sub_repeat, body(off, 2))
				off = off + 2
				adv = rep
				local shown = 0
				for _ = 1, rep do
					local text
					if ty == 2 then
						local idx = (R.wbase_idx + R.wstep_idx) % 65536
						local bbs = { [0] = lanes_add(R.wbase, R.wstep) }
						R.wbase, R.wbase_idx = bbs[0], idx
						R.wref, R.wref_bbs, R.wref_idx, R.wref_qpn, R.wref_fl = bbs, 1, idx, qpn, 0
						text = show_wqe(st, q, idx, bbs, 1)
						nw = nw + 1
					else
						local ci = (R.cbase_idx + R.cstep_idx) % 4294967296
						local out = lanes_add(R.cbase, R.cstep)
						R.cbase, R.cbase_idx = out, ci
						R.cref, R.cref_cqn, R.cref_idx = out, R.cbase_cqn, ci
						text = show_cqe(st, q, R.cbase_cqn, ci, out)
						nc = nc + 1
					end
					shown = shown + 1
					if shown == 1 then st:set_text(string.format("%d x %s", rep, text)) end
				end
			end
		elseif ty == 1 then
			if bit.band(tag, 0x50) ~= 0 or off + 5 > n then bad = true else
				local rl = body(off + 4, 1):uint()
				st:add_le(pf.dbrec_pi, body(off, 2))
				st:add(pf.handler, body(off + 2, 1))
				st:add(pf.reg_len, body(off + 4, 1))
				if off + 5 + rl > n then bad = true else
					if rl > 0 then st:add(pf.reg, body(off + 5, rl)) end
					st:set_text(string.format("DOORBELL %s pi=%d", q, body(off, 2):le_uint()))
					off = off + 5 + rl
					nd = nd + 1
				end
			end
		elseif ty == 2 then
			local idx, nbb, fl = nil, nil, 0
			if bit.band(tag, 0x40) ~= 0 then
				st:add(pf.sub_pred, body(start, 1))
				idx, nbb = (R.wref_idx + 1) % 65536, 1
			else
				if off + 4 > n then bad = true else
					idx, nbb = body(off, 2):le_uint(), body(off + 2, 1):uint()
					fl = body(off + 3, 1):uint()
					st:add_le(pf.wqe_index, body(off, 2))
					st:add(pf.nbb, body(off + 2, 1))
					off = off + 4
				end
			end
			local woff = bit.band(tag, 0x10) ~= 0
			if woff and (not R.wstep or R.wbase_qpn ~= qpn) then bad = true end
			if not bad and nbb <= 16 then
				local bbs = {}
				for j = 0, nbb - 1 do
					local ref = zeros()
					if j == 0 and woff then
						ref = lanes_add(R.wbase, R.wstep)
					elseif j < R.wref_bbs then
						for i = 0, 63 do ref[i] = R.wref[j][i] end
					end
					if j == 0 then
						ref[1] = bit.rshift(idx, 8)
						ref[2] = bit.band(idx, 0xff)
					end
					local o2, out = undelta(body, off, ref)
					if not o2 then bad = true break end
					bbs[j] = out
					off = o2
				end
				if not bad then
					set_wqe(bbs, nbb, idx, fl, qpn, woff)
					st:set_text(show_wqe(st, q, idx, bbs, nbb))
					nw = nw + 1
				end
			else
				bad = true
			end
		elseif ty == 3 then
			local cqn, ci
			if bit.band(tag, 0x40) ~= 0 then
				if not R.cref then bad = true else
					st:add(pf.sub_pred, body(start, 1))
					cqn, ci = R.cref_cqn, R.cref_idx + 1
				end
			elseif off + 8 > n then bad = true else
				cqn, ci = body(off, 4):le_uint(), body(off + 4, 4):le_uint()
				st:add_le(pf.cqn, body(off, 4))
				st:add_le(pf.cq_index, body(off + 4, 4))
				off = off + 8
			end
			local coff = bit.band(tag, 0x10) ~= 0
			if coff and (not R.cstep or R.cbase_cqn ~= cqn) then bad = true end
			if not bad then
				local o2, out = undelta(body, off, coff and lanes_add(R.cbase, R.cstep) or
							 R.cref or zeros())
				if not o2 then bad = true else
					off = o2
					set_cqe(out, cqn, ci, coff)
					st:set_text(show_cqe(st, q, cqn, ci, out))
					nc = nc + 1
				end
			end
		else
			bad = true
		end
		if bad then item:add_proto_expert_info(ef_short) all_ok = false break end
		k = k + adv
	end
	if not cur_visited then
		local ts = copy_refs(R)
		ts.valid, ts.last_seq = all_ok, hdr_seq + (count - 1)
		tstate[hdr_thread] = ts
	end
	return string.format("%d records: %d doorbells, %d WQEs, %d CQEs", count, nd, nw, nc)
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
			return string.format("idx=%d %s", body(0, 2):le_uint(),
					     opname(body(8 + 3, 1):uint()))
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
			return string.format("cqe %s syndrome=%s wqe_counter=%d", cqename(op),
					     syndname(body(8 + 55, 1):uint()), body(8 + 60, 2):uint())
		end
		return string.format("cqe %s wqe_counter=%d", cqename(op), body(8 + 60, 2):uint())
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
		if n >= 56 then
			t:add_le(pf.st_waits, body(40, 8))
			t:add_le(pf.st_dropped, body(48, 8))
		end
		return string.format("records=%s lost=%s", tostring(body(0, 8):le_uint64()),
				     tostring(body(16, 8):le_uint64()))
	elseif ty == 11 then
		return dissect_batch(t, body, item)
	end
	return ""
end

function gdak.dissector(tvb, pinfo, tree)
	local pen = f_pen()
	if not pen or pen.value ~= GDAK_PEN then return end
	local item = tree:add(gdak, tvb())
	item:append_text(" (PEN 32473: RFC 5612's documentation number, used by gdak)")
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
	hdr_qpn = tvb(20, 4):le_uint()
	hdr_thread = tvb(16, 4):le_uint()
	hdr_seq = tvb(24, 8):le_uint64()
	cur_frame, cur_visited = pinfo.number, pinfo.visited
	if body_len > 0 then
		info = dissect_body(item, ty, tvb(hdr_len, body_len):tvb(), item)
	end
	local qpn = tvb(20, 4):le_uint()
	pinfo.cols.info = string.format("%s %s %s", rec_types[ty] or ("REC_" .. ty),
					qpn == 0xffffffff and "" or string.format("qp 0x%06x", qpn), info)
end

register_postdissector(gdak)

-- gdak's extended atomics on the wire (docs/UDP.md "Extended atomics"):
-- BTH opcodes 0xd3 / 0xd4 (IBA's manufacturer-specific range) followed by
-- a 48-byte ExtAtomicETH, which Wireshark's InfiniBand dissector shows as
-- "Vendor Specific or Unknown Header Sequence".  This decodes it, on any
-- packet that dissector took (UDP 4791, or -d udp.port==N,infiniband).
local xat = Proto("gdak_xatomic", "gdak ExtAtomicETH (extended atomic)")
local xat_ops = { [0xd3] = "GDAK_MASKED_COMPARE_SWAP", [0xd4] = "GDAK_MASKED_FETCH_ADD" }
local xat_sizes = { [2] = "4 bytes", [3] = "8 bytes" }
local xf = {
	opcode = ProtoField.uint8("gdak.xatomic.opcode", "Opcode", base.HEX, xat_ops),
	va = ProtoField.uint64("gdak.xatomic.va", "Virtual address", base.HEX),
	rkey = ProtoField.uint32("gdak.xatomic.rkey", "R_Key", base.HEX),
	size = ProtoField.uint8("gdak.xatomic.size", "Operand size (log2 bytes)", base.DEC, xat_sizes),
	resv = ProtoField.uint24("gdak.xatomic.reserved", "Reserved", base.HEX),
	swap_add = ProtoField.uint64("gdak.xatomic.swap_add", "Swap (or Add) data", base.HEX),
	compare = ProtoField.uint64("gdak.xatomic.compare", "Compare data", base.HEX),
	swap_mask = ProtoField.uint64("gdak.xatomic.swap_mask",
				      "Swap mask (FETCH_ADD: field boundary)", base.HEX),
	compare_mask = ProtoField.uint64("gdak.xatomic.compare_mask", "Compare mask", base.HEX),
}
xat.fields = xf
local ef_xat = ProtoExpert.new("gdak.xatomic.malformed", "ExtAtomicETH malformed",
			       expert.group.MALFORMED, expert.severity.ERROR)
xat.experts = { ef_xat }
local f_ib_opcode = Field.new("infiniband.bth.opcode")

function xat.dissector(tvb, pinfo, tree)
	local fi = f_ib_opcode()
	if not fi then
		return
	end
	local op = fi.value
	if not xat_ops[op] then
		return
	end
	local off = fi.offset + 12
	local t = tree:add(xat, tvb(fi.offset, 1), "gdak ExtAtomicETH: " .. xat_ops[op])
	t:add(xf.opcode, tvb(fi.offset, 1))
	if off + 48 > tvb:len() then
		t:add_proto_expert_info(ef_xat, "shorter than the 48-byte ExtAtomicETH")
		return
	end
	t:add(xf.va, tvb(off, 8))
	t:add(xf.rkey, tvb(off + 8, 4))
	t:add(xf.size, tvb(off + 12, 1))
	t:add(xf.resv, tvb(off + 13, 3))
	t:add(xf.swap_add, tvb(off + 16, 8))
	t:add(xf.compare, tvb(off + 24, 8))
	t:add(xf.swap_mask, tvb(off + 32, 8))
	t:add(xf.compare_mask, tvb(off + 40, 8))
	local lg = tvb(off + 12, 1):uint()
	if (lg ~= 2 and lg ~= 3) or tvb(off + 13, 3):uint() ~= 0 then
		t:add_proto_expert_info(ef_xat, "operand size not 4/8 bytes or reserved bytes set")
	end
	pinfo.cols.info = string.format("%s %s va 0x%x", xat_ops[op], xat_sizes[lg] or "?",
					tvb(off, 8):uint64():tonumber())
end

register_postdissector(xat)

-- gdak's Dynamically Connected transport on the wire (docs/UDP.md "DC"):
-- BTH opcodes 0xe0 + the RC opcode (0xf8 / 0xf9 the two extended
-- atomics), IBA's other manufacturer-specific range; requests carry a
-- 20-byte DCETH right after the BTH (then RC's headers), responses are
-- laid out as RC's.  Wireshark's InfiniBand dissector shows them as
-- "Vendor Specific or Unknown Header Sequence"; this names the opcode and
-- decodes the DCETH and the RETH / AtomicETH / AETH that follow.
local dc = Proto("gdak_dc", "gdak DC transport")
local dc_rc = { [0] = "SEND_FIRST", "SEND_MIDDLE", "SEND_LAST", "SEND_LAST_WITH_IMMEDIATE",
	"SEND_ONLY", "SEND_ONLY_WITH_IMMEDIATE", "RDMA_WRITE_FIRST", "RDMA_WRITE_MIDDLE",
	"RDMA_WRITE_LAST", "RDMA_WRITE_LAST_WITH_IMMEDIATE", "RDMA_WRITE_ONLY",
	"RDMA_WRITE_ONLY_WITH_IMMEDIATE", "RDMA_READ_REQUEST", "RDMA_READ_RESPONSE_FIRST",
	"RDMA_READ_RESPONSE_MIDDLE", "RDMA_READ_RESPONSE_LAST", "RDMA_READ_RESPONSE_ONLY",
	"ACKNOWLEDGE", "ATOMIC_ACKNOWLEDGE", "COMPARE_SWAP", "FETCH_ADD" }
local dc_ops = { [0xf8] = "DC_MASKED_COMPARE_SWAP", [0xf9] = "DC_MASKED_FETCH_ADD" }
for k, v in pairs(dc_rc) do
	dc_ops[0xe0 + k] = "DC_" .. v
end
-- what follows the DCETH of a request: RETH (16), AtomicETH (28), ExtAtomicETH (48)
local function dc_req_hdr(rc)
	if rc == 6 or rc == 10 or rc == 11 or rc == 12 then
		return "reth"
	elseif rc == 0x13 or rc == 0x14 then
		return "atomic"
	end
	return nil
end
local dc_mtus = { [1] = "256", [2] = "512", [3] = "1024", [4] = "2048", [5] = "4096" }
local df = {
	opcode = ProtoField.uint8("gdak.dc.opcode", "Opcode", base.HEX, dc_ops),
	key = ProtoField.uint64("gdak.dc.key", "DC access key", base.HEX),
	stream = ProtoField.uint8("gdak.dc.stream", "Stream channel", base.DEC),
	dci = ProtoField.uint24("gdak.dc.dci", "DCI QPN", base.HEX),
	conn = ProtoField.uint32("gdak.dc.conn", "Connection number", base.DEC),
	mtu = ProtoField.uint8("gdak.dc.mtu", "DCI path MTU", base.DEC, dc_mtus),
	psn0 = ProtoField.uint24("gdak.dc.psn0", "Connection's first PSN", base.DEC),
	va = ProtoField.uint64("gdak.dc.va", "Virtual address", base.HEX),
	rkey = ProtoField.uint32("gdak.dc.rkey", "R_Key", base.HEX),
	dmalen = ProtoField.uint32("gdak.dc.dmalen", "DMA length", base.DEC),
	swap_add = ProtoField.uint64("gdak.dc.swap_add", "Swap (or Add) data", base.HEX),
	compare = ProtoField.uint64("gdak.dc.compare", "Compare data", base.HEX),
	aeth = ProtoField.uint8("gdak.dc.aeth", "AETH syndrome", base.HEX),
	msn = ProtoField.uint24("gdak.dc.msn", "MSN", base.DEC),
}
dc.fields = df
local ef_dc = ProtoExpert.new("gdak.dc.malformed", "DC packet malformed", expert.group.MALFORMED,
			      expert.severity.ERROR)
dc.experts = { ef_dc }

function dc.dissector(tvb, pinfo, tree)
	local fi = f_ib_opcode()
	if not fi then
		return
	end
	local op = fi.value
	if not dc_ops[op] then
		return
	end
	local rc = op >= 0xf8 and op or op - 0xe0
	local b = fi.offset
	local t = tree:add(dc, tvb(b, 1), "gdak DC: " .. dc_ops[op])
	t:add(df.opcode, tvb(b, 1))
	local req = op >= 0xf8 or rc <= 0x0c or rc == 0x13 or rc == 0x14
	local off = b + 12
	if req then
		if off + 20 > tvb:len() then
			t:add_proto_expert_info(ef_dc, "shorter than the 20-byte DCETH")
			return
		end
		t:add(df.key, tvb(off, 8))
		t:add(df.stream, tvb(off + 8, 1))
		t:add(df.dci, tvb(off + 9, 3))
		t:add(df.conn, tvb(off + 12, 4))
		t:add(df.mtu, tvb(off + 16, 1))
		t:add(df.psn0, tvb(off + 17, 3))
		if not dc_mtus[tvb(off + 16, 1):uint()] then
			t:add_proto_expert_info(ef_dc, "DCETH MTU code not 1..5")
		end
		off = off + 20
		local h = dc_req_hdr(rc)
		if op >= 0xf8 then
			h = "xatomic"
		end
		if h == "reth" and off + 16 <= tvb:len() then
			t:add(df.va, tvb(off, 8))
			t:add(df.rkey, tvb(off + 8, 4))
			t:add(df.dmalen, tvb(off + 12, 4))
		elseif h == "atomic" and off + 28 <= tvb:len() then
			t:add(df.va, tvb(off, 8))
			t:add(df.rkey, tvb(off + 8, 4))
			t:add(df.swap_add, tvb(off + 12, 8))
			t:add(df.compare, tvb(off + 20, 8))
		elseif h == "xatomic" and off + 48 <= tvb:len() then
			t:add(df.va, tvb(off, 8))
			t:add(df.rkey, tvb(off + 8, 4))
		elseif h then
			t:add_proto_expert_info(ef_dc, "shorter than its headers")
		end
	elseif rc ~= 0x0e and off + 4 <= tvb:len() then
		t:add(df.aeth, tvb(off, 1))
		t:add(df.msn, tvb(off + 1, 3))
	end
	pinfo.cols.info = string.format("%s QP 0x%06x", dc_ops[op], tvb(b + 5, 3):uint())
end

register_postdissector(dc)
