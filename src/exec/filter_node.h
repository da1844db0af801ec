// A filter node for Acero plans that picks how to drop rows by how many it keeps. Acero's own
// filter copies each column bit by bit along the mask, which for a filter that keeps a few rows
// in a hundred (TPC-H Q6 and Q19, over 16-byte decimals) costs about as much per row as one
// that keeps them all; and it copies a batch whose rows all pass. A conjunction runs conjunct
// by conjunct, cheap comparisons first, so that a costly conjunct after selective ones (Q19's
// ranges of decimals) runs on only the rows they kept.
#pragma once

#include <arrow/acero/exec_plan.h>
#include <arrow/compute/exec.h>
#include <arrow/compute/expression.h>
#include <arrow/result.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "plan/expression_text.h"

namespace sluice::exec {

/// `input` with only the rows where `predicate` is true: a batch that keeps every row passes as
/// it is, one that keeps few takes them by index, and any other is filtered column by column.
/// A conjunct that may fail (a division, a cast) runs only on the rows that the conjuncts before
/// it kept, comparisons of primitive columns first, so whether it fails does not depend on how
/// rows fall into batches. An error names the conjunct that failed, with the hidden columns in
/// `texts` read as what they compute (plan/column_texts.h).
/// With `mark_kept_rows`, the output has one more column, kKeptRowsColumn (exec/kept_rows.h): a
/// batch that keeps at least three rows in four passes whole with the rows that pass marked
/// there, and any other is filtered as above with a scalar true there.
/// With `outputs`, only those input columns (by name, in that order; none for a count) are passed
/// on: a column that only the predicate reads is not copied for the rows it keeps.
arrow::Result<arrow::acero::Declaration> Filtered(
    arrow::acero::Declaration input, arrow::compute::Expression predicate,
    std::shared_ptr<const plan::ColumnTexts> texts = nullptr, bool mark_kept_rows = false,
    std::optional<std::vector<std::string>> outputs = std::nullopt);

/// The rows of `batch` where `mask` (a boolean array of its length) is true, as the filter keeps
/// them. A project above a marking filter uses it to drop the unmarked rows where an expression
/// fails on the batch whole: the rows the WHERE removed must not fail a query.
arrow::Result<arrow::compute::ExecBatch> KeepRows(arrow::compute::ExecBatch batch,
                                                  const arrow::Datum& mask,
                                                  arrow::compute::ExecContext* ctx);

}  // namespace sluice::exec
