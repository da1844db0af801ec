// The parser and binder on pathological queries: deep nesting and huge queries are errors with a
// message, never a stack overflow; the deepest query accepted binds, encodes and decodes on a
// small stack, which leaves room for sanitizer builds' larger frames.
#include "sql/sql_parser.h"

#include <arrow/api.h>
#include <gtest/gtest.h>

#include <functional>
#include <string>

#include "plan/plan_codec.h"
#include "sql/binder.h"
#include "sql/run_with_stack.h"

namespace sluice::sql {
namespace {

#if defined(__SANITIZE_ADDRESS__)
constexpr size_t kStackBytes = size_t{4} << 20;
#else
constexpr size_t kStackBytes = size_t{1} << 20;
#endif

std::string Repeat(const std::string& s, int n) {
  std::string out;
  out.reserve(s.size() * static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) out += s;
  return out;
}

// "select 1+1+...+1" with `terms` terms: a left-deep tree `terms` levels deep.
std::string Sum(int terms, const std::string& term = "1") {
  return "select " + term + Repeat("+" + term, terms - 1);
}

std::string ParseError(const std::string& sql) {
  auto statement = ParseStatement(sql);
  return statement.ok() ? "parsed" : statement.status().message();
}

TEST(SqlParser, DeepExpressionsAreRefusedWithTheirPosition) {
  const std::string message =
      "expression nesting exceeds 256 levels (line 1, column 8); nested parentheses, operators, "
      "function calls and subqueries all count";
  EXPECT_EQ(ParseError(Sum(30000)), message);
  // Just under the size limit: libpg_query's JSON output needs ~65 MB of stack for this
  // (it recursed past the end of an 8 MiB stack at ~65,000 levels).
  EXPECT_EQ(ParseError(Sum(524000)), message);
  EXPECT_EQ(ParseError("select " + Repeat("abs(", 300) + "1" + Repeat(")", 300)),
            "expression nesting exceeds 256 levels (line 1, column 1208); nested parentheses, "
            "operators, function calls and subqueries all count");
}

TEST(SqlParser, HugeQueriesAreRefusedBeforeParsing) {
  EXPECT_EQ(ParseError(Sum(1000000)),
            "the query is 2000006 bytes; sluice parses at most 1048576 (1 MiB)");
}

TEST(SqlParser, DeepParenthesesAndSubqueriesAreErrors) {
  // Parentheses leave no node behind; PostgreSQL's grammar stack ends at 10,000 entries.
  EXPECT_EQ(ParseError("select " + Repeat("(", 200) + "1" + Repeat(")", 200)), "parsed");
  EXPECT_EQ(ParseError("select " + Repeat("(", 100000) + "1" + Repeat(")", 100000)),
            "memory exhausted at or near \"(\" (line 1, column 10004)");
  std::string from = "select 1";
  for (int i = 0; i < 1000; ++i) from = "select * from (" + from + ") t";
  EXPECT_EQ(ParseError(from).substr(0, 36), "expression nesting exceeds 256 level");
  std::string scalar = "1";
  for (int i = 0; i < 1000; ++i) scalar = "(select " + scalar + ")";
  EXPECT_EQ(ParseError("select " + scalar).substr(0, 36), "expression nesting exceeds 256 level");
}

TEST(SqlParser, LongLocationsParse) {
  // std::regex recursed once per character of the location.
  const std::string location(500000, 'a');
  auto statement =
      ParseStatement("create external table t stored as parquet location '" + location + "'");
  ASSERT_TRUE(statement.ok()) << statement.status().ToString();
  EXPECT_EQ(std::get<CreateExternalTable>(*statement).location, location);
  statement = ParseStatement("CREATE EXTERNAL TABLE T STORED AS JSONL LOCATION 'it''s' ;");
  ASSERT_TRUE(statement.ok()) << statement.status().ToString();
  EXPECT_EQ(std::get<CreateExternalTable>(*statement).name, "t");
  EXPECT_EQ(std::get<CreateExternalTable>(*statement).location, "it's");
  for (const char* bad : {"create external table t stored as parquet location 'x' extra",
                          "create external table t stored as parquet location 'x",
                          "create external table 1t stored as parquet location 'x'",
                          "create external table t stored parquet location 'x'"}) {
    EXPECT_EQ(ParseError(bad).substr(0, 40), "syntax error in CREATE EXTERNAL TABLE: e") << bad;
  }
  EXPECT_EQ(ParseError("create external table t stored as csv location 'x'"),
            "CREATE EXTERNAL TABLE: format 'csv' is not one of PARQUET, IPC, JSONL, PROVIDER");
}

// The deepest query of each shape that the parser accepts.
std::string Deepest(const std::function<std::string(int)>& make) {
  int lo = 1, hi = 1000;
  while (lo < hi) {
    const int mid = (lo + hi + 1) / 2;
    if (ParseStatement(make(mid)).ok()) {
      lo = mid;
    } else {
      hi = mid - 1;
    }
  }
  return make(lo);
}

TEST(SqlParser, DeepestAcceptedQueriesBindOnASmallStack) {
  auto table = std::make_shared<TableSource>();
  table->name = "t";
  table->schema = table->file_schema =
      arrow::schema({arrow::field("a", arrow::int64()), arrow::field("b", arrow::utf8())});
  table->num_rows = 10;
  table->format = "parquet";
  table->location = "t";
  table->files = {"t/part-0.parquet"};
  TableResolver resolve = [&](const std::string&) -> arrow::Result<std::shared_ptr<TableSource>> {
    return table;
  };
  const std::function<std::string(int)> shapes[] = {
      [](int n) { return Sum(n, "a") + " from t"; },
      [](int n) { return "select " + Repeat("abs(", n) + "a" + Repeat(")", n) + " from t"; },
      [](int n) { return "select " + Repeat("not ", n) + "a > 0 from t"; },
      [](int n) { return "select " + Repeat("- ", n) + "a from t"; },
      [](int n) {
        std::string s = "select a from t";
        for (int i = 0; i < n; ++i) s = "select * from (" + s + ") s" + std::to_string(i);
        return s;
      },
      [](int n) {
        std::string s = "a";
        for (int i = 0; i < n; ++i) s = "(select max(a) from t where a > " + s + ")";
        return "select " + s + " from t";
      },
      [](int n) {
        return "select a from t where " + Repeat("a in (select a from t where ", n) + "a > 0" +
               Repeat(")", n);
      },
      [](int n) {
        return "select " + Repeat("case when a > 0 then ", n) + "a" + Repeat(" end", n) + " from t";
      },
  };
  for (const auto& shape : shapes) {
    const std::string sql = Deepest(shape);
    // RunQuery gives a query 64 MiB; 1 MiB (4 under ASan) leaves room for larger frames.
    auto ran = RunWithStack(kStackBytes, [&] {
      auto statement = ParseStatement(sql);
      ASSERT_TRUE(statement.ok()) << statement.status().ToString();
      auto query = BindSelect(std::get<SelectStatement>(*statement).select, sql, resolve);
      ASSERT_TRUE(query.ok()) << query.status().ToString();
      EXPECT_FALSE(query->plan->Explain().empty());
      plan::Fragment fragment;
      fragment.root = plan::CopyPlan(*query->plan);
      auto bytes = plan::EncodeFragment(fragment);
      ASSERT_TRUE(bytes.ok()) << bytes.status().ToString();
      auto decoded = plan::DecodeFragment(bytes->data(), bytes->size());
      ASSERT_TRUE(decoded.ok()) << sql.substr(0, 200) << ": " << decoded.status().ToString();
    });
    EXPECT_TRUE(ran.ok()) << ran.ToString();
  }
}

}  // namespace
}  // namespace sluice::sql
