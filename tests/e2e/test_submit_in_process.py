"""`sluice submit --workers 0`: every task runs in the driver's process, through the fragment
runner a worker uses, through the real binary. The example job gives the same committed rows and
the same registry record as with two workers; a bad input line or a transform error fails the run
with the worker path's own message and commits nothing; artifacts are still verified before they
are loaded; and a crash ends the driver (no retry), after which the run id resubmits cleanly."""

import re
import signal
from pathlib import Path

import blake3
import pytest

from conftest import Sluice, base_env
from test_submit import (GOOD, JOBS, OBJECTS, PIN, assert_failed_cleanly, bad_job,
                         expected_rows, job, manifest, prepare, put_objects, read_output, rows_of)

SINK = "derived/conversation-messages-validate"
DEMO_JOB = JOBS / "conversation-messages-validate.toml"


@pytest.fixture(scope="module")
def home(sluice_bin, tmp_path_factory):
    """A home of its own (one test below tampers with the published artifact) with example
    data and the published example transform."""
    h = tmp_path_factory.mktemp("in-process") / "home"
    sluice = Sluice(sluice_bin, base_env(h))
    prepare(sluice)
    return sluice


def summary(stdout):
    """The counts of a committed run's first line, without its run id and time."""
    m = re.search(r"committed: (.*), in [0-9.e+-]+s$", stdout.decode().splitlines()[0])
    assert m, stdout.decode()
    return m.group(1)


def run_record(sluice, run_id):
    text = sluice.run("runs", "show", run_id, check=True).stdout.decode()
    return dict(re.findall(r"^(\w+):\s+(.*)$", text, re.M))


def output(sluice, run_id, tmp_path):
    """The committed rows of a run, read back from the files its manifest lists."""
    folder = tmp_path / run_id
    folder.mkdir()
    table, _ = read_output(sluice, f"{SINK}/{run_id}", folder)
    return table


def shuffle_left(sluice):
    root = Path(sluice.env["SLUICE_HOME"]) / "store" / "_sluice" / "shuffle"
    return [str(p) for p in root.rglob("*") if p.is_file()] if root.exists() else []


def test_the_demo_job_in_process_commits_the_rows_of_two_workers(home, tmp_path):
    inproc = home.run("submit", "--manifest", DEMO_JOB, "--run-id", "demo-w0", "--workers", "0",
                      check=True)
    workers = home.run("submit", "--manifest", DEMO_JOB, "--run-id", "demo-w2", "--workers", "2",
                       check=True)
    assert "retrying" not in inproc.stderr.decode()
    assert summary(inproc.stdout) == summary(workers.stdout)
    assert f"{OBJECTS} objects" in summary(inproc.stdout)

    t0, t2 = output(home, "demo-w0", tmp_path), output(home, "demo-w2", tmp_path)
    assert t0.schema.equals(t2.schema, check_metadata=True)
    assert rows_of(t0) == rows_of(t2) == expected_rows(home, OBJECTS)
    # Every column, sorted, not only those rows_of compares.
    columns = t0.column_names
    assert sorted(zip(*[t0[c].to_pylist() for c in columns])) == \
        sorted(zip(*[t2[c].to_pylist() for c in columns]))

    # The same commit: a manifest with the attempt's own part names, pins and row count.
    m0, m2 = manifest(home, f"{SINK}/demo-w0"), manifest(home, f"{SINK}/demo-w2")
    for m, run_id in ((m0, "demo-w0"), (m2, "demo-w2")):
        assert m["run_id"] == run_id
        for f in m["files"]:
            assert re.fullmatch(rf"{SINK}/{run_id}/part-\d{{5}}-{m['attempt_id']}\.parquet",
                                f["key"]), f["key"]
    for field in ("format", "job_manifest_blake3", "pins", "file_format", "rows"):
        assert m0[field] == m2[field], field
    assert shuffle_left(home) == []

    # And the same record in the registry.
    r0, r2 = run_record(home, "demo-w0"), run_record(home, "demo-w2")
    assert r0["status"] == r2["status"] == "committed"
    for field in ("manifest_blake3", "pins", "rows_in", "rows_out", "duplicates_dropped"):
        assert r0[field] == r2[field], field
    assert '"s0"' in r0["stage_seconds"] and '"s1"' in r0["stage_seconds"]


def failure_line(proc):
    lines = [l for l in proc.stderr.decode().splitlines() if l.startswith("sluice: error: ")]
    assert len(lines) == 1, proc.stderr.decode()
    return lines[0]


