"""`BENCH_ONLY=ray`: sluice's Ray executor against its local executor on the same data, in one
run: TPC-H Q1 and Q18 (SF 1 by default, the TPC-H bench's data), the validate job (its first 50
objects) and the main job (all 200 of the pipeline bench's objects), each with 2 tasks at a time. The Ray side is a local multi-node cluster
(ray.cluster_utils.Cluster: a 0-CPU head and two 1-CPU worker nodes on loopback) that this
process starts for the run.

Both executors read the same local file store here: the point is the executor's overhead (Ray
scheduling, a `sluice worker` process per task, the bridge), not a store. The tests run the same
paths on S3 (moto); a Python S3 server's speed says nothing about S3's.

"Where the time goes" comes from one untimed EXPLAIN ANALYZE per query and executor: each
stage's wave wall time against the longest of its tasks' own time (what the worker spent running
the plan), the rest being scheduling, process starts and the bridge.
"""

import os
import re
import subprocess
import sys
from pathlib import Path

import tpch

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
SLUICE = str(ROOT / "build" / "sluice")
QUERIES = [1, 18]
LOOPBACK = "127.0.0.1"

_cluster = None


def start_cluster():
    """Starts the local cluster once; it ends with this process."""
    global _cluster
    if _cluster is None:
        os.environ["RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"] = "0"  # stay on loopback
        from ray.cluster_utils import Cluster

        node = dict(node_ip_address=LOOPBACK, object_store_memory=80 << 20)
        _cluster = Cluster(initialize_head=True,
                           head_node_args=dict(num_cpus=0, include_dashboard=False, **node))
        for _ in range(2):
            _cluster.add_node(num_cpus=1, **node)
        _cluster.wait_for_nodes()
    return _cluster


def ray_env():
    return {"RAY_ADDRESS": start_cluster().address, "SLUICE_RAY_PYTHON": sys.executable,
            "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0"}


def query_name(n):
    # Not "ray-tpch-...": BENCH_ONLY=tpch selects by substring and should not start a cluster.
    return f"ray-sf{tpch.SF}-q{n}"


NAMES = ["ray-startup", *[query_name(n) for n in QUERIES], "ray-validate-job", "ray-job"]


def workloads(keep, Workload):
    import pipeline

    selected = []
    env = None
    if keep("ray-startup"):
        env = ray_env()
        tpch.prepare()
        home = {**tpch.env(), **env}
        sql = "EXPLAIN select count(*) from lineitem group by l_returnflag"
        # The bridge's start and its connection to the cluster, against planning alone.
        selected.append(Workload(name="ray-startup", baseline="sluice-local", env=home, commands={
            "sluice-local": [SLUICE, "query", "--workers", "2", sql],
            "sluice-ray": [SLUICE, "query", "--executor", "ray", "--workers", "2", sql],
        }))
    queries = [n for n in QUERIES if keep(query_name(n))]
    if queries:
        env = env or ray_env()
        tpch.prepare()
        me = [sys.executable, str(HERE / "tpch.py")]
        selected += [Workload(name=query_name(n), baseline="sluice-local", env=env, commands={
            "sluice-local": [*me, "sluice-w2", str(n)],
            "sluice-ray": [*me, "sluice-ray", str(n)],
        }) for n in queries]
    for name, job in (("ray-validate-job", "validate"), ("ray-job", "main")):
        if not keep(name):
            continue
        env = env or ray_env()
        _, input_bytes = pipeline.prepare()
        selected.append(Workload(name=name, baseline="sluice-local", env=env,
                                 input_bytes=input_bytes if job == "main" else 0, commands={
                                     "sluice-local": pipeline.sluice_command(2, job),
                                     "sluice-ray": pipeline.sluice_command("ray", job),
                                 }))
    return selected


def breakdown(n, executor):
    """(wave wall ms, longest task ms) per stage of one EXPLAIN ANALYZE of query n."""
    flags = ["--workers", "2"] + (["--executor", "ray"] if executor == "ray" else [])
    env = tpch.env()
    env.update(ray_env())
    proc = subprocess.run([SLUICE, "query", *flags, f"EXPLAIN ANALYZE {tpch.sql(n)}"], env=env,
                          capture_output=True, text=True, timeout=3600)
    if proc.returncode != 0:
        return None
    tasks = {}
    for stage, ms in re.findall(r"^  stage (\d+) \(\w+\) task .* time=([\d.]+) ms", proc.stdout,
                                re.MULTILINE):
        tasks[stage] = max(tasks.get(stage, 0.0), float(ms))
    walls = re.findall(r"^  stage (\d+): ([\d.]+) ms wall", proc.stdout, re.MULTILINE)
    return [(s, float(w), tasks.get(s, 0.0)) for s, w in walls]


def section(selected, results):
    names = {w.name for w in selected}
    if not names & set(NAMES):
        return ""

    def median(name, engine):
        m = next((r for r in results if r.workload == name and r.engine == engine), None)
        return m.median if m and m.seconds else None

    lines = ["| workload | local s | ray s | ray / local | ray - local s |", "|---|---:|---:|---:|---:|"]
    for name in NAMES:
        local, ray = median(name, "sluice-local"), median(name, "sluice-ray")
        if name not in names:
            continue
        if local and ray:
            lines.append(f"| {name} | {local:.3f} | {ray:.3f} | {ray / local:.2f} | "
                         f"{ray - local:+.3f} |")
        else:
            lines.append(f"| {name} | {local or 'failed'} | {ray or 'failed'} | n/a | n/a |")
    out = ("## Ray executor against the local executor (2 tasks at a time)\n\n"
           "A local Ray cluster of a 0-CPU head and two 1-CPU nodes; the same file store for "
           "both. ray-startup is `EXPLAIN` of a cut query: the bridge's start and connection "
           "against planning alone.\n\n" + "\n".join(lines) + "\n\n")
    rows = []
    for n in QUERIES:
        if query_name(n) not in names:
            continue
        for executor in ("local", "ray"):
            stages = breakdown(n, executor)
            if stages is None:
                rows.append(f"| Q{n} | {executor} | failed | | | |")
                continue
            for stage, wall, task in stages:
                rows.append(f"| Q{n} | {executor} | stage {stage} | {wall:.0f} | {task:.0f} | "
                            f"{wall - task:.0f} |")
    if rows:
        out += ("Where the time goes (one untimed EXPLAIN ANALYZE each): a stage's wave wall "
                "time, its longest task's own time in the worker, and the rest (scheduling, "
                "process start, the bridge).\n\n| query | executor | stage | wave ms | longest "
                "task ms | rest ms |\n|---|---|---|---:|---:|---:|\n" + "\n".join(rows) + "\n\n")
    return out
