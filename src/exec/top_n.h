// ORDER BY under a LIMIT (top-N): the first `rows` rows of the input in the sort order, keeping
// only about twice that many rows (and at least a batch's worth) at any time instead of the
// whole input, as a full sort followed by a slice would. The input is still read to its end:
// any row may belong to the first N.
#pragma once

#include <arrow/acero/exec_plan.h>
#include <arrow/compute/ordering.h>

#include <memory>
#include <vector>

namespace sluice::exec {

/// Above this many rows (LIMIT plus OFFSET) a top-N holds about as much as a full sort, and
/// the plan sorts instead.
constexpr int64_t kTopNMaxRows = int64_t{1} << 20;

/// `input`'s first `rows` rows ordered by `keys`, as a source of `schema` (the sort's output).
arrow::acero::Declaration TopN(arrow::acero::Declaration input,
                               std::shared_ptr<arrow::Schema> schema,
                               std::vector<arrow::compute::SortKey> keys, int64_t rows);

}  // namespace sluice::exec
