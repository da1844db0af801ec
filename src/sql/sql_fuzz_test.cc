// Thousands of mutated SQL strings through the parser and the binder: each must give a result
// or an error, never a crash, and never an internal error. The 22 TPC-H plans also go through
// the plan codec unchanged.
#include <arrow/api.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "common/splitmix64.h"
#include "plan/plan_codec.h"
#include "sql/binder.h"
#include "sql/sql_parser.h"

namespace sluice::sql {
namespace {

// The TPC-H tables, each with every column its prefix could name (a superset of the real ones),
// so that mutated queries bind as far as they can.
std::map<std::string, std::shared_ptr<TableSource>> Tables() {
  std::map<std::string, std::shared_ptr<TableSource>> tables;
  const std::pair<const char*, const char*> kTables[] = {
      {"lineitem", "l_"},  {"orders", "o_"},   {"customer", "c_"}, {"part", "p_"},
      {"partsupp", "ps_"}, {"supplier", "s_"}, {"nation", "n_"},   {"region", "r_"}};
  for (const auto& [name, p] : kTables) {
    auto t = std::make_shared<TableSource>();
    t->name = name;
    arrow::FieldVector fields;
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
    for (auto& f : fields) f = f->WithNullable(false);  // as tpchgen-cli declares them
    t->schema = t->file_schema = arrow::schema(fields);
    t->num_rows = 1000;
    t->format = "parquet";
    t->location = name;
    t->files = {std::string(name) + "/part-0.parquet"};
    tables[name] = t;
  }
  return tables;
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
    seeds.push_back(sql);
  }
  ASSERT_EQ(seeds.size(), 22u);
  const auto tables = Tables();
  TableResolver resolve =
      [&](const std::string& name) -> arrow::Result<std::shared_ptr<TableSource>> {
    if (auto it = tables.find(name); it != tables.end()) return it->second;
    return arrow::Status::Invalid("relation \"", name, "\" does not exist");
  };
  // Every unmutated query binds.
  for (int q = 0; q < 22; ++q) {
    auto statement = ParseStatement(seeds[static_cast<size_t>(q)]);
    ASSERT_TRUE(statement.ok()) << statement.status().ToString();
    auto query = BindSelect(std::get<SelectStatement>(*statement).select,
                            seeds[static_cast<size_t>(q)], resolve);
    EXPECT_TRUE(query.ok()) << "Q" << q + 1 << ": " << query.status().ToString();
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
  // Every unmutated plan survives the plan codec unchanged, as a worker will receive it.
  for (int q = 0; q < 22; ++q) {
    auto statement = ParseStatement(seeds[static_cast<size_t>(q)]);
    ASSERT_TRUE(statement.ok());
    auto query = BindSelect(std::get<SelectStatement>(*statement).select,
                            seeds[static_cast<size_t>(q)], resolve);
    ASSERT_TRUE(query.ok());
    plan::Fragment fragment;
    fragment.root = plan::CopyPlan(*query->plan);
    auto bytes = plan::EncodeFragment(fragment);
    ASSERT_TRUE(bytes.ok()) << "Q" << q + 1 << ": " << bytes.status().ToString();
    auto decoded = plan::DecodeFragment(bytes->data(), bytes->size());
    ASSERT_TRUE(decoded.ok()) << "Q" << q + 1 << ": " << decoded.status().ToString();
    EXPECT_EQ(decoded->root->Explain(), query->plan->Explain()) << "Q" << q + 1;
    // The query's names stay with the driver; the plan's own column names come through.
    EXPECT_EQ(decoded->root->OutputNames(), query->plan->OutputNames()) << "Q" << q + 1;
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
