// How subcommands plug into the `sluice` CLI: each adds itself to the CLI11 app and, when chosen
// on the command line, leaves an action for main() to run. main() maps the action's Status to
// the exit code: 0 ok, 1 failure, 2 usage error.
#pragma once

#include <arrow/status.h>

#include <CLI/CLI.hpp>
#include <functional>

namespace sluice::cli {

using Action = std::function<arrow::Status()>;

/// The sluice checkout that transforms and function libraries build against (its headers,
/// CMake modules and .venv): SLUICE_ROOT when the binary has moved away from its sources, else
/// the source tree it was built from.
std::string SluiceRoot();

/// `sluice hash FILE...|-`: BLAKE3 digests printed the way b3sum prints them.
void AddHashCommand(CLI::App& app, Action& action);

/// `sluice store ls|get|put|rm`: inspect and edit the configured object store.
void AddStoreCommand(CLI::App& app, Action& action);

/// `sluice transform new|check|test`: author batch transforms.
void AddTransformCommand(CLI::App& app, Action& action);

/// `sluice function new|check|test|publish`: function libraries for SQL.
void AddFunctionCommand(CLI::App& app, Action& action);

/// `sluice example-data conversations`: deterministic example input in the store.
void AddExampleDataCommand(CLI::App& app, Action& action);

/// `sluice auth keygen`: the local signing identity.
void AddAuthCommand(CLI::App& app, Action& action);

/// `sluice submit` and `sluice runs list|show`.
void AddSubmitCommand(CLI::App& app, Action& action);

/// `sluice query`: SQL over external tables.
void AddQueryCommand(CLI::App& app, Action& action);

/// `sluice worker` (internal): runs one plan fragment from stdin.
void AddWorkerCommand(CLI::App& app, Action& action);

}  // namespace sluice::cli
