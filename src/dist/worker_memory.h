// Which Arrow memory pool a worker process allocates from.
//
// A long-lived worker runs task after task and hands the memory each one freed back to the
// system before the next (so that a task's memory limit measures that task). With Arrow's default
// pool, mimalloc 3, that costs the next task a page fault per 2 MiB huge page of its arenas, each
// of which the kernel zeroes: 26 % of the pipeline's CPU at 1,000 objects. jemalloc neither asks
// for huge pages nor pays that, and runs the same job in about 15 % less time.
#pragma once

#include <string>
#include <vector>

namespace sluice::dist {

/// The environment variable through which Arrow picks its default memory pool.
inline constexpr char kMemoryPoolVariable[] = "ARROW_DEFAULT_MEMORY_POOL";

/// The pool a worker should use: `configured` (the variable's value) when one is set, since the
/// user chose it; otherwise jemalloc where `supported` (Arrow's backends) has it; otherwise ""
/// (Arrow's default).
std::string WorkerMemoryPool(const char* configured, const std::vector<std::string>& supported);

/// Makes WorkerMemoryPool's choice Arrow's default pool. Call first thing in a worker process:
/// Arrow reads the variable once, when the default pool is first used. Returns the backend
/// the default pool has now.
std::string UseWorkerMemoryPool();

}  // namespace sluice::dist
