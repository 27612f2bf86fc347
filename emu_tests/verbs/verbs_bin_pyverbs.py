#!/usr/bin/env python3
# verbs_bin_pyverbs.py - Debian's python3-pyverbs (rdma-core's own Python
# bindings, unmodified) on gdak's emulated device, run by gdak-run
# (verbs_bin.cmake): open mlx5_0, PD, two MRs, CQ, two RC QPs connected to
# each other over the device's RoCE v2 GID, one RDMA WRITE of 4 KiB; the
# completion (status, opcode, wr_id) and every byte that arrived are checked,
# then a WRITE to a wrong rkey must fail with REM_ACCESS_ERR and leave the
# QP in ERR.  Exit 0 all passed, 1 a check failed, 77 pyverbs missing.
import os
import sys
import time

try:
    import pyverbs.enums as e
    from pyverbs.addr import AHAttr, GlobalRoute
    from pyverbs.cq import CQ
    from pyverbs.device import Context, get_device_list
    from pyverbs.mr import MR
    from pyverbs.pd import PD
    from pyverbs.qp import QP, QPAttr, QPCap, QPInitAttr
    from pyverbs.wr import SGE, SendWR
except ImportError as ex:
    print(f"SKIP: python3-pyverbs is not installed ({ex})", file=sys.stderr)
    sys.exit(77)

passed = failed = 0


def check(cond, what):
    global passed, failed
    if cond:
        passed += 1
        print(f"ok: {what}")
    else:
        failed += 1
        print(f"FAIL: {what}", file=sys.stderr)
    return cond


def poll_one(cq, what, timeout_s=20.0):
    """One completion, polled; None after timeout_s (never hangs)."""
    end = time.monotonic() + timeout_s
    while time.monotonic() < end:
        n, wcs = cq.poll(1)
        if n:
            return wcs[0]
        time.sleep(0.0005)
    check(False, f"{what}: no completion within {timeout_s} s")
    return None


def roce_v2_gid_index(ctx, port):
    attr = ctx.query_port(port)
    for idx in range(attr.gid_tbl_len):
        try:
            gid = ctx.query_gid(port, idx)
            gtype = ctx.query_gid_type(port, idx)  # the sysfs enum: ROCE_V2 = 1
        except Exception:
            continue
        if gtype == e.IBV_GID_TYPE_SYSFS_ROCE_V2 and str(gid).startswith("0000:0000:0000:0000:0000:ffff"):
            return idx, gid
    return None, None


