#include "sql/optimizer/scalar_aggregate_merging.h"

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
#include "plan/null_unless.h"
#include "sql/optimizer/plan_rewrite.h"

namespace sluice::sql {

namespace {

namespace cp = arrow::compute;
using Kind = PlanNode::Kind;

// One scalar aggregate that can merge: its final step's slot and the steps below it.
struct Candidate {
  std::unique_ptr<PlanNode>* slot = nullptr;
  const PlanNode* final_agg = nullptr;
  const PlanNode* partial = nullptr;
  const PlanNode* project = nullptr;  // optional
  const PlanNode* filter = nullptr;   // optional
  const PlanNode* scan = nullptr;
};

// A node with `from`'s fields and no inputs.
std::unique_ptr<PlanNode> FieldsOf(const PlanNode& from) {
  auto node = std::make_unique<PlanNode>();
  static_cast<plan::PlanNodeFields&>(*node) = from;
  return node;
}

// The partial functions whose result over a NULL input is the result without that row.
bool SkipsNulls(const std::string& function) {
  return function == "count_all" || function == "count" || function == "sum" || function == "min" ||
         function == "max";
}

bool Contains(const std::vector<std::string>& v, const std::string& s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

std::optional<Candidate> AsCandidate(std::unique_ptr<PlanNode>* slot) {
  const PlanNode* f = slot->get();
  if (f->kind != Kind::kAggregate || !f->final_phase || !f->keys.empty() || f->repeats_keys ||
      f->input == nullptr || f->aggregates.empty()) {
    return std::nullopt;
  }
  const PlanNode* p = f->input.get();
  if (p->kind != Kind::kAggregate || p->final_phase || !p->keys.empty() || p->repeats_keys ||
      p->input == nullptr || p->aggregates.empty()) {
    return std::nullopt;
  }
  Candidate c;
  c.slot = slot;
  c.final_agg = f;
  c.partial = p;
  const PlanNode* n = p->input.get();
  if (n->kind == Kind::kProject && !n->keep_input && n->input != nullptr) {
    c.project = n;
    n = n->input.get();
  }
  if (n->kind == Kind::kFilter && n->input != nullptr) {
    c.filter = n;
    n = n->input.get();
  }
  if (n->kind != Kind::kScan || n->table == nullptr || n->split || n->input != nullptr ||
      n->columns.size() != n->names.size() ||
      std::set<std::string>(n->columns.begin(), n->columns.end()).size() != n->columns.size()) {
    return std::nullopt;
  }
  c.scan = n;
  // A scan's pushdown only skips row groups; its filter above is the condition. One without
  // that filter is some other shape.
  if (c.filter == nullptr && !n->scan_filter.Equals(cp::literal(true))) return std::nullopt;
  // Every partial input is the projection's column, or the scan's where there is none.
  const std::vector<std::string>& inputs = c.project != nullptr ? c.project->names : n->names;
  for (const auto& a : p->aggregates) {
    if (!SkipsNulls(a.function) || (!a.input.empty() && !Contains(inputs, a.input))) {
      return std::nullopt;
    }
  }
  return c;
}

void Collect(std::unique_ptr<PlanNode>* slot, std::vector<Candidate>* out) {
  if (*slot == nullptr) return;
  if (auto c = AsCandidate(slot)) {
    out->push_back(*c);
    return;
  }
  Collect(&(*slot)->input, out);
  Collect(&(*slot)->right, out);
  for (auto& item : (*slot)->items) Collect(&item, out);
}

cp::Expression OrOf(const std::vector<cp::Expression>& terms) {
  cp::Expression out = terms.front();
  for (size_t i = 1; i < terms.size(); ++i) out = cp::or_(out, terms[i]);
  return out;
}

void AddDistinct(std::vector<cp::Expression>* terms, cp::Expression e) {
  for (const auto& t : *terms) {
    if (t.Equals(e)) return;
  }
  terms->push_back(std::move(e));
}

bool IsTrue(const cp::Expression& e) { return e.Equals(cp::literal(true)); }

// `value` where `condition` holds, NULL elsewhere (a NULL condition too).
cp::Expression Where(const cp::Expression& condition, const cp::Expression& value) {
  return cp::call(plan::kNullUnlessFunction, {value, condition});
}

// The merged aggregate for `group`, named for copy `self`: the columns of group[self] keep their
// names, every other one takes a prefix of this copy's own, so that copies differ in names only.
std::unique_ptr<PlanNode> MergedCopy(const std::vector<Candidate>& group, size_t self) {
  const std::string prefix = "__m" + std::to_string(self) + "@";
  auto own = [&](size_t j, const std::string& name) { return j == self ? name : prefix + name; };
  // The scan: every file column once, under group[self]'s name where it reads it.
  std::vector<std::string> columns;
  std::map<std::string, std::string> column_name;  // file column -> name in this copy
  for (size_t j = 0; j < group.size(); ++j) {
    const PlanNode& s = *group[j].scan;
    for (size_t k = 0; k < s.columns.size(); ++k) {
      if (!column_name.count(s.columns[k])) columns.push_back(s.columns[k]);
      if (j == self || !column_name.count(s.columns[k])) {
        column_name[s.columns[k]] = own(j, s.names[k]);
      }
    }
  }
  // Each original's names in this copy.
  std::vector<std::map<std::string, std::string>> to(group.size());
  for (size_t j = 0; j < group.size(); ++j) {
    const Candidate& c = group[j];
    for (size_t k = 0; k < c.scan->columns.size(); ++k) {
      to[j][c.scan->names[k]] = column_name.at(c.scan->columns[k]);
    }
    if (c.project != nullptr) {
      for (const auto& n : c.project->names) to[j][n] = own(j, n);
    }
    for (const PlanNode* agg : {c.partial, c.final_agg}) {
      for (const auto& a : agg->aggregates) to[j][a.output] = own(j, a.output);
    }
  }
  auto scan = FieldsOf(*group[0].scan);
  scan->columns = columns;
  scan->names.clear();
  for (const auto& c : columns) scan->names.push_back(column_name.at(c));
  std::vector<cp::Expression> pushdowns;
  bool pushdown_everywhere = true;
  for (size_t j = 0; j < group.size(); ++j) {
    const PlanNode& s = *group[j].scan;
    scan->batch_rows = std::max(scan->batch_rows, s.batch_rows);
    if (IsTrue(s.scan_filter)) pushdown_everywhere = false;
    AddDistinct(&pushdowns, RenameColumns(s.scan_filter, to[j]));
  }
  scan->scan_filter = pushdown_everywhere ? OrOf(pushdowns) : cp::literal(true);
  // The filter: the OR of the conditions, when every original has one.
  std::vector<std::optional<cp::Expression>> conditions(group.size());
  std::vector<cp::Expression> distinct;
  bool everywhere = true;
  for (size_t j = 0; j < group.size(); ++j) {
    if (group[j].filter == nullptr) {
      everywhere = false;
      continue;
    }
    conditions[j] = RenameColumns(group[j].filter->predicate, to[j]);
    AddDistinct(&distinct, *conditions[j]);
  }
  // Where all share one condition the filter alone applies it.
  const bool wrap = everywhere ? distinct.size() > 1 : !distinct.empty();
  std::unique_ptr<PlanNode> below = std::move(scan);
  if (everywhere) {
    auto filter = FieldsOf(*group[0].filter);
    filter->predicate = OrOf(distinct);
    filter->input = std::move(below);
    below = std::move(filter);
  }
  // The projection: each original's inputs, only where its own condition holds.
  auto project = std::make_unique<PlanNode>();
  project->kind = Kind::kProject;
  auto partial = FieldsOf(*group[0].partial);
  partial->aggregates.clear();
  auto final_agg = FieldsOf(*group[0].final_agg);
  final_agg->aggregates.clear();
  for (size_t j = 0; j < group.size(); ++j) {
    const Candidate& c = group[j];
    const bool masked = wrap && conditions[j].has_value();
    std::map<std::string, std::string> input_name;  // the original's input -> this copy's
    auto input = [&](const std::string& name) {
      if (auto it = input_name.find(name); it != input_name.end()) return it->second;
      cp::Expression value = cp::field_ref(name);
      std::string out = own(j, "__v@" + name);
      if (c.project != nullptr) {
        const size_t k = std::find(c.project->names.begin(), c.project->names.end(), name) -
                         c.project->names.begin();
        value = c.project->expressions[k];
        out = to[j].at(name);
      }
      value = RenameColumns(value, to[j]);
      project->expressions.push_back(masked ? Where(*conditions[j], value) : value);
      project->names.push_back(out);
      input_name[name] = out;
      return out;
    };
    for (const auto& a : c.partial->aggregates) {
      AggregateCall call = a;
      call.output = to[j].at(a.output);
      if (!a.input.empty()) {
        call.input = input(a.input);
      } else if (masked) {  // COUNT(*) counts the rows its condition keeps
        call.function = "count";
        call.input = own(j, "__row@" + a.output);
        project->expressions.push_back(Where(*conditions[j], *conditions[j]));
        project->names.push_back(call.input);
      }
      partial->aggregates.push_back(std::move(call));
    }
    for (const auto& a : c.final_agg->aggregates) {
      AggregateCall call = a;
      call.output = to[j].at(a.output);
      if (!a.input.empty()) call.input = to[j].at(a.input);
      final_agg->aggregates.push_back(std::move(call));
    }
  }
  if (project->names.empty()) {  // only COUNT(*)s under one condition: some column for rows
    project->expressions.push_back(cp::literal(true));
    project->names.push_back(prefix + "__row");
  }
  project->input = std::move(below);
  partial->input = std::move(project);
  final_agg->input = std::move(partial);
  return final_agg;
}

}  // namespace

void MergeScalarAggregates(PlanNode* plan) {
  auto root = std::make_unique<PlanNode>(std::move(*plan));
  std::vector<Candidate> candidates;
  Collect(&root, &candidates);
  std::vector<bool> grouped(candidates.size(), false);
  std::vector<std::vector<Candidate>> groups;
  for (size_t i = 0; i < candidates.size(); ++i) {
    if (grouped[i]) continue;
    std::vector<Candidate> group = {candidates[i]};
    bool all_same = true;
    for (size_t j = i + 1; j < candidates.size(); ++j) {
      if (grouped[j] || !exec::SameTable(*candidates[i].scan->table, *candidates[j].scan->table)) {
        continue;
      }
      grouped[j] = true;
      all_same = all_same && exec::SameSubplan(*candidates[i].final_agg, *candidates[j].final_agg);
      group.push_back(candidates[j]);
    }
    // One aggregate, or copies of one (a WITH query read twice), already reads the table once.
    if (group.size() < 2 || all_same) continue;
    groups.push_back(std::move(group));
  }
  for (const auto& group : groups) {
    // Every copy is built before any original is replaced: each reads all of them.
    std::vector<std::unique_ptr<PlanNode>> copies;
    for (size_t i = 0; i < group.size(); ++i) copies.push_back(MergedCopy(group, i));
    for (size_t i = 0; i < group.size(); ++i) *group[i].slot = std::move(copies[i]);
  }
  *plan = std::move(*root);
}

}  // namespace sluice::sql
