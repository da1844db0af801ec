"""Benchmark harness: runs each workload's commands for sluice and its peers in one run, and
reports median wall time, CPU time, peak memory and the ratio to sluice, as a markdown table and a
PNG chart.

A workload is a name and a mapping from engine to a command (argv list). Every command runs
`repeat` times after one warm-up, the engines taking turns; peak memory is the child's maximum
resident set size from wait4(), so it measures exactly that process tree's largest process; CPU
time is that tree's user and system time from the same call.
Timings are only ever reported here, never asserted by tests.
"""

from __future__ import annotations

import os
import signal
import statistics
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable


# Runs of a start-up workload, the start-up time each report shows. "Net" does not use it: each
# timed run of a query is paired with a start-up run just before it (measure()), since the
# machine drifts between a run's first minute and its last. With one start-up median for the
# whole run, DuckDB's ranged over 0.143-0.198 s in four `make bench BENCH_ONLY=tpch` runs of one
# build, and their 22-query net totals over 1.46-2.11x DuckDB.
STARTUP_REPEAT = 11

# Timed runs of a TPC-H query or the main job (measure() interleaves the engines' runs). With 3,
# each engine's run back to back, a busy spell of the host decided a median: DuckDB's Q14 net
# read 0.066 s in one run of the bench and 0.166 s in the next, which made Q14 the worst query
# of one run and a tie in the other; the main job's ratio read 1.16, 1.48 and 1.80 in three.
QUERY_REPEAT = 5


@dataclass
class Workload:
    name: str
    commands: dict[str, list[str]]
    # Which engine the ratios are relative to.
    baseline: str = "sluice"
    repeat: int = 3
    env: dict[str, str] = field(default_factory=dict)
    # When set, the report adds MB/s of input and rows/s of output.
    input_bytes: int = 0
    output_rows: int = 0
    # A workload measuring each engine's start-up alone: the report subtracts its median per
    # engine ("net"), since a process start (Python and imports for some peers) can dominate.
    startup: str | None = None
    # Limits on one run (seconds; resident MiB of the whole process group): past either, the
    # run is killed and the engine is reported as failed, so one runaway plan cannot hold the
    # bench (or the machine's memory) for good.
    timeout: float | None = None
    max_rss_mib: float | None = None


@dataclass
class Measurement:
    workload: str
    engine: str
    seconds: list[float]
    peak_rss_mib: float
    error: str | None = None
    # The engine's start-up run just before each of `seconds`, when the workload has one.
    startup_seconds: list[float] = field(default_factory=list)
    # User + system seconds of each timed run, and of the start-up run just before it.
    cpu_seconds: list[float] = field(default_factory=list)
    startup_cpu_seconds: list[float] = field(default_factory=list)

    @property
    def median(self) -> float:
        return statistics.median(self.seconds) if self.seconds else float("nan")


def run_once(argv: list[str], env: dict[str, str], timeout: float | None = None,
             max_rss_mib: float | None = None) -> tuple[float, float, float]:
    """Runs argv, returns (wall seconds, peak RSS MiB, CPU seconds: user + system of it and the
    children it waited for); raises on a non-zero exit, or when the run passes `timeout` or
    `max_rss_mib` (then its whole process group is killed)."""
    full_env = dict(os.environ)
    full_env.update(env)
    guarded = timeout is not None or max_rss_mib is not None
    start = time.perf_counter()
    # Its own process group when guarded: a launcher's engine child is killed with it.
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=full_env,
                            process_group=0 if guarded else None)
    done, killed = threading.Event(), []
    if guarded:
        threading.Thread(target=_guard, args=(proc.pid, start, timeout, max_rss_mib, done, killed),
                         daemon=True).start()
    try:
        _, status, usage = os.wait4(proc.pid, 0)
    except BaseException:  # Ctrl-C: the child is in its own group, so it did not get the signal
        if guarded:
            _kill_group(proc.pid)
        raise
    finally:
        done.set()
    elapsed = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    stderr = proc.stderr.read().decode(errors="replace") if proc.stderr else ""
    if killed:
        raise RuntimeError(f"{argv[0]} killed: {killed[0]}")
    if proc.returncode != 0:
        raise RuntimeError(f"{argv[0]} exited {proc.returncode}: {stderr.strip()[-500:]}")
    return elapsed, usage.ru_maxrss / 1024.0, usage.ru_utime + usage.ru_stime


