"""The CLI skeleton through the real binary: version, exit codes, hashing against b3sum and the
Python blake3 package, and the object store against a local directory and S3."""

import os
import subprocess

import blake3
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from conftest import s3_store_url


def test_version_names_sluice_arrow_and_abi(sluice):
    proc = sluice.run("--version", check=True)
    out = proc.stdout.decode()
    assert out.startswith("sluice 0.1.0\n")
    # The Arrow the binary runs with is the wheel's.
    assert f"arrow {pa.__version__} (runtime" in out
    assert "transform-abi 1" in out
    assert "function-abi 1" in out


def test_libpq_and_s3_are_loaded_only_by_a_process_that_uses_them(sluice, tmp_path,
                                                                     moto_endpoint,
                                                                     postgres_server):
    """libpq (a PostgreSQL registry) and Arrow's S3 module (an s3:// store) and their dozens of
    dependencies are opened on first use, not linked: loading them cost every process, each
    worker included, about 7 ms of its start. LD_DEBUG=files lists each library the loader
    opens."""
    def loaded(env):
        proc = sluice.run("query", "select 1", env={"LD_DEBUG": "files", **env})
        assert proc.returncode == 0, proc.stderr.decode(errors="replace")[-2000:]
        return proc.stderr.decode(errors="replace")

    local = loaded({})
    assert "libpq.so" not in local and "libarrow_s3.so" not in local
    on_s3 = loaded({"SLUICE_STORE": s3_store_url(moto_endpoint, tmp_path)})
    assert "libarrow_s3.so" in on_s3 and "libpq.so" not in on_s3
    on_postgres = loaded({"SLUICE_DATABASE_URL": postgres_server()})
    assert "libpq.so" in on_postgres and "libarrow_s3.so" not in on_postgres


@pytest.mark.parametrize(
    "args", [[], ["no-such-command"], ["hash", "--no-such-flag"], ["store"], ["store", "get"]]
)
def test_usage_errors_exit_2(sluice, args):
    proc = sluice.run(*args)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr  # says what is wrong


SIZES = [0, 1, 1023, 1024, 1025, 64 * 1024, 10 * 1024 * 1024 + 7]


@pytest.mark.parametrize("size", SIZES)
def test_hash_agrees_with_b3sum_and_python_blake3(sluice, tmp_path, size):
    data = os.urandom(size)
    path = tmp_path / f"data-{size}.bin"
    path.write_bytes(data)
    expected = blake3.blake3(data).hexdigest()

    ours = sluice.run("hash", path, check=True).stdout.decode()
    b3 = subprocess.run(["b3sum", str(path)], capture_output=True, check=True).stdout.decode()
    assert ours == b3 == f"{expected}  {path}\n"

    stdin = sluice.run("hash", "-", input=data, check=True).stdout.decode()
    assert stdin == f"{expected}  -\n"


def test_hash_many_files_like_b3sum(sluice, tmp_path):
    paths = []
    for i in range(3):
        p = tmp_path / f"f{i}"
        p.write_bytes(os.urandom(1000 * i))
        paths.append(str(p))
    ours = sluice.run("hash", *paths, check=True).stdout
    b3 = subprocess.run(["b3sum", *paths], capture_output=True, check=True).stdout
    assert ours == b3


def test_hash_missing_file_names_it(sluice, tmp_path):
    missing = tmp_path / "nope.bin"
    proc = sluice.run("hash", missing)
    assert proc.returncode == 1
    assert str(missing) in proc.stderr.decode()
    assert proc.stdout == b""


def test_store_round_trip(store_sluice, tmp_path):
    src = tmp_path / "blob.bin"
    data = os.urandom(3 * 1024 * 1024 + 5)
    src.write_bytes(data)
    store_sluice.run("store", "put", "b/blob.bin", src, check=True)
    store_sluice.run("store", "put", "a/first.txt", "-", input=b"first", check=True)

    listing = store_sluice.run("store", "ls", check=True).stdout.decode().splitlines()
    assert [line.split()[1] for line in listing] == ["a/first.txt", "b/blob.bin"]
    assert [int(line.split()[0]) for line in listing] == [5, len(data)]

    got = store_sluice.run("store", "get", "b/blob.bin", check=True).stdout
    assert got == data
    out = tmp_path / "out.bin"
    store_sluice.run("store", "get", "a/first.txt", "-o", out, check=True)
    assert out.read_bytes() == b"first"

    store_sluice.run("store", "rm", "b/blob.bin", check=True)
    listing = store_sluice.run("store", "ls", "b/", check=True).stdout
    assert listing == b""


def test_store_parquet_round_trip(store_sluice, tmp_path):
    table = pa.table({"id": list(range(1000)), "name": [f"row-{i}" for i in range(1000)]})
    src = tmp_path / "t.parquet"
    pq.write_table(table, src)
    store_sluice.run("store", "put", "tables/t/part-0.parquet", src, check=True)
    back = tmp_path / "back.parquet"
    store_sluice.run("store", "get", "tables/t/part-0.parquet", "-o", back, check=True)
    assert pq.read_table(back).equals(table)


def test_store_missing_object_names_key(store_sluice):
    proc = store_sluice.run("store", "get", "no/such/key")
    assert proc.returncode == 1
    assert "object 'no/such/key' does not exist" in proc.stderr.decode()


def test_store_invalid_key_is_refused(store_sluice):
    proc = store_sluice.run("store", "put", "../escape", "-", input=b"x")
    assert proc.returncode == 1
    assert "invalid object key '../escape'" in proc.stderr.decode()


@pytest.mark.parametrize(
    "env, expect",
    [
        ({"SLUICE_STORE": ""}, "SLUICE_STORE is set but empty"),
        ({"SLUICE_HOME": ""}, "SLUICE_HOME is set but empty"),
        ({"SLUICE_STORE": "ftp://x/y"}, "unsupported scheme 'ftp'"),
        ({"SLUICE_STORE": "file://relative"}, "needs an absolute path"),
        ({"SLUICE_STORE": "s3://"}, "needs a bucket"),
    ],
)
def test_store_configuration_errors(sluice, env, expect):
    proc = sluice.run("store", "ls", env=env)
    assert proc.returncode == 1
    assert expect in proc.stderr.decode()


def test_default_store_is_under_sluice_home(sluice):
    sluice.run("store", "put", "x/y", "-", input=b"hello", check=True)
    home = sluice.env["SLUICE_HOME"]
    assert open(os.path.join(home, "store", "x", "y"), "rb").read() == b"hello"


def test_hash_reads_pipes(sluice, tmp_path):
    """Non-seekable inputs (a FIFO here, like `sluice hash <(cmd)`) are streamed, not mapped."""
    import threading

    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    data = os.urandom(3 * 1024 * 1024)

    def writer():
        with open(fifo, "wb") as f:
            f.write(data)

    t = threading.Thread(target=writer)
    t.start()
    out = sluice.run("hash", fifo, check=True).stdout.decode()
    t.join()
    assert out == f"{blake3.blake3(data).hexdigest()}  {fifo}\n"


def test_hash_directory_is_an_error_but_others_still_print(sluice, tmp_path):
    f = tmp_path / "f"
    f.write_bytes(b"abc")
    proc = sluice.run("hash", tmp_path, f)
    assert proc.returncode == 1
    assert f"cannot hash '{tmp_path}': a directory" in proc.stderr.decode()
    assert proc.stdout.decode() == f"{blake3.blake3(b'abc').hexdigest()}  {f}\n"
