#include "sql/sql_parser.h"

#include <arrow/util/utf8.h>
#include <pg_query.h>

#include <regex>

namespace sluice::sql {

std::string Position(const std::string& sql, int offset) {
  int line = 1, column = 1;
  for (int i = 0; i < offset && i < static_cast<int>(sql.size()); ++i) {
    const unsigned char c = static_cast<unsigned char>(sql[static_cast<size_t>(i)]);
    if (c == '\n') {
      ++line;
      column = 1;
    } else if ((c & 0xC0) != 0x80) {  // count characters, not UTF-8 continuation bytes
      ++column;
    }
  }
  return "line " + std::to_string(line) + ", column " + std::to_string(column);
}

arrow::Result<Statement> ParseStatement(const std::string& sql) {
  arrow::util::InitializeUTF8();
  if (!arrow::util::ValidateUTF8(reinterpret_cast<const uint8_t*>(sql.data()),
                                 static_cast<int64_t>(sql.size()))) {
    return arrow::Status::Invalid("the query is not valid UTF-8");
  }
  static const std::regex kExternal(
      R"(^\s*create\s+external\s+table\s+([A-Za-z_][A-Za-z0-9_]*)\s+stored\s+as\s+(\w+)\s+location\s+'([^']*)'\s*;?\s*$)",
      std::regex::icase);
  std::smatch m;
  if (std::regex_match(sql, m, kExternal)) {
    std::string format = m[2];
    for (char& c : format) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (format != "parquet" && format != "ipc" && format != "jsonl") {
      return arrow::Status::Invalid("CREATE EXTERNAL TABLE: format '", std::string(m[2]),
                                    "' is not one of PARQUET, IPC, JSONL");
    }
    std::string name = m[1];
    for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return CreateExternalTable{name, format, m[3]};
  }
  if (std::regex_search(sql, std::regex(R"(^\s*create\s+external\b)", std::regex::icase))) {
    return arrow::Status::Invalid(
        "syntax error in CREATE EXTERNAL TABLE: expected CREATE EXTERNAL TABLE name STORED AS "
        "PARQUET|IPC|JSONL LOCATION 'prefix'");
  }

  PgQueryParseResult result = pg_query_parse(sql.c_str());
  struct Free {
    PgQueryParseResult* r;
    ~Free() { pg_query_free_parse_result(*r); }
  } free_result{&result};
  if (result.error != nullptr) {
    const int offset = result.error->cursorpos > 0 ? result.error->cursorpos - 1 : 0;
    return arrow::Status::Invalid(result.error->message, " (", Position(sql, offset), ")");
  }
  nlohmann::json tree = nlohmann::json::parse(result.parse_tree, nullptr, false);
  if (tree.is_discarded() || !tree.contains("stmts") || tree.at("stmts").empty()) {
    return arrow::Status::Invalid("no statement to run");
  }
  const auto& stmts = tree.at("stmts");
  if (stmts.size() != 1) {
    return arrow::Status::Invalid("expected exactly one statement, got ", stmts.size());
  }
  const nlohmann::json& stmt = stmts.at(0).at("stmt");
  SelectStatement out;
  const nlohmann::json* node = &stmt;
  if (stmt.contains("ExplainStmt")) {
    out.explain = true;
    const auto& explain = stmt.at("ExplainStmt");
    for (const auto& opt : explain.value("options", nlohmann::json::array())) {
      if (opt.contains("DefElem") && opt.at("DefElem").value("defname", "") == "analyze") {
        out.analyze = true;
      }
    }
    node = &explain.at("query");
  }
  if (!node->contains("SelectStmt")) {
    const std::string kind = node->is_object() && !node->empty() ? node->begin().key() : "unknown";
    return arrow::Status::NotImplemented("not supported: statement ", kind,
                                         " (sluice query runs SELECT, EXPLAIN and CREATE "
                                         "EXTERNAL TABLE)");
  }
  out.select = (*node).at("SelectStmt");
  return out;
}

}  // namespace sluice::sql
