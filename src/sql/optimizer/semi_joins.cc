#include "sql/optimizer/semi_joins.h"

#include <algorithm>
#include <map>
#include <set>
#include <utility>

#include "sql/optimizer/cardinality.h"
#include "sql/optimizer/physical_choices.h"

namespace sluice::sql {

namespace cp = arrow::compute;

std::unique_ptr<PlanNode> ApplySemiJoin(std::unique_ptr<PlanNode> plan, SemiJoin semi,
                                        double outer_estimate) {
  auto join = std::make_unique<PlanNode>();
  join->kind = PlanNode::Kind::kJoin;
  join->input_estimate = outer_estimate;
  join->right_estimate = semi.estimate;
  join->join_type = semi.anti ? JoinType::kAnti : JoinType::kSemi;
  join->left_keys = std::move(semi.outer_keys);
  join->right_keys = std::move(semi.inner_keys);
  join->join_filter = std::move(semi.filter);
  if (semi.key_project != nullptr) {
    semi.key_project->input = std::move(plan);
    plan = std::move(semi.key_project);
  }
  join->input = std::move(plan);
  join->right = std::move(semi.plan);
  return join;
}

std::vector<SemiJoin> PlaceSemiJoins(std::vector<JoinInput>* relations,
                                     std::vector<SemiJoin> semi_joins) {
  std::map<std::string, size_t> owner;
  size_t largest = 0;
  for (size_t i = 0; i < relations->size(); ++i) {
    for (const auto& id : (*relations)[i].ids) owner[id] = i;
    if ((*relations)[i].rows > (*relations)[largest].rows) largest = i;
  }
  std::vector<SemiJoin> later;
  for (auto& sj : semi_joins) {
    std::set<size_t> reads;
    bool elsewhere = false;
    std::set<std::string> computed;
    if (sj.key_project != nullptr) {
      const PlanNode& project = *sj.key_project;
      computed.insert(project.names.begin(), project.names.end());
      for (const auto& e : project.expressions) {
        for (const auto& ref : cp::FieldsInExpression(e)) {
          auto it = owner.find(*ref.name());
          if (it == owner.end()) {
            elsewhere = true;
          } else {
            reads.insert(it->second);
          }
        }
      }
    }
    for (const auto& k : sj.outer_keys) {
      if (computed.count(k)) continue;
      auto it = owner.find(k);
      if (it == owner.end()) {
        elsewhere = true;
      } else {
        reads.insert(it->second);
      }
    }
    for (const auto& ref : cp::FieldsInExpression(sj.filter)) {
      if (auto it = owner.find(*ref.name()); it != owner.end()) reads.insert(it->second);
    }
    if (!elsewhere && reads.size() == 1 && *reads.begin() != largest) {
      JoinInput& r = (*relations)[*reads.begin()];
      r.plan = ApplySemiJoin(std::move(r.plan), std::move(sj), r.estimate);
      r.estimate = SemiJoinEstimate(r.estimate);
    } else {
      later.push_back(std::move(sj));
    }
  }
  return later;
}

std::unique_ptr<PlanNode> ApplySemiJoins(std::unique_ptr<PlanNode> plan,
                                         std::vector<SemiJoin> semi_joins, double estimate) {
  for (auto& s : semi_joins) {
    plan = ApplySemiJoin(std::move(plan), std::move(s), estimate);
    estimate = SemiJoinEstimate(estimate);
  }
  return plan;
}

}  // namespace sluice::sql
