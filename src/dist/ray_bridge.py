"""sluice's Ray executor: the Python side of `--executor ray` (see src/dist/ray_executor.h).

sluice's C++ driver starts this script with the interpreter named by SLUICE_RAY_PYTHON, as
`python -c <this file>` (the text is compiled into the sluice binary, so the driver
needs no copy of the repository, and Ray pickles the task function by value: nodes need only
Ray, Python and the sluice binary). The driver keeps every scheduling decision: stage order,
attempt numbers, which attempt's files count, and when to stop retrying. This bridge only turns
each task into a Ray task and says how it ended.

Protocol, over the bridge's stdin and stdout, each message a frame (8-byte little-endian length,
then the bytes; a zero length or EOF asks the bridge to finish):
  driver -> bridge, first: the run's configuration as JSON (address, binary, the workers'
                    environment, limits); it holds credentials, so it never goes on a command line
  bridge -> driver, once: {"cpus": N, "nodes": K, "ray": version} or {"error": "..."}
  driver -> bridge: a JSON line {"op": "run", "id", "task", "attempt", "avoid_node"}, a newline,
                    then the task's encoded plan fragment; or {"op": "cancel"} (kills every
                    task still running)
  bridge -> driver, once per run request:
      {"id", "outcome": "report", "report": <the worker's report line>, "node", "stderr"}
      {"id", "outcome": "lost", "message", "node", "stderr"}   retryable: the worker died by a
                                                     signal or without a report, or its node died
      {"id", "outcome": "limit", "message", "stderr"} the task passed its time or memory limit
      {"id", "outcome": "failed", "message"}          anything else, such as a node without the
                                                     binary or a cluster left with no CPU; not
                                                     retried
      {"id", "outcome": "cancelled"}
Nothing else may reach the driver's reply pipe: the bridge moves it off descriptor 1 before Ray
is imported, and whatever Ray prints goes to stderr.

A Ray task runs `sluice worker --parent-pid <the Ray worker>` as a subprocess with the plan on
stdin and takes its report from the last line of its stdout. The subprocess asks the kernel for
SIGTERM when its parent dies (PR_SET_PDEATHSIG) and then kills its own process group, so a Ray
worker killed with its node leaves no sluice worker behind. Ray's own retries are off
(max_retries=0): a retry by Ray would rerun the same attempt number, and the driver decides.
"""

import json
import os
import queue
import signal
import struct
import subprocess
import sys
import threading
import time

# How often a running task checks its clock and its memory.
SAMPLE_SECONDS = 0.05
# The most of a worker's stderr that travels back to the driver.
STDERR_TAIL = 16 << 10
# How often a memory-limited task's process group is listed again (a scan of /proc); its
# members' memory is read every sample.
MEMBERS_SECONDS = 1.0
# How long tasks may wait on a cluster with no CPU left before they fail.
NO_CPU_SECONDS = 60


class TaskEnded(Exception):
    """A task attempt that ended without a report. Every value stays in args, so that the
    exception unpickles on the bridge's side."""

    sluice_outcome = "failed"

    def __init__(self, message, node="", stderr=""):
        super().__init__(message, node, stderr)
        self.node = node
        self.stderr = stderr

    def __str__(self):
        return self.args[0]


class WorkerLost(TaskEnded):
    """The worker died by a signal or exited without a report: the driver retries the task."""

    sluice_outcome = "lost"


class TaskLimit(TaskEnded):
    """The task passed its time or memory limit: retrying would only do the same again."""

    sluice_outcome = "limit"


class TaskFailed(TaskEnded):
    """The node cannot run the task at all (no sluice binary there): not retried."""


def _group_members(pgid):
    """The pids of process group `pgid`, from /proc (a scan of every process)."""
    members = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/stat", "rb") as f:
                stat = f.read()
            # The fields after the command name, which may hold spaces and parentheses.
            if int(stat[stat.rindex(b")") + 2:].split()[2]) == pgid:
                members.append(pid)
        except (OSError, ValueError, IndexError):
            continue
    return members


