"""TPC-H at SF 1 (tpchgen-cli Parquet): the queries sluice runs, in sluice (in-process and with
`--workers 2`), DuckDB, DataFusion and Polars, each limited to 2 threads, on the same files. Run
through bench/run.py. BENCH_TPCH_SF=0.1 runs the same at another scale factor (its own data
folder; the workloads are named after it), for trying the bench out on a small machine.
`make bench BENCH_SCALE=10` runs SCALE_QUERIES at SF 1 and SF 10 (bench/run.py, scale())."""

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
SLUICE = str(ROOT / "build" / "sluice")
SF = os.environ.get("BENCH_TPCH_SF", "1")


def data_dir(sf):
    return HERE / "data" / f"tpch-sf{sf}"


def home_dir(sf):
    return HERE / "data" / ("tpch-home" if sf == "1" else f"tpch-home-sf{sf}")


DATA = data_dir(SF)
HOME = home_dir(SF)
# The workers of the distributed variant ("sluice-w2"); 2, like every engine's threads.
WORKERS = 2
QUERIES = ROOT / "tests" / "tpch"
# The queries sluice supports today: all 22 (tests/e2e/test_sql.py checks them against DuckDB).
SUPPORTED = list(range(1, 23))
TABLES = ["customer", "lineitem", "nation", "orders", "part", "partsupp", "region", "supplier"]


# The queries `make bench BENCH_SCALE=10` runs at SF 1 and at that scale, in sluice and DuckDB.
SCALE_QUERIES = [1, 3, 9, 18, 21]


def env(sf=None):
    sf = sf or SF
    e = {k: v for k, v in os.environ.items() if not k.startswith("SLUICE_") or k == "SLUICE_RAY_PYTHON"}
    e["SLUICE_HOME"] = str(home_dir(sf))
    e["SLUICE_STORE"] = f"file://{data_dir(sf)}"
    return e


def data_bytes(sf=None):
    """The Parquet files' size at a scale factor: what the scale report divides by."""
    return sum((data_dir(sf or SF) / f"{t}.parquet").stat().st_size for t in TABLES)


def prepare(sf=None):
    sf = sf or SF
    data = data_dir(sf)
    if not all((data / f"{t}.parquet").exists() for t in TABLES):
        # Generated into a temporary folder and renamed: an interrupted run leaves no half set.
        tmp = data.with_name(data.name + ".tmp")
        shutil.rmtree(tmp, ignore_errors=True)
        subprocess.run([str(Path(sys.executable).parent / "tpchgen-cli"), "parquet", "-s", sf,
                        "--output-dir", str(tmp)], check=True)
        shutil.rmtree(data, ignore_errors=True)
        tmp.rename(data)
    for t in TABLES:
        subprocess.run([SLUICE, "query", f"CREATE EXTERNAL TABLE {t} STORED AS PARQUET "
                        f"LOCATION '{t}.parquet'"], env=env(sf), check=True,
                       stdout=subprocess.DEVNULL)


# Not TPC-H: a LIMIT with no ORDER BY, which should stop reading lineitem after a few rows, and
# the same query without it written out as CSV, which should stream (memory of a few batches).
LIMIT_SQL = "select l_orderkey, l_comment from lineitem limit 5"
# ORDER BY under the LIMIT (a top-N): every row is read, few are kept.
TOPN_SQL = "select l_orderkey, l_comment from lineitem order by l_extendedprice desc limit 5"
EXPORT_SQL = "select l_orderkey, l_comment from lineitem"
EXPORT_CSV = HERE / "data" / "export.csv"


def sql(n):
    # "Query 0" is a trivial one: each engine's start-up and catalog cost, to read the others by.
    if n == 0:
        return "select count(*) from region"
    if n == "limit5":
        return LIMIT_SQL
    if n == "topn5":
        return TOPN_SQL
    if n == "export":
        return EXPORT_SQL
    return (QUERIES / f"q{n:02d}.sql").read_text()


def commands(n):
    me = [sys.executable, str(Path(__file__))]
    return {
        "sluice": [*me, "sluice", str(n)],
        "sluice-w2": [*me, "sluice-w2", str(n)],
        "duckdb": [*me, "duckdb", str(n)],
        "datafusion": [*me, "datafusion", str(n)],
        "polars": [*me, "polars", str(n)],
    }


