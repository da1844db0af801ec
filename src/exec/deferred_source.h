// A source node whose rows are produced by work that starts only when the plan around it asks
// for its first batch: an operator that needs all of its input before any output (a window, a
// LIMIT inside a subquery, a top-N) runs its input as a plan of its own. Nothing runs while a
// plan is only built, as for EXPLAIN.
#pragma once

#include <arrow/acero/exec_plan.h>
#include <arrow/table.h>
#include <arrow/util/future.h>

#include <functional>
#include <memory>

namespace sluice::exec {

/// A source of `schema`'s rows: `start` runs at the first pull, and its table is cast to
/// `schema`'s types (a scan's dictionaries become the plan's strings) and emitted in order.
arrow::acero::Declaration DeferredSource(
    std::shared_ptr<arrow::Schema> schema,
    std::function<arrow::Future<std::shared_ptr<arrow::Table>>()> start);

}  // namespace sluice::exec
