"""`--executor ray`: the validate job and TPC-H queries as Ray tasks on a local multi-node Ray
cluster (ray.cluster_utils.Cluster: a head node with 0 CPUs and two worker nodes with 1 CPU
each, all on loopback), with the store on S3 (moto) and the registry on PostgreSQL, since nodes
share no disk. Every answer is compared with the local executor's on the same data; a node is
killed under a running task; a data error fails the run once; no shuffle object is left behind."""

import os
import socket
import subprocess
import sys
import time
from urllib.parse import urlparse

import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.parquet as pq
import pytest

from conftest import ROOT, VENV_BIN, Sluice, aws_env, base_env, s3_store_url
from test_sql_distributed import assert_same_rows, rows_of
from test_submit import job, prepare, read_output
from test_submit import rows_of as job_rows

LOOPBACK = "127.0.0.1"
# Ray would otherwise advertise the machine's outward address; these tests stay on loopback.
os.environ["RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"] = "0"
OBJECT_STORE = 80 << 20
QUERIES = ROOT / "tests" / "tpch"
LINEITEM_FILES = 4


def _node_args():
    return dict(num_cpus=1, node_ip_address=LOOPBACK, object_store_memory=OBJECT_STORE)


@pytest.fixture(scope="module")
def cluster():
    from ray.cluster_utils import Cluster

    c = Cluster(initialize_head=True, head_node_args=dict(
        num_cpus=0, node_ip_address=LOOPBACK, include_dashboard=False,
        object_store_memory=OBJECT_STORE))
    for _ in range(2):
        c.add_node(**_node_args())
    c.wait_for_nodes()
    yield c
    c.shutdown()


def _s3(store_url):
    u = urlparse(store_url)
    endpoint = dict(p.split("=", 1) for p in u.query.split("&"))["endpoint_override"]
    os.environ.update(aws_env())
    fs = pafs.S3FileSystem(endpoint_override=endpoint, scheme="http", region="us-east-1")
    return fs, f"{u.netloc}{u.path}"


def shuffle_objects(store_url):
    fs, root = _s3(store_url)
    found = fs.get_file_info(pafs.FileSelector(f"{root}/_sluice/shuffle", recursive=True,
                                               allow_not_found=True))
    return [f.path for f in found if f.type == pafs.FileType.File]


@pytest.fixture(scope="module")
def ray_home(sluice_bin, cluster, moto_endpoint, postgres_server, tmp_path_factory):
    """A home on S3 and PostgreSQL with the example data and transform, TPC-H SF 0.1 (lineitem
    as 4 files) as tables, and the cluster's address."""
    root = tmp_path_factory.mktemp("ray")
    env = base_env(root / "home")
    env["SLUICE_STORE"] = s3_store_url(moto_endpoint, root)
    env["SLUICE_DATABASE_URL"] = postgres_server()
    env["RAY_ADDRESS"] = cluster.address
    env["SLUICE_RAY_PYTHON"] = sys.executable
    sluice = Sluice(sluice_bin, env)
    prepare(sluice, objects=6)

    data = root / "tpch"
    subprocess.run([str(VENV_BIN / "tpchgen-cli"), "parquet", "-s", "0.1", "--output-dir",
                    str(data)], check=True, capture_output=True)
    fs, store = _s3(env["SLUICE_STORE"])
    for f in sorted(data.glob("*.parquet")):
        t = f.stem
        if t == "lineitem":
            table = pq.read_table(f)
            n = table.num_rows
            for i in range(LINEITEM_FILES):
                lo, hi = i * n // LINEITEM_FILES, (i + 1) * n // LINEITEM_FILES
                pq.write_table(table.slice(lo, hi - lo),
                               f"{store}/tpch/lineitem/part-{i}.parquet", filesystem=fs)
            where = "tpch/lineitem"
        else:
            with open(f, "rb") as src, fs.open_output_stream(f"{store}/tpch/{t}.parquet") as dst:
                dst.write(src.read())
            where = f"tpch/{t}.parquet"
        sluice.run("query", f"CREATE EXTERNAL TABLE {t} STORED AS PARQUET LOCATION '{where}'",
                   check=True)
    return sluice


def query(sluice, sql, out, *flags, env=None):
    proc = sluice.run("query", *flags, "--format", "arrow", "-o", out, sql, env=env)
    assert proc.returncode == 0, proc.stderr.decode()
    with pa.ipc.open_stream(out) as reader:
        return rows_of(reader.read_all()), proc.stderr.decode()


def q(n):
    return (QUERIES / f"q{n:02d}.sql").read_text()


