"""TPC-DS at SF 1 (tpcgen-cli Parquet): the 103 statements of tests/tpcds/ in sluice (in-process),
DuckDB and DataFusion, each limited to 2 threads, on the same files. Run through bench/run.py.
BENCH_TPCDS_SF=0.1 runs the same at another scale factor (its own data folder; the workloads are
named after it), for trying the bench out on a small machine.

Used as a script, it is the launcher that each timed command runs: `tpcds.py ENGINE QUERY`."""

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
SLUICE = str(ROOT / "build" / "sluice")
SF = os.environ.get("BENCH_TPCDS_SF", "1")
DATA = HERE / "data" / f"tpcds-sf{SF}"
HOME = HERE / "data" / f"tpcds-home-sf{SF}"
QUERIES = ROOT / "tests" / "tpcds"
# q01 ... q99, with two statements for templates 14, 23, 24 and 39: 103 in all.
NAMES = sorted(p.stem for p in QUERIES.glob("q*.sql"))
# They order by an expression over an output column's alias, which PostgreSQL refuses, and so
# does sluice: not run in sluice, and left out of every total (tests/tpcds/README.md).
REFUSED = ["q36", "q70", "q86"]
ENGINES = ["sluice", "duckdb", "datafusion"]
TABLES = [
    "call_center", "catalog_page", "catalog_returns", "catalog_sales", "customer",
    "customer_address", "customer_demographics", "date_dim", "household_demographics",
    "income_band", "inventory", "item", "promotion", "reason", "ship_mode", "store",
    "store_returns", "store_sales", "time_dim", "warehouse", "web_page", "web_returns",
    "web_sales", "web_site",
]
# Per run: a plan that runs away is reported as failed instead of holding the bench or the
# machine. At SF 1 DuckDB runs every statement in under a second; the limits are far above it.
TIMEOUT = float(os.environ.get("BENCH_TPCDS_TIMEOUT", "300"))
MAX_RSS_MIB = float(os.environ.get("BENCH_TPCDS_MAX_RSS_MIB", "12288"))


def location(t):
    """tpcgen-cli writes a file per table, or a folder of files for a large one."""
    return f"{t}.parquet" if (DATA / f"{t}.parquet").exists() else t


def env():
    e = {k: v for k, v in os.environ.items() if not k.startswith("SLUICE_")}
    e["SLUICE_HOME"] = str(HOME)
    e["SLUICE_STORE"] = f"file://{DATA}"
    # Arrow sizes its CPU pool from this (else from the cores): 2 threads, as for the peers.
    e["OMP_NUM_THREADS"] = "2"
    return e


def prepare():
    if not all((DATA / location(t)).exists() for t in TABLES):
        # Into a scratch folder first, so that an interrupted run is not taken for data.
        tmp = DATA.with_name(DATA.name + ".tmp")
        shutil.rmtree(tmp, ignore_errors=True)
        subprocess.run([str(Path(sys.executable).parent / "tpcgen-cli"), "tpcds", "parquet",
                        "-s", SF, "--output-dir", str(tmp)], check=True)
        shutil.rmtree(DATA, ignore_errors=True)
        tmp.rename(DATA)
    for t in TABLES:
        subprocess.run([SLUICE, "query", f"CREATE EXTERNAL TABLE {t} STORED AS PARQUET "
                        f"LOCATION '{location(t)}'"], env=env(), check=True,
                       stdout=subprocess.DEVNULL)


def duckdb_rewrites(name):
    """The spellings DuckDB's parser needs in place of PostgreSQL's (q90's derived table `at`),
    from the TPC-DS comparison itself, flattened to pattern, replacement, ... for the argv. It is
    imported here, in the bench's process, and not in the timed launcher: it imports pytest."""
    if str(QUERIES) not in sys.path:
        sys.path.insert(0, str(QUERIES))
    from compare import DUCKDB_TEXT

    return [s for pair in DUCKDB_TEXT.get(name, []) for s in pair]


