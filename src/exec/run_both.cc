#include "exec/run_both.h"

#include <arrow/util/future.h>

#include <atomic>
#include <memory>

namespace sluice::exec {

arrow::Status RunBoth(arrow::internal::Executor* executor,
                      const std::function<arrow::Status()>& first,
                      const std::function<arrow::Status()>& second) {
  struct Shared {
    std::atomic<bool> claimed{false};
    arrow::Future<> done = arrow::Future<>::Make();
  };
  auto shared = std::make_shared<Shared>();
  bool offered = false;
  // A one-thread executor (a serial plan's) would only run it after this call: not offered.
  if (executor != nullptr && executor->GetCapacity() > 1) {
    // The task may run after this call returns (when the caller took `second` back): it then
    // finds the work claimed and touches nothing but `shared`.
    offered = executor
                  ->Spawn([shared, second]() {
                    if (shared->claimed.exchange(true)) return;
                    shared->done.MarkFinished(second());
                  })
                  .ok();
  }
  arrow::Status status = first();
  if (!offered || !shared->claimed.exchange(true)) {
    arrow::Status other = second();
    return status.ok() ? other : status;
  }
  arrow::Status other = shared->done.status();  // waits for the pool thread that took it
  return status.ok() ? other : status;
}

}  // namespace sluice::exec
