// Which Arrow memory pool a worker process allocates from.
//
// A long-lived worker runs task after task and hands the memory each one freed back to the
// system before the next (so that a task's memory limit measures that task). With Arrow's default
// pool here, mimalloc 3, a pipeline's next task then re-faults its arenas' 2 MiB huge pages, each
// zeroed by the kernel: 26 % of the pipeline's CPU at 1,000 objects. jemalloc asks for no huge
// pages and runs that job in about 15 % less time, so a pipeline's pool asks its workers for it.
// A query's stages (hash joins, aggregates) ran about 10 % slower on jemalloc, so theirs keep
// Arrow's default.
#pragma once

#include <string>
#include <vector>

namespace sluice::dist {

/// The environment variable through which Arrow picks its default memory pool.
inline constexpr char kMemoryPoolVariable[] = "ARROW_DEFAULT_MEMORY_POOL";

/// The pool a worker should use: `configured` (the variable's value) when one is set, since the
/// user chose it; otherwise `preferred` where `supported` (Arrow's backends) has it; otherwise ""
/// (Arrow's default).
std::string WorkerMemoryPool(const char* configured, const std::string& preferred,
                             const std::vector<std::string>& supported);

/// Makes WorkerMemoryPool's choice Arrow's default pool. Call first thing in a worker process:
/// Arrow reads the variable once, when the default pool is first used. Returns the backend
/// the default pool has now.
std::string UseWorkerMemoryPool(const std::string& preferred);

}  // namespace sluice::dist
