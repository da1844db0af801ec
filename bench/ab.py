"""Two builds of sluice side by side on the same TPC-H or TPC-DS queries: the measurement that
judges one change. Run from the repository root:

    .venv/bin/python bench/ab.py BEFORE AFTER [--tpcds] [--runs N] QUERY...

BEFORE and AFTER are sluice binaries (copy build/sluice aside before a change). A QUERY is a
TPC-H number (1-22), a TPC-DS name (q17, q14a) with --tpcds, or a .sql file. The two binaries
run alternately, `--runs` times each (default 9), on the bench's SF 1 data (generated on first
use, as `make bench` does). Each query gets the medians of wall time, CPU time (user + system,
from wait4) and peak RSS, and a check that both builds printed the same rows.

Alternating matters on a shared machine: the bench's engine-to-engine ratios move by 10-15 %
from run to run, so a 3 % change shows only when both builds meet the same spells of load.
Timings are reported, never asserted.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import tpcds  # noqa: E402
import tpch  # noqa: E402


def query_file(query: str, ds: bool) -> Path:
    path = Path(query)
    if path.suffix == ".sql":
        return path
    if ds:
        return tpcds.QUERIES / f"{query}.sql"
    return tpch.QUERIES / f"q{int(query.lstrip('q')):02d}.sql"


def run(binary: str, sql: Path, env: dict[str, str]) -> tuple[float, float, float, bytes]:
    """(wall s, CPU s, peak RSS MiB, the rows as CSV) of one run; raises if it fails."""
    with tempfile.TemporaryFile() as out:
        start = time.perf_counter()
        proc = subprocess.Popen([binary, "query", "--format", "csv", "-f", str(sql)], env=env,
                                stdout=out, stderr=subprocess.PIPE)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - start
        stderr = proc.stderr.read().decode(errors="replace") if proc.stderr else ""
        if os.waitstatus_to_exitcode(status) != 0:
            raise RuntimeError(f"{binary} failed on {sql.name}: {stderr.strip()[-500:]}")
        out.seek(0)
        return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024.0, out.read()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("before")
    parser.add_argument("after")
    parser.add_argument("queries", nargs="+", metavar="QUERY")
    parser.add_argument("--tpcds", action="store_true", help="TPC-DS names instead of TPC-H")
    parser.add_argument("--runs", type=int, default=9)
    args = parser.parse_args()
    for binary in (args.before, args.after):
        if not os.access(binary, os.X_OK):
            parser.error(f"{binary} is not an executable sluice binary")
    files = [query_file(q, args.tpcds) for q in args.queries]
    for f in files:
        if not f.is_file():
            parser.error(f"no query file {f}")
    suite = tpcds if args.tpcds else tpch
    suite.prepare()
    env = suite.env()
    lines = ["| query | wall ms | CPU ms | peak MiB | rows |", "|---|---:|---:|---:|---|"]
    totals = {"before": [0.0, 0.0], "after": [0.0, 0.0]}
    for sql in files:
        seen = {"before": [], "after": []}
        rows = {}
        for _ in range(args.runs):
            for side, binary in (("before", args.before), ("after", args.after)):
                wall, cpu, rss, out = run(binary, sql, env)
                seen[side].append((wall, cpu, rss))
                rows[side] = out
        med = {s: [statistics.median(r[i] for r in v) for i in range(3)] for s, v in seen.items()}
        for s in totals:
            totals[s][0] += med[s][0]
            totals[s][1] += med[s][1]
        b, a = med["before"], med["after"]
        same = "same" if rows["before"] == rows["after"] else "DIFFER"
        lines.append(f"| {sql.stem} | {b[0] * 1e3:.1f} -> {a[0] * 1e3:.1f} ({a[0] / b[0]:.3f}) | "
                     f"{b[1] * 1e3:.1f} -> {a[1] * 1e3:.1f} ({a[1] / b[1]:.3f}) | "
                     f"{b[2]:.0f} -> {a[2]:.0f} | {same} |")
        print(lines[-1], flush=True)
    b, a = totals["before"], totals["after"]
    lines.append(f"| total | {b[0] * 1e3:.1f} -> {a[0] * 1e3:.1f} ({a[0] / b[0]:.3f}) | "
                 f"{b[1] * 1e3:.1f} -> {a[1] * 1e3:.1f} ({a[1] / b[1]:.3f}) | | |")
    print(f"\nMedians of {args.runs} alternating runs each ({'TPC-DS' if args.tpcds else 'TPC-H'} "
          f"SF {suite.SF}): before -> after (after / before).\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