def _group_memory(members, page):
    """The anonymous resident memory of `members`, as worker_process.h counts it: resident minus
    shared pages, from /proc/<pid>/statm."""
    total = 0
    for pid in members:
        try:
            with open(f"/proc/{pid}/statm", "rb") as f:
                statm = f.read().split()
            total += (int(statm[1]) - int(statm[2])) * page
        except (OSError, ValueError, IndexError):
            continue
    return total


def run_worker(binary, plan, env, hide, task, timeout_s, memory_bytes):
    """Runs one task attempt in `sluice worker` on this node; returns (report line, node, stderr
    tail) or raises WorkerLost, TaskLimit or TaskFailed."""
    import ray

    node = ray.get_runtime_context().get_node_id()
    # A node may keep the binary elsewhere; it must be the same build (the session spec's parity
    # check refuses another version by name).
    binary = os.environ.get("SLUICE_RAY_WORKER_BINARY") or binary
    if not os.access(binary, os.X_OK):
        raise TaskFailed(f"task {task}: node {node} has no sluice binary at {binary}: install the "
                         "same sluice on every node (or set SLUICE_RAY_WORKER_BINARY there)")
    progress_r, progress_w = os.pipe()
    argv = [binary, "worker", "--parent-pid", str(os.getpid()), "--progress-fd", str(progress_w)]
    for path in hide:
        argv += ["--hide", path]
    try:
        proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, env=env, cwd="/", pass_fds=(progress_w,),
                                start_new_session=True)
    except OSError as e:
        os.close(progress_r)
        raise TaskFailed(f"task {task}: node {node} cannot start {binary}: {e.strerror or e}",
                         node)
    finally:
        os.close(progress_w)
    last_progress = [b""]

    def read_progress():
        with os.fdopen(progress_r, "rb") as f:
            for line in f:
                if line.strip():
                    last_progress[0] = line.strip()

    reader = threading.Thread(target=read_progress, daemon=True)
    reader.start()

    def doing():
        if not last_progress[0]:
            return " before it started its first step"
        return " while " + last_progress[0].decode(errors="replace")

    def kill_group():
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except OSError:
            pass

    start = time.monotonic()
    page = os.sysconf("SC_PAGE_SIZE")
    peak = 0
    members, listed = [], 0.0
    stdin = plan
    while True:
        try:
            out, err = proc.communicate(stdin, timeout=SAMPLE_SECONDS)
            break
        except subprocess.TimeoutExpired:
            stdin = None  # communicate keeps feeding what it was first given
        now = time.monotonic()
        if timeout_s > 0 and now - start > timeout_s:
            kill_group()
            _, err = proc.communicate()
            reader.join(1)
            raise TaskLimit(f"task {task} was killed after {timeout_s} s, its time limit "
                            f"(dataflow.limits.task_timeout_seconds), on node {node}{doing()}",
                            node, _tail(err))
        if memory_bytes > 0:
            if now - listed > MEMBERS_SECONDS:
                members, listed = _group_members(proc.pid), now
            peak = max(peak, _group_memory(members, page))
            if peak > memory_bytes:
                kill_group()
                _, err = proc.communicate()
                reader.join(1)
                raise TaskLimit(f"task {task} was killed when it used {-(-peak >> 20)} MiB, over "
                                f"its memory limit of {-(-memory_bytes >> 20)} MiB "
                                f"(dataflow.limits.task_memory_mb), on node {node}{doing()}",
                                node, _tail(err))
    # Whatever the task left in its group is not the next task's.
    kill_group()
    reader.join(1)
    err_tail = _tail(err)
    if proc.returncode < 0:
        sig = -proc.returncode
        try:
            name = signal.Signals(sig).name
        except ValueError:  # a real-time signal has no name
            name = f"SIGRTMIN+{sig - signal.SIGRTMIN}"
        raise WorkerLost(f"worker for task {task} was killed by signal {sig} ({name}) on node "
                         f"{node}{doing()}", node, err_tail)
    lines = [line for line in out.splitlines() if line.strip()]
    if proc.returncode != 0 or not lines:
        raise WorkerLost(f"worker for task {task} exited with status {proc.returncode} without a "
                         f"report on node {node}{doing()}", node, err_tail)
    return lines[-1].decode(errors="replace"), node, err_tail