def commands(name):
    """Each engine's command for one statement; "q0" is the start-up query. sluice has none for
    the statements it refuses."""
    me = [sys.executable, str(Path(__file__))]
    cmds = {
        "sluice": [*me, "sluice", name],
        "duckdb": [*me, "duckdb", name, *duckdb_rewrites(name)],
        "datafusion": [*me, "datafusion", name],
    }
    if name in REFUSED:
        del cmds["sluice"]
    return cmds


def sql(name):
    # "Query 0" is a trivial one: each engine's start-up and catalog cost, to read the others by.
    if name == "q0":
        return "select count(*) from call_center"
    return (QUERIES / f"{name}.sql").read_text()


def run(engine, name, rewrites):
    text = sql(name)
    if engine == "sluice":
        # sluice's exit status and error as they are, without a traceback around them
        sys.exit(subprocess.run([SLUICE, "query", "--format", "csv", text], env=env(),
                                stdout=subprocess.DEVNULL).returncode)
    elif engine == "duckdb":
        import duckdb

        for pattern, repl in zip(rewrites[::2], rewrites[1::2]):
            text = re.sub(pattern, repl, text)
        con = duckdb.connect()
        con.execute("SET threads = 2")
        for t in TABLES:
            glob = DATA / location(t)
            glob = glob / "*.parquet" if glob.is_dir() else glob
            con.execute(f"create view {t} as select * from read_parquet('{glob}')")
        con.execute(text).fetchall()
    elif engine == "datafusion":
        import datafusion

        ctx = datafusion.SessionContext(datafusion.SessionConfig().with_target_partitions(2))
        for t in TABLES:
            ctx.register_parquet(t, str(DATA / location(t)))
        ctx.sql(text).collect()


def workload_name(name):
    return f"tpcds-sf{SF}-{name}"


def failure(error):
    """One line of a failed run's error: the exception that ended the launcher, or the kill."""
    killed = re.match(r"\S+ killed: (.*)", error, re.S)
    if killed:
        return f"killed: {killed.group(1)}"
    error = re.sub(r"^\S+ exited -?\d+: ", "", error)  # harness.run_once's prefix
    lines = [l.strip() for l in error.strip().splitlines() if l.strip()]
    return (lines[-1] if lines else "no message")[:160].replace("|", "\\|")


