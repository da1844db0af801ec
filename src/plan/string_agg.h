// string_agg(value, delimiter [ORDER BY value]): Arrow has no aggregate that joins strings, and
// its hash_list takes no list, so a partial step's lists could not be merged by a final one. Here
// one aggregate collects a group's non-NULL strings (or the strings of lists, a partial step's
// output) into a list, and a scalar function joins a list in the order asked.
#pragma once

#include <arrow/compute/registry.h>
#include <arrow/status.h>

namespace sluice::plan {

/// utf8 or list<utf8> -> list<utf8>: the group's non-NULL strings (a list's, in turn), in the
/// order consumed; NULL for a group with none. Also registered as "hash_" + this name.
inline constexpr const char* kStringAggFunction = "sluice_string_agg";

/// (list<utf8>, delimiter utf8, order int64) -> utf8: the list's strings joined by the
/// delimiter, sorted first by their bytes where order is 1 (ascending) or 2 (descending);
/// NULL for a NULL list or delimiter (the binder makes a NULL delimiter '', as PostgreSQL).
inline constexpr const char* kStringJoinFunction = "sluice_string_join";

/// Registers both functions.
arrow::Status RegisterStringAgg(arrow::compute::FunctionRegistry* registry);

}  // namespace sluice::plan
