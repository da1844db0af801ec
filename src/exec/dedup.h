// Dedup: keep the first row of each key, where "first" is the job's deterministic order: the
// source objects in sorted key order, then each object's rows in the order its transforms
// emitted them. That order travels with every row as the hidden __seq column, so the result
// does not depend on how rows were partitioned, retried or scheduled.
#pragma once

#include <arrow/result.h>
#include <arrow/table.h>

#include <memory>
#include <string>

namespace sluice::exec {

/// The rows of `table` that are first for their `key`, sorted by __seq, in chunks as they came
/// where the input was already in __seq order. Null keys are all kept. Adds the number of
/// dropped rows to *dropped.
arrow::Result<std::shared_ptr<arrow::Table>> DedupFirst(const std::shared_ptr<arrow::Table>& table,
                                                        const std::string& key, int64_t* dropped);

}  // namespace sluice::exec
