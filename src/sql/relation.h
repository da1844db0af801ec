// A bound relation: what the binder makes of each FROM item and subquery. Columns carry their
// SQL names for the binder and their plan ids for the plan; the cardinality is deferred
// (plan/cardinality.h), since a derived table's depends on how the optimizer orders its joins.
#pragma once

#include <arrow/type.h>

#include <memory>
#include <string>
#include <vector>

#include "plan/cardinality.h"
#include "sql/plan_node.h"

namespace sluice::sql {

/// A column as SQL sees it: qualifier and name, and its unique name in plans.
struct ColumnInfo {
  std::string qualifier;
  std::string name;
  std::shared_ptr<arrow::Field> field;  // named by the plan id
  // A USING (or NATURAL) join's column of the side whose value the join's column is not: only
  // its qualified name reads it, and SELECT * leaves it out.
  bool merged_away = false;
  // The order the query's FROM items added it in: `t.*` lists t's columns so, whatever order
  // a USING join gave SELECT * (its columns first).
  size_t ordinal = 0;
  const std::string& id() const { return field->name(); }
};

/// A bound FROM item or query: its logical plan, its columns, and its estimate.
struct Relation {
  std::unique_ptr<PlanNode> plan;
  std::vector<ColumnInfo> columns;
  plan::DeferredCardinality cardinality;
};

}  // namespace sluice::sql
