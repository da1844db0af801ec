#include "sql/sql_parser.h"

#include <arrow/util/utf8.h>
#include <pg_query.h>

#include <cctype>
#include <cstring>
#include <optional>
#include <string_view>
#include <vector>

#include "sql/run_with_stack.h"

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

namespace {

// libpg_query writes its JSON parse tree recursively, without PostgreSQL's stack-depth check:
// measured on libpg_query 15-4.0, each level of a left-deep chain such as 1+1+...+1 takes up to
// 129 bytes of stack (65 for ::int casts), and each level costs at least two bytes of query text.
// A query of kMaxQueryBytes therefore needs at most 68 MiB, and the parser thread gets 256 MiB
// (only the pages it touches are ever committed). Right-nested forms (parentheses, NOT,
// subqueries) stop earlier, at the grammar's own stack limit of 10,000 entries.
constexpr size_t kMaxQueryBytes = size_t{1} << 20;
constexpr size_t kParserStackBytes = size_t{256} << 20;

// Refuses a parse tree deeper than kMaxQueryNesting nodes by scanning libpg_query's JSON text,
// before nlohmann builds it and the binder walks it. A node is an object keyed by its type, as in
// {"A_Expr":{...}}; field names are lower case.
arrow::Status CheckNesting(std::string_view tree, const std::string& sql) {
  std::vector<bool> is_node;  // per open object or array
  int depth = 0;
  for (size_t i = 0; i < tree.size(); ++i) {
    const char c = tree[i];
    if (c == '"') {
      for (++i; i < tree.size() && tree[i] != '"'; ++i) {
        if (tree[i] == '\\') ++i;
      }
    } else if (c == '{' || c == '[') {
      const bool node = c == '{' && i + 2 < tree.size() && tree[i + 1] == '"' &&
                        std::isupper(static_cast<unsigned char>(tree[i + 2]));
      is_node.push_back(node);
      if (node && ++depth > kMaxQueryNesting) {
        // The nearest location after this node's start is in the node or its first child.
        std::string where;
        const size_t at = tree.find("\"location\":", i);
        if (at != std::string_view::npos) {
          where = " (" + Position(sql, std::atoi(tree.data() + at + 11)) + ")";
        }
        return arrow::Status::Invalid("expression nesting exceeds ", kMaxQueryNesting, " levels",
                                      where,
                                      "; nested parentheses, operators, function calls and "
                                      "subqueries all count");
      }
    } else if (c == '}' || c == ']') {
      if (is_node.empty()) break;  // malformed: the JSON parser reports it
      if (is_node.back()) --depth;
      is_node.pop_back();
    }
  }
  return arrow::Status::OK();
}

// A cursor over `CREATE EXTERNAL TABLE name STORED AS fmt LOCATION 'where'`, matched by hand:
// std::regex recurses once per character matched, so a long location would exhaust the stack.
class Words {
 public:
  explicit Words(const std::string& sql) : sql_(sql) {}
  void SkipSpace() {
    while (pos_ < sql_.size() && std::isspace(static_cast<unsigned char>(sql_[pos_]))) ++pos_;
  }
  // Consumes `word` (lower case) if it comes next, case-insensitively, as a whole word.
  bool Keyword(std::string_view word) {
    SkipSpace();
    if (sql_.size() - pos_ < word.size()) return false;
    for (size_t i = 0; i < word.size(); ++i) {
      if (std::tolower(static_cast<unsigned char>(sql_[pos_ + i])) != word[i]) return false;
    }
    const size_t end = pos_ + word.size();
    if (end < sql_.size() && IsWordChar(sql_[end])) return false;
    pos_ = end;
    return true;
  }
  // An identifier or bare word, lower-cased; empty if none.
  std::string Word() {
    SkipSpace();
    const size_t start = pos_;
    while (pos_ < sql_.size() && IsWordChar(sql_[pos_])) ++pos_;
    std::string out = sql_.substr(start, pos_ - start);
    for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return out;
  }
  // A single-quoted string, with '' standing for one quote.
  bool Quoted(std::string* out) {
    SkipSpace();
    if (pos_ >= sql_.size() || sql_[pos_] != '\'') return false;
    for (size_t i = pos_ + 1; i < sql_.size(); ++i) {
      if (sql_[i] != '\'') {
        out->push_back(sql_[i]);
      } else if (i + 1 < sql_.size() && sql_[i + 1] == '\'') {
        out->push_back('\'');
        ++i;
      } else {
        pos_ = i + 1;
        return true;
      }
    }
    return false;
  }
  // Consumes `c` if it comes next.
  bool Char(char c) {
    SkipSpace();
    if (pos_ >= sql_.size() || sql_[pos_] != c) return false;
    ++pos_;
    return true;
  }
  // Only an optional ';' and spaces remain.
  bool AtEnd() {
    SkipSpace();
    if (pos_ < sql_.size() && sql_[pos_] == ';') ++pos_;
    SkipSpace();
    return pos_ == sql_.size();
  }

