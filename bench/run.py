"""`make bench`: generates benchmark data (never committed) and runs every workload against its
peers in one run. Later issues add workloads (pipeline throughput, TPC-H, TPC-DS) here.

Output: bench/out/report.md, bench/out/ratios.png and bench/out/tpch-net-ratios.png;
`make bench BENCH_SCALE=10` writes bench/out/scale-sf10/report.md instead (scale()).
"""

import os
import platform
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))

from harness import QUERY_REPEAT, STARTUP_REPEAT, Workload, report  # noqa: E402

SLUICE = str(ROOT / "build" / "sluice")
PY = sys.executable
DATA = HERE / "data"
OUT = HERE / "out"


def make_blob(path: Path, size: int) -> Path:
    if not path.exists() or path.stat().st_size != size:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".tmp")
        with open(tmp, "wb") as f:
            chunk = os.urandom(1 << 20)
            for _ in range(size >> 20):
                f.write(chunk)
        tmp.rename(path)
    return path


def selector(only: str):
    """BENCH_ONLY: a workload's exact name selects that workload alone (tpch-sf1-q1, not q10-q19
    too), anything else every workload whose name contains it (tpch: all of TPC-H; tpcds: all
    of TPC-DS, whose names never contain "tpch")."""
    import tpcds
    import tpch

    import functions

    import ray_executor

    names = ["tpch-startup", *[query_name(n) for n in tpch.SUPPORTED], limit_name(), topn_name(),
             export_name(),
             "pipeline", LARGE_PIPELINE, "blake3-512MiB",
             *functions.QUERIES, *ray_executor.NAMES,
             "tpcds-startup", *[tpcds.workload_name(n) for n in tpcds.NAMES]]
    if only in names:
        return lambda name: name == only
    return lambda name: only in name


LARGE_PIPELINE = "pipeline-1000-objects"


def query_name(n: int) -> str:
    import tpch

    return f"tpch-sf{tpch.SF}-q{n}"


def limit_name() -> str:
    import tpch

    return f"tpch-sf{tpch.SF}-limit5"


def topn_name() -> str:
    import tpch

    return f"tpch-sf{tpch.SF}-topn5"


def export_name() -> str:
    import tpch

    return f"tpch-sf{tpch.SF}-export-csv"


def workloads(keep):
    """The workloads whose names `keep` accepts, each group's data prepared only when one of
    its workloads runs. A query's start-up workload runs whenever the query does."""
    import pipeline
    import tpcds
    import tpch

    selected = []
    queries = [
        Workload(name=query_name(n), commands=tpch.commands(n), startup="tpch-startup",
                 repeat=QUERY_REPEAT)
        for n in tpch.SUPPORTED
    ]
    # LIMIT without ORDER BY over lineitem: how soon each engine stops reading.
    queries.append(Workload(name=limit_name(), commands=tpch.commands("limit5"),
                            startup="tpch-startup", repeat=QUERY_REPEAT))
    # ORDER BY under the LIMIT: a top-N reads every row and keeps few.
    queries.append(Workload(name=topn_name(), commands=tpch.commands("topn5"),
                            startup="tpch-startup", repeat=QUERY_REPEAT))
    # The same columns without the LIMIT, written as CSV: results stream to the output.
    queries.append(Workload(name=export_name(), commands=tpch.export_commands(),
                            startup="tpch-startup", repeat=QUERY_REPEAT))
    queries = [w for w in queries if keep(w.name)]
    if queries or keep("tpch-startup"):
        tpch.prepare()
        # Start-up cost of each engine's process (Python + import for the peers), then the queries.
        selected += [
            Workload(name="tpch-startup", commands=tpch.commands(0), repeat=STARTUP_REPEAT),
            *queries,
        ]
    for name, objects in (("pipeline", pipeline.OBJECTS), (LARGE_PIPELINE, pipeline.LARGE_OBJECTS)):
        if not keep(name):
            continue
        raw, input_bytes = pipeline.prepare(objects)
        # The main job: JSONL -> extract -> dedup -> Parquet, sluice with 1 and 2 workers
        # against DuckDB doing the same in SQL with 2 threads.
        commands = {"sluice": pipeline.sluice_command(2, objects=objects)}
        if objects == pipeline.OBJECTS:
            commands["sluice-1-worker"] = pipeline.sluice_command(1, objects=objects)
        commands["duckdb"] = pipeline.duckdb_command(raw, DATA / "duckdb-out.parquet")
        selected.append(Workload(name=name, commands=commands, input_bytes=input_bytes,
                                 repeat=QUERY_REPEAT))
    if keep("blake3-512MiB"):
        blob = str(make_blob(DATA / "blob-512MiB.bin", 512 << 20))
        # BLAKE3 over a large file: sluice's C implementation with SIMD dispatch (one thread)
        # against b3sum (Rust, limited to one thread for a fair comparison) and Python blake3.
        selected.append(Workload(
            name="blake3-512MiB",
            commands={
                "sluice": [SLUICE, "hash", blob],
                "b3sum-1t": ["b3sum", "--num-threads", "1", blob],
                "python-blake3": [
                    PY, "-c",
                    "import blake3,sys; h=blake3.blake3(max_threads=1)\n"
                    "with open(sys.argv[1],'rb') as f:\n"
                    "  [h.update(b) for b in iter(lambda: f.read(1<<20), b'')]\n"
                    "print(h.hexdigest())",
                    blob,
                ],
            },
        ))
    import functions

    library_workloads = [name for name in functions.QUERIES if keep(name)]
    if library_workloads:
        functions.prepare()
        # Each engine is sluice: the library's function against the same expression built in.
        selected += [Workload(name=name, commands=functions.commands(name),
                              baseline="sluice-builtin", env=functions.env())
                     for name in library_workloads]
    import ray_executor

    # The Ray executor against the local one (starts a local Ray cluster for the run).
    selected += ray_executor.workloads(keep, Workload)
    # TPC-DS last, so that everything before it runs as it did. Its start-up workload is query 0
    # in each launcher, as for TPC-H.
    limits = dict(timeout=tpcds.TIMEOUT, max_rss_mib=tpcds.MAX_RSS_MIB)
    queries = [
        Workload(name=tpcds.workload_name(n), commands=tpcds.commands(n), startup="tpcds-startup",
                 **limits)
        for n in tpcds.NAMES if keep(tpcds.workload_name(n))
    ]
    if queries or keep("tpcds-startup"):
        tpcds.prepare()
        selected += [Workload(name="tpcds-startup", commands=tpcds.commands("q0"),
                              repeat=STARTUP_REPEAT, **limits),
                     *queries]
    return selected


