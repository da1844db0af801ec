"""Hostile plan bytes and pathological SQL end in an error report, never a signal: nesting that
overflowed the stack in nlohmann's CBOR decoder and in libpg_query's JSON output is refused."""

import json
import subprocess

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from conftest import base_env

MAGIC = b"SLUICE-PLAN/1\n"


def run_worker(sluice_bin, tmp_path, body):
    env = base_env(tmp_path / "home")
    proc = subprocess.run([str(sluice_bin), "worker"], input=MAGIC + body, capture_output=True,
                          env=env, timeout=120)
    assert proc.returncode >= 0, f"worker died of signal {-proc.returncode}"
    report = json.loads(proc.stdout.decode().strip().splitlines()[-1])
    assert report["status"] == "error"
    return report["error"]


@pytest.mark.parametrize("body, message", [
    (b"\x81" * 200000 + b"\x00", "plan: nested deeper than 64 levels (at byte 64)"),
    (b"\x9f" * 200000 + b"\x00" + b"\xff" * 200000,
     "plan: nested deeper than 64 levels (at byte 64)"),
    (b"\x9b" + b"\xff" * 8 + b"\x00",
     "an array at byte 0 declares 18446744073709551615 items, but 1 bytes remain"),
    (b"\x5b" + b"\xff" * 8, "a string at byte 0 declares 18446744073709551615 bytes, but 0 remain"),
])
def test_worker_reports_hostile_plan_bytes(sluice_bin, tmp_path, body, message):
    assert message in run_worker(sluice_bin, tmp_path, body)


def query(sluice, sql):
    # Through stdin: one argument may not exceed 128 KiB on Linux.
    proc = sluice.run("query", "-", input=sql.encode())
    assert proc.returncode >= 0, f"sluice query died of signal {-proc.returncode}"
    return proc


NESTING = "expression nesting exceeds 256 levels"


@pytest.mark.parametrize("sql, message", [
    ("select 1" + "+1" * 29999, NESTING + " (line 1, column 8)"),
    # Just under 1 MiB: libpg_query alone needs ~65 MB of stack for it.
    ("select 1" + "+1" * 524000, NESTING + " (line 1, column 8)"),
    ("select 1" + "+1" * 999999,
     "the query is 2000006 bytes; sluice parses at most 1048576 (1 MiB)"),
    ("select " + "(" * 100000 + "1" + ")" * 100000, 'memory exhausted at or near "("'),
    ("select " + "abs(" * 1000 + "1" + ")" * 1000, NESTING),
    ("select " + "not " * 5000 + "true", NESTING),
    ("select * from " + "(select * from " * 1000 + "nation" + ") t" * 1000, NESTING),
    ("select " + "(select " * 1000 + "1" + ")" * 1000, NESTING),
    ("create external table t stored as parquet location '" + "a" * 500000 + "'",
     "File name too long"),
])
def test_pathological_sql_is_an_error(sluice, sql, message):
    proc = query(sluice, sql)
    assert proc.returncode == 1
    assert message in proc.stderr.decode(errors="replace")


def test_deep_but_accepted_query_runs(sluice, tmp_path):
    pq.write_table(pa.table({"k": [1]}), tmp_path / "one.parquet")
    sluice.run("query", f"CREATE EXTERNAL TABLE one STORED AS PARQUET LOCATION "
                        f"'{tmp_path}/one.parquet'", check=True)
    # 250 levels are within the limit: the sum is computed.
    proc = query(sluice, "select k" + "+k" * 249 + " as n from one")
    assert proc.returncode == 0, proc.stderr.decode()
    assert proc.stdout.decode().split() == ['"n"', "250"]
