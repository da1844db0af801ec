"""Keygen, publish and reproducible builds through the real binary, on the embedded defaults and
on S3 (moto) with a PostgreSQL registry."""

import os
import re
import shutil
import sqlite3
import stat
import subprocess
from pathlib import Path

import blake3
import pytest

from conftest import ROOT, Sluice, base_env, s3_store_url

EXAMPLE = ROOT / "transforms" / "conversation-message-extract"
JOBS = ROOT / "pipelines" / "jobs"
LINE = re.compile(r"registered transform=conversation-message-extract artifact_blake3=([0-9a-f]{64})\n")


def committed_pins():
    pins = {}
    for job in sorted(JOBS.glob("conversation-messages*.toml")):
        m = re.search(r'pin_artifact_hash = "([0-9a-f]{64})"', job.read_text())
        if m:
            pins[job.name] = m.group(1)
    return pins


def registry_counts(home):
    db = Path(home) / "registry.db"
    if not db.exists():
        return (0, 0)
    with sqlite3.connect(db) as c:
        tables = {r[0] for r in c.execute("select name from sqlite_master where type='table'")}
        if "transform_artifacts" not in tables:
            return (0, 0)
        return (c.execute("select count(*) from transform_artifacts").fetchone()[0],
                c.execute("select count(*) from pipeline_specs").fetchone()[0])


def store_objects(sluice):
    out = sluice.run("store", "ls", check=True).stdout.decode()
    return [line.split()[1] for line in out.splitlines() if line.strip()]


def snapshot(path):
    return {p.relative_to(path): p.read_bytes() for p in sorted(path.rglob("*"))
            if p.is_file() and "build" not in p.relative_to(path).parts}


def test_keygen_creates_a_private_key_and_refuses_to_overwrite(sluice):
    out = sluice.run("auth", "keygen", "--name", "ci", check=True).stdout.decode()
    assert out.startswith("created signing identity ed25519:")
    key = Path(sluice.env["SLUICE_HOME"]) / "keys" / "signing.key"
    assert stat.S_IMODE(key.stat().st_mode) == 0o600
    first = key.read_bytes()
    proc = sluice.run("auth", "keygen")
    assert proc.returncode == 1
    assert "--force" in proc.stderr.decode()
    assert key.read_bytes() == first
    sluice.run("auth", "keygen", "--force", check=True)
    assert key.read_bytes() != first
    with sqlite3.connect(Path(sluice.env["SLUICE_HOME"]) / "registry.db") as c:
        assert c.execute("select count(*) from publishers").fetchone()[0] == 2


def test_publish_prints_one_line_and_reproduces_the_committed_pin(sluice):
    sluice.run("auth", "keygen", check=True)
    before = snapshot(EXAMPLE), snapshot(JOBS)
    proc = sluice.run("transform", "publish", EXAMPLE)
    assert proc.returncode == 0, proc.stderr.decode()[-3000:]
    out = proc.stdout.decode()
    m = LINE.fullmatch(out)
    assert m, f"publish must print exactly one line, got {out!r}"
    pin = m.group(1)
    stored = sluice.run("store", "get", f"transforms/batch/{pin}.so", check=True).stdout
    assert blake3.blake3(stored).hexdigest() == pin
    b3 = subprocess.run(["b3sum", "--no-names", "-"], input=stored, capture_output=True,
                        check=True).stdout.decode().strip()
    assert b3 == pin
    assert registry_counts(sluice.env["SLUICE_HOME"]) == (1, 1)
    for job, committed in committed_pins().items():
        assert committed == pin, (
            f"pipelines/jobs/{job} pins {committed}, but a fresh build of the example publishes "
            f"{pin}. If the transform, the SDK or the schemas changed on purpose, run "
            f"`build/sluice transform publish {EXAMPLE.relative_to(ROOT)}` and copy the printed "
            f"artifact_blake3 into pin_artifact_hash of every job in pipelines/jobs/.")
    assert committed_pins(), "the canonical jobs must carry a real pin"

    # Publishing the same bytes again: same address, no new rows, no file rewritten.
    again = sluice.run("transform", "publish", EXAMPLE, check=True).stdout.decode()
    assert again == out
    assert registry_counts(sluice.env["SLUICE_HOME"]) == (1, 1)
    assert (snapshot(EXAMPLE), snapshot(JOBS)) == before


