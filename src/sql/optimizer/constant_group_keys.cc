#include "sql/optimizer/constant_group_keys.h"

#include <arrow/api.h>
#include <arrow/compute/api.h>

#include <algorithm>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "sql/optimizer/column_pruning.h"
#include "sql/optimizer/conjuncts.h"
#include "sql/optimizer/plan_rewrite.h"

namespace sluice::sql {

namespace {

namespace cp = arrow::compute;
using Kind = PlanNode::Kind;

// Whether a key of `type` whose values all equal one literal is one group. A float is not:
// -0.0 = 0.0 holds, yet the two are different values.
bool SingleValued(const arrow::DataType& type) {
  const auto id = type.id();
  return arrow::is_integer(id) || arrow::is_decimal(id) || arrow::is_base_binary_like(id) ||
         id == arrow::Type::DATE32 || id == arrow::Type::DATE64 || id == arrow::Type::BOOL;
}

// The non-NULL literal that `conjunct` says column `name` equals (`name = literal`, either way
// round); nothing otherwise.
std::optional<arrow::Datum> EqualLiteral(const cp::Expression& conjunct, const std::string& name) {
  const cp::Expression::Call* call = conjunct.call();
  if (call == nullptr || call->function_name != "equal" || call->arguments.size() != 2) {
    return std::nullopt;
  }
  for (int i = 0; i < 2; ++i) {
    const arrow::FieldRef* ref = call->arguments[i].field_ref();
    const arrow::Datum* value = call->arguments[1 - i].literal();
    if (ref != nullptr && ref->name() != nullptr && *ref->name() == name && value != nullptr &&
        value->is_scalar() && value->scalar()->is_valid) {
      return *value;
    }
  }
  return std::nullopt;
}

// The literal that column `name` of `node`'s output equals in every row: a filter below keeps
// only such rows, and from there up the column passes unchanged and is never padded with NULLs.
std::optional<arrow::Datum> ConstantValue(const PlanNode* node, std::string name) {
  while (node != nullptr) {
    switch (node->kind) {
      case Kind::kFilter:
        for (const auto& conjunct : ConjunctsOf(node->predicate)) {
          if (auto value = EqualLiteral(conjunct, name)) return value;
        }
        node = node->input.get();
        continue;
      case Kind::kProject: {
        auto source = SourceColumn(*node, name);
        if (!source) return std::nullopt;
        name = *source;
        node = node->input.get();
        continue;
      }
      case Kind::kSort:
      case Kind::kLimit:
        node = node->input.get();
        continue;
      case Kind::kWindow:
        if (node->input == nullptr || !HasColumn(*node->input, name)) return std::nullopt;
        node = node->input.get();
        continue;
      case Kind::kAggregate:
        if (std::find(node->keys.begin(), node->keys.end(), name) == node->keys.end()) {
          return std::nullopt;
        }
        node = node->input.get();
        continue;
      case Kind::kJoin:
        if (node->input == nullptr || node->right == nullptr) return std::nullopt;
        if (HasColumn(*node->input, name)) {
          // The kept side of a left, semi or anti join; either side of an inner one.
          if (node->join_type == JoinType::kFull) return std::nullopt;
          node = node->input.get();
        } else if (node->join_type == JoinType::kInner) {
          node = node->right.get();
        } else {
          return std::nullopt;  // the side a left join pads with NULLs
        }
        continue;
      default:
        return std::nullopt;
    }
  }
  return std::nullopt;
}

// Drops the constant keys of the final aggregate in `*slot` (over its partial step), putting a
// projection that gives them back as literals in the slot. Whether it dropped any.
bool DropKeys(std::unique_ptr<PlanNode>* slot) {
  PlanNode* final_agg = slot->get();
  if (final_agg->kind != Kind::kAggregate || !final_agg->final_phase ||
      final_agg->keys.size() < 2) {
    return false;
  }
  PlanNode* partial = final_agg->input.get();
  if (partial == nullptr || partial->kind != Kind::kAggregate || partial->final_phase ||
      partial->keys != final_agg->keys || partial->input == nullptr) {
    return false;
  }
  auto schema = OutputSchema(*final_agg);
  if (!schema.ok()) return false;
  std::vector<std::string> keys;
  std::map<std::string, arrow::Datum> constants;
  for (size_t k = 0; k < final_agg->keys.size(); ++k) {
    const std::string& key = final_agg->keys[k];
    // One key stays: with none, an empty input would give one row rather than none.
    const bool last_left = keys.empty() && k + 1 == final_agg->keys.size();
    const auto field = (*schema)->GetFieldByName(key);
    if (!last_left && field != nullptr && SingleValued(*field->type())) {
      if (auto value = ConstantValue(partial->input.get(), key)) {
        // The literal in the key's own type; one that does not fit it (2^40 for an int32
        // column) would have kept no row, and the key stays.
        auto cast = cp::Cast(*value, field->type());
        if (cast.ok() && cast->is_scalar() && cast->scalar()->is_valid) {
          constants[key] = std::move(*cast);
          continue;
        }
      }
    }
    keys.push_back(key);
  }
  if (constants.empty()) return false;
  const std::vector<std::string> names = final_agg->OutputNames();
  final_agg->keys = keys;
  partial->keys = std::move(keys);
  auto project = plan::MakeNode(Kind::kProject, std::move(*slot));
  for (const auto& name : names) {
    auto constant = constants.find(name);
    project->expressions.push_back(constant == constants.end() ? cp::field_ref(name)
                                                               : cp::literal(constant->second));
    project->names.push_back(name);
  }
  *slot = std::move(project);
  return true;
}

}  // namespace

void DropConstantGroupKeys(PlanNode* plan) {
  bool dropped = false;
  (void)RewriteBottomUp(plan, [&](std::unique_ptr<PlanNode>* slot) {
    dropped |= DropKeys(slot);
    return arrow::Status::OK();
  });
  // The projections under the aggregates still compute the keys that went.
  if (dropped) PruneColumns(plan);
}

}  // namespace sluice::sql
