// Test support: a fake `sluice worker` (a Python script that speaks the framing protocol of
// worker_process.h) and a gtest fixture that installs it, so that each guard of SupervisedChild,
// WorkerPool and the stage scheduler can be provoked on demand: the request's text (a fragment's
// run id, say) picks the fake's behaviour.
#pragma once

#include <gtest/gtest.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include <arrow/api.h>

#include "dist/worker_pool.h"
#include "dist/worker_process.h"
#include "plan/plan_node.h"

namespace sluice::dist::testing {

// Per request (8-byte little-endian length, then the bytes; EOF or 0 ends it) the fake logs the
// request, then: "crash-once" SIGKILLs itself the first time (a marker file remembers);
// "sleep" hangs; "progress" writes a progress line; "fork" leaves a sleeping child behind and
// replies with its pid; "shuffle" reports one shuffle file, `sh/<task>-<attempt>/part-0.arrow`.
// Every reply is a task report framed on fd 4, with the fake's pid, the request's attempt and
// "objects": 1; a forged report with "objects": 999 goes to stdout first. At start it appends
// its arguments, as one line, to `<base>.argv`.
inline constexpr char kFakeWorker[] = R"PY(#!/usr/bin/python3
import json, os, re, signal, subprocess, sys, time
base = os.environ["SLUICE_FAILPOINT"]
with open(base + ".argv", "a") as args:
    args.write(" ".join(sys.argv[1:]) + "\n")
requests = os.fdopen(0, "rb", 0)
def read(n):
    out = b""
    while len(out) < n:
        chunk = requests.read(n - len(out))
        if not chunk:
            sys.exit(0)
        out += chunk
    return out
def report(**fields):
    r = {"sluice_task_report": 1, "task": "t", "attempt": 1, "status": "ok", "error": "",
         "objects": 1, "records_in": 0, "bad_records": 0, "rows_out": 0,
         "duplicates_dropped": 0, "seconds": 0, "worker_pid": os.getpid(), "files": [],
         "shuffle_files": []}
    r.update(fields)
    return json.dumps(r).encode()
while True:
    n = int.from_bytes(read(8), "little")
    if n == 0:
        break
    body = read(n)
    with open(base + ".log", "ab") as log:
        log.write(body.replace(b"\n", b" ") + b"\n")
    if b"crash-once" in body and not os.path.exists(base + ".crashed"):
        open(base + ".crashed", "w").close()
        os.kill(os.getpid(), signal.SIGKILL)
    if b"progress" in body:
        os.write(3, b"running stage 'p' on object 'k'\n")
    if b"sleep" in body:
        time.sleep(1000)
    extra = ""
    if b"fork" in body:
        extra = str(subprocess.Popen(["sleep", "1000"]).pid)
    m = re.search(rb"attempt([\x00-\x17])", body)  # a small CBOR integer after its key
    stage = re.search(rb"stage_id([\x00-\x17])", body)
    part = re.search(rb"partition([\x00-\x17])", body)
    task = "s%dp%d" % (stage.group(1)[0], part.group(1)[0]) if stage and part else "t"
    if b"wrong-task" in body:
        task = "zz"
    attempt = m.group(1)[0] if m else 1
    shuffle = []
    if b"shuffle" in body:
        shuffle = [{"key": "sh/%s-%d/part-0.arrow" % (task, attempt), "rows": 0, "bytes": 1,
                    "blake3": "", "schema": ""}]
    sys.stdout.write(report(objects=999).decode() + "\n")
    sys.stdout.flush()
    line = report(task=task, attempt=attempt, error=extra, shuffle_files=shuffle)
    os.write(4, len(line).to_bytes(8, "little") + line)
)PY";

// Any plan that encodes (and has no word the fake reacts to): the fake reads only the run id.
inline std::shared_ptr<const plan::PlanNode> AnyPlan() {
  return plan::Chain(
      {plan::Step(plan::ScanObjects{"ipc",
                                    {"in/a.arrow"},
                                    0,
                                    "",
                                    arrow::schema({arrow::field("k", arrow::int64())}),
                                    false}),
       plan::Step(plan::WriteSink{"ipc", "out/a.arrow"})});
}

class FakeWorkerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (access("/usr/bin/python3", X_OK) != 0) GTEST_SKIP() << "needs /usr/bin/python3";
    signal(SIGPIPE, SIG_IGN);  // as sluice's main does
    char tmpl[] = "/tmp/sluice-pool-test-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    binary_ = dir_ + "/fake-worker";
    std::ofstream(binary_) << kFakeWorker;
    chmod(binary_.c_str(), 0755);
    // SLUICE_FAILPOINT passes the workers' scrubbed environment: the fake's files go there.
    setenv("SLUICE_FAILPOINT", (dir_ + "/fake").c_str(), 1);
  }
  void TearDown() override {
    unsetenv("SLUICE_FAILPOINT");
    if (!dir_.empty()) std::filesystem::remove_all(dir_);
  }

  std::vector<std::string> Log(const std::string& which = "log") const {
    std::ifstream in(dir_ + "/fake." + which);
    std::vector<std::string> lines;
    for (std::string line; std::getline(in, line);) lines.push_back(line);
    return lines;
  }

  PoolOptions Options(int workers) const {
    PoolOptions options;
    options.workers = workers;
    options.worker_binary = binary_;
    options.task_timeout_seconds = 60;
    options.task_memory_bytes = int64_t{1} << 30;
    return options;
  }

  static std::vector<plan::Fragment> Fragments(const std::vector<std::string>& run_ids) {
    std::vector<plan::Fragment> out;
    for (size_t i = 0; i < run_ids.size(); ++i) {
      plan::Fragment f;
      f.run_id = run_ids[i];
      f.partition = static_cast<int32_t>(i);
      // Any plan that encodes: the fake worker reads only the run id.
      f.root = plan::Chain(
          {plan::Step(plan::ShuffleRead{{"_sluice/shuffle/fake/part-0.arrow"},
                                        {std::string(64, '0')},
                                        arrow::schema({arrow::field("k", arrow::int64())}),
                                        {},
                                        {}})});
      out.push_back(std::move(f));
    }
    return out;
  }

  std::unique_ptr<SupervisedChild> StartChild() const {
    auto child = SupervisedChild::Start({binary_, "worker"});
    EXPECT_TRUE(child.ok()) << child.status().ToString();
    return child.ok() ? std::move(*child) : nullptr;
  }

  static ProcessResult Call(SupervisedChild* child, const std::string& request,
                            const ProcessLimits& limits = {}) {
    return child->Call(std::vector<uint8_t>(request.begin(), request.end()), limits);
  }

  std::string dir_;
  std::string binary_;
};

}  // namespace sluice::dist::testing
