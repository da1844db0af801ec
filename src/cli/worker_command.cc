// `sluice worker` (internal): reads one encoded plan fragment from stdin, runs it, and prints
// its report as the last line of stdout.
#include <unistd.h>

#include <cstdio>
#include <string>
#include <vector>

#include "cli/command.h"
#include "exec/compute_init.h"
#include "exec/fragment_runner.h"
#include "plan/plan_codec.h"

namespace sluice::cli {

namespace {

arrow::Status RunWorker() {
  std::vector<uint8_t> bytes;
  uint8_t buf[65536];
  while (true) {
    const ssize_t n = read(STDIN_FILENO, buf, sizeof(buf));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return arrow::Status::IOError("worker: cannot read the plan from stdin");
    if (n == 0) break;
    bytes.insert(bytes.end(), buf, buf + n);
  }
  exec::TaskReport report;
  auto fragment = plan::DecodeFragment(bytes.data(), bytes.size());
  if (!fragment.ok()) {
    report.task = "unknown";
    report.status = "error";
    report.error = "worker: " + fragment.status().ToString();
  } else {
    arrow::Status init = exec::EnsureComputeInitialized();
    if (!init.ok()) {
      report.task = fragment->task_name();
      report.status = "error";
      report.error = init.ToString();
    } else {
      report = exec::RunFragment(*fragment);
    }
  }
  // Whatever a transform printed comes first; the report is the last line.
  std::fflush(stdout);
  const std::string line = "\n" + report.ToJsonLine() + "\n";
  std::fwrite(line.data(), 1, line.size(), stdout);
  std::fflush(stdout);
  return arrow::Status::OK();
}

}  // namespace

void AddWorkerCommand(CLI::App& app, Action& action) {
  auto* worker = app.add_subcommand("worker", "Internal: run one plan fragment read from stdin");
  worker->group("");  // hidden from --help
  worker->callback([&action] { action = RunWorker; });
}

}  // namespace sluice::cli