def distributed(selected, results) -> str:
    """TPC-H with `--workers 2` ("sluice-w2") against in-process sluice, per query and in total
    (sum of medians), against the issue's targets, with each query's stages and shuffle bytes
    from one untimed EXPLAIN ANALYZE run."""
    import tpch

    queries = [(n, query_name(n)) for n in tpch.SUPPORTED]
    queries = [(n, name) for n, name in queries if name in {w.name for w in selected}]
    if not queries:
        return ""

    def median(name, engine):
        m = next((r for r in results if r.workload == name and r.engine == engine), None)
        return m.median if m and m.seconds else None

    def mib(b):
        return "n/a" if b is None else f"{b / 2**20:.3f}"

    def secs(t):
        return "failed" if t is None else f"{t:.3f}"

    lines = [
        "| query | sluice s | sluice-w2 s | sluice-w2 / sluice | stages | shuffle written MiB "
        "| shuffle read MiB |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    total_in, total_w2, measured, ratios = 0.0, 0.0, 0, {}
    written, read = [], []
    for n, name in queries:
        print(f"  {name} / EXPLAIN ANALYZE --workers {tpch.WORKERS} ...", file=sys.stderr,
              flush=True)
        stages, w, r = tpch.explain(n)
        if stages == "in-process":
            shuffle = "- | -"  # nothing shuffled: the query ran in one process
        else:
            shuffle = f"{mib(w)} | {mib(r)}"
            written.append(w)
            read.append(r)
        base, w2 = median(name, "sluice"), median(name, "sluice-w2")
        if base and w2:
            ratios[n] = w2 / base
            total_in, total_w2, measured = total_in + base, total_w2 + w2, measured + 1
        ratio = f"{ratios[n]:.2f}" if n in ratios else "n/a"
        lines.append(f"| {name} | {secs(base)} | {secs(w2)} | {ratio} | {stages} | {shuffle} |")
    total = total_w2 / total_in if measured else None
    sums = [f"{sum(b) / 2**20:.3f}" if None not in b else "n/a" for b in (written, read)]
    label = f"total ({measured} {'query' if measured == 1 else 'queries'})"
    lines.append(
        f"| {label} | {total_in:.3f} | {total_w2:.3f} | "
        f"{'n/a' if total is None else f'{total:.2f}'} | | {sums[0]} | {sums[1]} |"
    )

    def verdict(value, target, missing):
        if value is None:
            return f"not measured ({missing})"
        return f"{value:.2f}x, {'met' if value <= target else 'missed'}"

    full = measured == len(tpch.SUPPORTED)
    q1 = verdict(ratios.get(1), 1.15, "Q1 not run or failed")
    whole = verdict(total if full else None, 1.3,
                    f"{measured} of {len(tpch.SUPPORTED)} queries measured with both")
    scale = "" if tpch.SF == "1" else f" (the targets are for SF 1; this run is SF {tpch.SF})"
    return (
        f"## TPC-H SF {tpch.SF}: sluice with `--workers {tpch.WORKERS}` against in-process\n\n"
        f"Targets{scale}: sluice-w2 within 1.15x of in-process sluice on Q1: {q1}; within 1.3x "
        f"in total (sum of the 22 queries' medians): {whole}.\n\n"
        "Stages and shuffle bytes come from one untimed `EXPLAIN ANALYZE` with "
        f"`--workers {tpch.WORKERS}` per query: the stage count of the distributed plan, or "
        "in-process for a query that is not cut (then nothing is shuffled: -); n/a where the "
        "output has no `total shuffle:` line.\n\n" + "\n".join(lines) + "\n\n"
    )


def abi_overhead() -> tuple[float, str]:
    """The transform ABI against an in-process identity (src/exec/batch_transform_benchmark.cc):
    the report's section and the ABI's ratio."""
    import json
    import subprocess

    binary = ROOT / "build" / "src" / "exec" / "batch_transform_benchmark"
    proc = subprocess.run(
        [str(binary), "--benchmark_format=json"], capture_output=True, check=True, text=True
    )
    # Names as "BM_X/min_time:2.000" or "BM_X/1/min_time:2.000": keyed without the min_time.
    rows = {b["name"].split("/min_time")[0]: b for b in json.loads(proc.stdout)["benchmarks"]}
    direct = rows["BM_InProcessIdentity"]
    paths = [("identity through the C ABI, bytes (IPC)", rows["BM_AbiIdentity"]),
             ("identity through the C ABI, Arrow C data", rows["BM_AbiArrowIdentity"])]
    ratio = rows["BM_AbiArrowIdentity"]["real_time"] / direct["real_time"]
    table = [f"| in-process identity (decode + validate) | {direct['real_time']:.1f} | "
             f"{direct['items_per_second'] / 1e6:.1f}M | 1.00 |"]
    for label, row in paths:
        table.append(f"| {label} | {row['real_time']:.1f} | {row['items_per_second'] / 1e6:.1f}M "
                     f"| {row['real_time'] / direct['real_time']:.2f} |")
    extract = [(label, rows[f"BM_ConversationExtract/{arg}"])
               for label, arg in (("bytes (IPC)", 0), ("Arrow C data", 1))]
    lines = [f"| {label} | {e['items_per_second'] / 1e6:.2f}M | "
             f"{e['bytes_per_second'] / 1e6:.0f} MB/s | {e['real_time']:.1f} ms |"
             for label, e in extract]
    return ratio, (
        "## Transform ABI overhead (1M rows, 64K-row batches)\n\n"
        "Both start from the same IPC bytes; the Arrow C data path is the one a job's worker "
        "takes, and the target is read from it.\n\n"
        "| path | ms per 1M rows | rows/s | ratio |\n|---|---:|---:|---:|\n"
        + "\n".join(table) + "\n"
        "\n## conversation-message-extract through the ABI (10K requests)\n\n"
        "| entry | output rows/s | input IPC | time |\n|---|---:|---:|---:|\n"
        + "\n".join(lines) + "\n"
    )


def scale(sf: str) -> None:
    """`make bench BENCH_SCALE=10`: tpch.SCALE_QUERIES at SF 1 and at SF `sf`, in sluice
    (in-process) and DuckDB, each with its start-up workload, and a section on how time and peak
    RSS grow with the data. Runs under a time and memory guard: at SF 10 a plan that holds its
    input shows as a failed run, not as a machine out of memory."""
    import tpch

    from harness import net

    engines = ("sluice", "duckdb")
    factors = ["1", sf] if sf != "1" else ["1"]
    limits = dict(timeout=1800, max_rss_mib=20 * 1024)
    selected, size = [], {}
    for f in factors:
        print(f"  TPC-H SF {f}: data ...", file=sys.stderr, flush=True)
        tpch.prepare(f)
        size[f] = tpch.data_bytes(f)
        env = {"BENCH_TPCH_SF": f}
        pick = lambda n: {e: c for e, c in tpch.commands(n).items() if e in engines}  # noqa: E731
        selected.append(Workload(name=f"tpch-sf{f}-startup", commands=pick(0), env=env,
                                 repeat=STARTUP_REPEAT, **limits))
        selected += [Workload(name=f"tpch-sf{f}-q{n}", commands=pick(n), env=env,
                              startup=f"tpch-sf{f}-startup", repeat=QUERY_REPEAT, **limits)
                     for n in tpch.SCALE_QUERIES]

    def growth(results):
        def find(name, engine):
            return next((r for r in results if r.workload == name and r.engine == engine
                         and r.seconds), None)

        big = factors[-1]
        lines = [f"| query | engine | SF 1 net s | SF {big} net s | time x | SF 1 peak MiB | "
                 f"SF {big} peak MiB | RSS x | s per GB at SF {big} | MiB per GB at SF {big} |",
                 "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
        gb = size[big] / 1e9
        for n in tpch.SCALE_QUERIES:
            for e in engines:
                small, large = find(f"tpch-sf1-q{n}", e), find(f"tpch-sf{big}-q{n}", e)
                ws = {w.name: w for w in selected}
                ns = net(small, ws[f"tpch-sf1-q{n}"], results) if small else float("nan")
                nl = net(large, ws[f"tpch-sf{big}-q{n}"], results) if large else float("nan")
                ms = small.peak_rss_mib if small else float("nan")
                ml = large.peak_rss_mib if large else float("nan")
                lines.append(f"| Q{n} | {e} | {ns:.3f} | {nl:.3f} | {nl / ns:.1f} | {ms:.0f} | "
                             f"{ml:.0f} | {ml / ms:.1f} | {nl / gb:.3f} | {ml / gb:.0f} |")
        ratio_lines = ["| query | time sluice / DuckDB (net) | peak RSS sluice / DuckDB "
                       "(target <= 2.0) |", "|---|---:|---:|"]
        for n in tpch.SCALE_QUERIES:
            name = f"tpch-sf{big}-q{n}"
            s, d = find(name, "sluice"), find(name, "duckdb")
            if not s or not d:
                ratio_lines.append(f"| Q{n} | failed | failed |")
                continue
            w = next(w for w in selected if w.name == name)
            rss = s.peak_rss_mib / d.peak_rss_mib
            ratio_lines.append(f"| Q{n} | {net(s, w, results) / net(d, w, results):.2f} | "
                               f"{rss:.2f} ({'met' if rss <= 2.0 else 'missed'}) |")
        sizes = ", ".join(f"SF {f}: {size[f] / 1e9:.2f} GB" for f in factors)
        return (f"## Cost against data size\n\nParquet data: {sizes}. 'x' is SF {big} over "
                "SF 1 for the same engine; a linear engine shows the data's ratio.\n\n"
                + "\n".join(lines) + f"\n\n## SF {big}: sluice against DuckDB\n\n"
                + "\n".join(ratio_lines) + "\n\n")

    notes = (f"Machine: {os.cpu_count()} cores. Median of {QUERY_REPEAT} runs after one warm-up "
             f"({STARTUP_REPEAT} for start-up); both engines limited to 2 threads; net subtracts "
             "from each run the engine's start-up run just before it, at that scale (median of the "
             "differences).")
    md = report(selected, OUT / f"scale-sf{sf}", f"sluice at TPC-H SF {sf}", notes, growth)
    print(md.read_text())
    print(f"report: {md}")


def main():
    # BENCH_ONLY=tpch or tpcds (a substring of workload names) runs just those workloads; an
    # exact name (tpch-sf1-q1, tpcds-sf1-q01) runs that one alone.
    import functions
    import ray_executor
    import tpcds

    import targets

    if os.environ.get("BENCH_SCALE"):
        return scale(os.environ["BENCH_SCALE"])
    only = os.environ.get("BENCH_ONLY", "")
    selected = workloads(selector(only))
    notes = (
        f"Machine: {os.cpu_count()} cores, {platform.machine()}, Python {platform.python_version()}. "
        f"Median of 3 runs after one warm-up ({QUERY_REPEAT} for a TPC-H query or the main job, "
        f"{STARTUP_REPEAT} for start-up); the engines take turns; peak MiB is the "
        "process's max RSS. Every TPC-H and TPC-DS command is a Python launcher (bench/tpch.py, "
        "bench/tpcds.py) that runs the engine; 'net' subtracts from each run the engine's "
        "tpch-startup or tpcds-startup run just before it (the median of those differences; a "
        "start-up is the launcher, process start, imports, catalog); 'net CPU' subtracts the same "
        "way from each run's user and system time, its process and the children it waited for. "
        "sluice-w2 is sluice with "
        "`--workers 2` "
        "(distributed), sluice the default (in-process)."
    )
    # The ABI's micro-benchmark runs with the whole bench only (it is not a workload).
    abi_ratio, abi_md = abi_overhead() if not only else (None, "")
    chart = OUT / "tpch-net-ratios.png"

    def sections(results):
        text = targets.section(selected, results, abi_ratio)
        if targets.chart(selected, results, chart):
            text += f"![TPC-H net ratios]({chart.name})\n\n"
        return (text + distributed(selected, results) + functions.section(results) +
                ray_executor.section(selected, results) + tpcds.section(results))

    md = report(selected, OUT, "sluice benchmarks", notes, sections)
    if abi_md:
        md.write_text(md.read_text() + "\n" + abi_md)
    print(md.read_text())
    print(f"report: {md}")


if __name__ == "__main__":
    main()
