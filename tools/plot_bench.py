#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Plot gdak-perf --json output: bandwidth and message rate against message size.

    gdak-perf --json -a write_bw > write_bw.json
    tools/plot_bench.py write_bw.json [more.json ...] -o docs/bench.png

Each input is one gdak-perf --json document of a bandwidth test (kind "bw") or
of the baselines (kind "baseline").  The left panel shows bandwidth (MiB/s),
the right one message rate (Mpps), both against message size on log axes;
the baselines measured in the same run (minimal executor, memcpy) are drawn
dashed next to the test they belong to.  Needs matplotlib
(Debian: apt-get install python3-matplotlib).
"""
import argparse
import json
import sys

MIB = 1024.0 * 1024.0


def load(path):
    try:
        with open(path, encoding="utf-8") as f:
            doc = json.load(f)
    except (OSError, ValueError) as e:
        sys.exit(f"plot_bench: cannot read {path}: {e}")
    if doc.get("tool") != "gdak-perf" or not isinstance(doc.get("results"), list):
        sys.exit(f"plot_bench: {path} is not gdak-perf --json output")
    if doc.get("kind") not in ("bw", "baseline"):
        sys.exit(f"plot_bench: {path}: test {doc.get('test')} is a latency test; "
                 "plot bandwidth tests (write_bw, read_bw, ...) or baseline")
    return doc


def series(doc, key, scale):
    xs, ys = [], []
    for r in doc["results"]:
        v = r.get(key)
        if v is None or not r.get("verified"):
            continue
        xs.append(r["bytes"])
        ys.append(v / scale)
    return xs, ys


def label(doc):
    o = doc.get("options", {})
    if doc["kind"] == "baseline":
        return "baseline"
    return (f"{doc['test']} {o.get('device', '?')}, {o.get('qps', 1)} QP, "
            f"{o.get('wqes_per_db', '?')} WQE/db")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("json", nargs="+", help="gdak-perf --json output files")
    ap.add_argument("-o", "--output", default="bench.png", help="PNG to write (bench.png)")
    ap.add_argument("--title", default=None, help="figure title")
    args = ap.parse_args()
    # `plot_bench.py bw.json bw.png`: a last argument naming a PNG is the
    # output, not an input that fails to parse as JSON
    if len(args.json) > 1 and args.json[-1].endswith(".png") and "-o" not in sys.argv[1:] \
            and not any(a.startswith("--output") for a in sys.argv[1:]):
        args.output = args.json.pop()
    for p in args.json:
        if p.endswith(".png"):
            sys.exit(f"plot_bench: {p} is an image, not gdak-perf --json output "
                     "(the output is -o FILE)")

    docs = [load(p) for p in args.json]
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        sys.exit("plot_bench: matplotlib is missing (apt-get install python3-matplotlib)")

    fig, (ax_bw, ax_rate) = plt.subplots(1, 2, figsize=(12, 4.8))
    for doc in docs:
        name = label(doc)
        if doc["kind"] == "bw":
            line, = ax_bw.plot(*series(doc, "bw_bytes_per_s", MIB), "o-", label=name)
            ax_rate.plot(*series(doc, "msg_rate", 1e6), "o-", color=line.get_color(),
                         label=name)
            ax_bw.plot(*series(doc, "memcpy_bw", MIB), "--", color=line.get_color(),
                       alpha=0.6, label="memcpy (same run)")
            wpd = doc.get("options", {}).get("wqes_per_db", "?")
            ax_rate.plot(*series(doc, "exec_rate", 1e6), "--", color=line.get_color(),
                         alpha=0.6, label=f"minimal executor, {wpd} WQE/db (same run)")
        else:
            ax_bw.plot(*series(doc, "memcpy_bw", MIB), "s--", label="memcpy")
            ax_rate.plot(*series(doc, "exec_rate_1", 1e6), "s--",
                         label="minimal executor, 1 WQE/db")
            ax_rate.plot(*series(doc, "exec_rate_16", 1e6), "^--",
                         label="minimal executor, 16 WQE/db")
    for ax, ylabel in ((ax_bw, "bandwidth [MiB/s]"), (ax_rate, "message rate [Mpps]")):
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xlabel("message size [bytes]")
        ax.set_ylabel(ylabel)
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=7)
    m = docs[0].get("machine", {})
    fig.suptitle(args.title or f"gdak-perf on {m.get('cpu', '?')}, {m.get('nproc', '?')} cores")
    fig.tight_layout()
    fig.savefig(args.output, dpi=110)
    print(f"plot_bench: wrote {args.output}")


if __name__ == "__main__":
    main()