def _tail(err):
    return (err or b"")[-STDERR_TAIL:].decode(errors="replace")


class Replies:
    """Frames replies on the driver's pipe, one writer at a time."""

    def __init__(self, fd):
        self._fd = fd
        self._lock = threading.Lock()

    def send(self, message):
        data = json.dumps(message).encode()
        frame = struct.pack("<Q", len(data)) + data
        with self._lock:
            view = memoryview(frame)
            while view:
                view = view[os.write(self._fd, view):]


def _read_exact(f, n):
    data = f.read(n)
    return data if data is not None and len(data) == n else None


def read_requests(requests):
    """Reads framed requests from stdin into `requests`; None at EOF or a zero length."""
    stdin = sys.stdin.buffer
    while True:
        header = _read_exact(stdin, 8)
        size = struct.unpack("<Q", header)[0] if header else 0
        body = _read_exact(stdin, size) if size else None
        if body is None:
            requests.put(None)
            return
        head, _, plan = body.partition(b"\n")
        message = json.loads(head)
        message["plan"] = plan
        requests.put(message)


def outcome(ray, ref, task):
    """The reply for a finished Ray task (`task`: "s1p0 attempt 1"), without its id."""
    try:
        line, node, err = ray.get(ref)
        return {"outcome": "report", "report": line, "node": node, "stderr": err}
    except ray.exceptions.TaskCancelledError:
        return {"outcome": "cancelled"}
    except ray.exceptions.RayTaskError as e:
        cause = e.cause
        kind = getattr(cause, "sluice_outcome", "failed")
        reply = {"outcome": kind, "message": str(cause) if cause is not None else str(e),
                 "node": getattr(cause, "node", ""), "stderr": getattr(cause, "stderr", "")}
        return reply
    except ray.exceptions.OutOfMemoryError as e:
        return {"outcome": "limit",
                "message": f"Ray's memory monitor killed task {task}: {_first(e)}"}
    except (ray.exceptions.NodeDiedError, ray.exceptions.WorkerCrashedError,
            ray.exceptions.ObjectLostError, ray.exceptions.LocalRayletDiedError) as e:
        # Lost with its node or its Ray worker: nothing of the attempt counts, so it is retried.
        return {"outcome": "lost", "node": "",
                "message": f"task {task} was lost on Ray ({type(e).__name__}: {_first(e)})"}
    except ray.exceptions.RayError as e:
        return {"outcome": "failed", "message": f"{type(e).__name__}: {_first(e)}"}


def _first(error):
    """Ray's message up to its advice (which names tools sluice's user may not have)."""
    text = str(error).splitlines()[0] if str(error) else type(error).__name__
    return text.split(" This can happen")[0].rstrip(".")


def _unreachable(address, timeout=10):
    """Why nothing answers at a plain host:port address, or None. Ray retries an address where
    nothing listens for minutes; a refused or silent port is better said at once."""
    import socket

    if not address or "://" in address or address == "auto" or ":" not in address:
        return None
    host, _, port = address.rpartition(":")
    try:
        with socket.create_connection((host.strip("[]"), int(port)), timeout=timeout):
            return None
    except ValueError:
        return f"'{address}' is not host:port"
    except OSError as e:
        return f"nothing answers at {address} ({e.strerror or e})"


