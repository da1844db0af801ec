// The `sluice` command. Exit codes: 0 success, 1 failure, 2 usage error.
#include <signal.h>

#include <CLI/CLI.hpp>
#include <exception>
#include <iostream>

#include "cli/command.h"
#include "common/version.h"
#include "storage/object_store.h"

namespace {

constexpr int kExitOk = 0;
constexpr int kExitFailure = 1;
constexpr int kExitUsage = 2;

int Run(int argc, char** argv) {
  CLI::App app{"sluice: a dataflow and distributed query engine over Apache Arrow", "sluice"};
  app.set_version_flag("--version", [] { return sluice::VersionText(); });
  app.require_subcommand(1);

  sluice::cli::Action action;
  sluice::cli::AddHashCommand(app, action);
  sluice::cli::AddStoreCommand(app, action);
  sluice::cli::AddTransformCommand(app, action);
  sluice::cli::AddFunctionCommand(app, action);
  sluice::cli::AddExampleDataCommand(app, action);
  sluice::cli::AddAuthCommand(app, action);
  sluice::cli::AddSubmitCommand(app, action);
  sluice::cli::AddQueryCommand(app, action);
  sluice::cli::AddWorkerCommand(app, action);

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // Help and version are "errors" to CLI11 with exit code 0.
    const int code = app.exit(e);
    return code == 0 ? kExitOk : kExitUsage;
  }
  if (!action) {
    std::cerr << "sluice: internal: no action for the chosen command\n";
    return kExitFailure;
  }
  arrow::Status st = action();
  if (!st.ok()) {
    std::cerr << "sluice: error: " << st.ToString() << "\n";
    return kExitFailure;
  }
  return kExitOk;
}

}  // namespace

int main(int argc, char** argv) {
  // A worker that dies early closes its stdin pipe; the driver must see an error, not SIGPIPE.
  signal(SIGPIPE, SIG_IGN);
  int code = kExitFailure;
  try {
    code = Run(argc, argv);
  } catch (const std::exception& e) {
    std::cerr << "sluice: internal: unhandled exception: " << e.what() << "\n";
    code = kExitFailure;
  }
  (void)sluice::storage::FinalizeFilesystems();
  return code;
}