def section(results):
    """Per-query net times (median less the engine's tpcds-startup median) and their ratios to
    DuckDB, the totals over the statements that every engine ran, and what failed where."""
    from harness import Workload, net

    measured = {r.workload for r in results}
    queries = [n for n in NAMES if workload_name(n) in measured]
    if not queries:
        return ""
    startup = Workload(name="tpcds-startup", commands={}, startup="tpcds-startup")

    def cell(name, engine):
        """(net seconds or None, error or None); no entry at all for a refused statement."""
        m = next((r for r in results if r.workload == workload_name(name) and r.engine == engine),
                 None)
        if m is None:
            return None, "refused" if engine == "sluice" and name in REFUSED else "not run"
        if m.error:
            return None, failure(m.error)
        t = net(m, startup, results)
        return (None, "no start-up median") if t != t else (t, None)

    cells = {(n, e): cell(n, e) for n in queries for e in ENGINES}
    ran = {e: [n for n in queries if cells[n, e][0] is not None] for e in ENGINES}
    common = [n for n in queries if all(cells[n, e][0] is not None for e in ENGINES)]

    def secs(n, e):
        t, err = cells[n, e]
        return f"{t:.3f}" if t is not None else ("refused" if err == "refused" else "failed")

    def over(a, b):
        # A net at or below zero is within the start-up's noise: no ratio to read from it.
        return f"{a / b:.2f}" if a is not None and b is not None and a > 0 and b > 0 else "n/a"

    def ratio(n, e):
        return over(cells[n, e][0], cells[n, "duckdb"][0])

    total = {e: sum(cells[n, e][0] for n in common) for e in ENGINES}
    own = {e: sum(cells[n, e][0] for n in ran[e]) for e in ENGINES}
    offered = {e: len([n for n in queries if cells[n, e][1] != "refused"]) for e in ENGINES}
    lines = [
        "| | statements | sluice net s | duckdb net s | datafusion net s | sluice / duckdb "
        "| datafusion / duckdb |",
        "|---|---:|---:|---:|---:|---:|---:|",
        f"| total over the statements all three ran | {len(common)} | {total['sluice']:.3f} | "
        f"{total['duckdb']:.3f} | {total['datafusion']:.3f} | "
        f"{over(total['sluice'], total['duckdb'])} | "
        f"{over(total['datafusion'], total['duckdb'])} |",
        "| each engine over all it ran (statements) | | "
        + " | ".join(f"{own[e]:.3f} ({len(ran[e])})" for e in ENGINES) + " | | |",
    ]
    per_query = [
        "| query | sluice net s | duckdb net s | datafusion net s | sluice / duckdb "
        "| datafusion / duckdb |",
        "|---|---:|---:|---:|---:|---:|",
    ] + [
        f"| {workload_name(n)} | {secs(n, 'sluice')} | {secs(n, 'duckdb')} | "
        f"{secs(n, 'datafusion')} | {ratio(n, 'sluice')} | {ratio(n, 'datafusion')} |"
        for n in queries
    ]
    worst = sorted((n for n in common if cells[n, "duckdb"][0] > 0),
                   key=lambda n: cells[n, "sluice"][0] / cells[n, "duckdb"][0], reverse=True)[:10]
    worst_lines = ["| query | sluice net s | duckdb net s | sluice / duckdb |",
                   "|---|---:|---:|---:|"] + [
        f"| {workload_name(n)} | {secs(n, 'sluice')} | {secs(n, 'duckdb')} | "
        f"{ratio(n, 'sluice')} |" for n in worst]
    failed = [(n, e, cells[n, e][1]) for n in queries for e in ENGINES
              if cells[n, e][1] not in (None, "refused")]
    failures = ("Failed runs (the engine's last error line):\n\n| query | engine | error |\n"
                "|---|---|---|\n" + "".join(f"| {workload_name(n)} | {e} | {err} |\n"
                                             for n, e, err in failed)
                if failed else "No run failed.\n")
    refused = ", ".join(n for n in REFUSED if n in queries)
    return (
        f"## TPC-DS SF {SF}: sluice against DuckDB and DataFusion\n\n"
        f"The statements of tests/tpcds/ ({len(NAMES)} from the 99 templates). Net is the median "
        "less the engine's tpcds-startup median; ratios are to DuckDB's net (n/a where a net is "
        "not above zero: within the start-up's noise). "
        + (f"sluice refuses {refused}, as PostgreSQL does (ORDER BY an expression over an output "
           "alias): it does not run them, and they are in no total. " if refused else "")
        + "A run past the limits "
        f"({TIMEOUT:g} s, {MAX_RSS_MIB:g} MiB resident) is killed and counted as failed. Ran: "
        + ", ".join(f"{e} {len(ran[e])} of {offered[e]}" for e in ENGINES)
        + f"; all three: {len(common)}.\n\n"
        + "\n".join(lines) + "\n\n" + failures + "\n"
        + "The 10 statements with the largest sluice / DuckDB ratio (of those all three ran):\n\n"
        + "\n".join(worst_lines) + "\n\nPer statement:\n\n" + "\n".join(per_query) + "\n\n"
    )


if __name__ == "__main__":
    try:
        run(sys.argv[1], sys.argv[2], sys.argv[3:])
    except Exception as e:  # noqa: BLE001  a peer's refusal, on one line for the report
        sys.exit(f"{sys.argv[1]}: {type(e).__name__}: {' '.join(str(e).split())[:400]}")
