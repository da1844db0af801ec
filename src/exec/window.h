// Window functions (ROW_NUMBER, RANK, LAG, SUM OVER, ...) over a whole input: Arrow's compute
// library has sorting and takes but no window kernels, so the frame arithmetic is ours. The
// input is sorted once per distinct PARTITION BY / ORDER BY, each function computed over the
// sorted rows, and every result put back in the input's row order.
#pragma once

#include <arrow/result.h>
#include <arrow/table.h>

#include <memory>
#include <vector>

#include "plan/plan_node.h"

namespace sluice::exec {

/// `input` with one more column per call, named by its output, in the input's row order.
arrow::Result<std::shared_ptr<arrow::Table>> ComputeWindows(
    const std::shared_ptr<arrow::Table>& input, const std::vector<plan::WindowCall>& calls);

}  // namespace sluice::exec
