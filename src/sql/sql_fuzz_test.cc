// Thousands of mutated SQL strings through the parser and the binder: each must give a result
// or an error, never a crash, and never an internal error.
#include <arrow/api.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "common/splitmix64.h"
#include "sql/binder.h"
#include "sql/sql_parser.h"

namespace sluice::sql {
namespace {

// Every TPC-H column in one table, so that mutated queries bind as far as they can.
std::shared_ptr<TableSource> Universe() {
  auto t = std::make_shared<TableSource>();
  t->name = "universe";
  arrow::FieldVector fields;
  for (const char* p : {"l_", "o_", "c_", "p_", "ps_", "s_", "n_", "r_"}) {
    for (const char* c : {"orderkey", "partkey", "suppkey", "custkey", "nationkey", "regionkey"}) {
      fields.push_back(arrow::field(std::string(p) + c, arrow::int64()));
    }
    for (const char* c : {"quantity", "extendedprice", "discount", "tax", "acctbal", "supplycost",
                          "totalprice", "retailprice", "availqty"}) {
      fields.push_back(arrow::field(std::string(p) + c, arrow::decimal128(15, 2)));
    }
    for (const char* c : {"returnflag", "linestatus", "shipmode", "shipinstruct", "comment", "name",
                          "type", "brand", "container", "mfgr", "phone", "address", "mktsegment",
                          "orderpriority", "orderstatus", "clerk"}) {
      fields.push_back(arrow::field(std::string(p) + c, arrow::utf8()));
    }
    for (const char* c : {"shipdate", "commitdate", "receiptdate", "orderdate"}) {
      fields.push_back(arrow::field(std::string(p) + c, arrow::date32()));
    }
    fields.push_back(arrow::field(std::string(p) + "size", arrow::int32()));
    fields.push_back(arrow::field(std::string(p) + "shippriority", arrow::int32()));
  }
  t->schema = t->file_schema = arrow::schema(fields);
  return t;
}

using Rng = SplitMix64;

std::string Mutate(std::string s, Rng& rng) {
  static const char* kInserts[] = {
      "(",          ")",       ",",          "'",           "\"",     " select ",
      " from ",     " where ", " group by ", " and ",       " or ",   " not ",
      "*",          "/",       "-",          "+",           " null ", " interval '1' day ",
      " date 'x' ", "\xff",    "0.0",        " case when ", " end ",  " sum(",
      " count(*) ", "::int",   ";"};
  const int steps = 1 + static_cast<int>(rng.Below(3));
  for (int i = 0; i < steps && !s.empty(); ++i) {
    const size_t pos = rng.Below(s.size());
    switch (rng.Below(5)) {
      case 0:
        s.erase(pos, 1 + rng.Below(8));
        break;
      case 1:
        s.insert(pos, kInserts[rng.Below(std::size(kInserts))]);
        break;
      case 2:
        std::swap(s[pos], s[rng.Below(s.size())]);
        break;
      case 3:
        s.resize(pos);
        break;
      default:
        s.insert(pos, s.substr(rng.Below(s.size()), rng.Below(20)));
    }
  }
  return s;
}

TEST(SqlFuzz, MutatedQueriesNeverCrash) {
  std::vector<std::string> seeds;
  std::vector<std::filesystem::path> files;
  for (auto& e :
       std::filesystem::directory_iterator(std::string(SLUICE_SOURCE_DIR) + "/tests/tpch")) {
    files.push_back(e.path());
  }
  std::sort(files.begin(), files.end());
  for (const auto& path : files) {
    std::ifstream in(path);
    std::stringstream text;
    text << in.rdbuf();
    std::string sql = text.str();
    // Point every FROM at the one table that has every column.
    for (const char* t :
         {"lineitem", "orders", "customer", "partsupp", "part", "supplier", "nation", "region"}) {
      for (size_t p = sql.find(t); p != std::string::npos; p = sql.find(t, p + 1)) {
        const bool word = (p == 0 || !std::isalnum(static_cast<unsigned char>(sql[p - 1]))) &&
                          !std::isalnum(static_cast<unsigned char>(sql[p + std::strlen(t)])) &&
                          sql[p + std::strlen(t)] != '_';
        if (word) sql.replace(p, std::strlen(t), "universe");
      }
    }
    seeds.push_back(sql);
  }
  ASSERT_EQ(seeds.size(), 22u);
  auto universe = Universe();
  TableResolver resolve =
      [&](const std::string& name) -> arrow::Result<std::shared_ptr<TableSource>> {
    if (name == "universe") return universe;
    return arrow::Status::Invalid("relation \"", name, "\" does not exist");
  };
  // The unmutated single-table queries bind.
  for (int q : {0, 5}) {
    auto statement = ParseStatement(seeds[static_cast<size_t>(q)]);
    ASSERT_TRUE(statement.ok()) << statement.status().ToString();
    auto query = BindSelect(std::get<SelectStatement>(*statement).select,
                            seeds[static_cast<size_t>(q)], resolve);
    EXPECT_TRUE(query.ok()) << query.status().ToString();
  }
  Rng rng(20261130);
  int parsed = 0, bound = 0, errors = 0;
  for (int i = 0; i < 4000; ++i) {
    const std::string sql = Mutate(seeds[rng.Below(seeds.size())], rng);
    auto statement = ParseStatement(sql);
    if (!statement.ok()) {
      ++errors;
      EXPECT_NE(statement.status().message().rfind("internal", 0), 0u) << sql;
      continue;
    }
    ++parsed;
    auto* select = std::get_if<SelectStatement>(&*statement);
    if (select == nullptr) continue;
    auto query = BindSelect(select->select, sql, resolve);
    if (query.ok()) {
      ++bound;
      EXPECT_FALSE(query->plan->Explain().empty());
    } else {
      EXPECT_NE(query.status().message().rfind("internal", 0), 0u) << sql << "\n"
                                                                   << query.status().ToString();
    }
  }
  // The mutations reach every stage: some fail to parse, some parse, some bind.
  EXPECT_GT(errors, 100);
  EXPECT_GT(parsed, 100);
  EXPECT_GT(bound, 10);
  std::cout << "fuzz: " << parsed << " parsed, " << bound << " bound, " << errors
            << " syntax errors\n";
}

}  // namespace
}  // namespace sluice::sql
