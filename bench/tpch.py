"""TPC-H at SF 1 (tpchgen-cli Parquet): the queries sluice runs, in sluice, DuckDB, DataFusion
and Polars, each limited to 2 threads, on the same files. Run through bench/run.py."""

import os
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
SLUICE = str(ROOT / "build" / "sluice")
DATA = HERE / "data" / "tpch-sf1"
HOME = HERE / "data" / "tpch-home"
QUERIES = ROOT / "tests" / "tpch"
# The queries sluice supports today: all 22 (tests/e2e/test_sql.py checks them against DuckDB).
SUPPORTED = list(range(1, 23))
TABLES = ["customer", "lineitem", "nation", "orders", "part", "partsupp", "region", "supplier"]


def env():
    e = {k: v for k, v in os.environ.items() if not k.startswith("SLUICE_")}
    e["SLUICE_HOME"] = str(HOME)
    e["SLUICE_STORE"] = f"file://{DATA}"
    return e


def prepare():
    if not all((DATA / f"{t}.parquet").exists() for t in TABLES):
        subprocess.run([str(Path(sys.executable).parent / "tpchgen-cli"), "parquet", "-s", "1",
                        "--output-dir", str(DATA)], check=True)
    for t in TABLES:
        subprocess.run([SLUICE, "query", f"CREATE EXTERNAL TABLE {t} STORED AS PARQUET "
                        f"LOCATION '{t}.parquet'"], env=env(), check=True,
                       stdout=subprocess.DEVNULL)


def sql(n):
    # "Query 0" is a trivial one: each engine's start-up and catalog cost, to read the others by.
    if n == 0:
        return "select count(*) from region"
    return (QUERIES / f"q{n:02d}.sql").read_text()


def commands(n):
    me = [sys.executable, str(Path(__file__))]
    return {
        "sluice": [*me, "sluice", str(n)],
        "duckdb": [*me, "duckdb", str(n)],
        "datafusion": [*me, "datafusion", str(n)],
        "polars": [*me, "polars", str(n)],
    }


def run(engine, n):
    text = sql(n)
    if engine == "sluice":
        subprocess.run([SLUICE, "query", "--format", "csv", text], env=env(), check=True,
                       stdout=subprocess.DEVNULL)
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


if __name__ == "__main__":
    if sys.argv[1] == "polars":
        os.environ["POLARS_MAX_THREADS"] = "2"
    run(sys.argv[1], int(sys.argv[2]))