 private:
  static bool IsWordChar(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }
  const std::string& sql_;
  size_t pos_ = 0;
};

// Recognises CREATE EXTERNAL TABLE; nullopt for any other statement.
std::optional<arrow::Result<Statement>> ParseCreateExternal(const std::string& sql) {
  Words words(sql);
  if (!words.Keyword("create") || !words.Keyword("external")) return std::nullopt;
  const auto syntax_error = [] {
    return arrow::Status::Invalid(
        "syntax error in CREATE EXTERNAL TABLE: expected CREATE EXTERNAL TABLE name STORED AS "
        "PARQUET|IPC|JSONL LOCATION 'path or URL', or STORED AS PROVIDER library.table "
        "LOCATION 'options'");
  };
  if (!words.Keyword("table")) return syntax_error();
  CreateExternalTable out;
  out.name = words.Word();
  if (out.name.empty() || std::isdigit(static_cast<unsigned char>(out.name[0]))) {
    return syntax_error();
  }
  if (!words.Keyword("stored") || !words.Keyword("as")) return syntax_error();
  out.format = words.Word();
  if (out.format.empty()) return syntax_error();
  if (out.format == "provider") {
    // A function library's table: STORED AS PROVIDER library.table.
    const std::string library = words.Word();
    if (library.empty() || !words.Char('.')) return syntax_error();
    const std::string table = words.Word();
    if (table.empty()) return syntax_error();
    out.provider = library + "." + table;
  } else if (out.format != "parquet" && out.format != "ipc" && out.format != "jsonl") {
    return arrow::Status::Invalid("CREATE EXTERNAL TABLE: format '", out.format,
                                  "' is not one of PARQUET, IPC, JSONL, PROVIDER");
  }
  if (!words.Keyword("location") || !words.Quoted(&out.location) || !words.AtEnd()) {
    return syntax_error();
  }
  return out;
}

// Recognises CREATE FUNCTION LIBRARY name FROM PIN 'digest'; nullopt for any other statement
// (CREATE FUNCTION alone is PostgreSQL's, which sluice does not run).
std::optional<arrow::Result<Statement>> ParseCreateFunctionLibrary(const std::string& sql) {
  Words words(sql);
  if (!words.Keyword("create") || !words.Keyword("function") || !words.Keyword("library")) {
    return std::nullopt;
  }
  const auto syntax_error = [] {
    return arrow::Status::Invalid(
        "syntax error in CREATE FUNCTION LIBRARY: expected CREATE FUNCTION LIBRARY name FROM PIN "
        "'<BLAKE3 digest>'");
  };
  CreateFunctionLibrary out;
  out.name = words.Word();
  if (out.name.empty() || std::isdigit(static_cast<unsigned char>(out.name[0]))) {
    return syntax_error();
  }
  if (!words.Keyword("from") || !words.Keyword("pin") || !words.Quoted(&out.digest) ||
      !words.AtEnd()) {
    return syntax_error();
  }
  return out;
}

// The offset just past the parenthesis that closes the one at `open`, skipping string
// literals, quoted names and comments; npos where it is not closed.
size_t ClosingParen(const std::string& sql, size_t open) {
  int depth = 0;
  for (size_t i = open; i < sql.size(); ++i) {
    const char c = sql[i];
    if (c == '\'' || c == '"') {
      for (++i; i < sql.size(); ++i) {
        if (sql[i] != c) continue;
        if (i + 1 < sql.size() && sql[i + 1] == c) {
          ++i;  // a doubled quote inside the literal
          continue;
        }
        break;
      }
    } else if (c == '-' && i + 1 < sql.size() && sql[i + 1] == '-') {
      while (i < sql.size() && sql[i] != '\n') ++i;
    } else if (c == '/' && i + 1 < sql.size() && sql[i + 1] == '*') {
      const size_t end = sql.find("*/", i + 2);
      if (end == std::string::npos) return std::string::npos;
      i = end + 1;
    } else if (c == '(') {
      ++depth;
    } else if (c == ')' && --depth == 0) {
      return i + 1;
    }
  }
  return std::string::npos;
}

// Everything ParseStatement does after the size check, on the parser's thread.
arrow::Result<Statement> ParseOnThisThread(const std::string& sql) {
  arrow::util::InitializeUTF8();
  if (!arrow::util::ValidateUTF8(reinterpret_cast<const uint8_t*>(sql.data()),
                                 static_cast<int64_t>(sql.size()))) {
    return arrow::Status::Invalid("the query is not valid UTF-8");
  }
  if (auto create = ParseCreateExternal(sql)) return std::move(*create);
  if (auto create = ParseCreateFunctionLibrary(sql)) return std::move(*create);

  // PostgreSQL 16 lets a subquery in FROM go without an alias; 15's grammar, which libpg_query
  // has, refuses it at the subquery's parenthesis. Each is given a name and parsed again.
  std::string text = sql;
  PgQueryParseResult result = pg_query_parse(text.c_str());
  for (int unnamed = 1; result.error != nullptr && unnamed <= kMaxQueryNesting; ++unnamed) {
    if (std::string(result.error->message) != "subquery in FROM must have an alias" ||
        result.error->cursorpos < 1) {
      break;
    }
    const size_t open = static_cast<size_t>(result.error->cursorpos - 1);
    const size_t close =
        open < text.size() && text[open] == '(' ? ClosingParen(text, open) : std::string::npos;
    if (close == std::string::npos) break;
    text.insert(close, " AS unnamed_subquery" + (unnamed == 1 ? "" : std::to_string(unnamed)));
    pg_query_free_parse_result(result);
    result = pg_query_parse(text.c_str());
  }
  struct Free {
    PgQueryParseResult* r;
    ~Free() { pg_query_free_parse_result(*r); }
  } free_result{&result};
  if (result.error != nullptr) {
    const int offset = result.error->cursorpos > 0 ? result.error->cursorpos - 1 : 0;
    return arrow::Status::Invalid(result.error->message, " (", Position(text, offset), ")");
  }
  ARROW_RETURN_NOT_OK(CheckNesting(result.parse_tree, text));
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
  out.sql = text;
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
                                         " (sluice query runs SELECT, EXPLAIN, CREATE "
                                         "EXTERNAL TABLE and CREATE FUNCTION LIBRARY)");
  }
  out.select = (*node).at("SelectStmt");
  return out;
}

}  // namespace

arrow::Result<Statement> ParseStatement(const std::string& sql) {
  if (sql.size() > kMaxQueryBytes) {
    return arrow::Status::Invalid("the query is ", sql.size(), " bytes; sluice parses at most ",
                                  kMaxQueryBytes, " (1 MiB)");
  }
  arrow::Result<Statement> out = arrow::Status::UnknownError("internal: the parser did not run");
  ARROW_RETURN_NOT_OK(RunWithStack(kParserStackBytes, [&] { out = ParseOnThisThread(sql); }));
  return out;
}

}  // namespace sluice::sql