def export_commands():
    """sluice and DuckDB writing EXPORT_SQL's 6M rows (at SF 1) as CSV to a file."""
    me = [sys.executable, str(Path(__file__))]
    return {"sluice": [*me, "sluice-export", "export"], "duckdb": [*me, "duckdb-export", "export"]}


def run(engine, n):
    text = sql(n)
    if engine == "sluice-export":
        with open(EXPORT_CSV, "wb") as out:
            subprocess.run([SLUICE, "query", "--format", "csv", text], env=env(), check=True,
                           stdout=out)
        return
    if engine == "duckdb-export":
        import duckdb

        con = duckdb.connect()
        con.execute("SET threads = 2")
        for t in TABLES:
            con.execute(f"create view {t} as select * from read_parquet('{DATA}/{t}.parquet')")
        con.execute(f"copy ({text}) to '{EXPORT_CSV}' (format csv, header)")
        return
    if engine in ("sluice", "sluice-w2", "sluice-ray"):
        workers = ["--workers", str(WORKERS)] if engine != "sluice" else []
        if engine == "sluice-ray":  # bench/ray_executor.py: on the local Ray cluster
            workers += ["--executor", "ray"]
        subprocess.run([SLUICE, "query", *workers, "--format", "csv", text], env=env(),
                       check=True, stdout=subprocess.DEVNULL)
    elif engine == "duckdb":
        import duckdb

        con = duckdb.connect()
        con.execute("SET threads = 2")
        for t in TABLES:
            con.execute(f"create view {t} as select * from read_parquet('{DATA}/{t}.parquet')")
        con.execute(text).fetchall()
    elif engine == "datafusion":
        import datafusion

        ctx = datafusion.SessionContext(datafusion.SessionConfig().with_target_partitions(2))
        for t in TABLES:
            ctx.register_parquet(t, str(DATA / f"{t}.parquet"))
        ctx.sql(text).collect()
    elif engine == "polars":
        os.environ["POLARS_MAX_THREADS"] = "2"
        import polars as pl

        ctx = pl.SQLContext({t: pl.scan_parquet(DATA / f"{t}.parquet") for t in TABLES})
        for unit in ["day", "month", "year"]:
            for n in ["1", "3", "90"]:
                text = text.replace(f"interval '{n}' {unit}", f"interval '{n} {unit}s'")
        ctx.execute(text, eager=True)


def explain(n):
    """Runs query n once with --workers 2 under EXPLAIN ANALYZE (not timed) and returns (stages,
    shuffle bytes written, shuffle bytes read): stages is the stage count, "in-process" for a
    query that is not cut, or "failed (...)"; the bytes are None where the output has no
    `total shuffle:` line. Never raises: a failure is something to report."""
    try:
        proc = subprocess.run([SLUICE, "query", "--workers", str(WORKERS),
                               f"EXPLAIN ANALYZE {sql(n)}"], env=env(), capture_output=True,
                              text=True, timeout=3600)
    except Exception as e:
        print(f"  EXPLAIN ANALYZE of q{n}: {e}", file=sys.stderr, flush=True)
        return "failed", None, None
    out = proc.stdout + "\n" + proc.stderr
    if proc.returncode != 0:
        print(f"  EXPLAIN ANALYZE of q{n} exited {proc.returncode}: {proc.stderr.strip()[-500:]}",
              file=sys.stderr, flush=True)
        return f"failed (exit {proc.returncode})", None, None
    plan = re.search(r"^distributed plan: (\d+) stages on (\d+) workers", out, re.MULTILINE)
    stages = plan.group(1) if plan else "in-process"
    total = re.search(r"total shuffle: (\d+) bytes written, (\d+) bytes read", out)
    if not total:
        return stages, None, None
    return stages, int(total.group(1)), int(total.group(2))


if __name__ == "__main__":
    if sys.argv[1] == "polars":
        os.environ["POLARS_MAX_THREADS"] = "2"
    run(sys.argv[1], sys.argv[2] if sys.argv[2] in ("limit5", "topn5", "export")
        else int(sys.argv[2]))
