"""The performance targets (TPC-H net against DuckDB, the pipeline's throughput, LIMIT and the
CSV export, the transform ABI) read off one bench run, and the chart of TPC-H net ratios against
each peer. Run through bench/run.py; nothing here measures, it only reads the measurements."""

import math
from pathlib import Path

from harness import net, net_cpu

import tpch

PEERS = ["duckdb", "datafusion", "polars"]
# A net time below this is within the start-up's own run-to-run noise (a peer's Python import
# varies by more than a short query takes): a ratio to it says nothing, so none is drawn.
MIN_NET_SECONDS = 0.05


def _find(results, workload, engine):
    return next((r for r in results if r.workload == workload and r.engine == engine
                 and r.seconds), None)


def _verdict(value, target, higher_is_better=False):
    if value is None or math.isnan(value):
        return "not measured"
    ok = value >= target if higher_is_better else value <= target
    return f"{value:.2f}x, {'met' if ok else 'missed'}"


def query_nets(selected, results):
    """{query number: {engine: net seconds}} for the TPC-H queries that ran, negative nets
    included (they still add up in a total)."""
    by_name = {w.name: w for w in selected}
    out = {}
    for n in tpch.SUPPORTED:
        w = by_name.get(f"tpch-sf{tpch.SF}-q{n}")
        if w is None:
            continue
        nets = {}
        for engine in ["sluice", *PEERS]:
            m = _find(results, w.name, engine)
            value = net(m, w, results) if m else float("nan")
            if not math.isnan(value):
                nets[engine] = value
        out[n] = nets
    return out


