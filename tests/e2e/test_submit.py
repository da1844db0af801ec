"""`sluice submit` end to end through the real binary: the example job against an expectation
computed independently in Python, read back with pyarrow and DuckDB; retries after SIGKILL;
idempotent run ids; bad input; S3 with a PostgreSQL registry; cross-run compaction."""

import json
import re
import shutil
from pathlib import Path

import blake3
import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from conftest import ROOT, Sluice, base_env, s3_store_url

EXAMPLE = ROOT / "transforms" / "conversation-message-extract"
JOBS = ROOT / "pipelines" / "jobs"
OBJECTS = 12
PIN = re.search(r'pin_artifact_hash = "([0-9a-f]{64})"',
                (JOBS / "conversation-messages-validate.toml").read_text()).group(1)


def prepare(sluice, objects=OBJECTS):
    sluice.run("example-data", "conversations", "--objects", objects, "--requests-per-object",
               "40", check=True)
    sluice.run("auth", "keygen", check=True)
    sluice.run("transform", "publish", EXAMPLE, check=True)


@pytest.fixture(scope="module")
def ready(sluice_bin, tmp_path_factory):
    """A home with example data and the published example transform."""
    home = tmp_path_factory.mktemp("submit") / "home"
    sluice = Sluice(sluice_bin, base_env(home))
    prepare(sluice)
    return sluice


def job(tmp_path, name="job.toml", base="conversation-messages-validate.toml", **replace):
    text = (JOBS / base).read_text()
    for old, new in replace.items():
        text = text.replace(old.replace("__", " "), new)
    path = tmp_path / name
    path.write_text(text)
    return path


def manifest(sluice, sink):
    return json.loads(sluice.run("store", "get", f"{sink}/_manifest.json", check=True).stdout)


def read_output(sluice, sink, tmp_path):
    """The committed output, read with pyarrow from the files its manifest lists."""
    m = manifest(sluice, sink)
    tables = []
    for i, f in enumerate(m["files"]):
        local = tmp_path / f"out-{i}.parquet"
        data = sluice.run("store", "get", f["key"], check=True).stdout
        assert blake3.blake3(data).hexdigest() == f["blake3"]
        assert len(data) == f["bytes"]
        local.write_bytes(data)
        t = pq.read_table(local)
        assert t.num_rows == f["rows"]
        tables.append(t)
    return pa.concat_tables(tables), [tmp_path / f"out-{i}.parquet" for i in range(len(tables))]


def expected_rows(sluice, limit):
    """The job's answer computed from the JSONL alone: one row per message, first copy wins in
    (object key, line, position) order."""
    listing = sluice.run("store", "ls", "raw/conversations/", check=True).stdout.decode()
    keys = sorted(line.split()[1] for line in listing.splitlines())[:limit]
    seen = {}
    for key in keys:
        for line in sluice.run("store", "get", key, check=True).stdout.decode().splitlines():
            r = json.loads(line)
            for pos, m in enumerate(r["messages"]):
                pk = f"{r['conversation_id']}:{pos}"
                if pk not in seen:
                    seen[pk] = (pk, blake3.blake3(pk.encode()).digest(), r["conversation_id"],
                                r["user_id"], pos, m["role"], m["content"], m["name"],
                                r["request_id"])
    return sorted(seen.values())


def rows_of(table):
    cols = ["primary_key", "data_hash", "conversation_id", "user_id", "position", "role",
            "content", "name", "request_id"]
    d = table.select(cols).to_pydict()
    return sorted(zip(*[d[c] for c in cols]))


