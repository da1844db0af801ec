"""Fixtures for end-to-end tests: the real `sluice` binary, an isolated SLUICE_HOME, and a real
S3 endpoint (moto server) on a free loopback port."""

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
# `make test-asan` runs this suite against the sanitized binary.
SLUICE = Path(os.environ.get("SLUICE_E2E_BINARY", ROOT / "build" / "sluice"))
# Under AddressSanitizer (abort_on_error=1) a segfault is reported and then aborts.
SANITIZED = "SLUICE_E2E_BINARY" in os.environ and "asan" in os.environ["SLUICE_E2E_BINARY"]
VENV_BIN = Path(sys.executable).parent


@pytest.fixture(scope="session")
def sluice_bin():
    if not SLUICE.exists():
        pytest.fail(f"{SLUICE} is missing: run `make build` first")
    return SLUICE


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="session")
def moto_endpoint():
    """Starts moto_server on loopback for the session and stops it afterwards."""
    port = _free_port()
    proc = subprocess.Popen(
        [str(VENV_BIN / "moto_server"), "-H", "127.0.0.1", "-p", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.time() + 60
    while True:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                break
        except OSError:
            if proc.poll() is not None or time.time() > deadline:
                proc.kill()
                pytest.fail("moto_server did not start")
            time.sleep(0.05)
    yield f"127.0.0.1:{port}"
    proc.terminate()
    proc.wait(timeout=30)


@pytest.fixture(scope="session")
def postgres_server():
    """A real PostgreSQL server (Debian's initdb/pg_ctl) in a temp dir on a loopback port. As root
    it runs as the postgres user, since initdb refuses root. Yields a function that creates a
    fresh database and returns its URL."""
    import glob
    import shutil
    import tempfile

    bindir = sorted(glob.glob("/usr/lib/postgresql/*/bin"))[-1]
    root = tempfile.mkdtemp(prefix="sluice-pg-")
    as_root = os.geteuid() == 0
    # runuser is in /usr/sbin, which a non-login root shell may not have on PATH.
    runuser = next((p for p in ("/usr/sbin/runuser", "/sbin/runuser") if os.access(p, os.X_OK)),
                   "runuser")
    prefix = [runuser, "-u", "postgres", "--"] if as_root else []
    if as_root:
        shutil.chown(root, "postgres", "postgres")
    port = _free_port()
    data = os.path.join(root, "data")
    quiet = dict(stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    subprocess.run(prefix + [f"{bindir}/initdb", "-D", data, "-U", "postgres", "--auth=trust",
                             "--no-sync", "-E", "UTF8"], **quiet)
    subprocess.run(prefix + [f"{bindir}/pg_ctl", "-D", data, "-l", os.path.join(root, "log"), "-w",
                             "-o", f"-p {port} -k {root} -c listen_addresses=127.0.0.1 "
                             "-c fsync=off", "start"], **quiet)
    counter = [0]

    def create_database():
        counter[0] += 1
        name = f"e2e_{os.getpid()}_{counter[0]}"
        subprocess.run([f"{bindir}/createdb", "-h", "127.0.0.1", "-p", str(port), "-U",
                        "postgres", name], **quiet)
        return f"postgresql://postgres@127.0.0.1:{port}/{name}"

    create_database.psql = lambda url, sql: subprocess.run(
        ["psql", url, "-tAc", sql], capture_output=True, check=True, text=True).stdout.strip()
    yield create_database
    subprocess.run(prefix + [f"{bindir}/pg_ctl", "-D", data, "-m", "immediate", "-w", "stop"],
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    shutil.rmtree(root, ignore_errors=True)


def aws_env():
    return {
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_DEFAULT_REGION": "us-east-1",
        "AWS_EC2_METADATA_DISABLED": "true",
    }


class Sluice:
    """Runs the real binary with a controlled environment."""

    def __init__(self, binary, env):
        self.binary = binary
        self.env = env

    def run(self, *args, input=None, check=False, env=None):
        full_env = dict(self.env)
        if env:
            full_env.update(env)
        proc = subprocess.run(
            [str(self.binary), *map(str, args)],
            input=input,
            capture_output=True,
            env=full_env,
            timeout=300,
        )
        if check and proc.returncode != 0:
            raise AssertionError(
                f"sluice {' '.join(map(str, args))} exited {proc.returncode}:\n"
                f"{proc.stderr.decode(errors='replace')}"
            )
        return proc


def base_env(home):
    env = {k: v for k, v in os.environ.items() if not k.startswith("SLUICE_")}
    env["SLUICE_HOME"] = str(home)
    env.update(aws_env())
    return env


@pytest.fixture
def sluice(sluice_bin, tmp_path):
    """sluice on embedded defaults in a fresh SLUICE_HOME."""
    return Sluice(sluice_bin, base_env(tmp_path / "home"))


def s3_store_url(endpoint, tmp_path):
    """Creates a fresh bucket on the moto endpoint and returns a store URL in it."""
    import pyarrow.fs as pafs

    bucket = f"e2e-{os.getpid()}-{abs(hash(str(tmp_path))) % 10**8}"
    os.environ.update(aws_env())
    s3 = pafs.S3FileSystem(endpoint_override=endpoint, scheme="http", region="us-east-1",
                           allow_bucket_creation=True)
    s3.create_dir(bucket)
    return f"s3://{bucket}/store?endpoint_override={endpoint}&scheme=http&region=us-east-1"


@pytest.fixture(params=["local", "s3"])
def store_sluice(request, sluice_bin, tmp_path):
    """sluice against a local store and against S3 on moto, in turn."""
    env = base_env(tmp_path / "home")
    if request.param == "s3":
        env["SLUICE_STORE"] = s3_store_url(request.getfixturevalue("moto_endpoint"), tmp_path)
    return Sluice(sluice_bin, env)