def section(selected, results, abi_ratio=None):
    """Markdown: each target, its value in this run and whether it is met."""
    nets = query_nets(selected, results)
    rows = []
    # TPC-H: net against DuckDB, per query (where both nets are measurable) and over all 22
    # (sums of nets, where the start-up noise of each query averages out).
    both = {n: v for n, v in nets.items() if "sluice" in v and "duckdb" in v}
    ratios = {n: v["sluice"] / v["duckdb"] for n, v in both.items()
              if min(v["sluice"], v["duckdb"]) >= MIN_NET_SECONDS}
    full = len(both) == len(tpch.SUPPORTED)
    rows.append(("TPC-H Q1 net / DuckDB", "<= 1.0",
                 _verdict(ratios.get(1), 1.0) if 1 in ratios or 1 not in both else
                 f"not measurable (a net under {MIN_NET_SECONDS} s)"))
    duckdb_total = sum(v["duckdb"] for v in both.values())
    total = (sum(v["sluice"] for v in both.values()) / duckdb_total
             if full and duckdb_total >= MIN_NET_SECONDS else None)
    rows.append((f"TPC-H {len(tpch.SUPPORTED)}-query net total / DuckDB", "<= 1.5",
                 _verdict(total, 1.5) if full else
                 f"not measured ({len(both)} of {len(tpch.SUPPORTED)} queries)"))
    if ratios:
        worst = max(ratios, key=ratios.get)
        skipped = len(both) - len(ratios)
        rows.append(("TPC-H worst query net / DuckDB", "<= 2.0",
                     f"Q{worst}: {_verdict(ratios[worst], 2.0)}" +
                     (f" ({skipped} with a net under {MIN_NET_SECONDS} s not compared)"
                      if skipped else "")))
    # No target of its own: CPU time counts both of an engine's threads, and moves less with the
    # host's load than wall time, so it shows where a change in a net ratio came from.
    cpu = {}
    for n in both:
        name = f"tpch-sf{tpch.SF}-q{n}"
        c, d = (net_cpu(_find(results, name, e)) for e in ("sluice", "duckdb"))
        if not (math.isnan(c) or math.isnan(d)):
            cpu[n] = (c, d)
    if 1 in cpu and cpu[1][1] >= MIN_NET_SECONDS:
        rows.append(("TPC-H Q1 net CPU / DuckDB", "(none)", f"{cpu[1][0] / cpu[1][1]:.2f}x"))
    if full and len(cpu) == len(both) and sum(d for _, d in cpu.values()) >= MIN_NET_SECONDS:
        rows.append((f"TPC-H {len(tpch.SUPPORTED)}-query net CPU total / DuckDB", "(none)",
                     f"{sum(c for c, _ in cpu.values()) / sum(d for _, d in cpu.values()):.2f}x"))
    rss = {}
    for n in both:
        name = f"tpch-sf{tpch.SF}-q{n}"
        s, d = _find(results, name, "sluice"), _find(results, name, "duckdb")
        rss[n] = s.peak_rss_mib / d.peak_rss_mib
    if rss:
        worst = max(rss, key=rss.get)
        rows.append(("TPC-H worst peak RSS / DuckDB", "<= 1.5",
                     f"Q{worst}: {_verdict(rss[worst], 1.5)}"))
    # The pipeline: DuckDB's time over sluice's is sluice's throughput in DuckDB's.
    for name in ("pipeline", "pipeline-1000-objects"):
        s, d = _find(results, name, "sluice"), _find(results, name, "duckdb")
        value = d.median / s.median if s and d else None
        rows.append((f"{name}: throughput / DuckDB (2 workers)", ">= 1.3",
                     _verdict(value, 1.3, higher_is_better=True)))
    s, d = (_find(results, f"tpch-sf{tpch.SF}-topn5", e) for e in ("sluice", "duckdb"))
    if s and d:  # no target of its own: reported beside LIMIT's
        rows.append(("ORDER BY ... LIMIT 5 time / DuckDB (peak RSS)", "(none)",
                     f"{s.median / d.median:.2f}x ({s.peak_rss_mib / d.peak_rss_mib:.2f}x)"))
    for name, label, rss_too in ((f"tpch-sf{tpch.SF}-limit5", "LIMIT 5 time / DuckDB", False),
                                 (f"tpch-sf{tpch.SF}-export-csv", "CSV export time / DuckDB",
                                  True)):
        s, d = _find(results, name, "sluice"), _find(results, name, "duckdb")
        target = 2.0 if not rss_too else 1.5
        rows.append((label, f"<= {target:g}", _verdict(s.median / d.median if s and d else None,
                                                       target)))
        if rss_too:
            rows.append(("CSV export peak RSS / DuckDB", "<= 1.5",
                         _verdict(s.peak_rss_mib / d.peak_rss_mib if s and d else None, 1.5)))
    rows.append(("transform ABI identity / in-process", "<= 1.5", _verdict(abi_ratio, 1.5)))
    lines = ["| target | goal | this run |", "|---|---|---|"]
    lines += [f"| {a} | {b} | {c} |" for a, b, c in rows]
    return ("## Performance targets\n\nNet subtracts from each run the engine's own start-up run "
            "just before it. Throughput is DuckDB's median over sluice's on the same input.\n\n"
            + "\n".join(lines) + "\n\n")


def chart(selected, results, path: Path) -> bool:
    """One bar group per TPC-H query: sluice's net time over each peer's, a line at 1.0 (above
    it, sluice is slower). False when no query has a peer to compare with."""
    nets = query_nets(selected, results)

    def ratio(n, peer):
        v = nets[n]
        if "sluice" not in v or peer not in v or min(v["sluice"], v[peer]) < MIN_NET_SECONDS:
            return float("nan")
        return v["sluice"] / v[peer]

    queries = [n for n in nets if any(not math.isnan(ratio(n, p)) for p in PEERS)]
    if not queries:
        return False
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    width = 0.8 / len(PEERS)
    fig, ax = plt.subplots(figsize=(max(6, 0.6 * len(queries) + 2), 4))
    for i, peer in enumerate(PEERS):
        values = [ratio(n, peer) for n in queries]
        ax.bar([j + i * width for j in range(len(queries))], values, width,
               label=f"vs {peer}")
    ax.axhline(1.0, color="black", linewidth=0.8)
    ax.set_xticks([j + width * (len(PEERS) - 1) / 2 for j in range(len(queries))])
    ax.set_xticklabels([f"Q{n}" for n in queries])
    ax.set_ylabel("sluice net time / peer net time")
    ax.set_title(f"TPC-H SF {tpch.SF}, net of start-up (above 1.0: sluice is slower; no bar: "
                 f"a net under {MIN_NET_SECONDS} s)")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return True
