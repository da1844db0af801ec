"""`sluice transform new/check/test` through the real binary: the scaffold builds and its inline
test passes at once, and check reports every structural problem in one run."""

import shutil
from pathlib import Path

import pytest

from conftest import ROOT


@pytest.fixture(scope="module")
def built_scaffold(sluice_bin, tmp_path_factory):
    """A scaffold made by `transform new` and built by `transform test`, shared by the tests
    that only read it (building takes seconds)."""
    from conftest import Sluice, base_env

    work = tmp_path_factory.mktemp("scaffold")
    sluice = Sluice(sluice_bin, base_env(work / "home"))
    proc = sluice.run("transform", "new", "example-rows", "--dir", work / "transforms", check=True)
    assert b"created" in proc.stdout
    proc = sluice.run("transform", "test", work / "transforms" / "example-rows")
    assert proc.returncode == 0, proc.stderr.decode()
    assert b"inline tests passed" in proc.stdout
    return sluice, work / "transforms" / "example-rows"


def test_scaffold_has_every_file(built_scaffold):
    _, d = built_scaffold
    for f in ["CMakeLists.txt", "src/transform.cpp", "tests/transform_test.cpp",
              "transform.toml", "pipeline.toml", "job.toml"]:
        assert (d / f).is_file(), f
    job = (d / "job.toml").read_text()
    assert 'qualified_name = "example-rows"' in job
    assert 'pin_artifact_hash = "PUBLISH_RESULT_GOES_HERE"' in job


def test_scaffold_passes_check(built_scaffold):
    sluice, d = built_scaffold
    proc = sluice.run("transform", "check", d)
    assert proc.returncode == 0, proc.stderr.decode()
    assert b"ok:" in proc.stdout


def test_new_refuses_existing_dir_and_bad_names(sluice, tmp_path):
    sluice.run("transform", "new", "twice", "--dir", tmp_path, check=True)
    proc = sluice.run("transform", "new", "twice", "--dir", tmp_path)
    assert proc.returncode == 1
    assert "already exists" in proc.stderr.decode()
    for bad in ["Upper", "9lives", "two--dashes", "under_score", "trailing-", "a" * 65]:
        proc = sluice.run("transform", "new", bad, "--dir", tmp_path)
        assert proc.returncode == 1, bad
        assert f"invalid transform name '{bad}'" in proc.stderr.decode()
        assert not (tmp_path / bad).exists()


def test_check_reports_every_problem_at_once(built_scaffold, tmp_path):
    sluice, original = built_scaffold
    d = tmp_path / "example-rows"
    shutil.copytree(original, d)
    meta = d / "transform.toml"
    meta.write_text(meta.read_text().replace('version = "0.1.0"', 'version = "9.9.9"'))
    job = d / "job.toml"
    job.write_text(job.read_text().replace('qualified_name = "example-rows"',
                                           'qualified_name = "someone-else"'))
    (d / "pipeline.toml").unlink()
    cm = d / "CMakeLists.txt"
    cm.write_text(cm.read_text().replace("sluice_add_transform(example-rows",
                                         "add_executable(example-rows"))

    proc = sluice.run("transform", "check", d)
    assert proc.returncode == 1
    err = proc.stderr.decode()
    assert "found 4 problem(s)" in err, err
    assert f"{d}/transform.toml: version: '9.9.9', but the built library says '0.1.0'" in err
    assert f"{d}/job.toml: stages: no function stage with qualified_name = \"example-rows\"" in err
    assert f"{d}/transform.toml: pipeline: cannot read '{d}/pipeline.toml': no such file" in err
    assert f"{d}/CMakeLists.txt: no shared-library target" in err


def test_check_reads_symbols_and_identity_from_the_elf_file(built_scaffold, tmp_path):
    sluice, original = built_scaffold
    # A library built without the SDK: no identity and no transform_batch_identity symbol.
    foreign = ROOT / "build" / "tests" / "transforms" / "libtest_transform_abi_v2.so"
    proc = sluice.run("transform", "check", original, "--library", foreign)
    assert proc.returncode == 1
    err = proc.stderr.decode()
    assert f"{foreign}: does not export 'transform_batch_identity'" in err
    assert f"{foreign}: no identity section 'sluice_identity'" in err
    # A file that is not ELF at all.
    fake = tmp_path / "libfake.so"
    fake.write_text("not a library")
    proc = sluice.run("transform", "check", original, "--library", fake)
    assert f"'{fake}' is not a readable ELF shared library" in proc.stderr.decode()


def test_maintained_example_builds_tests_and_checks(sluice):
    d = ROOT / "transforms" / "conversation-message-extract"
    proc = sluice.run("transform", "test", d)
    assert proc.returncode == 0, proc.stderr.decode()[-3000:]
    proc = sluice.run("transform", "check", d)
    assert proc.returncode == 0, proc.stderr.decode()