def test_a_bad_input_line_in_process_names_object_and_line_and_commits_nothing(home, tmp_path):
    put_objects(home, "raw/ip-bad1/", {"a.jsonl": (GOOD + "\n" + GOOD + "\n{oops\n").encode()})
    j = bad_job(tmp_path, "raw/ip-bad1/")
    proc = home.run("submit", "--manifest", j, "--run-id", "ip-bad1-w0", "--workers", "0")
    assert_failed_cleanly(home, proc, "ip-bad1-w0",
                          "object 'raw/ip-bad1/a.jsonl' line 3: not valid JSON")
    assert "retrying" not in proc.stderr.decode()
    assert shuffle_left(home) == []
    # Word for word what the worker path says.
    workers = home.run("submit", "--manifest", j, "--run-id", "ip-bad1-w2", "--workers", "2")
    assert_failed_cleanly(home, workers, "ip-bad1-w2", "line 3: not valid JSON")
    assert failure_line(proc) == failure_line(workers)


def test_a_transform_error_in_process_names_the_stage_and_commits_nothing(home, tmp_path):
    put_objects(home, "raw/ip-bad2/", {"a.jsonl": GOOD.replace('"c1"', '""').encode() + b"\n"})
    j = bad_job(tmp_path, "raw/ip-bad2/")
    proc = home.run("submit", "--manifest", j, "--run-id", "ip-bad2", "--workers", "0")
    assert_failed_cleanly(home, proc, "ip-bad2", "stage 'conversation-message-extract'",
                          "on object 'raw/ip-bad2/a.jsonl'",
                          "request 'r1' has an empty conversation_id")


def test_in_process_tasks_load_only_verified_artifacts(home, tmp_path):
    cache = Path(home.env["SLUICE_HOME"]) / "cache" / "transforms" / f"{PIN}.so"
    key = f"transforms/batch/{PIN}.so"
    j = job(tmp_path, **{"limit = 50": "limit = 2"})
    # A tampered cache entry is never loaded: it is dropped and fetched again from the store.
    cache.parent.mkdir(parents=True, exist_ok=True)
    cache.write_bytes(b"\x7fELF not the published library")
    home.run("submit", "--manifest", j, "--run-id", "verified-1", "--workers", "0", check=True)
    assert blake3.blake3(cache.read_bytes()).hexdigest() == PIN
    # A store object whose bytes are not the pin is refused before it is loaded.
    original = home.run("store", "get", key, check=True).stdout
    try:
        home.run("store", "put", key, "-", input=original[:-1] + bytes([original[-1] ^ 0xFF]),
                  check=True)
        cache.unlink()
        proc = home.run("submit", "--manifest", j, "--run-id", "verified-2", "--workers", "0")
        assert_failed_cleanly(home, proc, "verified-2", f"artifact {PIN} in store",
                              "fails verification")
        assert not cache.exists()
    finally:
        home.run("store", "put", key, "-", input=original, check=True)


def test_a_crash_in_process_ends_the_driver_and_the_run_resubmits_cleanly(home, tmp_path):
    j = job(tmp_path, **{"limit = 50": "limit = 4"})
    # The fault hook kills the process running map task s0p0: here, the driver itself.
    proc = home.run("submit", "--manifest", j, "--run-id", "crash-w0", "--workers", "0",
                    env={"SLUICE_FAILPOINT": "kill:s0p0:1"})
    assert proc.returncode == -signal.SIGKILL, proc.stderr.decode()
    assert "retrying" not in proc.stderr.decode()
    assert home.run("store", "ls", f"{SINK}/crash-w0/_manifest.json", check=True).stdout == b""
    assert run_record(home, "crash-w0")["status"] == "abandoned"
    # The same run id takes the abandoned attempt over and commits what two workers commit.
    home.run("submit", "--manifest", j, "--run-id", "crash-w0", "--workers", "0", check=True)
    home.run("submit", "--manifest", j, "--run-id", "crash-w2", "--workers", "2", check=True)
    assert rows_of(output(home, "crash-w0", tmp_path)) == \
        rows_of(output(home, "crash-w2", tmp_path))
    assert shuffle_left(home) == []


def test_workers_0_is_documented_and_a_negative_count_is_a_usage_error(home, tmp_path):
    help_text = home.run("submit", "--help", check=True).stdout.decode()
    flat = " ".join(help_text.split())
    assert "0 runs every task in this process" in flat, help_text
    assert "no retry" in flat, help_text
    proc = home.run("submit", "--manifest", DEMO_JOB, "--run-id", "negative", "--workers", "-1")
    assert proc.returncode == 2, proc.stderr.decode()
    assert "--workers" in proc.stderr.decode()