def _kill_group(pgid: int) -> None:
    try:
        os.killpg(pgid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def _group_rss_mib(pgid: int) -> float:
    """Resident MiB of every process in the group (the launcher and the engine it started)."""
    total = 0
    for p in os.listdir("/proc"):
        if not p.isdigit():
            continue
        try:
            with open(f"/proc/{p}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if int(fields[2]) == pgid:  # fields after the command: state, ppid, pgrp, ... rss (22)
            total += int(fields[21])
    return total * os.sysconf("SC_PAGE_SIZE") / 2**20


def _guard(pgid, start, timeout, max_rss_mib, done, killed):
    # Polled twice a second: a /proc scan costs about a millisecond, next to nothing in the run.
    while not done.wait(0.5):
        if timeout is not None and time.perf_counter() - start > timeout:
            killed.append(f"timed out after {timeout:g} s")
        elif max_rss_mib is not None and (rss := _group_rss_mib(pgid)) > max_rss_mib:
            killed.append(f"over {max_rss_mib:g} MiB resident ({rss:.0f} MiB)")
        if killed:
            _kill_group(pgid)
            return


def measure(workload: Workload,
            startup: dict[str, list[str]] | None = None) -> list[Measurement]:
    """Runs each engine's command once to warm up (page cache, imports), then `repeat` rounds of
    one timed run per engine, the engines' order rotating each round: a busy spell of the host
    then falls on every engine alike, not on whichever engine's runs it met. With `startup`
    (each engine's start-up command), each timed run follows a run of the engine's start-up,
    for net() to subtract."""
    limits = (workload.timeout, workload.max_rss_mib)
    engines = list(workload.commands)
    times: dict[str, list[float]] = {e: [] for e in engines}
    starts: dict[str, list[float]] = {e: [] for e in engines}
    cpus: dict[str, list[float]] = {e: [] for e in engines}
    start_cpus: dict[str, list[float]] = {e: [] for e in engines}
    peak = {e: 0.0 for e in engines}
    failed: dict[str, str] = {}

    def run(engine: str, timed: bool) -> None:
        try:
            before = (startup or {}).get(engine)
            if timed and before is not None:
                start_t, _, start_cpu = run_once(before, workload.env, *limits)
                starts[engine].append(start_t)
                start_cpus[engine].append(start_cpu)
            t, rss, cpu = run_once(workload.commands[engine], workload.env, *limits)
            if timed:
                times[engine].append(t)
                cpus[engine].append(cpu)
                peak[engine] = max(peak[engine], rss)
        except Exception as e:  # a failing peer is reported, not fatal
            failed[engine] = str(e)

    for engine in engines:
        print(f"  {workload.name} / {engine} ...", file=sys.stderr, flush=True)
        run(engine, timed=False)
    for r in range(workload.repeat):
        for i in range(len(engines)):
            engine = engines[(i + r) % len(engines)]
            if engine not in failed:
                run(engine, timed=True)
    return [Measurement(workload.name, e, [], float("nan"), failed[e]) if e in failed
            else Measurement(workload.name, e, times[e], peak[e], startup_seconds=starts[e],
                             cpu_seconds=cpus[e], startup_cpu_seconds=start_cpus[e])
            for e in engines]


def ratio(m: Measurement, base: Measurement | None) -> float:
    if base is None or not base.seconds or not m.seconds:
        return float("nan")
    return m.median / base.median


def net(m: Measurement | None, w: Workload, results: list[Measurement]) -> float:
    """The median of each run less the start-up run just before it, or else the median less the
    same engine's start-up median; NaN without either."""
    if m is not None and m.seconds and len(m.startup_seconds) == len(m.seconds):
        return statistics.median(t - s for t, s in zip(m.seconds, m.startup_seconds))
    start = next((r for r in results if r.workload == w.startup and m and r.engine == m.engine),
                 None)
    if m is None or not m.seconds or start is None or not start.seconds:
        return float("nan")
    return m.median - start.median


def net_cpu(m: Measurement | None) -> float:
    """The median of each run's CPU seconds less those of the start-up run just before it; NaN
    without start-up runs. On a busy host CPU time moves less than wall time, and it counts
    both threads of an engine, where wall time hides a thread left idle."""
    if m is None or not m.cpu_seconds or len(m.startup_cpu_seconds) != len(m.cpu_seconds):
        return float("nan")
    return statistics.median(c - s for c, s in zip(m.cpu_seconds, m.startup_cpu_seconds))


def markdown(workloads: list[Workload], results: list[Measurement]) -> str:
    lines = [
        "| workload | engine | median s | runs | peak MiB | MB/s in | rows/s out | time / sluice "
        "| net s | net / sluice | net CPU s | net CPU / sluice |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for w in workloads:
        rows = [r for r in results if r.workload == w.name]
        base = next((r for r in rows if r.engine == w.baseline), None)
        for r in rows:
            if r.error:
                lines.append(f"| {w.name} | {r.engine} | failed: {r.error[:80]} | | | | | | | | | |")
                continue
            mbs = f"{w.input_bytes / 1e6 / r.median:.1f}" if w.input_bytes else ""
            rps = f"{w.output_rows / r.median / 1e3:.0f}k" if w.output_rows else ""
            n, nb = net(r, w, results), net(base, w, results)
            nets = f"{n:.3f} | {n / nb:.2f}" if w.startup and nb > 0 else " | "
            c, cb = net_cpu(r), net_cpu(base)
            cpus = f"{c:.3f} | {c / cb:.2f}" if w.startup and cb > 0 else " | "
            lines.append(
                f"| {w.name} | {r.engine} | {r.median:.3f} | {len(r.seconds)} | "
                f"{r.peak_rss_mib:.0f} | {mbs} | {rps} | {ratio(r, base):.2f} | {nets} | {cpus} |"
            )
    return "\n".join(lines) + "\n"


def chart(workloads: list[Workload], results: list[Measurement], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    engines = sorted({r.engine for r in results}, key=lambda e: (e != "sluice", e))
    names = [w.name for w in workloads]
    width = 0.8 / max(1, len(engines))
    # Capped: matplotlib refuses an image 2^16 pixels wide, which every workload with TPC-DS's
    # 104 would pass.
    fig, ax = plt.subplots(figsize=(min(300, max(6, 1.5 * len(names) * len(engines) / 2)), 4))
    for i, engine in enumerate(engines):
        values = []
        for w in workloads:
            rows = [r for r in results if r.workload == w.name]
            base = next((r for r in rows if r.engine == w.baseline), None)
            r = next((r for r in rows if r.engine == engine), None)
            values.append(ratio(r, base) if r else float("nan"))
        xs = [j + i * width for j in range(len(names))]
        ax.bar(xs, values, width, label=engine)
    ax.axhline(1.0, color="black", linewidth=0.8)
    ax.set_xticks([j + width * (len(engines) - 1) / 2 for j in range(len(names))])
    ax.set_xticklabels(names)
    ax.set_ylabel("time relative to sluice (lower is faster)")
    ax.set_title("sluice vs peers, same data, same run")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def report(workloads: list[Workload], out_dir: Path, title: str, notes: str = "",
           sections: Callable[[list[Measurement]], str] | None = None) -> Path:
    """Measures every workload and writes report.md and ratios.png; `sections`, given the
    measurements, returns more markdown to put after the main table."""
    out_dir.mkdir(parents=True, exist_ok=True)
    results = []
    by_name = {w.name: w for w in workloads}
    for w in workloads:
        start = by_name.get(w.startup) if w.startup else None
        results.extend(measure(w, start.commands if start is not None else None))
    png = out_dir / "ratios.png"
    chart(workloads, results, png)
    more = sections(results) if sections else ""
    md = out_dir / "report.md"
    md.write_text(
        f"# {title}\n\n{notes}\n\n{markdown(workloads, results)}\n{more}"
        f"![ratios]({png.name})\n"
    )
    return md
