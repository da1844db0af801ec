"""`make bench`: generates benchmark data (never committed) and runs every workload against its
peers in one run. Later issues add workloads (pipeline throughput, TPC-H) here.

Output: bench/out/report.md and bench/out/ratios.png.
"""

import os
import platform
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))

from harness import Workload, report  # noqa: E402

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


def workloads():
    import pipeline
    import tpch

    blob = str(make_blob(DATA / "blob-512MiB.bin", 512 << 20))
    raw, input_bytes = pipeline.prepare()
    tpch.prepare()
    return [
        # Start-up cost of each engine's process (Python + import for the peers), then the queries.
        Workload(name="tpch-startup", commands=tpch.commands(0)),
        *[
            Workload(name=f"tpch-sf1-q{n}", commands=tpch.commands(n), startup="tpch-startup")
            for n in tpch.SUPPORTED
        ],
        # The main job: JSONL -> extract -> dedup -> Parquet, sluice with 1 and 2 workers
        # against DuckDB doing the same in SQL with 2 threads.
        Workload(
            name="pipeline",
            commands={
                "sluice": pipeline.sluice_command(2),
                "sluice-1-worker": pipeline.sluice_command(1),
                "duckdb": pipeline.duckdb_command(raw, DATA / "duckdb-out.parquet"),
            },
            input_bytes=input_bytes,
        ),
        # BLAKE3 over a large file: sluice's C implementation with SIMD dispatch (one thread)
        # against b3sum (Rust, limited to one thread for a fair comparison) and Python blake3.
        Workload(
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
        ),
    ]


def abi_overhead() -> str:
    """The transform ABI against an in-process identity (src/exec/batch_transform_benchmark.cc)."""
    import json
    import subprocess

    binary = ROOT / "build" / "src" / "exec" / "batch_transform_benchmark"
    proc = subprocess.run(
        [str(binary), "--benchmark_format=json"], capture_output=True, check=True, text=True
    )
    rows = {b["name"].split("/")[0]: b for b in json.loads(proc.stdout)["benchmarks"]}
    direct, abi = rows["BM_InProcessIdentity"], rows["BM_AbiIdentity"]
    extract = rows["BM_ConversationExtract"]
    ratio = abi["real_time"] / direct["real_time"]
    return (
        "## Transform ABI overhead (1M rows, 64K-row batches)\n\n"
        "| path | ms per 1M rows | rows/s | ratio |\n|---|---:|---:|---:|\n"
        f"| in-process identity (decode + validate) | {direct['real_time']:.1f} | "
        f"{direct['items_per_second'] / 1e6:.1f}M | 1.00 |\n"
        f"| identity through the C ABI | {abi['real_time']:.1f} | "
        f"{abi['items_per_second'] / 1e6:.1f}M | {ratio:.2f} |\n"
        "\n## conversation-message-extract through the ABI\n\n"
        f"{extract['items_per_second'] / 1e6:.2f}M output rows/s "
        f"({extract['bytes_per_second'] / 1e6:.0f} MB/s of input IPC), "
        f"{extract['real_time']:.1f} ms per 10K requests\n"
    )


def main():
    # BENCH_ONLY=tpch (a substring of workload names) runs just those workloads.
    only = os.environ.get("BENCH_ONLY", "")
    selected = [w for w in workloads() if only in w.name]
    notes = (
        f"Machine: {os.cpu_count()} cores, {platform.machine()}, Python {platform.python_version()}. "
        "Median of 3 runs after one warm-up; peak MiB is the process's max RSS. Every TPC-H "
        "command is a Python launcher (bench/tpch.py) that runs the engine; 'net' subtracts "
        "each engine's tpch-startup median (launcher, process start, imports, catalog)."
    )
    md = report(selected, OUT, "sluice benchmarks", notes)
    if not only:
        md.write_text(md.read_text() + "\n" + abi_overhead())
    print(md.read_text())
    print(f"report: {md}")


if __name__ == "__main__":
    main()