@pytest.mark.parametrize("n", [1, 3, 18, 21])
def test_tpch_on_ray_equals_the_local_executor(ray_home, n, tmp_path):
    sql = q(n)
    explained = ray_home.run("query", "--executor", "ray", "EXPLAIN " + sql, check=True)
    # One task per cluster CPU by default: the plan was cut for the cluster's 2 CPUs.
    assert "distributed plan:" in explained.stdout.decode() and "on 2 workers" in \
        explained.stdout.decode(), explained.stdout.decode()
    ours, err = query(ray_home, sql, tmp_path / "ray.arrow", "--executor", "ray")
    assert "running in-process" not in err, err
    local, _ = query(ray_home, sql, tmp_path / "local.arrow", "--workers", "2")
    assert_same_rows(ours, local, ordered=True, what=f"Q{n} on Ray vs local")
    assert shuffle_objects(ray_home.env["SLUICE_STORE"]) == []


def test_validate_job_on_ray_equals_the_local_executor(ray_home, tmp_path):
    j = job(tmp_path, **{"limit = 50": "limit = 6"})
    out = ray_home.run("submit", "--manifest", j, "--run-id", "on-ray", "--executor", "ray",
                       check=True).stdout.decode()
    ray_home.run("submit", "--manifest", j, "--run-id", "on-local", "--workers", "2", check=True)
    ours, _ = read_output(ray_home, "derived/conversation-messages-validate/on-ray", tmp_path)
    local, _ = read_output(ray_home, "derived/conversation-messages-validate/on-local", tmp_path)
    assert job_rows(ours) == job_rows(local)
    assert ours.num_rows > 0, out
    assert shuffle_objects(ray_home.env["SLUICE_STORE"]) == []


def test_a_worker_killed_by_a_signal_is_retried_by_the_driver(ray_home, tmp_path):
    sql = q(1)
    ours, err = query(ray_home, sql, tmp_path / "ray.arrow", "--executor", "ray",
                      env={"SLUICE_FAILPOINT": "kill:s1p0:1"})
    assert "worker for task s1p0 attempt 1 was killed by signal 9 (SIGKILL) on node" in err, err
    assert "retrying (attempt 2 of 3)" in err, err
    local, _ = query(ray_home, sql, tmp_path / "local.arrow", "--workers", "2")
    assert_same_rows(ours, local, ordered=True, what="Q1 with a killed worker on Ray")
    assert shuffle_objects(ray_home.env["SLUICE_STORE"]) == []


def test_a_data_error_fails_the_run_once_naming_the_object(ray_home, tmp_path):
    good = ('{"request_id":"r1","user_id":"u","conversation_id":"c1","model":"m",'
            '"received_at":"2026-01-01T00:00:00Z","messages":[{"role":"user","content":"hi",'
            '"name":null}]}')
    ray_home.run("store", "put", "raw/ray-bad/a.jsonl", "-",
                 input=(good + "\n{oops\n").encode(), check=True)
    j = job(tmp_path, "bad.toml", **{'prefix = "raw/conversations/"': 'prefix = "raw/ray-bad/"',
                                     "limit = 50": ""})
    proc = ray_home.run("submit", "--manifest", j, "--run-id", "ray-bad", "--executor", "ray")
    err = proc.stderr.decode()
    assert proc.returncode == 1, err
    needle = "object 'raw/ray-bad/a.jsonl' line 2: not valid JSON"
    assert err.count(needle) == 1, err
    assert "retrying" not in err, err
    listing = ray_home.run("store", "ls", "derived/conversation-messages-validate/ray-bad/",
                           check=True).stdout
    assert listing == b"", "a failed run must leave nothing behind"
    assert "status:             failed" in ray_home.run("runs", "show", "ray-bad",
                                                        check=True).stdout.decode()
    assert shuffle_objects(ray_home.env["SLUICE_STORE"]) == []


def test_an_unreachable_cluster_is_named_and_nothing_is_claimed(ray_home, tmp_path):
    j = job(tmp_path, **{"limit = 50": "limit = 2"})
    proc = ray_home.run("submit", "--manifest", j, "--run-id", "no-cluster", "--executor", "ray",
                        env={"SLUICE_RAY_PYTHON": "/nonexistent/python3"})
    err = proc.stderr.decode()
    assert proc.returncode == 1, err
    assert "cannot start the Ray bridge with '/nonexistent/python3'" in err, err
    assert ray_home.run("runs", "show", "no-cluster").returncode != 0
    proc = ray_home.run("query", "--executor", "ray", "--workers", "0", "select count(*) from "
                        "nation", env={"SLUICE_RAY_PYTHON": str(ROOT / "README.md")})
    assert proc.returncode != 0
    # Ray would retry an address where nothing listens for minutes.
    with socket.socket() as s:
        s.bind((LOOPBACK, 0))
        closed = f"{LOOPBACK}:{s.getsockname()[1]}"
    proc = ray_home.run("query", "--executor", "ray", "select count(*) from nation",
                        env={"RAY_ADDRESS": closed})
    assert proc.returncode == 1
    assert f"cannot connect to the Ray cluster at {closed}: nothing answers" in \
        proc.stderr.decode(), proc.stderr.decode()
    proc = ray_home.run("submit", "--manifest", j, "--run-id", "no-cluster", "--executor", "ray",
                        "--workers", "0")
    assert proc.returncode != 0
    assert "with --executor ray, leave it out" in proc.stderr.decode(), proc.stderr.decode()