def test_example_job_matches_an_independent_computation(ready, tmp_path):
    j = job(tmp_path, **{"limit = 50": "limit = 10"})
    out = ready.run("submit", "--manifest", j, "--run-id", "check-1", "--workers", "2",
                    check=True).stdout.decode()
    assert "run check-1 committed: 10 objects, 400 records in" in out
    sink = "derived/conversation-messages-validate/check-1"
    table, files = read_output(ready, sink, tmp_path)
    expected = expected_rows(ready, 10)
    assert rows_of(table) == expected
    assert table.num_rows == len(expected)
    # DuckDB reads the same files and agrees.
    con = duckdb.connect()
    n, distinct = con.execute(
        "select count(*), count(distinct primary_key) from read_parquet(?)",
        [[str(f) for f in files]]).fetchone()
    assert n == distinct == len(expected)
    # Every page carries a CRC: a damaged byte inside the pages is an error, not wrong values.
    data = bytearray(files[0].read_bytes())
    middle = len(data) // 2
    for i in range(middle, middle + 8):
        data[i] ^= 0x5A
    damaged = tmp_path / "damaged.parquet"
    damaged.write_bytes(bytes(data))
    with pytest.raises(OSError, match="CRC checksum verification failed"):
        pq.read_table(damaged, page_checksum_verification=True)
    m = re.search(r"(\d+) rows out, (\d+) duplicates dropped", out)
    assert int(m.group(1)) == len(expected)
    total_messages = sum(1 for _ in expected)  # distinct
    assert int(m.group(2)) > 0
    runs = ready.run("runs", "show", "check-1", check=True).stdout.decode()
    assert "status:             committed" in runs
    assert f"rows_out:           {len(expected)}" in runs
    assert '"s0"' in runs and '"s1"' in runs
    assert "check-1" in ready.run("runs", "list", check=True).stdout.decode()


def test_same_run_id_twice_is_a_no_op_and_another_manifest_is_refused(ready, tmp_path):
    j = job(tmp_path, **{"limit = 50": "limit = 3"})
    ready.run("submit", "--manifest", j, "--run-id", "twice", check=True)
    sink = "derived/conversation-messages-validate/twice"
    first = manifest(ready, sink)
    out = ready.run("submit", "--manifest", j, "--run-id", "twice", check=True).stdout.decode()
    assert "already committed" in out and "nothing to do" in out
    assert manifest(ready, sink) == first
    other = job(tmp_path, "other.toml", **{"limit = 50": "limit = 4"})
    proc = ready.run("submit", "--manifest", other, "--run-id", "twice")
    assert proc.returncode == 1
    assert "was already committed" in proc.stderr.decode()
    assert "different manifest" in proc.stderr.decode()


@pytest.mark.parametrize("when,task", [("kill", "s0p1"), ("kill", "s1p0"),
                                       ("kill-after-write", "s0p0")])
def test_a_killed_worker_is_retried_and_the_output_is_identical(ready, tmp_path, when, task):
    """kill-after-write: map task s0p0's first attempt writes its shuffle files and dies; its
    retry writes under its own attempt's name, and the dedup reads only those."""
    j = job(tmp_path, **{"limit = 50": "limit = 8"})
    ready.run("submit", "--manifest", j, "--run-id", f"clean-{task}", "--workers", "2", check=True)
    proc = ready.run("submit", "--manifest", j, "--run-id", f"killed-{task}", "--workers", "2",
                     env={"SLUICE_FAILPOINT": f"{when}:{task}:1"})
    assert proc.returncode == 0, proc.stderr.decode()
    clean, _ = read_output(ready, f"derived/conversation-messages-validate/clean-{task}", tmp_path)
    killed, _ = read_output(ready, f"derived/conversation-messages-validate/killed-{task}",
                            tmp_path)
    assert killed.equals(clean)
    a = manifest(ready, f"derived/conversation-messages-validate/clean-{task}")
    b = manifest(ready, f"derived/conversation-messages-validate/killed-{task}")
    assert [f["blake3"] for f in a["files"]] == [f["blake3"] for f in b["files"]]


