// Group keys that hold one value. A filter below an aggregate can leave a key column with a
// single value: TPC-DS q78 groups each channel's sales by d_year, item and customer, and its
// d_year = 2000 reaches date_dim below. Grouping by such a key splits no group, yet it costs a
// hash and a compare per row. A third key also keeps the grouping off the integer-key aggregate
// (exec/int_key_aggregate.h), which takes one integer key or two 32-bit ones.
#pragma once

#include "sql/plan_node.h"

namespace sluice::sql {

/// The constant_group_keys pass. It applies to each final aggregate over its partial step in
/// `plan` that has two or more keys. It drops each key that holds one non-NULL value in every
/// row of the aggregate's input, as long as at least one key remains. A key holds one value
/// when a filter below keeps only the rows where its column equals a literal, and from that
/// filter up the column passes unchanged. It may pass through projections that rename it,
/// filters, sorts, limits, windows, the keys of aggregates, and the sides of joins that keep
/// their rows. It may not pass through a side that an outer join pads with NULLs. Only integer,
/// decimal, date, string, binary and boolean keys are dropped; a float's -0.0 equals 0.0 but is
/// another value. A projection added above the aggregate gives the aggregate's columns in
/// their order, with each dropped key as its literal. Changes no result.
void DropConstantGroupKeys(PlanNode* plan);

}  // namespace sluice::sql