def test_publish_without_identity_prints_no_pin_and_leaves_nothing(sluice):
    proc = sluice.run("transform", "publish", EXAMPLE)
    assert proc.returncode == 1
    assert proc.stdout == b""
    assert "sluice auth keygen" in proc.stderr.decode()
    assert store_objects(sluice) == []
    assert registry_counts(sluice.env["SLUICE_HOME"]) == (0, 0)


def test_publish_with_unreachable_store_or_registry(sluice):
    sluice.run("auth", "keygen", check=True)
    proc = sluice.run("transform", "publish", EXAMPLE, env={
        "SLUICE_STORE": "s3://b/p?endpoint_override=127.0.0.1:1&scheme=http&region=us-east-1"})
    assert proc.returncode == 1
    assert proc.stdout == b""
    assert "the store is unreachable" in proc.stderr.decode()
    assert registry_counts(sluice.env["SLUICE_HOME"]) == (0, 0)

    proc = sluice.run("transform", "publish", EXAMPLE, env={
        "SLUICE_DATABASE_URL": "postgresql://postgres@127.0.0.1:1/none?connect_timeout=2"})
    assert proc.returncode == 1
    assert proc.stdout == b""
    assert "cannot connect" in proc.stderr.decode()
    assert store_objects(sluice) == []


def test_publish_with_a_failing_build_leaves_nothing(sluice, tmp_path):
    sluice.run("auth", "keygen", check=True)
    sluice.run("transform", "new", "broken-rows", "--dir", tmp_path, check=True)
    src = tmp_path / "broken-rows" / "src" / "transform.cpp"
    src.write_text(src.read_text() + "\nthis is not C++;\n")
    proc = sluice.run("transform", "publish", tmp_path / "broken-rows")
    assert proc.returncode == 1
    assert proc.stdout == b""
    assert "transform 'broken-rows': build failed" in proc.stderr.decode()
    assert store_objects(sluice) == []
    assert registry_counts(sluice.env["SLUICE_HOME"]) == (0, 0)


def test_publish_on_s3_with_a_postgresql_registry(sluice_bin, tmp_path, moto_endpoint,
                                                  postgres_server):
    env = base_env(tmp_path / "home")
    env["SLUICE_STORE"] = s3_store_url(moto_endpoint, tmp_path)
    env["SLUICE_DATABASE_URL"] = postgres_server()
    sluice = Sluice(sluice_bin, env)
    sluice.run("auth", "keygen", check=True)
    out = sluice.run("transform", "publish", EXAMPLE, check=True).stdout.decode()
    pin = LINE.fullmatch(out).group(1)
    stored = sluice.run("store", "get", f"transforms/batch/{pin}.so", check=True).stdout
    assert blake3.blake3(stored).hexdigest() == pin
    sluice.run("transform", "publish", EXAMPLE, check=True)
    psql = postgres_server.psql
    url = env["SLUICE_DATABASE_URL"]
    assert psql(url, "select count(*) from transform_artifacts") == "1"
    assert psql(url, "select count(*) from pipeline_specs") == "1"
    assert psql(url, "select artifact_blake3 from transform_artifacts") == pin


def test_release_builds_are_reproducible_across_directories(sluice, tmp_path):
    """Two copies of the example in different places, built without ccache against the sluice
    checkout seen through two different paths, give one digest."""
    link = tmp_path / "elsewhere" / "sluice-checkout"
    link.parent.mkdir()
    link.symlink_to(ROOT)
    digests = []
    for where, root in [(tmp_path / "a", ROOT), (tmp_path / "b" / "much" / "deeper", link)]:
        where.mkdir(parents=True)
        copy = where / "conversation-message-extract"
        shutil.copytree(EXAMPLE, copy, ignore=shutil.ignore_patterns("build"))
        proc = sluice.run("transform", "test", copy,
                          env={"CCACHE_DISABLE": "1", "SLUICE_ROOT": str(root)})
        assert proc.returncode == 0, proc.stderr.decode()[-3000:]
        lib = copy / "build" / "libconversation-message-extract.so"
        digests.append(blake3.blake3(lib.read_bytes()).hexdigest())
    assert digests[0] == digests[1]
    assert set(committed_pins().values()) == {digests[0]}
