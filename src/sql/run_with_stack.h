// Running a function on a thread with a stack of a chosen size. The SQL front end recurses once
// per level of a query's nesting, in libpg_query (which has no stack-depth check of its own),
// the binder and Arrow's expressions; a dedicated stack makes the room for that a measured
// constant instead of whatever the calling thread has left.
#pragma once

#include <arrow/status.h>

#include <cstddef>
#include <functional>

namespace sluice::sql {

/// Runs `fn` on a new thread whose stack is `stack_bytes` (address space: only the pages the
/// thread touches are committed) and waits for it. An exception from `fn` is rethrown on the
/// calling thread. Failing to start the thread is an IOError.
arrow::Status RunWithStack(size_t stack_bytes, const std::function<void()>& fn);

}  // namespace sluice::sql
