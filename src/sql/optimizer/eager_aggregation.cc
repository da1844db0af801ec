#include "sql/optimizer/eager_aggregation.h"

#include <arrow/compute/api.h>

#include <algorithm>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "sql/optimizer/plan_rewrite.h"

namespace sluice::sql {

namespace {

namespace cp = arrow::compute;
using Kind = PlanNode::Kind;

// Which side of a join an expression reads: 0 its input, 1 its right side, -1 neither (a
// literal), 2 both or a column of neither.
int SideRead(const cp::Expression& e, const std::set<std::string>& input,
             const std::set<std::string>& right) {
  int side = -1;
  for (const auto& ref : cp::FieldsInExpression(e)) {
    if (ref.name() == nullptr) return 2;
    const int here = input.count(*ref.name()) ? 0 : right.count(*ref.name()) ? 1 : 2;
    if (here == 2 || (side >= 0 && side != here)) return 2;
    side = here;
  }
  return side;
}

// The function that combines a partial step's values of one group: counts add up like sums.
std::optional<std::string> Combining(const std::string& function) {
  if (function == "sum" || function == "count" || function == "count_all") return "sum";
  if (function == "min" || function == "max") return function;
  return std::nullopt;
}

// Whether `e` can be computed on any row without failing, bar overflow: grouped below the join,
// it meets the fact rows the join would drop, which the query never computed it on (a division
// by a column could divide by zero there). Arithmetic, comparisons, CASE and COALESCE, casts,
// and division by a literal other than zero.
bool SafeOnAnyRow(const cp::Expression& e) {
  if (e.field_ref() != nullptr || e.literal() != nullptr) return true;
  const cp::Expression::Call* call = e.call();
  if (call == nullptr) return false;
  static const std::set<std::string> kSafe = {"add",         "add_checked",
                                              "subtract",    "subtract_checked",
                                              "multiply",    "multiply_checked",
                                              "negate",      "negate_checked",
                                              "abs",         "case_when",
                                              "coalesce",    "if_else",
                                              "make_struct", "cast",
                                              "equal",       "not_equal",
                                              "less",        "less_equal",
                                              "greater",     "greater_equal",
                                              "is_in",       "is_null",
                                              "is_valid",    "and",
                                              "and_kleene",  "or",
                                              "or_kleene",   "invert"};
  if (call->function_name == "divide" || call->function_name == "divide_checked") {
    const arrow::Datum* divisor =
        call->arguments.size() == 2 ? call->arguments[1].literal() : nullptr;
    if (divisor == nullptr || !divisor->is_scalar() || !divisor->scalar()->is_valid) return false;
    // (Scalar::CastTo has no decimal to double; the Cast function has.)
    auto value = cp::Cast(*divisor, arrow::float64());
    if (!value.ok() || !value->is_scalar() || !value->scalar()->is_valid ||
        static_cast<const arrow::DoubleScalar&>(*value->scalar()).value == 0) {
      return false;
    }
  } else if (!kSafe.count(call->function_name)) {
    return false;
  }
  return std::all_of(call->arguments.begin(), call->arguments.end(), SafeOnAnyRow);
}

bool IsSmallKeyType(const arrow::DataType& type) {
  return arrow::is_integer(type.id()) || type.id() == arrow::Type::DATE32 ||
         type.id() == arrow::Type::DATE64;
}

std::set<std::string> NameSet(const PlanNode& node) {
  const std::vector<std::string> names = node.OutputNames();
  return {names.begin(), names.end()};
}

// Rewrites the final aggregate `final` as the pass describes, when its shape allows.
void GroupFactSideFirst(PlanNode* final) {
  if (final->kind != Kind::kAggregate || !final->final_phase || final->input == nullptr) return;
  PlanNode& partial = *final->input;
  if (partial.kind != Kind::kAggregate || partial.final_phase || partial.input == nullptr) return;
  PlanNode& project = *partial.input;
  if (project.kind != Kind::kProject || project.keep_input || project.input == nullptr) return;
  PlanNode& join = *project.input;
  if (join.kind != Kind::kJoin || join.join_type != JoinType::kInner || join.null_equal_keys ||
      !join.join_filter.Equals(cp::literal(true)) || join.left_keys.empty() ||
      join.left_keys.size() != join.right_keys.size()) {
    return;
  }
  // A final step reading a partial key (count_distinct) needs the partial rows as they are.
  for (const auto& a : final->aggregates) {
    if (std::none_of(partial.aggregates.begin(), partial.aggregates.end(),
                     [&](const AggregateCall& p) { return p.output == a.input; })) {
      return;
    }
  }
  std::map<std::string, size_t> computed;  // the projection's outputs
  for (size_t i = 0; i < project.names.size(); ++i) computed[project.names[i]] = i;
  const std::set<std::string> input_names = NameSet(*join.input);
  const std::set<std::string> right_names = NameSet(*join.right);
  auto side_of = [&](const std::string& name) {
    const auto it = computed.find(name);
    return it == computed.end()
               ? 2
               : SideRead(project.expressions[it->second], input_names, right_names);
  };
  int fact = -1;
  for (const auto& p : partial.aggregates) {
    if (!Combining(p.function)) return;
    if (p.input.empty()) continue;
    const int side = side_of(p.input);
    if (side == 2 || (side >= 0 && fact >= 0 && side != fact)) return;
    if (side >= 0) fact = side;
  }
  // With only count(*) (or literals), the fact side is the one that scans more.
  if (fact < 0) fact = ScanRows(*join.input) >= ScanRows(*join.right) ? 0 : 1;
  std::unique_ptr<PlanNode>& fact_slot = fact == 0 ? join.input : join.right;
  const PlanNode& dimension = fact == 0 ? *join.right : *join.input;
  const double dimension_rows = ScanRows(dimension);
  if (!plan::IsWholeTable(dimension) || dimension_rows <= 0 ||
      ScanRows(*fact_slot) < kEagerMinScanRatio * dimension_rows) {
    return;
  }
  const std::vector<std::string>& fact_join_keys = fact == 0 ? join.left_keys : join.right_keys;

  // The projection below the join: the group keys read from the fact side, its join keys, then
  // the aggregates' inputs.
  auto below = plan::MakeNode(Kind::kProject);
  std::vector<std::string> own_keys;  // group keys computed below, other than join keys
  auto add = [&](const std::string& name, const cp::Expression& e) {
    const auto at = std::find(below->names.begin(), below->names.end(), name);
    if (at != below->names.end()) return below->expressions[at - below->names.begin()].Equals(e);
    below->names.push_back(name);
    below->expressions.push_back(e);
    return true;
  };
  std::set<std::string> keys_below;
  for (const auto& k : partial.keys) {
    const int side = side_of(k);
    if (side == 2) return;
    if (side != fact) continue;  // a dimension column (or a literal): grouped above
    if (!SafeOnAnyRow(project.expressions[computed.at(k)]) ||
        !add(k, project.expressions[computed.at(k)])) {
      return;
    }
    keys_below.insert(k);
    if (std::find(fact_join_keys.begin(), fact_join_keys.end(), k) == fact_join_keys.end()) {
      own_keys.push_back(k);
    }
  }
  for (const auto& k : fact_join_keys) {
    if (!add(k, cp::field_ref(k))) return;
  }
  std::vector<std::string> group_below = below->names;
  for (const auto& p : partial.aggregates) {
    if (p.input.empty()) continue;
    const cp::Expression& input = project.expressions[computed.at(p.input)];
    if (!SafeOnAnyRow(input) || !add(p.input, input)) return;
  }
  if (own_keys.size() > kEagerMaxOwnKeys) return;
  {
    auto fact_schema = plan::OutputSchema(*fact_slot);
    if (!fact_schema.ok()) return;
    auto schema = NodeOutputSchema(*below, *fact_schema, nullptr);
    if (!schema.ok()) return;
    for (const auto& k : own_keys) {
      const auto field = (*schema)->GetFieldByName(k);
      if (field == nullptr || !IsSmallKeyType(*field->type())) return;
    }
  }

  // Below the join: the fact side grouped by those keys, each aggregate's partial step, then
  // its combining step.
  below->input = std::move(fact_slot);
  auto partial_below = plan::MakeNode(Kind::kAggregate, std::move(below));
  partial_below->keys = group_below;
  auto final_below = plan::MakeNode(Kind::kAggregate);
  final_below->final_phase = true;
  final_below->repeats_keys = true;  // the aggregate above adds its rows up by key anyway
  final_below->keys = group_below;
  for (const auto& p : partial.aggregates) {
    partial_below->aggregates.push_back({p.function, p.input, p.output + "@eager"});
    final_below->aggregates.push_back(
        {*Combining(p.function), p.output + "@eager", p.output + "@pre"});
  }
  final_below->input = std::move(partial_below);
  fact_slot = std::move(final_below);
  // One row per join key (times the own keys' values): at most the dimension's rows each.
  double& fact_estimate = fact == 0 ? join.input_estimate : join.right_estimate;
  if (fact_estimate >= 0 && own_keys.empty()) {
    fact_estimate = std::min(fact_estimate, dimension_rows);
  }

  // Above it: the keys grouped below pass through, the others are computed as before, and each
  // aggregate combines the groups' values.
  std::vector<cp::Expression> expressions;
  std::vector<std::string> names;
  for (const auto& k : partial.keys) {
    names.push_back(k);
    expressions.push_back(keys_below.count(k) ? cp::field_ref(k)
                                              : project.expressions[computed.at(k)]);
  }
  for (auto& p : partial.aggregates) {
    p.input = p.output + "@pre";
    p.function = *Combining(p.function);
    names.push_back(p.input);
    expressions.push_back(cp::field_ref(p.input));
  }
  project.names = std::move(names);
  project.expressions = std::move(expressions);
}

void Visit(PlanNode* node) {
  if (node == nullptr) return;
  Visit(node->input.get());
  Visit(node->right.get());
  for (auto& item : node->items) Visit(item.get());
  GroupFactSideFirst(node);
}

}  // namespace

void AggregateBeforeJoins(PlanNode* plan) { Visit(plan); }

}  // namespace sluice::sql
