// What a plan's hidden columns compute, as text for errors. The binder names an aggregate's
// result "__agg16" and its argument "__in16"; an error in a HAVING condition or a select-list
// column that reads them should show "sum(l_quantity)", as the query wrote it. A task on a
// worker has a shuffle read where the subtree that computed such a column was, so the driver
// writes that subtree's texts into the shuffle read (ShuffleRead::column_texts) and an error
// reads the same in process and on a worker.
#pragma once

#include "plan/expression_text.h"
#include "plan/plan_node.h"

namespace sluice::plan {

/// The texts of the hidden columns computed at or below `node`: a projection's as its
/// expression, an aggregate's result as its call over its argument ("count(*)" for count_all;
/// a final aggregate's as the partial's it combines), a shuffle read's as it carries them.
ColumnTexts HiddenColumnTexts(const PlanNode& node);

/// Whether `expression` reads a hidden column (a name starting "__").
bool ReadsHiddenColumn(const arrow::compute::Expression& expression);

}  // namespace sluice::plan
