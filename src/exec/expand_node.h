// One input, several projections of each of its batches: the rows of a UNION ALL whose sides
// project one subplan (the copies that DISTINCT aggregates of several expressions make, one per
// expression). Acero would run that subplan once per side; this node reads it once.
#pragma once

#include <arrow/acero/exec_plan.h>
#include <arrow/compute/expression.h>
#include <arrow/result.h>

#include <string>
#include <vector>

namespace sluice::exec {

/// `input`, each batch of it projected by each of `projections` in turn (one output batch per
/// projection), the columns named `names`. Every projection has one expression per name, and
/// they must agree on the columns' types. An expression that fails names its column.
arrow::Result<arrow::acero::Declaration> Expanded(
    arrow::acero::Declaration input,
    std::vector<std::vector<arrow::compute::Expression>> projections,
    std::vector<std::string> names);

}  // namespace sluice::exec
