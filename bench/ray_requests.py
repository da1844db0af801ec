"""Object-store traffic of a query on Ray, for docs/scale-out.md: runs TPC-H queries with
`--executor ray` on a local 2-node Ray cluster against a moto S3 server whose request log it
keeps, and counts the requests each query made (GET, PUT, HEAD, LIST, DELETE), the shuffle bytes
(EXPLAIN ANALYZE) and the tasks per stage.

    .venv/bin/python bench/ray_requests.py [--sf 0.1] [--queries 1,18]

Not part of `make bench`: moto is a Python server, so its request counts mean something and its
timings do not. Prints a markdown table.
"""

import argparse
import os
import re
import socket
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

import pyarrow.fs as pafs
import pyarrow.parquet as pq

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
SLUICE = str(ROOT / "build" / "sluice")
VENV_BIN = Path(sys.executable).parent
AWS = {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing",
       "AWS_DEFAULT_REGION": "us-east-1", "AWS_EC2_METADATA_DISABLED": "true"}


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def requests_in(log_text):
    """Counts werkzeug's access-log lines by operation, and how many touched shuffle files."""
    ops = Counter()
    for method, path in re.findall(r'(GET|PUT|HEAD|POST|DELETE) (\S+) HTTP',
                                   re.sub(r"\x1b\[[0-9;]*m", "", log_text)):
        if method == "GET" and "list-type" in path:
            op = "LIST"
        elif method == "POST" and path.endswith("?delete"):
            op = "DELETE"
        elif method == "POST":
            op = "MPU"  # a multipart upload's create or complete
        else:
            op = method
        ops[op] += 1
        if "/_sluice/shuffle/" in path:
            ops["shuffle"] += 1
    return ops


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--sf", default="0.1")
    parser.add_argument("--queries", default="1,18")
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()
    os.environ.update(AWS)
    os.environ["RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"] = "0"
    work = Path(tempfile.mkdtemp(prefix="sluice-ray-requests-"))
    # moto appends to its own handle; this process reads through another, so the offsets of the
    # two never mix.
    moto_log = open(work / "moto.log", "ab")
    log = open(work / "moto.log", "r")
    port = free_port()
    moto = subprocess.Popen([str(VENV_BIN / "moto_server"), "-H", "127.0.0.1", "-p", str(port)],
                            stdout=moto_log, stderr=moto_log)
    from ray.cluster_utils import Cluster

    node = dict(node_ip_address="127.0.0.1", object_store_memory=80 << 20)
    cluster = Cluster(initialize_head=True,
                      head_node_args=dict(num_cpus=0, include_dashboard=False, **node))
    for _ in range(2):
        cluster.add_node(num_cpus=1, **node)
    cluster.wait_for_nodes()
    try:
        time.sleep(1)
        endpoint = f"127.0.0.1:{port}"
        fs = pafs.S3FileSystem(endpoint_override=endpoint, scheme="http", region="us-east-1",
                               allow_bucket_creation=True)
        fs.create_dir("bench")
        data = work / "tpch"
        subprocess.run([str(VENV_BIN / "tpchgen-cli"), "parquet", "-s", args.sf, "--output-dir",
                        str(data)], check=True, capture_output=True)
        env = {k: v for k, v in os.environ.items() if not k.startswith("SLUICE_")}
        env.update(SLUICE_HOME=str(work / "home"), RAY_ADDRESS=cluster.address,
                   SLUICE_RAY_PYTHON=sys.executable,
                   SLUICE_STORE=f"s3://bench/store?endpoint_override={endpoint}&scheme=http"
                                "&region=us-east-1")
        for f in sorted(data.glob("*.parquet")):
            t = f.stem
            if t == "lineitem":  # 4 files, as the tests split it
                table = pq.read_table(f)
                n = table.num_rows
                for i in range(4):
                    pq.write_table(table.slice(i * n // 4, (i + 1) * n // 4 - i * n // 4),
                                   f"bench/store/tpch/lineitem/part-{i}.parquet", filesystem=fs)
                where = "tpch/lineitem"
            else:
                with open(f, "rb") as src, fs.open_output_stream(f"bench/store/tpch/{t}.parquet") \
                        as dst:
                    dst.write(src.read())
                where = f"tpch/{t}.parquet"
            subprocess.run([SLUICE, "query", f"CREATE EXTERNAL TABLE {t} STORED AS PARQUET "
                            f"LOCATION '{where}'"], env=env, check=True, capture_output=True)
        print(f"| query (SF {args.sf}, {args.workers} tasks a stage) | tasks | shuffle written "
              "MiB | GET | HEAD | PUT | MPU | LIST | DELETE | all | of which shuffle | wall s | "
              "requests/s per node |")
        print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
        for q in [int(x) for x in args.queries.split(",")]:
            sql = (ROOT / "tests" / "tpch" / f"q{q:02d}.sql").read_text()
            before = log.seek(0, os.SEEK_END)
            start = time.perf_counter()
            proc = subprocess.run([SLUICE, "query", "--executor", "ray", "--workers",
                                   str(args.workers), f"EXPLAIN ANALYZE {sql}"], env=env,
                                  capture_output=True, text=True)
            wall = time.perf_counter() - start
            if proc.returncode != 0:
                print(f"| Q{q} | failed: {proc.stderr.strip()[-200:]} |")
                continue
            time.sleep(0.5)
            log.seek(before)
            text = log.read()
            if os.environ.get("SHOW_LOG"):
                print(text[:6000])
            ops = requests_in(text)
            tasks = len(re.findall(r"^  stage \d+ \(\w+\) task ", proc.stdout, re.MULTILINE))
            total = re.search(r"total shuffle: (\d+) bytes written", proc.stdout)
            written = int(total.group(1)) / 2**20 if total else 0
            n = sum(v for k, v in ops.items() if k != "shuffle")
            print(f"| Q{q} | {tasks} | {written:.2f} | {ops['GET']} | {ops['HEAD']} | "
                  f"{ops['PUT']} | {ops['MPU']} | {ops['LIST']} | {ops['DELETE']} | {n} | "
                  f"{ops['shuffle']} | {wall:.2f} | {n / wall / 2:.0f} |")
    finally:
        cluster.shutdown()
        moto.terminate()
        moto.wait()


if __name__ == "__main__":
    main()
