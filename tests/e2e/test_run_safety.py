"""Runs own their names: atomic run ids, cleanup that deletes only what an attempt wrote, sink
paths that may not overlap inputs or other runs, markers that hide uncommitted output, digests
that catch changed files, leases that tell abandoned runs, trusted publishers, and a chaos test
that kills workers at random. Everything through the real binary and real worker processes."""

import os
import random
import signal
import subprocess
import time
from pathlib import Path

import pytest

from conftest import Sluice, base_env
import re

from test_submit import EXAMPLE, PIN, job, manifest, read_output

SINK = "derived/conversation-messages-validate"


def store_dir(sluice):
    return Path(sluice.env["SLUICE_HOME"]) / "store"


def leftovers(sluice):
    """Temp files anywhere in the store, and shuffle objects."""
    root = store_dir(sluice)
    temps = [str(p) for p in root.rglob(".sluice-tmp-*")]
    shuffle = [str(p) for p in (root / "_sluice" / "shuffle").rglob("*") if p.is_file()]
    return temps + shuffle


def popen(sluice, *args):
    return subprocess.Popen([str(sluice.binary), *map(str, args)], env=sluice.env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def children(pid):
    """Processes whose parent is `pid`."""
    out = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            text = stat.read_text()
        except OSError:
            continue
        fields = text[text.rfind(")") + 2:].split()
        if int(fields[1]) == pid:
            out.append(int(stat.parent.name))
    return out


def prepare(sluice, objects):
    """Example data, a signing key and the example transform published; the jobs below pin
    what this build published."""
    sluice.run("example-data", "conversations", "--objects", objects, "--requests-per-object",
               "40", check=True)
    sluice.run("auth", "keygen", check=True)
    out = sluice.run("transform", "publish", EXAMPLE, check=True).stdout.decode()
    sluice.pin = re.search(r"artifact_blake3=([0-9a-f]{64})", out).group(1)


def workers_of(pid):
    """`sluice worker` processes below `pid`, at any depth, from one pass over /proc."""
    parent, cmd = {}, {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            text = stat.read_text()
            cmd[int(stat.parent.name)] = (stat.parent / "cmdline").read_bytes()
        except OSError:
            continue
        parent[int(stat.parent.name)] = int(text[text.rfind(")") + 2:].split()[1])
    below, todo = [], [pid]
    while todo:
        p = todo.pop()
        for child, ppid in parent.items():
            if ppid == p:
                todo.append(child)
                if b"worker" in cmd.get(child, b""):
                    below.append(child)
    return below


@pytest.fixture(scope="module")
def home(sluice_bin, tmp_path_factory):
    h = tmp_path_factory.mktemp("safety") / "home"
    s = Sluice(sluice_bin, base_env(h))
    prepare(s, objects=6)
    return s


_PINNED = {}


def small_job(tmp_path, name="job.toml", limit=3, **replace):
    return job(tmp_path, name, **{"limit = 50": f"limit = {limit}", PIN: _PINNED["pin"]},
               **replace)


@pytest.fixture(autouse=True)
def _pin(request):
    """small_job pins what the test's sluice published."""
    for name in ("home",):
        if name in request.fixturenames:
            _PINNED["pin"] = request.getfixturevalue(name).pin


# Item 4: a sink may not overlap the source or another run's output, and a failed run deletes
# only what it wrote.
def test_a_sink_over_the_source_is_refused_and_the_input_is_intact(home, tmp_path):
    before = home.run("store", "ls", "raw/", check=True).stdout
    j = small_job(tmp_path, **{f'path = "{SINK}/{{run_id}}"': 'path = "{run_id}"'})
    proc = home.run("submit", "--manifest", j, "--run-id", "raw")
    assert proc.returncode == 1
    assert "dataflow.sink.path 'raw' overlaps dataflow.source.prefix 'raw/conversations/'" in \
        proc.stderr.decode()
    assert home.run("store", "ls", "raw/", check=True).stdout == before
    assert home.run("runs", "show", "raw").returncode != 0, "a refused run is not recorded"


def test_a_sink_over_a_committed_run_is_refused_and_that_run_is_intact(home, tmp_path):
    home.run("submit", "--manifest", small_job(tmp_path, limit=2), "--run-id", "owner",
             check=True)
    before = manifest(home, f"{SINK}/owner")
    j = small_job(tmp_path, "over.toml", **{f'path = "{SINK}/{{run_id}}"':
                                            'path = "derived/{run_id}"'})
    proc = home.run("submit", "--manifest", j, "--run-id", "conversation-messages-validate")
    assert proc.returncode == 1
    assert "overlaps the output of run 'owner'" in proc.stderr.decode(), proc.stderr.decode()
    assert manifest(home, f"{SINK}/owner") == before
    read_output(home, f"{SINK}/owner", tmp_path)  # every file still matches its digest


def test_a_failed_run_deletes_only_its_own_files(home, tmp_path):
    home.run("store", "put", f"{SINK}/fails/notes.txt", "-", input=b"mine", check=True)
    home.run("store", "put", "bad/one.jsonl", "-", input=b"{not json\n", check=True)
    j = small_job(tmp_path, **{'prefix = "raw/conversations/"': 'prefix = "bad/"'})
    proc = home.run("submit", "--manifest", j, "--run-id", "fails")
    assert proc.returncode == 1
    assert home.run("store", "get", f"{SINK}/fails/notes.txt", check=True).stdout == b"mine"
    listing = home.run("store", "ls", f"{SINK}/fails/", check=True).stdout.decode()
    assert listing.split()[1::2] == [f"{SINK}/fails/notes.txt"], listing
    assert "status:             failed" in home.run("runs", "show", "fails").stdout.decode()
    assert leftovers(home) == []


# Item 5: of two submits of one run id, exactly one runs it; the other touches nothing.
@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
def test_two_submits_of_one_run_id_commit_once(sluice_bin, tmp_path, backend, request):
    env = base_env(tmp_path / "home")
    if backend == "postgresql":
        env["SLUICE_DATABASE_URL"] = request.getfixturevalue("postgres_server")()
    s = Sluice(sluice_bin, env)
    prepare(s, objects=2)
    _PINNED["pin"] = s.pin
    j = small_job(tmp_path, limit=2)
    for i in range(20):
        run_id = f"race-{i}"
        procs = [popen(s, "submit", "--manifest", j, "--run-id", run_id, "--workers", "1")
                 for _ in range(2)]
        results = [(p.wait(timeout=120), p.stdout.read().decode(), p.stderr.read().decode())
                   for p in procs]
        committed = [r for r in results if r[0] == 0 and f"run {run_id} committed" in r[1]]
        assert len(committed) == 1, results
        other = [r for r in results if r is not committed[0]][0]
        assert (other[0] == 1 and ("is already running" in other[2] or
                                   "was just claimed by another submit" in other[2])) or \
            (other[0] == 0 and "already committed" in other[1]), other
        read_output(s, f"{SINK}/{run_id}", tmp_path)  # intact: sizes and digests match
    assert leftovers(s) == []


# Items 6, 8 and 12: a killed driver leaves an abandoned run that reads as not committed; gc
# and a second submit of the same id clean it up, and the output equals a clean run's.
def test_a_killed_driver_leaves_an_abandoned_run_that_resubmits_cleanly(home, tmp_path):
    j = small_job(tmp_path, limit=6)
    home.run("submit", "--manifest", j, "--run-id", "clean-ref", check=True)
    marker = store_dir(home) / SINK / "victim" / "_sluice_run.json"
    proc = popen(home, "submit", "--manifest", j, "--run-id", "victim", "--workers", "2")
    deadline = time.time() + 60
    while not marker.exists() and time.time() < deadline and proc.poll() is None:
        time.sleep(0.005)
    assert marker.exists(), "the marker is written before any task starts"
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert not (store_dir(home) / SINK / "victim" / "_manifest.json").exists()
    listed = home.run("runs", "list", check=True).stdout.decode()
    assert any(line.split()[:2] == ["victim", "abandoned"] for line in listed.splitlines()), listed
    q = home.run("query", 'select count(*) from "victim"')
    assert q.returncode == 1
    assert "not committed" in q.stderr.decode(), q.stderr.decode()
    gc = home.run("gc", check=True).stdout.decode()
    assert gc.startswith("removed "), gc
    assert leftovers(home) == []
    home.run("submit", "--manifest", j, "--run-id", "victim", check=True)
    a, _ = read_output(home, f"{SINK}/clean-ref", tmp_path)
    b, _ = read_output(home, f"{SINK}/victim", tmp_path)
    assert a.equals(b)
    # Only the new attempt's parts, its marker and its manifest are there.
    m = manifest(home, f"{SINK}/victim")
    names = sorted(p.name for p in (store_dir(home) / SINK / "victim").iterdir())
    assert names == sorted(["_manifest.json", "_sluice_run.json"] +
                           [Path(f["key"]).name for f in m["files"]])
    assert leftovers(home) == []


def test_a_plain_directory_still_reads_and_a_marker_alone_reads_as_not_committed(home, tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    f = tmp_path / "t.parquet"
    pq.write_table(pa.table({"x": [1, 2, 3]}), f)
    home.run("store", "put", "plain/t/a.parquet", f, check=True)
    out = home.run("query", "create external table plain stored as parquet location 'plain/t'; "
                   "select sum(x) as s from plain")
    if out.returncode != 0:  # one statement per call
        home.run("query", "create external table plain stored as parquet location 'plain/t'",
                 check=True)
        out = home.run("query", "select sum(x) as s from plain", check=True)
    assert b"6" in out.stdout
    home.run("store", "put", "plain/t/_sluice_run.json", "-",
             input=b'{"format":"sluice.sink-marker/1","run_id":"r9"}', check=True)
    q = home.run("query", "select sum(x) as s from plain")
    assert q.returncode == 1
    assert "'plain/t' (run 'r9') not committed" in q.stderr.decode(), q.stderr.decode()


# Item 7: a committed file that changed after its commit is an error naming it.
def test_a_changed_committed_file_is_an_error_naming_it(home, tmp_path):
    home.run("submit", "--manifest", small_job(tmp_path, limit=2), "--run-id", "tamper",
             check=True)
    m = manifest(home, f"{SINK}/tamper")
    part = store_dir(home) / m["files"][0]["key"]
    data = bytearray(part.read_bytes())
    data[len(data) // 2] ^= 0x01
    part.write_bytes(bytes(data))
    q = home.run("query", 'select count(*) from "tamper"')
    assert q.returncode == 1
    err = q.stderr.decode()
    assert f"committed file '{m['files'][0]['key']}'" in err and "hashes to" in err, err
    part.write_bytes(bytes(data) + b"x")
    err = home.run("query", 'select count(*) from "tamper"').stderr.decode()
    assert "bytes; its manifest says" in err, err


def test_a_manifest_with_a_wrong_typed_field_is_an_error_naming_it(home, tmp_path):
    home.run("store", "put", "typed/t/_manifest.json", "-", check=True, input=(
        b'{"format":"sluice.sink-manifest/1","rows":1,'
        b'"files":[{"key":"typed/t/a.parquet","rows":"x","bytes":1}]}'))
    q = home.run("query", "create external table typed stored as parquet location 'typed/t'")
    assert q.returncode == 1
    err = q.stderr.decode()
    assert "sink manifest 'typed/t/_manifest.json': files[0].rows is not an integer" in err, err
    assert "internal" not in err


# Item 13: only specs signed by a trusted publisher run.
def test_a_spec_signed_by_an_untrusted_key_is_refused(sluice_bin, tmp_path):
    publisher = Sluice(sluice_bin, base_env(tmp_path / "publisher"))
    prepare(publisher, objects=1)
    env = base_env(tmp_path / "runner")
    env["SLUICE_STORE"] = "file://" + str(store_dir(publisher))
    env["SLUICE_DATABASE_URL"] = "sqlite://" + str(tmp_path / "publisher" / "registry.db")
    runner = Sluice(sluice_bin, env)
    _PINNED["pin"] = publisher.pin
    j = small_job(tmp_path, limit=1)
    proc = runner.run("submit", "--manifest", j, "--run-id", "untrusted")
    assert proc.returncode == 1
    err = proc.stderr.decode()
    assert "which this machine does not trust" in err, err
    assert runner.run("runs", "show", "untrusted").returncode != 0, "nothing ran"
    assert not (store_dir(publisher) / SINK / "untrusted").exists()
    key = (tmp_path / "publisher" / "keys" / "signing.pub").read_text().strip()
    assert runner.run("auth", "trust", key, check=True).stdout.decode().startswith(
        "trusted publisher ed25519:")
    runner.run("submit", "--manifest", j, "--run-id", "untrusted", check=True)
    assert runner.run("auth", "trust", "nope").returncode == 1


# The chaos test: SIGKILL to a random worker at a random moment, 20 times; every committed
# output is byte-identical to a clean run's and nothing is left behind.
def test_chaos_random_worker_kills(sluice_bin, tmp_path):
    home = Sluice(sluice_bin, base_env(tmp_path / "home"))
    home.run("example-data", "conversations", "--objects", 16, "--requests-per-object", "150",
             check=True)
    home.run("auth", "keygen", check=True)
    out = home.run("transform", "publish", EXAMPLE, check=True).stdout.decode()
    _PINNED["pin"] = re.search(r"artifact_blake3=([0-9a-f]{64})", out).group(1)
    j = small_job(tmp_path, limit=16)
    home.run("submit", "--manifest", j, "--run-id", "chaos-clean", "--workers", "2", check=True)
    clean = [f["blake3"] for f in manifest(home, f"{SINK}/chaos-clean")["files"]]
    rng = random.Random(20261201)
    killed_runs = 0
    for i in range(60):  # until 20 runs have lost a worker; a run can end before the kill lands
        if killed_runs == 20:
            break
        run_id = f"chaos-{i}"
        proc = popen(home, "submit", "--manifest", j, "--run-id", run_id, "--workers", "2")
        # Wait for the first worker, then kill one at a random moment of the run.
        while proc.poll() is None and not workers_of(proc.pid):
            time.sleep(0.002)
        time.sleep(rng.uniform(0, 0.08))
        workers = workers_of(proc.pid)
        while proc.poll() is None and not workers:  # between stages: the next worker
            time.sleep(0.002)
            workers = workers_of(proc.pid)
        killed = False
        if workers and proc.poll() is None:
            try:
                os.kill(rng.choice(workers), signal.SIGKILL)
                killed = True
            except ProcessLookupError:
                pass
        rc = proc.wait(timeout=300)
        err = proc.stderr.read().decode()
        assert rc == 0, err
        got = [f["blake3"] for f in manifest(home, f"{SINK}/{run_id}")["files"]]
        assert got == clean, run_id
        assert leftovers(home) == [], run_id
        killed_runs += killed
    assert killed_runs == 20, f"only {killed_runs} runs of 60 lost a worker"
