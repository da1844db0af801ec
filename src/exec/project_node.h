// A project node for Acero plans whose errors say which output failed. Acero's own project
// passes a kernel's error on as it is, so a query failing on one row reported only "divide by
// zero", with nothing to tell which of its expressions divided.
#pragma once

#include <arrow/acero/exec_plan.h>
#include <arrow/compute/expression.h>
#include <arrow/datum.h>
#include <arrow/memory_pool.h>
#include <arrow/result.h>

#include <string>
#include <vector>

#include "plan/expression_text.h"

namespace sluice::exec {

/// How an error names output `name` computed by `expression`: `column "name" (text)`, or for an
/// internal name (an aggregate's argument, "__in3") `expression (text)`, without plan ids; the
/// hidden columns in `texts` read as what they compute (plan/column_texts.h).
std::string OutputLabel(const std::string& name, const arrow::compute::Expression& expression,
                        const plan::ColumnTexts* texts = nullptr);

/// `value` (a column of a batch of `length` rows), where it is a NULL scalar, as an array of
/// NULLs. Arrow 26's min and max over a batch given as a NULL scalar take its unset value (0,
/// '') as a row's, so min(x) over `SELECT 1 ... UNION ALL SELECT NULL ...` gave 0; no
/// projection of ours hands on a NULL scalar.
arrow::Result<arrow::Datum> NullScalarAsArray(arrow::Datum value, int64_t length,
                                              arrow::MemoryPool* pool);

/// `input` with the columns `expressions`, named `names`, as Acero's project computes them. An
/// expression that fails on a row fails the plan with its error prefixed by `labels[i]`, or,
/// where that is empty, by its OutputLabel.
/// Over a marking filter (exec/kept_rows.h), the input's kKeptRowsColumn passes on as the last
/// output column, and an expression that fails on a batch whole is evaluated again on the rows
/// the column keeps, so that only a kept row can fail the plan.
arrow::Result<arrow::acero::Declaration> Projected(
    arrow::acero::Declaration input, std::vector<arrow::compute::Expression> expressions,
    std::vector<std::string> names, std::vector<std::string> labels = {});

}  // namespace sluice::exec
