// Named windows: `WINDOW w AS (PARTITION BY ...)` and the calls that name one (`OVER w`, or
// `OVER (w ORDER BY ...)`, which adds to it), as PostgreSQL resolves them. The binder reads each
// call's own window definition, so the names are substituted into the parse tree first.
#pragma once

#include <arrow/result.h>
#include <arrow/status.h>

#include <functional>
#include <nlohmann/json.hpp>
#include <string>

namespace sluice::sql {

/// The error for a parse-tree node: its message and the node's position in the query.
using NodeError = std::function<arrow::Status(const nlohmann::json& node, const std::string&)>;

/// `select` (libpg_query's SelectStmt body) without its WINDOW clause, each window call of this
/// query level (not of its subqueries) given the definition it names. A window may name an
/// earlier one of the clause. PostgreSQL's rules and errors: an unknown name, a name defined
/// twice, a PARTITION BY added to a named window, an ORDER BY added to one that has its own, and
/// a copied window with a frame clause (OVER w copies it whole).
arrow::Result<nlohmann::json> WithNamedWindows(const nlohmann::json& select,
                                               const NodeError& error);

}  // namespace sluice::sql
