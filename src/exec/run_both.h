// Two pieces of work at once from inside an Acero task, for a node's one-thread finish (an
// aggregate's two threads' tables). Blocking a pool thread on work queued behind it could
// deadlock a pool whose every thread does the same, so the second piece is offered to the pool
// and taken back by the caller if no thread has started it by the time the first is done.
#pragma once

#include <arrow/status.h>
#include <arrow/util/thread_pool.h>

#include <functional>

namespace sluice::exec {

/// Runs `first` here and `second` on `executor` (or here, after `first`, where no pool thread
/// has started it by then, or `executor` is null or has one thread); returns when both are
/// done, with the first error of either.
arrow::Status RunBoth(arrow::internal::Executor* executor,
                      const std::function<arrow::Status()>& first,
                      const std::function<arrow::Status()>& second);

}  // namespace sluice::exec