def main():
    header = _read_exact(sys.stdin.buffer, 8)
    size = struct.unpack("<Q", header)[0] if header else 0
    body = _read_exact(sys.stdin.buffer, size) if size else None
    if body is None:
        return 1  # the driver went away before it said anything
    config = json.loads(body)
    # The bridge dies with the driver, even one killed by SIGKILL; Ray then ends the job's tasks,
    # and each task's sluice worker dies with its Ray worker. SIGKILL, because Ray handles
    # SIGTERM only between its own blocking calls (a connect can block for minutes).
    try:
        import ctypes

        ctypes.CDLL(None).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass
    if config.get("driver_pid") and os.getppid() != config["driver_pid"]:
        return 1
    # Replies get a descriptor of their own; descriptor 1 becomes stderr, so nothing that Ray or
    # a library prints can pass for a reply.
    replies = Replies(os.dup(1))
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    address = config.get("address") or None
    if address is None:
        # The Ray that a run starts for itself serves that run alone: it listens on loopback
        # only (Ray's single-machine mode), not on the machine's network address.
        os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")
    try:
        import ray
        from ray.util.scheduling_strategies import NodeLabelSchedulingStrategy, NotIn
    except ImportError as e:
        replies.send({"error": f"{sys.executable} cannot import ray ({e}): install it "
                               "(`pip install ray==2.60.0`) or set SLUICE_RAY_PYTHON to a Python "
                               "that has it"})
        return 1
    import logging

    where = f"the Ray cluster at {address}" if address else "a local Ray instance"
    unreachable = _unreachable(address)
    if unreachable:
        replies.send({"error": f"cannot connect to {where}: {unreachable}"})
        return 1
    try:
        kwargs = dict(logging_level=logging.ERROR, log_to_driver=False)
        if address is None:
            kwargs.update(include_dashboard=False, _node_ip_address="127.0.0.1")
        ray.init(address=address, **kwargs)
        cpus = int(ray.cluster_resources().get("CPU", 0))
        nodes = sum(1 for n in ray.nodes() if n.get("Alive"))
    except Exception as e:  # noqa: BLE001 -- any failure to connect is the user's to see
        replies.send({"error": f"cannot connect to {where}: {type(e).__name__}: {e}"})
        return 1
    if cpus < 1:
        replies.send({"error": f"{where} has no CPUs to run tasks on: every sluice task asks for "
                               "one whole CPU"})
        return 1
    replies.send({"cpus": cpus, "nodes": nodes, "ray": ray.__version__})

    env = dict(item.split("=", 1) for item in config["env"])
    # One whole CPU per task: zero-CPU tasks would all be placed on one node.
    remote = ray.remote(num_cpus=1, max_retries=0, retry_exceptions=False)(run_worker)
    requests = queue.Queue()
    threading.Thread(target=read_requests, args=(requests,), daemon=True).start()
    pending = {}  # ObjectRef -> (request id, task)
    closing = False
    checked, no_cpu_since = time.monotonic(), None
    while not (closing and not pending):
        try:
            message = requests.get(timeout=SAMPLE_SECONDS if pending else None)
        except queue.Empty:
            message = False
        while message is not False:
            if message is None or message.get("op") == "cancel":
                for ref in pending:
                    ray.cancel(ref, force=True)
                closing = closing or message is None
            else:
                options = {}
                if message.get("avoid_node"):
                    # Preferably another node than the one where the last attempt was lost.
                    options["scheduling_strategy"] = NodeLabelSchedulingStrategy(
                        {}, soft={"ray.io/node-id": NotIn(message["avoid_node"])})
                task = f"{message['task']} attempt {message['attempt']}"
                ref = remote.options(**options).remote(
                    config["binary"], message["plan"], env, config.get("hide", []), task,
                    config.get("timeout_s", 0), config.get("memory_bytes", 0))
                pending[ref] = (message["id"], task)
            try:
                message = requests.get_nowait()
            except queue.Empty:
                message = False
        now = time.monotonic()
        if pending and now - checked > 5:
            # Ray keeps a task waiting for a node that can run it, which with no CPU left in the
            # cluster (every worker node lost) would be forever.
            checked = now
            cpus = ray.cluster_resources().get("CPU", 0)
            no_cpu_since = None if cpus >= 1 else (no_cpu_since or now)
            if no_cpu_since is not None and now - no_cpu_since > NO_CPU_SECONDS:
                for ref, (request, task) in pending.items():
                    ray.cancel(ref, force=True)
                    replies.send({"id": request, "outcome": "failed",
                                  "message": f"task {task} cannot be placed: {where} has had no "
                                             f"CPU for {NO_CPU_SECONDS} s"})
                pending.clear()
                continue
        if pending:
            ready, _ = ray.wait(list(pending), num_returns=len(pending), timeout=SAMPLE_SECONDS)
            for ref in ready:
                request, task = pending.pop(ref)
                reply = outcome(ray, ref, task)
                reply["id"] = request
                replies.send(reply)
    ray.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
