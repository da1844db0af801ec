// null_unless(value, condition): the value where the condition is true, NULL where it is false
// or NULL. A conditional aggregate's input (scalar_aggregate_merging: each of several merged
// aggregates sees only its own WHERE's rows) is then the value's own buffers under a narrower
// validity bitmap, where CASE WHEN would copy every value (Arrow's case_when goes row by row).
#pragma once

#include <arrow/compute/registry.h>
#include <arrow/status.h>

namespace sluice::plan {

/// null_unless(value any, condition boolean) -> value's type.
inline constexpr const char* kNullUnlessFunction = "sluice_null_unless";

/// Adds kNullUnlessFunction to `registry`.
arrow::Status RegisterNullUnless(arrow::compute::FunctionRegistry* registry);

}  // namespace sluice::plan