def test_a_worker_killed_every_time_fails_the_run_cleanly(ready, tmp_path):
    j = job(tmp_path, **{"limit = 50": "limit = 2"})
    proc = ready.run("submit", "--manifest", j, "--run-id", "always-killed", "--workers", "1",
                     env={"SLUICE_FAILPOINT": "kill:s1p0:*"})
    assert_failed_cleanly(ready, proc, "always-killed",
                          "task s1p0 failed 3 times; last: worker for task s1p0 attempt 3 was "
                          "killed by signal 9")


def put_objects(sluice, prefix, contents):
    for name, data in contents.items():
        sluice.run("store", "put", f"{prefix}{name}", "-", input=data, check=True)


def bad_job(tmp_path, prefix, extra=""):
    return job(tmp_path, "bad.toml",
               **{'prefix = "raw/conversations/"': f'prefix = "{prefix}"\n{extra}',
                  "limit = 50": ""})


GOOD = ('{"request_id":"r1","user_id":"u","conversation_id":"c1","model":"m",'
        '"received_at":"2026-01-01T00:00:00Z","messages":[{"role":"user","content":"hi",'
        '"name":null}]}')


def assert_failed_cleanly(sluice, proc, run_id, *needles):
    assert proc.returncode == 1
    err = proc.stderr.decode()
    for n in needles:
        assert n in err, err
    listing = sluice.run("store", "ls", f"derived/conversation-messages-validate/{run_id}/",
                         check=True).stdout
    assert listing == b"", "a failed run must leave nothing behind"
    show = sluice.run("runs", "show", run_id)
    if show.returncode == 0:
        assert "status:             failed" in show.stdout.decode()


def test_malformed_line_names_object_and_line(ready, tmp_path):
    put_objects(ready, "raw/bad1/", {"a.jsonl": (GOOD + "\n" + GOOD + "\n{oops\n").encode()})
    proc = ready.run("submit", "--manifest", bad_job(tmp_path, "raw/bad1/"), "--run-id", "bad1")
    assert_failed_cleanly(ready, proc, "bad1", "object 'raw/bad1/a.jsonl' line 3: not valid JSON")


def test_invalid_utf8_names_object_and_line(ready, tmp_path):
    put_objects(ready, "raw/bad2/", {"a.jsonl": GOOD.encode() + b"\n" +
                                     GOOD.replace("hi", "\xff").encode("latin-1") + b"\n"})
    proc = ready.run("submit", "--manifest", bad_job(tmp_path, "raw/bad2/"), "--run-id", "bad2")
    assert_failed_cleanly(ready, proc, "bad2", "object 'raw/bad2/a.jsonl' line 2: not valid UTF-8")


def test_skip_counts_and_reports_bad_lines(ready, tmp_path):
    put_objects(ready, "raw/bad3/", {"a.jsonl": (GOOD + "\n{oops\n" + GOOD + "\n").encode()})
    j = bad_job(tmp_path, "raw/bad3/", 'on_error = "skip"')
    out = ready.run("submit", "--manifest", j, "--run-id", "skip3", check=True).stdout.decode()
    assert "2 records in (1 bad records skipped)" in out
    assert "1 rows out" in out


def test_missing_prefix_is_named(ready, tmp_path):
    proc = ready.run("submit", "--manifest", bad_job(tmp_path, "raw/nothing-here/"),
                     "--run-id", "bad4")
    assert_failed_cleanly(ready, proc, "bad4", "prefix 'raw/nothing-here/' has no jsonl objects")


def test_transform_error_names_the_stage(ready, tmp_path):
    put_objects(ready, "raw/bad5/", {"a.jsonl": GOOD.replace('"c1"', '""').encode() + b"\n"})
    proc = ready.run("submit", "--manifest", bad_job(tmp_path, "raw/bad5/"), "--run-id", "bad5")
    assert_failed_cleanly(ready, proc, "bad5", "stage 'conversation-message-extract'",
                          "request 'r1' has an empty conversation_id")


