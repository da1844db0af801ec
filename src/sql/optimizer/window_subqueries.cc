#include "sql/optimizer/window_subqueries.h"

#include <arrow/compute/api.h>

#include <algorithm>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "sql/optimizer/conjuncts.h"
#include "sql/optimizer/plan_rewrite.h"

namespace sluice::sql {

namespace cp = arrow::compute;

namespace {

using Names = std::set<std::string>;

bool ReadsAny(const cp::Expression& e, const Names& names) {
  for (const auto& n : plan::ColumnNames(e)) {
    if (names.count(n)) return true;
  }
  return false;
}

bool ReadsOutside(const cp::Expression& e, const Names& names) {
  for (const auto& n : plan::ColumnNames(e)) {
    if (!names.count(n)) return true;
  }
  return false;
}

// The same condition: equal expressions, or the same two columns equated either way round.
bool SameCondition(const cp::Expression& a, const cp::Expression& b) {
  if (a.Equals(b)) return true;
  auto x = ColumnEquality(a), y = ColumnEquality(b);
  return x && y && x->first == y->second && x->second == y->first;
}

bool IsTrue(const cp::Expression& e) {
  const auto* lit = e.literal();
  return lit != nullptr && lit->is_scalar() && lit->scalar()->is_valid &&
         lit->scalar()->type->id() == arrow::Type::BOOL &&
         static_cast<const arrow::BooleanScalar&>(*lit->scalar()).value;
}

// `e` with its casts taken off.
const cp::Expression& Uncast(const cp::Expression& e) {
  const auto* call = e.call();
  if (call != nullptr && call->function_name == "cast" && call->arguments.size() == 1) {
    return Uncast(call->arguments[0]);
  }
  return e;
}

const std::string* RefName(const cp::Expression& e) {
  const auto* ref = e.field_ref();
  return ref != nullptr ? ref->name() : nullptr;
}

// Whether two scans read the same table: each reference to a table resolves on its own.
bool SameTable(const TableSource& a, const TableSource& b) {
  return &a == &b || (a.name == b.name && a.format == b.format && a.files == b.files &&
                      a.store == b.store && a.format != "provider");
}

// The subquery's aggregate outputs by what they compute: function and input column.
struct AggregateOutputs {
  std::map<std::string, std::pair<std::string, std::string>> by_output;  // -> (function, input)
};

// Whether `e` gives the same value when every row of the aggregate's input is repeated m times
// (m >= 1): its sums and counts appear only as sum(x) / count(x) (avg, as the binder writes it;
// count_all where x has no NULLs), and min and max anywhere.
bool RepeatInvariant(const cp::Expression& e, const AggregateOutputs& outputs) {
  if (const std::string* name = RefName(e)) {
    auto it = outputs.by_output.find(*name);
    if (it == outputs.by_output.end()) return false;  // not an aggregate (an outer column)
    return it->second.first == "min" || it->second.first == "max";
  }
  const auto* call = e.call();
  if (call == nullptr) return true;  // a literal
  if (call->function_name == "divide" && call->arguments.size() == 2) {
    const std::string* sum = RefName(Uncast(call->arguments[0]));
    const std::string* count = RefName(Uncast(call->arguments[1]));
    if (sum != nullptr && count != nullptr) {
      auto s = outputs.by_output.find(*sum), c = outputs.by_output.find(*count);
      if (s != outputs.by_output.end() && c != outputs.by_output.end() &&
          s->second.first == "sum" &&
          ((c->second.first == "count" && s->second.second == c->second.second) ||
           c->second.first == "count_all")) {
        return true;
      }
    }
  }
  for (const auto& a : call->arguments) {
    if (!RepeatInvariant(a, outputs)) return false;
  }
  return true;
}

// A scalar subquery of the shape the rewrite takes: Project <- final Aggregate <- partial
// Aggregate <- [Project] <- Filters <- JoinSet of scans of distinct tables (or one Scan),
// without GROUP BY.
struct Subquery {
  const PlanNode* project = nullptr;
  const PlanNode* final_aggregate = nullptr;
  const PlanNode* partial_aggregate = nullptr;
  const PlanNode* inputs = nullptr;  // the partial aggregate's input Project, if any
  std::vector<const PlanNode*> scans;
  std::vector<std::pair<std::string, std::string>> keys;  // (scan column, outer column)
  std::vector<cp::Expression> local;                      // conditions on the scans alone
  AggregateOutputs outputs;
};

bool PlainScan(const PlanNode& n) {
  return n.kind == PlanNode::Kind::kScan && n.table != nullptr && IsTrue(n.scan_filter);
}

std::optional<Subquery> MatchSubquery(const PlanNode& right) {
  Subquery s;
  if (right.kind != PlanNode::Kind::kProject || right.keep_input || right.input == nullptr) {
    return std::nullopt;
  }
  s.project = &right;
  const PlanNode* n = right.input.get();
  if (n->kind != PlanNode::Kind::kAggregate || !n->final_phase || !n->keys.empty()) {
    return std::nullopt;
  }
  s.final_aggregate = n;
  n = n->input.get();
  if (n == nullptr || n->kind != PlanNode::Kind::kAggregate || n->final_phase || !n->keys.empty()) {
    return std::nullopt;
  }
  s.partial_aggregate = n;
  n = n->input.get();
  if (n != nullptr && n->kind == PlanNode::Kind::kProject && !n->keep_input) {
    s.inputs = n;
    n = n->input.get();
  }
  std::vector<cp::Expression> conjuncts;
  while (n != nullptr && n->kind == PlanNode::Kind::kFilter) {
    Conjuncts(n->predicate, &conjuncts);
    n = n->input.get();
  }
  if (n == nullptr) return std::nullopt;
  if (n->kind == PlanNode::Kind::kJoinSet) {
    for (const auto& item : n->items) s.scans.push_back(item.get());
  } else {
    s.scans.push_back(n);
  }
  Names inner;
  for (size_t i = 0; i < s.scans.size(); ++i) {
    if (!PlainScan(*s.scans[i])) return std::nullopt;
    // Distinct tables, so that each has one place in the outer query.
    for (size_t j = 0; j < i; ++j) {
      if (SameTable(*s.scans[i]->table, *s.scans[j]->table)) return std::nullopt;
    }
    for (auto& name : s.scans[i]->OutputNames()) inner.insert(std::move(name));
  }
  for (const auto& c : conjuncts) {
    if (IsTrue(c)) continue;
    if (auto key = InnerOuterEquality(c, inner)) {
      s.keys.push_back(*key);
    } else if (!ReadsOutside(c, inner)) {
      s.local.push_back(c);
    } else {
      return std::nullopt;  // another condition on the outer query
    }
  }
  if (s.keys.empty()) return std::nullopt;
  // What each final output computes, through its partial step.
  std::map<std::string, std::pair<std::string, std::string>> partial;
  for (const auto& a : s.partial_aggregate->aggregates) {
    partial[a.output] = {a.function, a.input};
  }
  for (const auto& a : s.final_aggregate->aggregates) {
    auto it = partial.find(a.input);
    if (it == partial.end()) return std::nullopt;
    const std::string& f = it->second.first;
    // sum and the counts merge as sums, min and max as themselves.
    const bool counts = f == "sum" || f == "count" || f == "count_all";
    const bool merges = counts ? a.function == "sum" : a.function == f;
    if (!merges || (!counts && f != "min" && f != "max")) return std::nullopt;
    s.outputs.by_output[a.output] = it->second;
  }
  for (const auto& e : s.project->expressions) {
    if (!RepeatInvariant(e, s.outputs)) return std::nullopt;
  }
  return s;
}

// The rewrite at `slot`, a Filter over a left DependentJoin; false where it does not apply.
arrow::Result<bool> RewriteAt(std::unique_ptr<PlanNode>* slot) {
  PlanNode& filter = **slot;
  if (filter.kind != PlanNode::Kind::kFilter || filter.input == nullptr) return false;
  PlanNode& dependent = *filter.input;
  if (dependent.kind != PlanNode::Kind::kDependentJoin || dependent.join_type != JoinType::kLeft ||
      !dependent.correlated || !dependent.left_keys.empty() || !dependent.right_keys.empty() ||
      dependent.input == nullptr || dependent.input->kind != PlanNode::Kind::kJoinSet ||
      dependent.right == nullptr) {
    return false;
  }
  auto sub = MatchSubquery(*dependent.right);
  if (!sub) return false;
  PlanNode& join_set = *dependent.input;
  const std::vector<std::string> sub_names = sub->project->OutputNames();
  const Names subquery_outputs(sub_names.begin(), sub_names.end());
  std::vector<cp::Expression> conjuncts, below, above;
  Conjuncts(filter.predicate, &conjuncts);
  // A condition on a query further out stays where decorrelating that query looks for it.
  const std::vector<std::string> set_names = join_set.OutputNames();
  Names known(set_names.begin(), set_names.end());
  known.insert(sub_names.begin(), sub_names.end());
  for (const auto& c : conjuncts) {
    for (const auto& n : plan::ColumnNames(c)) {
      if (!known.count(n)) return false;
    }
  }
  for (auto& c : conjuncts) (ReadsAny(c, subquery_outputs) ? above : below).push_back(c);

  // Each subquery table's one place among the outer query's items, and the subquery's columns
  // as that item's, by file column.
  std::map<std::string, std::string> to_outer;
  std::set<size_t> shared;
  Names shared_columns;
  for (const PlanNode* scan : sub->scans) {
    size_t found = join_set.items.size();
    for (size_t t = 0; t < join_set.items.size(); ++t) {
      const PlanNode& item = *join_set.items[t];
      if (!PlainScan(item) || !SameTable(*item.table, *scan->table)) continue;
      if (found != join_set.items.size()) return false;  // read twice: which one is meant?
      found = t;
    }
    if (found == join_set.items.size()) return false;
    const PlanNode& item = *join_set.items[found];
    for (size_t i = 0; i < scan->columns.size(); ++i) {
      auto at = std::find(item.columns.begin(), item.columns.end(), scan->columns[i]);
      if (at == item.columns.end()) return false;
      to_outer[scan->names[i]] = item.names[at - item.columns.begin()];
    }
    shared.insert(found);
    for (auto& n : item.OutputNames()) shared_columns.insert(std::move(n));
  }
  // The subquery's own conditions, each also one of the outer query's.
  std::vector<bool> matched(below.size(), false);
  for (const auto& c : sub->local) {
    const cp::Expression outer = RenameColumns(c, to_outer);
    bool found = false;
    for (size_t b = 0; b < below.size() && !found; ++b) {
      if (!matched[b] && SameCondition(outer, below[b])) matched[b] = found = true;
    }
    if (!found) return false;
  }
  // The partition keys: each T'.c, equated below with the outer column T.c is equated with.
  std::vector<std::string> partition;
  for (const auto& [inner, outer] : sub->keys) {
    const std::string& key = to_outer.at(inner);
    bool equated = false;
    for (size_t b = 0; b < below.size(); ++b) {
      auto eq = ColumnEquality(below[b]);
      if (!matched[b] && eq && key != outer &&
          ((eq->first == key && eq->second == outer) ||
           (eq->second == key && eq->first == outer))) {
        equated = true;
      }
    }
    if (!equated) return false;
    if (std::find(partition.begin(), partition.end(), key) == partition.end()) {
      partition.push_back(key);
    }
  }
  // The outer query's other conditions read the shared tables only through the keys, and some
  // other item is joined on a key and filtered on its own.
  const Names keys(partition.begin(), partition.end());
  for (size_t b = 0; b < below.size(); ++b) {
    if (matched[b]) continue;
    for (const auto& n : plan::ColumnNames(below[b])) {
      if (shared_columns.count(n) && !keys.count(n)) return false;
    }
  }
  bool filtered_dimension = false;
  for (size_t d = 0; d < join_set.items.size() && !filtered_dimension; ++d) {
    if (shared.count(d)) continue;
    const std::vector<std::string> dn = join_set.items[d]->OutputNames();
    const Names dim(dn.begin(), dn.end());
    bool joined = false, own = false;
    for (const auto& c : below) {
      const Names refs = plan::ColumnNames(c);
      if (auto eq = ColumnEquality(c)) {
        if ((keys.count(eq->first) && dim.count(eq->second)) ||
            (keys.count(eq->second) && dim.count(eq->first))) {
          joined = true;
        }
      }
      if (!refs.empty() && std::all_of(refs.begin(), refs.end(),
                                       [&](const std::string& r) { return dim.count(r) > 0; })) {
        own = true;
      }
    }
    filtered_dimension = joined && own;
  }
  if (!filtered_dimension) return false;

  // Filter(above) <- Project(the subquery's columns) <- Window <- Project(aggregate inputs)
  // <- Filter(below) <- JoinSet.
  std::unique_ptr<PlanNode> node = std::move(dependent.input);
  if (!below.empty()) {
    auto f = plan::MakeNode(PlanNode::Kind::kFilter, std::move(node));
    f->predicate = below.size() == 1 ? below[0] : cp::and_(below);
    node = std::move(f);
  }
  std::map<std::string, std::string> window_inputs;  // aggregate input -> outer column
  if (sub->inputs != nullptr) {
    auto p = plan::MakeNode(PlanNode::Kind::kProject, std::move(node));
    p->keep_input = true;
    for (size_t i = 0; i < sub->inputs->names.size(); ++i) {
      p->expressions.push_back(RenameColumns(sub->inputs->expressions[i], to_outer));
      p->names.push_back(sub->inputs->names[i]);
      window_inputs[sub->inputs->names[i]] = sub->inputs->names[i];
    }
    node = std::move(p);
  } else {
    window_inputs = to_outer;
  }
  auto window = plan::MakeNode(PlanNode::Kind::kWindow, std::move(node));
  for (const auto& a : sub->final_aggregate->aggregates) {
    const auto& [function, input] = sub->outputs.by_output.at(a.output);
    plan::WindowCall w;
    w.function = function;
    if (function != "count_all") {
      auto in = window_inputs.find(input);
      if (in == window_inputs.end()) {
        return arrow::Status::Invalid("internal: window_subqueries: aggregate input ", input,
                                      " has no column");
      }
      w.arguments.push_back(in->second);
    }
    w.partition_keys = partition;
    w.output = a.output;
    window->windows.push_back(std::move(w));
  }
  // The subquery's columns after the outer query's (and the window's, which nothing reads
  // but them): the outer ones pass through as far as column pruning keeps them.
  auto columns = plan::MakeNode(PlanNode::Kind::kProject, std::move(window));
  columns->keep_input = true;
  columns->expressions = sub->project->expressions;
  columns->names = sub->project->names;
  auto top = plan::MakeNode(PlanNode::Kind::kFilter, std::move(columns));
  top->predicate =
      above.empty() ? cp::literal(true) : (above.size() == 1 ? above[0] : cp::and_(above));
  *slot = std::move(top);
  return true;
}

}  // namespace

arrow::Status WindowScalarSubqueries(PlanNode* plan) {
  return RewriteBottomUp(plan, [](std::unique_ptr<PlanNode>* slot) -> arrow::Status {
    return RewriteAt(slot).status();
  });
}

}  // namespace sluice::sql
