#include "sql/optimizer/filter_pushdown.h"

#include <arrow/compute/api.h>

#include <algorithm>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "exec/shared_subplans.h"
#include "sql/optimizer/conjuncts.h"

namespace sluice::sql {

namespace {

namespace cp = arrow::compute;
using Exprs = std::vector<cp::Expression>;
using Slot = std::unique_ptr<PlanNode>;

// Which aggregates conditions on their keys may go below, in the plan being pushed down. An
// aggregate the plan computes more than once (a WITH query read twice) runs once
// (exec/shared_subplans.h), which a condition pushed into one copy undoes. Where every copy has
// conditions on its keys, the copies instead stay one computation that reads the OR of them
// (ShareConditions): it reads no more rows than the copies apart and scans once (TPC-DS q04's
// year_total read six times: 1.07 -> 0.74 s; q75 0.49 -> 0.30 s). Otherwise copies take
// conditions only when in every one of them they land at the bottom of the copy's joins, which
// join_order placed before the conditions moved: then each copy is small from its first join on
// (and a copy that gets none keeps its bottom as it was). (TPC-DS q39 filters each of its two
// copies on a month, which lands on the date_dim of the first join: 0.57 -> 0.26 s. q64's years
// land on the date_dim of the seventh join, and two copies cost 0.79 s against 0.40 s for the one
// they share; q24 filters one copy only, and the other would still be computed whole.) Dry runs on
// copies of the plan find where the conditions land.
struct AggregateRule {
  std::set<const PlanNode*> repeated;  // the plan's copies of repeated aggregates
  // In a dry run, for each node of its copy, the plan's node.
  std::map<const PlanNode*, const PlanNode*> original;
  bool take_all = false;              // a dry run where every aggregate takes conditions
  std::set<const PlanNode*> allowed;  // repeated aggregates that take conditions
};
thread_local AggregateRule* aggregate_rule = nullptr;

// Whether conditions may go below `aggregate`.
bool TakesConditions(const PlanNode& aggregate) {
  AggregateRule* rule = aggregate_rule;
  if (rule == nullptr || rule->take_all) return true;
  const PlanNode* node = &aggregate;
  if (!rule->original.empty()) {
    const auto it = rule->original.find(&aggregate);
    node = it == rule->original.end() ? nullptr : it->second;
  }
  const bool repeated = node != nullptr && rule->repeated.count(node) != 0;
  return !repeated || rule->allowed.count(node) != 0;
}

// The join at the bottom of the joins under `aggregate` (through projections, filters and its
// other phase), following each join's input; or, with no join there, the first other operator.
const PlanNode* BottomOfJoins(const PlanNode& aggregate) {
  const PlanNode* bottom = nullptr;
  for (const PlanNode* n = aggregate.input.get(); n != nullptr; n = n->input.get()) {
    switch (n->kind) {
      case PlanNode::Kind::kJoin:
        bottom = n;
        break;
      case PlanNode::Kind::kProject:
      case PlanNode::Kind::kFilter:
      case PlanNode::Kind::kAggregate:
        break;
      default:
        return bottom != nullptr ? bottom : n;
    }
  }
  return bottom;
}

// Pairs each node of `copy` with the node of `original` it copies.
void PairNodes(const PlanNode& copy, const PlanNode& original,
               std::map<const PlanNode*, const PlanNode*>* out) {
  (*out)[&copy] = &original;
  if (copy.input != nullptr && original.input != nullptr) {
    PairNodes(*copy.input, *original.input, out);
  }
  if (copy.right != nullptr && original.right != nullptr) {
    PairNodes(*copy.right, *original.right, out);
  }
  for (size_t i = 0; i < copy.items.size() && i < original.items.size(); ++i) {
    PairNodes(*copy.items[i], *original.items[i], out);
  }
}

bool IsTrue(const cp::Expression& e) { return e.Equals(cp::literal(true)); }

bool ReadsColumns(const cp::Expression& e) { return !cp::FieldsInExpression(e).empty(); }

// Whether every column `e` reads is one of `names`.
bool ReadsOnly(const cp::Expression& e, const std::set<std::string>& names) {
  for (const auto& ref : cp::FieldsInExpression(e)) {
    if (ref.name() == nullptr || !names.count(*ref.name())) return false;
  }
  return true;
}

std::set<std::string> OutputSet(const PlanNode& node) {
  const std::vector<std::string> names = node.OutputNames();
  return {names.begin(), names.end()};
}

// `e` over a projection's output rewritten over its input: each column the projection computes
// replaced by its expression, a column it passes through (keep_input) kept. None if `e` reads a
// column the projection does not output.
std::optional<cp::Expression> BelowProject(const cp::Expression& e,
                                           const std::map<std::string, size_t>& computed,
                                           const std::set<std::string>& passed,
                                           const PlanNode& project) {
  if (const auto* ref = e.field_ref()) {
    const std::string* name = ref->name();
    if (name == nullptr) return std::nullopt;
    if (auto it = computed.find(*name); it != computed.end()) {
      return project.expressions[it->second];
    }
    if (passed.count(*name)) return e;
    return std::nullopt;
  }
  const cp::Expression::Call* call = e.call();
  if (call == nullptr) return e;
  Exprs args;
  for (const auto& a : call->arguments) {
    auto below = BelowProject(a, computed, passed, project);
    if (!below.has_value()) return std::nullopt;
    args.push_back(std::move(*below));
  }
  return cp::call(call->function_name, std::move(args), call->options);
}

std::vector<size_t> Sink(Slot* slot, const Exprs& conjuncts);

// `e` with every reference to `from` made one to `to`.
cp::Expression Renamed(const cp::Expression& e, const std::string& from, const std::string& to) {
  if (const auto* ref = e.field_ref()) {
    return ref->name() != nullptr && *ref->name() == from ? cp::field_ref(to) : e;
  }
  const cp::Expression::Call* call = e.call();
  if (call == nullptr) return e;
  Exprs args;
  for (const auto& a : call->arguments) args.push_back(Renamed(a, from, to));
  return cp::call(call->function_name, std::move(args), call->options);
}

// The column `e` reads, when it reads one column alone (by name).
std::optional<std::string> OnlyColumn(const cp::Expression& e) {
  std::optional<std::string> column;
  for (const auto& ref : cp::FieldsInExpression(e)) {
    if (ref.name() == nullptr || (column.has_value() && *column != *ref.name())) {
      return std::nullopt;
    }
    column = *ref.name();
  }
  return column;
}

// Whether `e` compares columns with literals and combines such comparisons, and nothing else:
// it cannot fail on any row, so it may run on rows the query would not have evaluated it on
// (a condition carried across a join key meets the other side's unmatched rows).
bool CannotFail(const cp::Expression& e) {
  if (e.field_ref() != nullptr || e.literal() != nullptr) return true;
  const cp::Expression::Call* call = e.call();
  if (call == nullptr) return false;
  static const std::set<std::string> kSafe = {
      "equal",   "not_equal", "less", "less_equal", "greater", "greater_equal", "is_in",
      "is_null", "is_valid",  "and",  "and_kleene", "or",      "or_kleene",     "invert"};
  if (!kSafe.count(call->function_name)) return false;
  return std::all_of(call->arguments.begin(), call->arguments.end(), CannotFail);
}

// Adds to `out` conditions on one column each that hold on every row `node` outputs, over its
// output names: those of the Filters below it that its operators carry up unchanged.
void HoldsOn(const PlanNode& node, Exprs* out) {
  switch (node.kind) {
    case PlanNode::Kind::kFilter: {
      Exprs own;
      Conjuncts(node.predicate, &own);
      for (const auto& c : own) {
        if (OnlyColumn(c).has_value()) out->push_back(c);
      }
      HoldsOn(*node.input, out);
      return;
    }
    case PlanNode::Kind::kProject: {
      Exprs below;
      HoldsOn(*node.input, &below);
      for (const auto& c : below) {
        const std::string column = *OnlyColumn(c);
        if (node.keep_input) out->push_back(c);
        for (size_t i = 0; i < node.names.size(); ++i) {
          const auto* ref = node.expressions[i].field_ref();
          if (ref != nullptr && ref->name() != nullptr && *ref->name() == column) {
            out->push_back(Renamed(c, column, node.names[i]));
          }
        }
      }
      return;
    }
    case PlanNode::Kind::kAggregate: {
      // Keys keep their input's names.
      const std::set<std::string> keys(node.keys.begin(), node.keys.end());
      Exprs below;
      HoldsOn(*node.input, &below);
      for (const auto& c : below) {
        if (keys.count(*OnlyColumn(c))) out->push_back(c);
      }
      return;
    }
    case PlanNode::Kind::kJoin:
      HoldsOn(*node.input, out);
      if (node.join_type == JoinType::kInner) HoldsOn(*node.right, out);
      return;
    case PlanNode::Kind::kSort:
    case PlanNode::Kind::kLimit:
    case PlanNode::Kind::kWindow:
      HoldsOn(*node.input, out);
      return;
    default:
      return;
  }
}

// A join pairs only rows whose keys are equal, so a condition on one side's key column alone
// holds on the other side's key in every pair it keeps: that side may drop the rows that fail it
// first. Returns the conditions holding on side `from` of `join` (0: input, 1: right) that so
// carry over to the other side and do not hold there yet. (TPC-DS q78 reads one year of the left
// side of two left joins keyed on the year: each right side then aggregates that year alone.)
// Only where equality is exact: not for INTERSECT's NULL-equal keys, floats (-0.0 = 0.0) or keys
// of different types; and only comparisons with literals (CannotFail).
Exprs CarriedOverKeys(const PlanNode& join, int from) {
  if (join.null_equal_keys || join.left_keys.size() != join.right_keys.size()) return {};
  const PlanNode& side = from == 0 ? *join.input : *join.right;
  const PlanNode& other_side = from == 0 ? *join.right : *join.input;
  const auto& keys = from == 0 ? join.left_keys : join.right_keys;
  const auto& others = from == 0 ? join.right_keys : join.left_keys;
  Exprs holds;
  HoldsOn(side, &holds);
  Exprs carried;
  std::shared_ptr<arrow::Schema> schemas[2];
  for (const auto& c : holds) {
    const std::string column = *OnlyColumn(c);
    const auto key = std::find(keys.begin(), keys.end(), column);
    if (key == keys.end() || !CannotFail(c)) continue;
    if (schemas[0] == nullptr) {
      auto a = plan::OutputSchema(side);
      auto b = plan::OutputSchema(other_side);
      if (!a.ok() || !b.ok()) return {};
      schemas[0] = *a;
      schemas[1] = *b;
    }
    const std::string& other = others[key - keys.begin()];
    const auto field = schemas[0]->GetFieldByName(column);
    const auto other_field = schemas[1]->GetFieldByName(other);
    if (field == nullptr || other_field == nullptr ||
        !field->type()->Equals(*other_field->type()) || arrow::is_floating(field->type()->id())) {
      continue;
    }
    cp::Expression derived = Renamed(c, column, other);
    if (std::find(carried.begin(), carried.end(), derived) == carried.end()) {
      carried.push_back(std::move(derived));
    }
  }
  if (carried.empty()) return carried;
  Exprs there;
  HoldsOn(other_side, &there);
  Exprs fresh;
  for (const auto& c : carried) {
    if (std::find(there.begin(), there.end(), c) == there.end()) fresh.push_back(c);
  }
  return fresh;
}

// `conjuncts` applied right above *slot: added to the Filter there, or in a new one.
void Place(Slot* slot, const Exprs& conjuncts) {
  if (conjuncts.empty()) return;
  PlanNode& node = **slot;
  if (node.kind == PlanNode::Kind::kFilter) {
    Exprs all;
    Conjuncts(node.predicate, &all);
    for (const auto& c : conjuncts) {
      // A condition derived through join keys may already be there.
      if (std::find(all.begin(), all.end(), c) == all.end()) all.push_back(c);
    }
    node.predicate = AndOf(all);
    return;
  }
  auto filter = std::make_unique<PlanNode>();
  filter->kind = PlanNode::Kind::kFilter;
  filter->predicate = AndOf(conjuncts);
  filter->input = std::move(*slot);
  *slot = std::move(filter);
}

// Sinks `conjuncts` into *slot and applies right above it those that stay there.
void SinkAndPlace(Slot* slot, const Exprs& conjuncts) {
  Exprs stay;
  for (size_t i : Sink(slot, conjuncts)) stay.push_back(conjuncts[i]);
  Place(slot, stay);
}

// A Filter: its own conjuncts that read columns go down with the incoming ones; what cannot go
// below its input stays in it (its own) or is handed back (the incoming ones).
std::vector<size_t> SinkFilter(Slot* slot, const Exprs& incoming) {
  PlanNode& filter = **slot;
  Exprs own;
  Conjuncts(filter.predicate, &own);
  Exprs down;
  for (const auto& c : own) {
    if (!IsTrue(c) && ReadsColumns(c)) down.push_back(c);
  }
  const size_t own_down = down.size();
  // An incoming condition the Filter already has (one derived through join keys again) is
  // neither sunk twice nor handed back.
  std::vector<size_t> fresh;  // for each incoming conjunct that goes down, its index
  for (size_t i = 0; i < incoming.size(); ++i) {
    if (std::find(own.begin(), own.end(), incoming[i]) != own.end()) continue;
    fresh.push_back(i);
    down.push_back(incoming[i]);
  }
  const std::vector<size_t> left = Sink(&filter.input, down);
  const std::set<size_t> stays(left.begin(), left.end());
  Exprs here;
  size_t next = 0;  // the index in `down` of the next own conjunct that went down
  for (const auto& c : own) {
    if (IsTrue(c)) continue;
    if (!ReadsColumns(c)) {
      here.push_back(c);  // `WHERE false` stays where it was written
    } else if (stays.count(next++)) {
      here.push_back(c);
    }
  }
  std::vector<size_t> up;
  for (size_t i : left) {
    if (i >= own_down) up.push_back(fresh[i - own_down]);
  }
  if (here.empty()) {
    *slot = std::move(filter.input);
  } else if (here.size() != own.size()) {
    filter.predicate = AndOf(here);
  }  // else nothing moved: the predicate stays as it was spelled
  return up;
}

// Moves as many of `conjuncts` (over the output of *slot) as the rules allow below the operator
// at *slot, and returns the indices of the others, which belong right above it. Every Filter
// inside *slot is pushed down too.
std::vector<size_t> Sink(Slot* slot, const Exprs& conjuncts) {
  PlanNode& node = **slot;
  std::vector<size_t> stay;
  switch (node.kind) {
    case PlanNode::Kind::kScan: {
      // The Filter lands here; Parquet skips the row groups its statistics rule out.
      if (conjuncts.empty()) return stay;
      node.scan_filter = AndOf(conjuncts);
      Place(slot, conjuncts);
      return stay;
    }
    case PlanNode::Kind::kFilter:
      return SinkFilter(slot, conjuncts);
    case PlanNode::Kind::kProject: {
      std::map<std::string, size_t> computed;
      for (size_t i = 0; i < node.names.size(); ++i) computed[node.names[i]] = i;
      std::set<std::string> passed;
      if (node.keep_input) passed = OutputSet(*node.input);
      Exprs below;
      std::vector<size_t> which;
      for (size_t i = 0; i < conjuncts.size(); ++i) {
        auto rewritten = BelowProject(conjuncts[i], computed, passed, node);
        if (rewritten.has_value()) {
          below.push_back(std::move(*rewritten));
          which.push_back(i);
        } else {
          stay.push_back(i);
        }
      }
      // What would only land right under the projection stays above it, as written.
      for (size_t j : Sink(&node.input, below)) stay.push_back(which[j]);
      std::sort(stay.begin(), stay.end());
      return stay;
    }
    case PlanNode::Kind::kJoin: {
      const std::set<std::string> left = OutputSet(*node.input);
      const std::set<std::string> right = OutputSet(*node.right);
      Exprs to_left, to_right;
      for (size_t i = 0; i < conjuncts.size(); ++i) {
        if (node.join_type == JoinType::kFull) {
          stay.push_back(i);  // either side's rows may be NULL-padded
        } else if (ReadsOnly(conjuncts[i], left)) {
          to_left.push_back(conjuncts[i]);
        } else if (node.join_type == JoinType::kInner && ReadsOnly(conjuncts[i], right)) {
          to_right.push_back(conjuncts[i]);
        } else {
          stay.push_back(i);  // both sides, or a left join's null-padded side
        }
      }
      if (node.join_type == JoinType::kLeft && !IsTrue(node.join_filter)) {
        // ON conditions on the null-padded side only decide which of its rows can match.
        Exprs on, kept;
        Conjuncts(node.join_filter, &on);
        for (const auto& c : on) {
          if (ReadsColumns(c) && ReadsOnly(c, right)) {
            to_right.push_back(c);
          } else if (!IsTrue(c)) {
            kept.push_back(c);
          }
        }
        if (kept.size() != on.size())
          node.join_filter = kept.empty() ? cp::literal(true) : AndOf(kept);
      }
      SinkAndPlace(&node.input, to_left);
      // What holds on the left carries over to the right. (An anti join is NOT EXISTS, or a
      // NOT IN whose subquery's NULLs the binder counts in scalar subqueries of their own: the
      // NULL keys such a condition drops change no answer.)
      if (node.join_type != JoinType::kFull) {
        for (auto& c : CarriedOverKeys(node, 0)) to_right.push_back(std::move(c));
      }
      SinkAndPlace(&node.right, to_right);
      if (node.join_type == JoinType::kInner) {
        const Exprs back = CarriedOverKeys(node, 1);
        if (!back.empty()) SinkAndPlace(&node.input, back);
      }
      return stay;
    }
    case PlanNode::Kind::kUnion: {
      // A condition on the union's rows holds on each side's, under that side's names.
      for (Slot* side : {&node.input, &node.right}) {
        std::map<std::string, size_t> computed;
        PlanNode renames;
        renames.kind = PlanNode::Kind::kProject;
        const std::vector<std::string> names = (*side)->OutputNames();
        for (size_t i = 0; i < node.names.size() && i < names.size(); ++i) {
          computed[node.names[i]] = i;
          renames.expressions.push_back(cp::field_ref(names[i]));
        }
        Exprs below;
        for (const auto& c : conjuncts) {
          if (auto rewritten = BelowProject(c, computed, {}, renames)) {
            below.push_back(std::move(*rewritten));
          }
        }
        SinkAndPlace(side, below);
      }
      return stay;
    }
    case PlanNode::Kind::kAggregate: {
      // A condition on grouping keys alone keeps or drops whole groups, so it may drop their
      // rows before they are grouped instead (keys keep their input's names). One that reads
      // no column stays above: a keyless aggregate makes its one row from no rows too.
      const std::set<std::string> keys(node.keys.begin(), node.keys.end());
      std::vector<size_t> on_keys;
      for (size_t i = 0; i < conjuncts.size(); ++i) {
        if (ReadsColumns(conjuncts[i]) && ReadsOnly(conjuncts[i], keys)) on_keys.push_back(i);
      }
      const bool takes = TakesConditions(node);
      Exprs below;
      for (size_t i = 0; i < conjuncts.size(); ++i) {
        if (takes && std::find(on_keys.begin(), on_keys.end(), i) != on_keys.end()) {
          below.push_back(conjuncts[i]);
        } else {
          stay.push_back(i);
        }
      }
      SinkAndPlace(&node.input, below);
      return stay;
    }
    case PlanNode::Kind::kSort:
    case PlanNode::Kind::kLimit:
    default:
      SinkAndPlace(&node.input, {});
      for (size_t i = 0; i < conjuncts.size(); ++i) stay.push_back(i);
      return stay;
  }
  return stay;
}

// The nodes from `node` down to `target`, both included; empty where `target` is not under it.
bool PathTo(PlanNode* node, const PlanNode* target, std::vector<PlanNode*>* path) {
  if (node == nullptr) return false;
  path->push_back(node);
  if (node == target) return true;
  for (PlanNode* child : {node->input.get(), node->right.get()}) {
    if (PathTo(child, target, path)) return true;
  }
  for (auto& item : node->items) {
    if (PathTo(item.get(), target, path)) return true;
  }
  path->pop_back();
  return false;
}

// The conditions of the Filters right above the aggregate at the end of `path` (through
// projections that pass its keys on, renamed or not, and other Filters) that read its keys alone
// and cannot fail, over the keys' names; empty where there are none.
Exprs ConditionsAbove(const std::vector<PlanNode*>& path) {
  const PlanNode& aggregate = *path.back();
  std::map<std::string, std::string> key_of;  // a name above -> the key it passes on
  for (const auto& k : aggregate.keys) key_of[k] = k;
  Exprs out;
  for (size_t i = path.size() - 1; i-- > 0;) {
    const PlanNode& node = *path[i];
    if (node.kind == PlanNode::Kind::kProject) {
      std::map<std::string, std::string> above;
      if (node.keep_input) above = key_of;
      for (size_t e = 0; e < node.names.size(); ++e) {
        const auto* ref = node.expressions[e].field_ref();
        if (ref == nullptr || ref->name() == nullptr) continue;
        if (auto it = key_of.find(*ref->name()); it != key_of.end()) {
          above[node.names[e]] = it->second;
        }
      }
      key_of = std::move(above);
      continue;
    }
    if (node.kind != PlanNode::Kind::kFilter) break;
    Exprs conjuncts;
    Conjuncts(node.predicate, &conjuncts);
    for (const auto& c : conjuncts) {
      const auto refs = cp::FieldsInExpression(c);
      if (refs.empty() || !CannotFail(c) ||
          !std::all_of(refs.begin(), refs.end(), [&](const arrow::FieldRef& r) {
            return r.name() != nullptr && key_of.count(*r.name()) != 0;
          })) {
        continue;
      }
      cp::Expression renamed = c;
      for (const auto& r : refs) renamed = Renamed(renamed, *r.name(), key_of.at(*r.name()));
      out.push_back(std::move(renamed));
    }
  }
  return out;
}

// `e` with each of `from` made the `to` at its place, through placeholders: one copy's names may
// be another's.
cp::Expression RenamedKeys(cp::Expression e, const std::vector<std::string>& from,
                           const std::vector<std::string>& to) {
  for (size_t k = 0; k < from.size(); ++k) e = Renamed(e, from[k], "\x01" + std::to_string(k));
  for (size_t k = 0; k < from.size(); ++k) e = Renamed(e, "\x01" + std::to_string(k), to[k]);
  return e;
}

// For each group of copies of a repeated aggregate that keep their conditions above them (they
// run once, shared): where a Filter right above every copy has conditions on its keys, the copies'
// conditions joined by OR go below each copy's grouping and down from there (each copy the same,
// so they stay one computation), so that the one shared computation reads
// only the rows some copy keeps. TPC-DS q31 reads its sales by county and quarter three times,
// for three quarters of one year: the shared aggregate then groups that year's three quarters,
// not five years.
void ShareConditions(PlanNode* root, const std::vector<std::vector<const PlanNode*>>& groups,
                     const std::set<const PlanNode*>& allowed) {
  for (const auto& group : groups) {
    if (allowed.count(group[0]) != 0) continue;
    const PlanNode& first = *group[0];
    Exprs each;  // per copy, its conditions over the first copy's key names
    for (const PlanNode* copy : group) {
      std::vector<PlanNode*> path;
      Exprs conditions;
      if (PathTo(root, copy, &path) && copy->keys.size() == first.keys.size() &&
          copy->input != nullptr && copy->input->kind == PlanNode::Kind::kAggregate) {
        conditions = ConditionsAbove(path);
      }
      if (conditions.empty()) {  // this group stays as it is
        each.clear();
        break;
      }
      each.push_back(RenamedKeys(AndOf(conditions), copy->keys, first.keys));
    }
    if (each.empty()) continue;
    cp::Expression any = each.size() == 1 ? each[0] : cp::or_(each);
    for (const PlanNode* c : group) {
      auto* copy = const_cast<PlanNode*>(c);
      PlanNode& partial = *copy->input;
      auto filter = plan::MakeNode(PlanNode::Kind::kFilter, std::move(partial.input));
      filter->predicate = RenamedKeys(any, first.keys, copy->keys);
      partial.input = std::move(filter);
      Sink(&partial.input, {});
    }
  }
}

}  // namespace

void PushDownFilters(PlanNode* plan) {
  // The root may itself be a Filter that goes away: work on a slot that owns it.
  auto root = std::make_unique<PlanNode>(std::move(*plan));
  AggregateRule rule;
  const auto groups = exec::RepeatedAggregates(*root, [](const PlanNode&) { return false; });
  for (const auto& group : groups) rule.repeated.insert(group.begin(), group.end());
  if (!rule.repeated.empty()) {
    // Two dry runs: in the first every aggregate takes conditions, in the second no repeated
    // one does. A copy whose conditions land at the bottom of its joins has that join differ.
    std::map<const PlanNode*, std::string> bottoms[2];
    std::set<const PlanNode*> conditioned;  // copies with conditions on their keys above them
    for (int run = 0; run < 2; ++run) {
      std::unique_ptr<PlanNode> dry = plan::CopyPlan(*root);
      rule.original.clear();
      PairNodes(*dry, *root, &rule.original);
      rule.take_all = run == 0;
      aggregate_rule = &rule;
      Sink(&dry, {});
      for (const auto& [copy, original] : rule.original) {
        if (!rule.repeated.count(original)) continue;
        const PlanNode* bottom = BottomOfJoins(*copy);
        bottoms[run][original] = bottom != nullptr ? bottom->Explain() : std::string();
        std::vector<PlanNode*> path;
        if (run == 1 && PathTo(dry.get(), copy, &path) && !ConditionsAbove(path).empty()) {
          conditioned.insert(original);
        }
      }
    }
    rule.take_all = false;
    rule.original.clear();
    for (const auto& group : groups) {
      // Every copy filtered on its keys: one computation of the rows any of them keeps
      // (ShareConditions) reads no more than the copies would apart, and scans once.
      if (std::all_of(group.begin(), group.end(),
                      [&](const PlanNode* a) { return conditioned.count(a) != 0; })) {
        continue;
      }
      if (std::all_of(group.begin(), group.end(),
                      [&](const PlanNode* a) { return bottoms[0][a] != bottoms[1][a]; })) {
        rule.allowed.insert(group.begin(), group.end());
      }
    }
  }
  aggregate_rule = &rule;
  Sink(&root, {});
  // Now that each copy's conditions sit right above it.
  ShareConditions(root.get(), groups, rule.allowed);
  aggregate_rule = nullptr;
  *plan = std::move(*root);
}

}  // namespace sluice::sql