def main():
    devs = get_device_list()
    if not check(len(devs) >= 1, f"get_device_list: {len(devs)} device(s)"):
        return
    name = devs[0].name.decode()
    check(name == "mlx5_0", f"first device is '{name}'")
    ctx = Context(name=name)
    dattr = ctx.query_device()
    check(dattr.vendor_id == 0x02C9, f"vendor id 0x{dattr.vendor_id:04x} (Mellanox)")
    port = 1
    pattr = ctx.query_port(port)
    check(pattr.state == e.IBV_PORT_ACTIVE, f"port {port} state {pattr.state} (ACTIVE)")
    check(pattr.link_layer == e.IBV_LINK_LAYER_ETHERNET, "link layer Ethernet")
    gidx, gid = roce_v2_gid_index(ctx, port)
    if not check(gidx is not None, f"a RoCE v2 IPv4-mapped GID: index {gidx} {gid}"):
        return

    pd = PD(ctx)
    size = 4096
    src = MR(pd, size, e.IBV_ACCESS_LOCAL_WRITE)
    dst = MR(pd, size, e.IBV_ACCESS_LOCAL_WRITE | e.IBV_ACCESS_REMOTE_WRITE)
    cq = CQ(ctx, 16)
    cap = QPCap(max_send_wr=8, max_recv_wr=8, max_send_sge=1, max_recv_sge=1)
    init = QPInitAttr(qp_type=e.IBV_QPT_RC, scq=cq, rcq=cq, cap=cap)
    qa = QP(pd, init)
    qb = QP(pd, init)
    check(qa.qp_num != qb.qp_num, f"two RC QPs: 0x{qa.qp_num:06x}, 0x{qb.qp_num:06x}")

    def connect(qp, peer_qpn, sq_psn, rq_psn):
        attr = QPAttr(port_num=port)
        attr.qp_access_flags = e.IBV_ACCESS_REMOTE_WRITE | e.IBV_ACCESS_LOCAL_WRITE
        attr.path_mtu = e.IBV_MTU_1024
        attr.dest_qp_num = peer_qpn
        attr.rq_psn = rq_psn
        attr.sq_psn = sq_psn
        attr.max_dest_rd_atomic = 1
        attr.max_rd_atomic = 1
        attr.min_rnr_timer = 12
        attr.timeout = 14
        attr.retry_cnt = 7
        attr.rnr_retry = 7
        gr = GlobalRoute(dgid=gid, sgid_index=gidx)
        attr.ah_attr = AHAttr(port_num=port, is_global=1, gr=gr)
        qp.to_rts(attr)

    connect(qa, qb.qp_num, 0x1234, 0x5678)
    connect(qb, qa.qp_num, 0x5678, 0x1234)
    check(qa.query(e.IBV_QP_STATE)[0].qp_state == e.IBV_QPS_RTS, "QP A in RTS")
    check(qb.query(e.IBV_QP_STATE)[0].qp_state == e.IBV_QPS_RTS, "QP B in RTS")

    data = bytes((i * 7 + 3) & 0xFF for i in range(size))
    src.write(data, size)
    dst.write(b"\0" * size, size)
    wr = SendWR(wr_id=0xC0FFEE, opcode=e.IBV_WR_RDMA_WRITE, num_sge=1,
                sg=[SGE(src.buf, size, src.lkey)], send_flags=e.IBV_SEND_SIGNALED)
    wr.set_wr_rdma(dst.rkey, dst.buf)
    qa.post_send(wr)
    wc = poll_one(cq, "RDMA WRITE")
    if wc is not None:
        check(wc.status == e.IBV_WC_SUCCESS, f"WRITE completion status {wc.status} (SUCCESS)")
        check(wc.opcode == e.IBV_WC_RDMA_WRITE, f"WRITE completion opcode {wc.opcode}")
        check(wc.wr_id == 0xC0FFEE, f"WRITE completion wr_id 0x{wc.wr_id:x}")
        check(wc.qp_num == qa.qp_num, f"WRITE completion qp_num 0x{wc.qp_num:06x}")
    got = dst.read(size, 0)
    if not check(got == data, f"{size} bytes arrived intact"):
        diff = next(i for i in range(size) if got[i] != data[i])
        print(f"  first difference at byte {diff}: 0x{got[diff]:02x} != 0x{data[diff]:02x}",
              file=sys.stderr)

    # a wrong rkey: the responder refuses, the requester's QP goes to ERR
    bad = SendWR(wr_id=0xBAD, opcode=e.IBV_WR_RDMA_WRITE, num_sge=1,
                 sg=[SGE(src.buf, 64, src.lkey)], send_flags=e.IBV_SEND_SIGNALED)
    bad.set_wr_rdma(dst.rkey ^ 0x5A5A00, dst.buf)
    qa.post_send(bad)
    wc = poll_one(cq, "WRITE to a wrong rkey")
    if wc is not None:
        check(wc.status == e.IBV_WC_REM_ACCESS_ERR,
              f"wrong rkey: completion status {wc.status} (REM_ACCESS_ERR = {e.IBV_WC_REM_ACCESS_ERR})")
        check(wc.wr_id == 0xBAD, f"wrong rkey: wr_id 0x{wc.wr_id:x}")
    check(qa.query(e.IBV_QP_STATE)[0].qp_state == e.IBV_QPS_ERR, "QP A in ERR after the error")

    for o in (qa, qb, cq, src, dst, pd, ctx):
        o.close()
    check(True, "every object closed")


if __name__ == "__main__":
    main()
    print(f"{passed} passed, {failed} failed")
    sys.exit(1 if failed or not passed else 0)
