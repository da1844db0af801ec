"""The main job as a benchmark workload: JSONL -> conversation-message-extract -> dedup on
data_hash -> Parquet, in sluice (1 and 2 workers) and in DuckDB SQL on the same files, at the
bench's size (OBJECTS) and at LARGE_OBJECTS, where per-object and per-process costs show.

DuckDB does the same work in SQL: read_json, unnest the messages with their positions, hash the
primary key (sha256; DuckDB has no BLAKE3), keep one row per hash, COPY to Parquet.
"""

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
SLUICE = str(ROOT / "build" / "sluice")
OBJECTS = 200
LARGE_OBJECTS = 1000
# The committed validate job (the first 50 objects), for bench/ray_executor.py.
VALIDATE_JOB = HERE / "data" / "pipeline-validate-job.toml"


def home(objects=OBJECTS):
    # Each size in its own home: its own store, registry and run history.
    return HERE / "data" / ("pipeline-home" if objects == OBJECTS else f"pipeline-home-{objects}")


def job(objects=OBJECTS):
    return HERE / "data" / ("pipeline-job.toml" if objects == OBJECTS
                            else f"pipeline-job-{objects}.toml")


def env(objects=OBJECTS):
    e = {k: v for k, v in os.environ.items() if not k.startswith("SLUICE_") or k == "SLUICE_RAY_PYTHON"}
    e["SLUICE_HOME"] = str(home(objects))
    return e


def run(*args, objects=OBJECTS):
    subprocess.run([SLUICE, *args], env=env(objects), check=True, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL)


def prepare(objects=OBJECTS):
    """Example data (deterministic), a signing key, the published transform, and a job that
    reads every object. Earlier bench runs' outputs go first: every timed run writes a new run's
    output (26 MB for 1,000 objects), which would otherwise pile up run after run."""
    shutil.rmtree(home(objects) / "store" / "bench", ignore_errors=True)
    run("example-data", "conversations", "--objects", str(objects), "--prefix",
        "raw/conversations/", objects=objects)
    if not (home(objects) / "keys" / "signing.key").exists():
        run("auth", "keygen", "--name", "bench", objects=objects)
    run("transform", "publish", str(ROOT / "transforms" / "conversation-message-extract"),
        objects=objects)
    text = (ROOT / "pipelines" / "jobs" / "conversation-messages.toml").read_text()
    job(objects).write_text(text.replace("derived/conversation-messages/{run_id}",
                                         "bench/conversation-messages/{run_id}"))
    text = (ROOT / "pipelines" / "jobs" / "conversation-messages-validate.toml").read_text()
    VALIDATE_JOB.write_text(text.replace("derived/conversation-messages-validate/{run_id}",
                                         "bench/conversation-messages-validate/{run_id}"))
    raw = home(objects) / "store" / "raw" / "conversations"
    input_bytes = sum(p.stat().st_size for p in raw.glob("*.jsonl"))
    return raw, input_bytes


def sluice_command(workers, which="main", objects=OBJECTS):
    # A fresh run id per invocation, or the second run would be a no-op. "ray": --executor ray
    # with a task per cluster CPU (bench/ray_executor.py); "validate": the validate job.
    return [sys.executable, str(Path(__file__)), "submit", str(workers), which, str(objects)]


def duckdb_command(raw, out):
    return [sys.executable, str(Path(__file__)), "duckdb", str(raw), str(out)]


def duckdb_job(raw, out):
    import duckdb

    con = duckdb.connect()
    con.execute("SET threads = 2")
    con.execute(f"""
        COPY (
          SELECT DISTINCT ON (data_hash) *
          FROM (
            SELECT conversation_id || ':' || (pos - 1) AS primary_key,
                   sha256(conversation_id || ':' || (pos - 1)) AS data_hash,
                   conversation_id, user_id, pos - 1 AS position,
                   messages[pos].role AS role, messages[pos].content AS content,
                   messages[pos].name AS name, request_id, received_at
            FROM (
              SELECT *, generate_subscripts(messages, 1) AS pos
              FROM read_json('{raw}/*.jsonl', format = 'newline_delimited',
                             columns = {{request_id: 'VARCHAR', user_id: 'VARCHAR',
                                         conversation_id: 'VARCHAR', model: 'VARCHAR',
                                         received_at: 'TIMESTAMPTZ',
                                         messages: 'STRUCT(role VARCHAR, content VARCHAR,
                                                           name VARCHAR)[]'}})
            )
          )
        ) TO '{out}' (FORMAT parquet, COMPRESSION zstd)
    """)


if __name__ == "__main__":
    if sys.argv[1] == "submit":
        how = ["--executor", "ray"] if sys.argv[2] == "ray" else ["--workers", sys.argv[2]]
        objects = int(sys.argv[4])
        manifest = VALIDATE_JOB if sys.argv[3] == "validate" else job(objects)
        run("submit", "--manifest", str(manifest), "--run-id", f"bench-{time.time_ns()}", *how,
            objects=objects)
    elif sys.argv[1] == "duckdb":
        duckdb_job(sys.argv[2], sys.argv[3])
