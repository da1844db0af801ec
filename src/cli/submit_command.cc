#include <unistd.h>

#include <cstdio>
#include <iostream>
#include <memory>
#include <thread>

#include "catalog/registry.h"
#include "catalog/run_lease.h"
#include "cli/command.h"
#include "common/config.h"
#include "dist/worker_pool.h"
#include "pipeline/gc.h"
#include "pipeline/submit.h"

namespace sluice::cli {

namespace {

std::string DefaultUser() {
  const char* user = std::getenv("USER");
  return user != nullptr && *user ? user : "unknown";
}

arrow::Status RunSubmit(pipeline::SubmitOptions options) {
  ARROW_ASSIGN_OR_RAISE(Config config, Config::FromEnvironment());
  options.worker_binary = dist::SelfExecutable();
  ARROW_ASSIGN_OR_RAISE(auto result, pipeline::Submit(config, options));
  if (result.already_committed) {
    std::cout << "run " << result.run_id << " is already committed at " << result.sink_path << " ("
              << result.rows_out << " rows); nothing to do\n";
    return arrow::Status::OK();
  }
  std::cout << "run " << result.run_id << " committed: " << result.objects << " objects, "
            << result.records_in << " records in";
  if (result.bad_records > 0) std::cout << " (" << result.bad_records << " bad records skipped)";
  std::cout << ", " << result.rows_out << " rows out, " << result.duplicates_dropped
            << " duplicates dropped, in " << result.seconds << "s\n";
  std::cout << "output: " << result.sink_path << " in " << result.store_url << " ("
            << result.files.size() << " files, manifest "
            << pipeline::SinkManifestKey(result.sink_path) << ")\n";
  return arrow::Status::OK();
}

arrow::Status ListRuns() {
  ARROW_ASSIGN_OR_RAISE(Config config, Config::FromEnvironment());
  ARROW_ASSIGN_OR_RAISE(auto registry, catalog::Registry::Open(config.database_url));
  ARROW_ASSIGN_OR_RAISE(auto runs, registry->ListRuns(100));
  std::printf("%-32s %-10s %-16s %-28s %12s %12s\n", "RUN", "STATUS", "USER", "STARTED", "ROWS_IN",
              "ROWS_OUT");
  const int64_t now = catalog::NowSeconds();
  for (const auto& r : runs) {
    const std::string status = catalog::EffectiveStatus(r, now);
    std::printf("%-32s %-10s %-16s %-28s %12lld %12lld\n", r.run_id.c_str(), status.c_str(),
                r.user_id.c_str(), r.started_at.c_str(), static_cast<long long>(r.rows_in),
                static_cast<long long>(r.rows_out));
  }
  return arrow::Status::OK();
}

arrow::Status ShowRun(const std::string& id) {
  ARROW_ASSIGN_OR_RAISE(Config config, Config::FromEnvironment());
  ARROW_ASSIGN_OR_RAISE(auto registry, catalog::Registry::Open(config.database_url));
  ARROW_ASSIGN_OR_RAISE(auto run, registry->GetRun(id));
  if (!run.has_value()) return arrow::Status::KeyError("no run with id '", id, "'");
  std::cout << "run_id:             " << run->run_id << "\n"
            << "status:             " << catalog::EffectiveStatus(*run, catalog::NowSeconds())
            << "\n"
            << "attempt:            " << run->attempt_id << "\n"
            << "driver:             pid " << run->driver_pid << " on " << run->driver_host << "\n"
            << "user:               " << run->user_id << "\n"
            << "started_at:         " << run->started_at << "\n"
            << "finished_at:        " << run->finished_at << "\n"
            << "manifest_blake3:    " << run->manifest_blake3 << "\n"
            << "pins:               " << run->pins << "\n"
            << "rows_in:            " << run->rows_in << "\n"
            << "rows_out:           " << run->rows_out << "\n"
            << "duplicates_dropped: " << run->duplicates_dropped << "\n"
            << "stage_seconds:      " << run->stage_timings << "\n";
  if (!run->error.empty()) std::cout << "error:              " << run->error << "\n";
  return arrow::Status::OK();
}

arrow::Status CollectGarbageCommand() {
  ARROW_ASSIGN_OR_RAISE(Config config, Config::FromEnvironment());
  ARROW_ASSIGN_OR_RAISE(auto result, pipeline::CollectGarbage(config));
  std::cout << "removed " << result.shuffle_objects << " shuffle objects, " << result.part_objects
            << " part objects of failed or abandoned runs, " << result.temp_files
            << " temp files\n";
  return arrow::Status::OK();
}

}  // namespace

void AddSubmitCommand(CLI::App& app, Action& action) {
  auto options = std::make_shared<pipeline::SubmitOptions>();
  options->user_id = DefaultUser();
  options->workers = std::max(1u, std::thread::hardware_concurrency());
  auto* submit = app.add_subcommand(
      "submit", "Run a job manifest on worker processes (or in this process with --workers 0)");
  submit->add_option("--manifest", options->manifest_path, "Job manifest (TOML)")->required();
  submit->add_option("--run-id", options->run_id, "Run id; {run_id} in the sink path")->required();
  submit->add_option("--user-id", options->user_id, "Who runs it")->capture_default_str();
  auto* workers =
      submit
          ->add_option("--workers", options->workers,
                       "Worker processes (default: one per core). 0 runs every task in this "
                       "process, one at a time: no retry (a crashing transform ends the driver and "
                       "the run), no time or memory limits, and transforms can see what the driver "
                       "sees (environment, signing key, registry)")
          ->check(CLI::Validator(
              [](std::string& value) -> std::string {
                // The option is an int; only the sign is checked here (CLI11 checks the type).
                if (!value.empty() && value.front() == '-') {
                  return "must be 0 (every task in this process) or a number of worker processes";
                }
                return "";
              },
              "NONNEGATIVE"));
  submit
      ->add_option("--executor", options->executor,
                   "Where tasks run: local (worker processes here) or ray (Ray tasks on the "
                   "cluster at RAY_ADDRESS, one per cluster CPU unless --workers says)")
      ->check(CLI::IsMember({"local", "ray"}))
      ->capture_default_str();
  submit->callback([&action, options, workers] {
    if (options->executor == "ray") {
      if (workers->count() > 0 && options->workers == 0) {
        throw CLI::ValidationError("--workers",
                                   "0 runs every task in this process; with --executor ray, "
                                   "leave it out (one task per cluster CPU) or give a number");
      }
      if (workers->count() == 0) options->workers = 0;  // one per cluster CPU
    }
    action = [options] { return RunSubmit(*options); };
  });

  auto* runs = app.add_subcommand("runs", "Runs recorded in the registry");
  runs->require_subcommand(1);
  auto* list = runs->add_subcommand("list", "The newest runs");
  list->callback([&action] { action = ListRuns; });
  auto id = std::make_shared<std::string>();
  auto* gc =
      app.add_subcommand("gc", "Remove shuffle, part and temp files of runs that will not finish");
  gc->callback([&action] { action = CollectGarbageCommand; });

  auto* show = runs->add_subcommand("show", "One run in full");
  show->add_option("id", *id, "Run id")->required();
  show->callback([&action, id] { action = [id] { return ShowRun(*id); }; });
}

}  // namespace sluice::cli
