"""Tasks that misbehave, through the real binary: the faulty test transform
(tests/transforms/faulty.cc) is published with typed schemas and the first row's request_id picks
its fault. Each test proves one guard of the worker pool: time and memory limits (killed, not
retried, named), crashes (retried, then named), a grandchild holding stdout (no hang), the
workers' scrubbed environment, and workers dying with their driver."""

import json
import os
import re
import signal
import subprocess
import time

import pytest

from conftest import ROOT, SANITIZED, Sluice, base_env

FAULTY = ROOT / "tests" / "transforms" / "faulty.cc"
GATEWAY = "sluice.examples.conversation.ConversationMessageGateway"
EXTRACTED = "sluice.examples.conversation.ConversationMessageExtracted"
# A run that is not hung finishes well within this; a hung one is killed by it and fails.
NO_HANG_SECONDS = 60


def request(mode, user_id="u"):
    return json.dumps({"request_id": mode, "user_id": user_id, "conversation_id": "c1", "model": "m",
                       "received_at": "2026-01-01T00:00:00Z",
                       "messages": [{"role": "user", "content": "hi", "name": None}]})


@pytest.fixture(scope="module")
def faulty(sluice_bin, tmp_path_factory):
    """A home with the faulty transform published; returns (sluice, pin)."""
    base = tmp_path_factory.mktemp("limits")
    sluice = Sluice(sluice_bin, base_env(base / "home"))
    sluice.run("auth", "keygen", check=True)
    sluice.run("transform", "new", "test-faulty", "--dir", base, check=True)
    d = base / "test-faulty"
    src = FAULTY.read_text().replace(
        "#include <sluice/sdk/transform.hpp>",
        "#include <sluice/sdk/transform.hpp>\n"
        '#include "sluice/schemas/conversation/conversation_message_extracted.hpp"\n'
        '#include "sluice/schemas/conversation/conversation_message_gateway.hpp"')
    src, n = re.subn(r"sluice::sdk::AnySchema,\s*sluice::sdk::AnySchema",
                     "sluice::schemas::conversation::ConversationMessageGateway, "
                     "sluice::schemas::conversation::ConversationMessageExtracted", src)
    assert n == 1
    (d / "src" / "transform.cpp").write_text(src)
    meta = d / "transform.toml"
    meta.write_text(meta.read_text()
                    .replace('version = "0.1.0"', 'version = "1.0.0"')
                    .replace('input_schema = "any"', f'input_schema = "{GATEWAY}"')
                    .replace('output_schema = "any"', f'output_schema = "{EXTRACTED}"'))
    out = sluice.run("transform", "publish", d)
    assert out.returncode == 0, out.stderr.decode()[-3000:]
    pin = re.search(r"artifact_blake3=([0-9a-f]{64})", out.stdout.decode()).group(1)
    return sluice, pin


def faulty_job(faulty, tmp_path, mode, limits="", user_id="u", name=None):
    """A job over one object whose request picks `mode`; returns the manifest path."""
    sluice, pin = faulty
    name = name or mode
    sluice.run("store", "put", f"raw/{name}/a.jsonl", "-",
               input=(request(mode, user_id) + "\n").encode(), check=True)
    path = tmp_path / f"{name}.toml"
    path.write_text(f"""
[dataflow.source]
kind = "jsonl"
prefix = "raw/{name}/"

[[dataflow.stages]]
kind = "function"
qualified_name = "test-faulty"
pin_artifact_hash = "{pin}"

[dataflow.sink]
kind = "parquet"
path = "derived/faulty/{{run_id}}"
{limits}
""")
    return path


def submit(sluice, manifest, run_id, env=None):
    full_env = dict(sluice.env)
    full_env.update(env or {})
    return subprocess.run([str(sluice.binary), "submit", "--manifest", str(manifest), "--run-id",
                           run_id, "--workers", "1"], capture_output=True, env=full_env,
                          timeout=NO_HANG_SECONDS)


def assert_failed(sluice, proc, run_id, *needles):
    err = proc.stderr.decode()
    assert proc.returncode == 1, err
    for n in needles:
        assert n in err, err
    listing = sluice.run("store", "ls", f"derived/faulty/{run_id}/", check=True).stdout.decode()
    assert ".parquet" not in listing and "_manifest.json" not in listing, listing
    assert "status:             failed" in sluice.run("runs", "show", run_id).stdout.decode()
    return err


def test_an_endless_loop_is_killed_at_the_time_limit_and_not_retried(faulty, tmp_path):
    sluice, _ = faulty
    job = faulty_job(faulty, tmp_path, "loop", "[dataflow.limits]\ntask_timeout_seconds = 2")
    err = assert_failed(sluice, submit(sluice, job, "loop-1"), "loop-1",
                        "task s0p0 attempt 1 was killed after 2 s, its time limit "
                        "(dataflow.limits.task_timeout_seconds), while running stage "
                        "'test-faulty' on object 'raw/loop/a.jsonl'",
                        "a task stopped at a limit is not retried")
    assert "retrying" not in err and "attempt 2" not in err, err


def test_unbounded_allocation_is_killed_at_the_memory_limit(faulty, tmp_path):
    sluice, _ = faulty
    job = faulty_job(faulty, tmp_path, "alloc",
                     "[dataflow.limits]\ntask_memory_mb = 256\ntask_timeout_seconds = 50")
    err = assert_failed(sluice, submit(sluice, job, "alloc-1"), "alloc-1",
                        "task s0p0 attempt 1 was killed when it used",
                        "over its memory limit of 256 MiB (dataflow.limits.task_memory_mb), "
                        "while running stage 'test-faulty' on object 'raw/alloc/a.jsonl'")
    assert "retrying" not in err, err


