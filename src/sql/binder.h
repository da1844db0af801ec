// The binder: a libpg_query SELECT parse tree to a plan over known tables, by PostgreSQL-like
// rules. Names are resolved against the tables' schemas, types are checked by binding Arrow
// compute expressions, constants are folded, and the WHERE clause and the needed columns are
// pushed into the scan. Errors carry the SQL position; an unknown column suggests the closest
// name. Anything the engine does not support yet is a "not supported: ..." error, never a wrong
// answer.
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

arrow::Result<BoundQuery> BindSelect(const nlohmann::json& select, const std::string& sql,
                                     const TableResolver& resolve);

}  // namespace sluice::sql
