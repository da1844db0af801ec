// The plan executor's streams: a plan that fails while it is built ends in its error, never in
// Arrow's abort for stopping a plan that never started.
#include "exec/plan_executor.h"

#include <arrow/api.h>
#include <arrow/compute/api.h>
#include <gtest/gtest.h>

#include "plan/compute_init.h"
#include "plan/plan_node.h"
#include "plan/table_source.h"

namespace sluice::exec {
namespace {

namespace cp = arrow::compute;

// A scan of two rows held in memory, under the column name "k".
std::unique_ptr<plan::PlanNode> MemoryScan() {
  arrow::Int64Builder values;
  EXPECT_TRUE(values.AppendValues({1, 2}).ok());
  std::shared_ptr<arrow::Array> k;
  EXPECT_TRUE(values.Finish(&k).ok());
  auto rows = arrow::Table::Make(arrow::schema({arrow::field("k", arrow::int64())}), {k});
  auto table = std::make_shared<plan::TableSource>();
  table->name = "rows";
  table->format = plan::kMemoryFormat;
  table->schema = rows->schema();
  table->file_schema = rows->schema();
  table->num_rows = rows->num_rows();
  table->rows = rows;
  auto scan = plan::MakeNode(plan::PlanNode::Kind::kScan);
  scan->columns = {"k"};
  scan->names = {"k"};
  scan->table = std::move(table);
  return scan;
}

TEST(PlanExecutorTest, AStreamReadsItsRows) {
  ASSERT_TRUE(plan::EnsureComputeInitialized().ok());
  auto scan = MemoryScan();
  auto table = Execute(*scan, {"k"});
  ASSERT_TRUE(table.ok()) << table.status().ToString();
  EXPECT_EQ((*table)->num_rows(), 2);
}

TEST(PlanExecutorTest, APlanThatFailsToBuildIsItsErrorNotAnAbort) {
  ASSERT_TRUE(plan::EnsureComputeInitialized().ok());
  // Arrow has no cast from null to null: the projection's node fails as the plan is built.
  auto project = plan::MakeNode(plan::PlanNode::Kind::kProject, MemoryScan());
  project->expressions.push_back(cp::call("cast",
                                          {cp::literal(arrow::MakeNullScalar(arrow::null()))},
                                          cp::CastOptions::Safe(arrow::null())));
  project->names.push_back("n");
  auto stream = ExecuteStream(*project, {"n"});
  ASSERT_FALSE(stream.ok());
  EXPECT_NE(stream.status().message().find("cast"), std::string::npos)
      << stream.status().ToString();
}

}  // namespace
}  // namespace sluice::exec
