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
# The queries sluice supports today; the rest say "not supported" (see tests/e2e/test_sql.py).
SUPPORTED = [1, 6]


def env():
    e = {k: v for k, v in os.environ.items() if not k.startswith("SLUICE_")}
    e["SLUICE_HOME"] = str(HOME)
    e["SLUICE_STORE"] = f"file://{DATA}"
    return e


def prepare():
    if not (DATA / "lineitem.parquet").exists():
        subprocess.run([str(Path(sys.executable).parent / "tpchgen-cli"), "parquet", "-s", "1",
                        "--tables", "lineitem", "--output-dir", str(DATA)], check=True)
    subprocess.run([SLUICE, "query", "CREATE EXTERNAL TABLE lineitem STORED AS PARQUET "
                    "LOCATION 'lineitem.parquet'"], env=env(), check=True, stdout=subprocess.DEVNULL)


def sql(n):
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
    path = str(DATA / "lineitem.parquet")
    if engine == "sluice":
        subprocess.run([SLUICE, "query", "--format", "csv", text], env=env(), check=True,
                       stdout=subprocess.DEVNULL)
    elif engine == "duckdb":
        import duckdb

        con = duckdb.connect()
        con.execute("SET threads = 2")
        con.execute(f"create view lineitem as select * from read_parquet('{path}')")
        con.execute(text).fetchall()
    elif engine == "datafusion":
        import datafusion

        ctx = datafusion.SessionContext(datafusion.SessionConfig().with_target_partitions(2))
        ctx.register_parquet("lineitem", path)
        ctx.sql(text).collect()
    elif engine == "polars":
        os.environ["POLARS_MAX_THREADS"] = "2"
        import polars as pl

        ctx = pl.SQLContext(lineitem=pl.scan_parquet(path))
        ctx.execute(text.replace("interval '90' day", "interval '90 days'")
                    .replace("interval '1' year", "interval '1 year'"), eager=True)


if __name__ == "__main__":
    if sys.argv[1] == "polars":
        os.environ["POLARS_MAX_THREADS"] = "2"
    run(sys.argv[1], int(sys.argv[2]))
