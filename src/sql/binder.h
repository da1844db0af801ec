// The binder: a libpg_query SELECT parse tree to a plan over known tables, by PostgreSQL-like
// rules. Each query level has its FROM items (tables, derived tables, CTEs, joins) as relations;
// names resolve to the nearest level, and a name from an outer level makes a subquery
// correlated. Subqueries become joins: IN and EXISTS semi or anti joins, scalar subqueries
// left joins (grouped by their correlation columns). Types are checked by binding Arrow
// compute expressions (constants are folded as they are typed), and joins are ordered from
// estimates (sql/optimizer/cardinality.h). WHERE stays above each query level's joins and a
// left join's ON conditions on the join: placing them, the rest of expression simplification,
// column pruning and batch sizes are the optimizer's passes (sql/optimizer/optimizer.h), run
// after binding. Errors carry the SQL position; an unknown column suggests the closest name.
// Anything the engine does not support is a "not supported: ..." error, never a wrong answer.
#pragma once

#include <arrow/result.h>

#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "sql/plan_node.h"

namespace sluice::sql {

/// Looks a table up by name; an unknown table is an error the binder positions.
using TableResolver =
    std::function<arrow::Result<std::shared_ptr<TableSource>>(const std::string& name)>;

struct BoundQuery {
  std::unique_ptr<PlanNode> plan;
  /// Output column names, in order.
  std::vector<std::string> names;
};

/// The plan as bound, before the optimizer's passes: filters stand where SQL wrote them, and
/// every scan reads all of its table's columns with the default batch size.
arrow::Result<BoundQuery> BindLogical(const nlohmann::json& select, const std::string& sql,
                                      const TableResolver& resolve);

/// BindLogical, then the optimizer's DefaultPasses (sql/optimizer/optimizer.h): the plan a
/// query runs.
arrow::Result<BoundQuery> BindSelect(const nlohmann::json& select, const std::string& sql,
                                     const TableResolver& resolve);

}  // namespace sluice::sql
