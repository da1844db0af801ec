// A bound relation: what the binder hands the join orderer for each FROM item, and gets back
// joined. Columns carry their SQL names for the binder and their plan ids for the plan.
#pragma once

#include <arrow/type.h>

#include <memory>
#include <string>
#include <vector>

#include "sql/optimizer/cardinality.h"
#include "sql/plan_node.h"

namespace sluice::sql {

/// A column as SQL sees it: qualifier and name, and its unique name in plans.
struct ColumnInfo {
  std::string qualifier;
  std::string name;
  std::shared_ptr<arrow::Field> field;  // named by the plan id
  const std::string& id() const { return field->name(); }
};

/// A bound FROM item or query: its plan, its columns, and estimates for join ordering.
struct Relation : Cardinality {
  std::unique_ptr<PlanNode> plan;
  std::vector<ColumnInfo> columns;
};

}  // namespace sluice::sql
