#include "sql/optimizer/optimizer.h"

#include <algorithm>

#include "sql/optimizer/aggregate_reduction.h"
#include "sql/optimizer/column_pruning.h"
#include "sql/optimizer/constant_folding.h"
#include "sql/optimizer/constant_group_keys.h"
#include "sql/optimizer/decorrelate.h"
#include "sql/optimizer/eager_aggregation.h"
#include "sql/optimizer/filter_pushdown.h"
#include "sql/optimizer/join_order.h"
#include "sql/optimizer/outer_join_conditions.h"
#include "sql/optimizer/outer_join_simplification.h"
#include "sql/optimizer/physical_choices.h"
#include "sql/optimizer/scalar_aggregate_merging.h"
#include "sql/optimizer/window_subqueries.h"

namespace sluice::sql {

const std::vector<Pass>& DefaultPasses() {
  static const std::vector<Pass> passes = {
      {"window_subqueries", WindowScalarSubqueries},
      {"decorrelate", Decorrelate},
      {"outer_join_simplification", SimplifyOuterJoins},
      {"outer_join_conditions", MoveConditionsIntoOuterJoins},
      {"join_order", OrderJoinSets},
      {"constant_folding",
       [](PlanNode* plan) {
         SimplifyExpressions(plan);
         return arrow::Status::OK();
       }},
      {"filter_pushdown",
       [](PlanNode* plan) {
         PushDownFilters(plan);
         return arrow::Status::OK();
       }},
      {"column_pruning",
       [](PlanNode* plan) {
         PruneColumns(plan);
         return arrow::Status::OK();
       }},
      {"aggregate_reduction",
       [](PlanNode* plan) {
         ReduceAggregatesByJoins(plan);
         return arrow::Status::OK();
       }},
      {"build_sides",
       [](PlanNode* plan) {
         ChooseBuildSides(plan);
         return arrow::Status::OK();
       }},
      // After eager aggregation, whose groupings below joins keep such keys too.
      {"constant_group_keys",
       [](PlanNode* plan) {
         DropConstantGroupKeys(plan);
         return arrow::Status::OK();
       }},
      {"scan_batch_rows",
       [](PlanNode* plan) {
         ChooseScanBatchRows(plan);
         return arrow::Status::OK();
       }},
      // Last: its copies must stay one subplan, and the passes above treat each on its own.
      {"scalar_aggregate_merging",
       [](PlanNode* plan) {
         MergeScalarAggregates(plan);
         return arrow::Status::OK();
       }},
  };
  return passes;
}

const std::vector<Pass>& InProcessPasses() {
  static const std::vector<Pass> passes = [] {
    std::vector<Pass> all = DefaultPasses();
    const auto before =
        std::find_if(all.begin(), all.end(), [](const Pass& p) { return p.name == "build_sides"; });
    all.insert(before, {"eager_aggregation", [](PlanNode* plan) {
                          AggregateBeforeJoins(plan);
                          return arrow::Status::OK();
                        }});
    return all;
  }();
  return passes;
}

arrow::Status Optimize(PlanNode* plan, const std::vector<Pass>& passes,
                       std::vector<std::string>* ran) {
  if (plan == nullptr) return arrow::Status::Invalid("internal: optimizing no plan");
  for (const auto& pass : passes) {
    ARROW_RETURN_NOT_OK(pass.run(plan));
    if (ran != nullptr) ran->push_back(pass.name);
  }
  return arrow::Status::OK();
}

}  // namespace sluice::sql
