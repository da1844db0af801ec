// Test support for the optimizer's plan-text tests: SQL bound over two small tables that have
// files but are never read, t(k int64, g utf8, v float64) and u(uk int64, name utf8), to the
// logical plan as bound (BindLogical), or as the logical passes (decorrelate,
// outer_join_conditions, join_order) leave it for the others.
#pragma once

#include <arrow/api.h>
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <utility>

#include "sql/binder.h"
#include "sql/optimizer/decorrelate.h"
#include "sql/optimizer/join_order.h"
#include "sql/optimizer/outer_join_conditions.h"
#include "sql/sql_parser.h"

namespace sluice::sql {

/// A Parquet table named `name` with one file, `rows` rows and no statistics.
inline std::shared_ptr<TableSource> TestTable(const std::string& name,
                                              std::shared_ptr<arrow::Schema> schema, int64_t rows) {
  auto t = std::make_shared<TableSource>();
  t->name = name;
  t->format = "parquet";
  t->files.push_back(name + "/part-0");
  t->schema = schema;
  t->file_schema = schema;
  t->num_rows = rows;
  t->total_bytes = rows * 10;
  return t;
}

/// Resolves t (`t_rows` rows) and u (`u_rows` rows).
inline TableResolver TestTables(int64_t t_rows = 1000, int64_t u_rows = 100) {
  auto t =
      TestTable("t",
                arrow::schema({arrow::field("k", arrow::int64()), arrow::field("g", arrow::utf8()),
                               arrow::field("v", arrow::float64())}),
                t_rows);
  auto u = TestTable(
      "u", arrow::schema({arrow::field("uk", arrow::int64()), arrow::field("name", arrow::utf8())}),
      u_rows);
  return [t, u](const std::string& name) -> arrow::Result<std::shared_ptr<TableSource>> {
    if (name == "t") return t;
    if (name == "u") return u;
    return arrow::Status::Invalid("no table ", name);
  };
}

/// `sql` bound over TestTables, before the optimizer's passes; a failure fails the test.
inline BoundQuery BindLogicalForTest(const std::string& sql, int64_t t_rows = 1000,
                                     int64_t u_rows = 100) {
  auto statement = ParseStatement(sql);
  EXPECT_TRUE(statement.ok()) << statement.status().ToString();
  if (!statement.ok()) return {};
  auto bound =
      BindLogical(std::get<SelectStatement>(*statement).select, sql, TestTables(t_rows, u_rows));
  EXPECT_TRUE(bound.ok()) << bound.status().ToString();
  if (!bound.ok()) return {};
  return std::move(*bound);
}

/// `sql` bound over TestTables and through the logical passes, as the other passes see it.
inline BoundQuery BindForTest(const std::string& sql, int64_t t_rows = 1000, int64_t u_rows = 100) {
  BoundQuery q = BindLogicalForTest(sql, t_rows, u_rows);
  if (q.plan == nullptr) return q;
  auto st = Decorrelate(q.plan.get());
  if (st.ok()) st = MoveConditionsIntoOuterJoins(q.plan.get());
  if (st.ok()) st = OrderJoinSets(q.plan.get());
  EXPECT_TRUE(st.ok()) << st.ToString();
  return q;
}

}  // namespace sluice::sql
