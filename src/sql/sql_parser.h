// SQL text to parse trees. PostgreSQL's own grammar parses through libpg_query into its JSON
// parse tree; `CREATE EXTERNAL TABLE name STORED AS fmt LOCATION 'where'` (fmt also PROVIDER
// library.table) and `CREATE FUNCTION LIBRARY`, which PostgreSQL has no grammar for, are
// recognised here first. Syntax errors carry the line and column.
#pragma once

#include <arrow/result.h>

#include <nlohmann/json.hpp>
#include <string>
#include <variant>

#include "plan/expression_codec.h"

namespace sluice::sql {

struct CreateExternalTable {
  std::string name;
  std::string format;  // "parquet" | "ipc" | "jsonl" | "provider"
  /// Format "provider": "<function library>.<table>", whose options are `location`.
  std::string provider;
  std::string location;
};

/// `CREATE FUNCTION LIBRARY name FROM PIN 'digest'`: makes a published function library's
/// functions callable by name in SQL.
struct CreateFunctionLibrary {
  std::string name;
  std::string digest;
};

/// A SELECT (possibly under EXPLAIN [ANALYZE]) as libpg_query's JSON node for the statement.
struct SelectStatement {
  nlohmann::json select;  // the "SelectStmt" object
  bool explain = false;
  bool analyze = false;
  /// The text the tree's locations point into: the query, with an alias added after each
  /// subquery in FROM that had none (PostgreSQL 16 accepts those; the parser's grammar is 15's).
  std::string sql;
};

using Statement = std::variant<CreateExternalTable, CreateFunctionLibrary, SelectStatement>;

/// The deepest parse tree ParseStatement accepts, in nodes on one path from the statement down
/// (1+1+...+1 with n terms is n + 2 deep; TPC-H's deepest query is 17). Everything after the
/// parser (binder, plan, Arrow's expressions, the plan codec) recurses per level on the caller's
/// stack; sql_parser_test binds, encodes and decodes the deepest accepted queries on 1 MiB.
inline constexpr int kMaxQueryNesting = plan::kMaxQueryNesting;

/// Parses exactly one statement, on a thread of its own with a stack large enough for
/// libpg_query, which recurses without a depth check. Queries over 1 MiB and parse trees deeper
/// than kMaxQueryNesting are Invalid errors.
arrow::Result<Statement> ParseStatement(const std::string& sql);

/// "line L, column C" of a 0-based byte offset into `sql` (columns count characters, 1-based).
std::string Position(const std::string& sql, int offset);

}  // namespace sluice::sql