# --- a node lost under a running task ---------------------------------------------------------

def _raylet_pids(cluster):
    from ray._private import ray_constants

    pids = {}
    for node in cluster.worker_nodes:
        for info in node.all_processes.get(ray_constants.PROCESS_TYPE_RAYLET, []):
            pids[info.process.pid] = node
    return pids


def _parent(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            stat = f.read()
        return int(stat[stat.rindex(")") + 2:].split()[1])
    except (OSError, ValueError):
        return 0


def _alive(pid):
    try:
        with open(f"/proc/{pid}/status") as f:
            return "\nState:\tZ" not in f.read()
    except OSError:
        return False


def _sluice_workers(binary):
    found = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                argv = f.read().split(b"\0")
        except OSError:
            continue
        if len(argv) > 1 and argv[0] == str(binary).encode() and argv[1] == b"worker":
            found.append(int(pid))
    return found


def kill_node_under_stalled_task(cluster, binary, proc):
    """Waits for the sluice worker stalled at its failpoint, kills the Ray node that runs it
    (no graceful shutdown), and returns the worker's pid. The cluster gets a fresh node back."""
    raylets = _raylet_pids(cluster)
    first_seen = {}
    deadline = time.time() + 120
    while time.time() < deadline and proc.poll() is None:
        now = time.time()
        for pid in _sluice_workers(binary):
            first_seen.setdefault(pid, now)
            # Other tasks take well under a second; the stalled one sleeps 20 s.
            if now - first_seen[pid] < 2:
                continue
            ancestor = pid
            while ancestor > 1 and ancestor not in raylets:
                ancestor = _parent(ancestor)
            if ancestor in raylets:
                cluster.remove_node(raylets[ancestor], allow_graceful=False)
                cluster.add_node(**_node_args())
                return pid
        time.sleep(0.1)
    raise AssertionError("no stalled sluice worker was found on a Ray node: " +
                         (proc.communicate()[1].decode() if proc.poll() is not None else ""))


def run_killing_a_node(ray_home, cluster, args, failpoint):
    env = dict(ray_home.env, SLUICE_FAILPOINT=failpoint)
    proc = subprocess.Popen([str(ray_home.binary), *map(str, args)], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        stalled = kill_node_under_stalled_task(cluster, ray_home.binary, proc)
        out, err = proc.communicate(timeout=300)
    finally:
        if proc.poll() is None:
            proc.kill()
    # The stalled worker died with its Ray worker (its parent-death signal); it did not finish
    # its sleep as an orphan.
    deadline = time.time() + 30
    while _alive(stalled) and time.time() < deadline:
        time.sleep(0.1)
    assert not _alive(stalled), f"sluice worker {stalled} outlived its killed node"
    return proc.returncode, out.decode(), err.decode()


def test_a_node_killed_mid_query_is_recovered(ray_home, cluster, tmp_path):
    sql = q(1)
    out = tmp_path / "ray.arrow"
    rc, _, err = run_killing_a_node(
        ray_home, cluster, ["query", "--executor", "ray", "--format", "arrow", "-o", out, sql],
        "stall:s1p0:1")
    assert rc == 0, err
    assert "retrying (attempt 2 of 3)" in err, err
    with pa.ipc.open_stream(out) as reader:
        ours = rows_of(reader.read_all())
    local, _ = query(ray_home, sql, tmp_path / "local.arrow", "--workers", "2")
    assert_same_rows(ours, local, ordered=True, what="Q1 with a node killed on Ray")
    assert shuffle_objects(ray_home.env["SLUICE_STORE"]) == []


def test_a_node_killed_mid_job_is_recovered(ray_home, cluster, tmp_path):
    j = job(tmp_path, **{"limit = 50": "limit = 6"})
    rc, _, err = run_killing_a_node(
        ray_home, cluster, ["submit", "--manifest", j, "--run-id", "ray-node-lost", "--executor",
                            "ray"], "stall:s0p0:1")
    assert rc == 0, err
    assert "retrying (attempt 2 of 3)" in err, err
    ray_home.run("submit", "--manifest", j, "--run-id", "local-node-lost", "--workers", "2",
                 check=True)
    ours, _ = read_output(ray_home, "derived/conversation-messages-validate/ray-node-lost",
                          tmp_path)
    local, _ = read_output(ray_home, "derived/conversation-messages-validate/local-node-lost",
                           tmp_path)
    assert job_rows(ours) == job_rows(local)
    assert shuffle_objects(ray_home.env["SLUICE_STORE"]) == []