def test_manifest_pin_errors_give_positions(ready, tmp_path):
    placeholder = job(tmp_path, "p.toml", **{
        f'pin_artifact_hash = "{PIN}"': 'pin_artifact_hash = "PUBLISH_RESULT_GOES_HERE"'})
    proc = ready.run("submit", "--manifest", placeholder, "--run-id", "pins1")
    assert proc.returncode == 1
    assert re.search(r"p\.toml:\d+:\d+: dataflow\.stages\[0\]\.pin_artifact_hash is the "
                     r"placeholder", proc.stderr.decode())
    unknown = job(tmp_path, "u.toml", **{PIN: "0" * 64})
    proc = ready.run("submit", "--manifest", unknown, "--run-id", "pins2")
    assert proc.returncode == 1
    assert re.search(r"u\.toml:\d+:\d+: pin_artifact_hash 0000\w+ of stage "
                     r"'conversation-message-extract' is not in the registry",
                     proc.stderr.decode())
    renamed = job(tmp_path, "n.toml", **{'qualified_name = "conversation-message-extract"':
                                         'qualified_name = "someone-else"'})
    proc = ready.run("submit", "--manifest", renamed, "--run-id", "pins3")
    assert proc.returncode == 1
    assert re.search(r"n\.toml:\d+:\d+: qualified_name 'someone-else' does not match the pinned "
                     r"artifact, which is 'conversation-message-extract'", proc.stderr.decode())


def test_cross_run_compaction(ready, tmp_path):
    full = job(tmp_path, "full.toml", base="conversation-messages.toml")
    part = job(tmp_path, "part.toml", base="conversation-messages.toml",
               **{'prefix = "raw/conversations/"': 'prefix = "raw/conversations/"\nlimit = 5'})
    ready.run("submit", "--manifest", full, "--run-id", "a-full", check=True)
    ready.run("submit", "--manifest", part, "--run-id", "b-part", check=True)
    # An uncommitted part file under the prefix must be invisible to the compaction.
    ready.run("store", "put", "derived/conversation-messages/c-crashed/part-00000.parquet", "-",
              input=b"not even parquet", check=True)
    out = ready.run("submit", "--manifest", JOBS / "conversation-messages-compact.toml",
                    "--run-id", "compact-1", check=True).stdout.decode()
    compacted, _ = read_output(ready, "derived/conversation-messages-compact/compact-1", tmp_path)
    full_rows, _ = read_output(ready, "derived/conversation-messages/a-full", tmp_path)
    assert rows_of(compacted) == rows_of(full_rows)
    assert re.search(r"\d+ duplicates dropped", out)


def test_s3_store_with_postgresql_registry(sluice_bin, tmp_path, moto_endpoint, postgres_server,
                                           ready):
    env = base_env(tmp_path / "home")
    env["SLUICE_STORE"] = s3_store_url(moto_endpoint, tmp_path)
    env["SLUICE_DATABASE_URL"] = postgres_server()
    s3 = Sluice(sluice_bin, env)
    prepare(s3, objects=4)
    j = job(tmp_path, **{"limit = 50": "limit = 4"})
    s3.run("submit", "--manifest", j, "--run-id", "on-s3", "--workers", "2", check=True)
    table, _ = read_output(s3, "derived/conversation-messages-validate/on-s3", tmp_path)
    assert rows_of(table) == expected_rows(s3, 4)
    url = env["SLUICE_DATABASE_URL"]
    assert postgres_server.psql(url, "select status from runs where run_id = 'on-s3'") == "committed"


