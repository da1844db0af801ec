// Row-group pruning by the integer statistics sluice reads from Parquet footers. Arrow's own
// pruning keeps every row group whose column has a NULL: its guarantee for such a group,
// `x IS NULL OR x BETWEEN min AND max`, does not simplify a range to false. TPC-DS catalog_sales
// is written in date order with a few NULL dates in each of its 15 row groups, so a range of
// dates pruned none of them. A comparison never keeps a NULL, so min and max decide alone.
#pragma once

#include <arrow/compute/expression.h>

#include <set>
#include <vector>

#include "plan/table_source.h"

namespace sluice::exec {

/// The row groups of file `file` of `table` that `conjuncts` (over the file's column names) rule
/// out by the integer and date ranges of TableSource::row_group_int_ranges, and in
/// `*num_row_groups` how many row groups those ranges know of (0: none). Only a comparison (=, <,
/// <=, >, >=) of a signed integer or date column with an integer or date literal rules a group
/// out; any other conjunct, or a group without statistics, rules out none.
std::set<int> IntRangeExcludes(const plan::TableSource& table, size_t file,
                               const std::vector<arrow::compute::Expression>& conjuncts,
                               int* num_row_groups);

}  // namespace sluice::exec