def live_processes(needle):
    """Pids (not zombies) whose command line contains `needle`, from the process list."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                cmdline = f.read()
            with open(f"/proc/{entry}/stat") as f:
                state = f.read().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if needle in cmdline and state != "Z":
            found.append(int(entry))
    return found


def worker_needle(driver_pid):
    # Workers, and children they fork, carry their driver's pid on their command line.
    return f"worker\0--parent-pid\0{driver_pid}\0".encode()


def test_a_child_holding_stdout_does_not_hang_the_driver(faulty, tmp_path):
    sluice, _ = faulty
    job = faulty_job(faulty, tmp_path, "fork_stdout")
    driver = subprocess.Popen([str(sluice.binary), "submit", "--manifest", str(job), "--run-id",
                               "fork-1", "--workers", "1"], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, env=dict(sluice.env))
    needle = worker_needle(driver.pid)
    try:
        # The child holds the worker's stdout and the driver's stderr: the driver must neither
        # wait for the first nor let the child keep the second (this read) open.
        out, err = driver.communicate(timeout=NO_HANG_SECONDS)
        assert driver.returncode == 0, err.decode()
        assert "run fork-1 committed" in out.decode()
        # The sleeping child went with its worker's process group.
        deadline = time.time() + 10
        while live_processes(needle) and time.time() < deadline:
            time.sleep(0.1)
        assert live_processes(needle) == []
    finally:
        driver.kill()
        for pid in live_processes(needle):
            os.kill(pid, signal.SIGKILL)


@pytest.mark.parametrize("mode,signal_text", [
    ("abort", "signal 6 (Aborted)"),
    ("segfault", "signal 6 (Aborted)" if SANITIZED else "signal 11 (Segmentation fault)")])
def test_a_crash_is_retried_then_fails_naming_the_stage_and_object(faulty, tmp_path, mode,
                                                                   signal_text):
    sluice, _ = faulty
    job = faulty_job(faulty, tmp_path, mode)
    while_doing = f"while running stage 'test-faulty' on object 'raw/{mode}/a.jsonl'"
    err = assert_failed(sluice, submit(sluice, job, f"{mode}-1"), f"{mode}-1",
                        f"worker for task s0p0 attempt 1 was killed by {signal_text} "
                        f"{while_doing}; retrying (attempt 2 of 3)",
                        f"worker for task s0p0 attempt 2 was killed by {signal_text} "
                        f"{while_doing}; retrying (attempt 3 of 3)",
                        f"task s0p0 failed 3 times; last: worker for task s0p0 attempt 3 was "
                        f"killed by {signal_text} {while_doing}")


def test_workers_start_with_a_scrubbed_environment(faulty, tmp_path):
    sluice, _ = faulty
    job = faulty_job(faulty, tmp_path, "env")
    proc = submit(sluice, job, "env-1", env={"SLUICE_TEST_SECRET": "hunter2",
                                             "GITHUB_TOKEN": "ghp_secret"})
    err = assert_failed(sluice, proc, "env-1", "stage 'test-faulty'", "environment: [")
    names = re.search(r"environment: \[([^\]]*)\] cwd: \[([^\]]*)\]", err)
    seen, cwd = names.group(1).split(), names.group(2)
    assert "PATH" in seen, seen
    # The driver's configuration, secrets and home (which holds keys/) stay behind; the worker
    # does not start in the driver's directory, where a default ./.sluice would be.
    for hidden in ("SLUICE_TEST_SECRET", "GITHUB_TOKEN", "SLUICE_HOME", "SLUICE_STORE",
                   "SLUICE_DATABASE_URL"):
        assert hidden not in seen, seen
    assert cwd == "/"


@pytest.mark.parametrize("hidden", ["keys/signing.key", "keys/signing.pub", "registry.db"])
def test_a_transform_cannot_read_the_signing_key_or_the_registry(faulty, tmp_path, hidden):
    sluice, _ = faulty
    path = f"{sluice.env['SLUICE_HOME']}/{hidden}"
    assert os.path.getsize(path) > 0
    name = "read-" + re.sub(r"[^a-z]", "-", hidden)
    job = faulty_job(faulty, tmp_path, "read", user_id=path, name=name)
    err = assert_failed(sluice, submit(sluice, job, name), name, f"read [{path}]")
    # Covered by an empty directory or by /dev/null in the worker's mount namespace.
    assert re.search(r"read \[[^\]]*\]: (cannot open|0 bytes)", err), err


def test_killing_the_driver_kills_its_workers_and_their_children(faulty, tmp_path):
    sluice, _ = faulty
    job = faulty_job(faulty, tmp_path, "fork_loop")
    driver = subprocess.Popen([str(sluice.binary), "submit", "--manifest", str(job), "--run-id",
                               "orphans-1", "--workers", "1"], stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL, env=dict(sluice.env))
    needle = worker_needle(driver.pid)
    try:
        # The worker and the child its transform forked, both spinning or sleeping.
        deadline = time.time() + NO_HANG_SECONDS
        while len(live_processes(needle)) < 2:
            assert time.time() < deadline, "the worker and its child never appeared"
            assert driver.poll() is None, "the driver ended early"
            time.sleep(0.05)
        workers = live_processes(needle)
        driver.send_signal(signal.SIGKILL)
        driver.wait()
        deadline = time.time() + 20
        while live_processes(needle) and time.time() < deadline:
            time.sleep(0.1)
        assert live_processes(needle) == [], f"outlived their driver: {workers}"
    finally:
        driver.kill()
        for pid in live_processes(needle):
            os.kill(pid, signal.SIGKILL)