def test_output_schema_mismatch_names_the_stage(ready, tmp_path):
    """A transform that declares ConversationMessageExtracted but emits its input."""
    ready.run("transform", "new", "wrong-output", "--dir", tmp_path, check=True)
    d = tmp_path / "wrong-output"
    src = d / "src" / "transform.cpp"
    src.write_text(src.read_text()
                   .replace("#include <sluice/sdk/transform.hpp>",
                            "#include <sluice/sdk/transform.hpp>\n"
                            '#include "sluice/schemas/conversation/conversation_message_extracted.hpp"\n'
                            '#include "sluice/schemas/conversation/conversation_message_gateway.hpp"')
                   .replace("sluice::sdk::AnySchema, sluice::sdk::AnySchema",
                            "sluice::schemas::conversation::ConversationMessageGateway,\n"
                            "                 sluice::schemas::conversation::ConversationMessageExtracted"))
    meta = d / "transform.toml"
    meta.write_text(meta.read_text()
                    .replace('input_schema = "any"',
                             'input_schema = "sluice.examples.conversation.ConversationMessageGateway"')
                    .replace('output_schema = "any"',
                             'output_schema = "sluice.examples.conversation.ConversationMessageExtracted"'))
    out = ready.run("transform", "publish", d)
    assert out.returncode == 0, out.stderr.decode()[-2000:]
    pin = re.search(r"artifact_blake3=([0-9a-f]{64})", out.stdout.decode()).group(1)
    j = job(tmp_path, **{"limit = 50": "limit = 1",
                         'qualified_name = "conversation-message-extract"':
                         'qualified_name = "wrong-output"',
                         PIN: pin})
    proc = ready.run("submit", "--manifest", j, "--run-id", "wrong-out")
    assert_failed_cleanly(ready, proc, "wrong-out", "stage 'wrong-output'",
                          "schema mismatch for sluice.examples.conversation."
                          "ConversationMessageExtracted")


def test_an_altered_spec_is_refused_at_submit(sluice_bin, tmp_path):
    import sqlite3

    s = Sluice(sluice_bin, base_env(tmp_path / "home"))
    prepare(s, objects=1)
    db = tmp_path / "home" / "registry.db"
    with sqlite3.connect(db) as c:
        (spec,) = c.execute("select spec_cbor from pipeline_specs").fetchone()
        altered = bytearray(spec)
        altered[-5] ^= 1
        c.execute("update pipeline_specs set spec_cbor = ?", (bytes(altered),))
    j = job(tmp_path, **{"limit = 50": "limit = 1"})
    proc = s.run("submit", "--manifest", j, "--run-id", "altered")
    assert proc.returncode == 1
    assert re.search(r"job\.toml:\d+:\d+: refusing stage 'conversation-message-extract': "
                     r"pipeline spec .* was altered", proc.stderr.decode()), proc.stderr.decode()
    with sqlite3.connect(db) as c:
        c.execute("update pipeline_specs set spec_cbor = ?, publisher_id = 'ed25519:nobody'",
                  (bytes(spec),))
    proc = s.run("submit", "--manifest", j, "--run-id", "altered")
    assert proc.returncode == 1
    assert "signed by unknown publisher 'ed25519:nobody'" in proc.stderr.decode()


def test_a_committed_run_is_a_sql_table(ready, tmp_path):
    j = job(tmp_path, **{"limit = 50": "limit = 3"})
    ready.run("submit", "--manifest", j, "--run-id", "as-table", check=True)
    sink = "derived/conversation-messages-validate/as-table"
    rows = manifest(ready, sink)["rows"]
    # A stray, uncommitted part beside the committed ones must not be read.
    table, _ = read_output(ready, sink, tmp_path)
    stray = tmp_path / "stray.parquet"
    import pyarrow.parquet as pq
    pq.write_table(table, stray)
    ready.run("store", "put", f"{sink}/part-99999.parquet", stray, check=True)
    out = ready.run("query", "--format", "csv",
                    'select count(*) as n, count(data_hash) as h from "as-table"',
                    check=True).stdout.decode().splitlines()
    assert out[1] == f"{rows},{rows}"
    # The same works through an external table on the sink path.
    ready.run("query", f"CREATE EXTERNAL TABLE validated STORED AS PARQUET LOCATION '{sink}'",
              check=True)
    out = ready.run("query", "--format", "csv", "select count(*) from validated",
                    check=True).stdout.decode().splitlines()
    assert out[1] == str(rows)
