// The binder: a libpg_query SELECT parse tree to a plan over known tables, by PostgreSQL-like
// rules. Each query level has its FROM items (tables, derived tables, CTEs, joins) as relations;
// names resolve to the nearest level, and a name from an outer level makes a subquery
// correlated. The result is a logical plan: each query level's FROM items are one unordered join
// set (with a cardinality per item, plan/cardinality.h) under its WHERE Filter, and each IN,
// EXISTS or scalar subquery a dependent join whose conditions on the outer query stay in a
// Filter of their own. Types are checked by binding Arrow compute expressions (constants are
// folded as they are typed). Decorrelation, join order, placing the filters, the rest of
// expression simplification, column pruning and batch sizes are the optimizer's passes
// (sql/optimizer/optimizer.h), run after binding; what the binder refuses (a correlated
// condition the passes could not make a join of) it refuses here, with its position. Errors carry
// the SQL position; an unknown column suggests the closest name. Anything the engine does not
// support is a "not supported: ..." error, never a wrong answer.
#pragma once

#include <arrow/result.h>

#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "artifact/function_library.h"
#include "sql/plan_node.h"

namespace sluice::sql {

/// Looks a table up by name; an unknown table is an error the binder positions.
using TableResolver =
    std::function<arrow::Result<std::shared_ptr<TableSource>>(const std::string& name)>;

/// A function of a function library that SQL can call (CREATE FUNCTION LIBRARY), registered
/// in this process (plan/library_functions.h).
struct LibraryFunction {
  std::string digest_hex;
  std::string library_name;  // the SQL name of its library
  artifact::FunctionSignature signature;
};

/// Looks a function up by name among the session's function libraries; nullopt when none has
/// it. Called only for names that are not built in.
using FunctionResolver =
    std::function<arrow::Result<std::optional<LibraryFunction>>(const std::string& name)>;

struct BoundQuery {
  std::unique_ptr<PlanNode> plan;
  /// Output column names, in order.
  std::vector<std::string> names;
  /// The digests of the function libraries the plan calls, sorted: the session spec's list.
  std::vector<std::string> libraries;
};

/// The logical plan as bound, before the optimizer's passes: filters stand where SQL wrote them,
/// every scan reads all of its table's columns with the default batch size, and join sets and
/// dependent joins (plan_node.h) wait for the decorrelate and join_order passes; nothing may
/// run or encode it before those.
arrow::Result<BoundQuery> BindLogical(const nlohmann::json& select, const std::string& sql,
                                      const TableResolver& resolve,
                                      const FunctionResolver& functions = nullptr);

/// BindLogical, then the optimizer's DefaultPasses (sql/optimizer/optimizer.h): the plan a
/// query runs.
arrow::Result<BoundQuery> BindSelect(const nlohmann::json& select, const std::string& sql,
                                     const TableResolver& resolve,
                                     const FunctionResolver& functions = nullptr);

}  // namespace sluice::sql
