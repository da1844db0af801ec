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

// One scalar aggregate that can merge: its final step's slot, the steps below it, and the rows
// it aggregates (`body`).
struct Candidate {
  std::unique_ptr<PlanNode>* slot = nullptr;
  const PlanNode* final_agg = nullptr;
  const PlanNode* partial = nullptr;
  const PlanNode* project = nullptr;  // optional
  const PlanNode* body = nullptr;
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

bool IsTrue(const cp::Expression& e) { return e.Equals(cp::literal(true)); }

// Rows a merged body can give for several conditions at once: scans, filters, projections and
// inner joins, whose rows each condition narrows alike wherever it applies. A scan's pushdown
// only skips row groups; the filter above it is the condition, so a pushdown needs that filter.
bool MergeableBody(const PlanNode& n, const PlanNode* parent) {
  switch (n.kind) {
    case Kind::kScan:
      return n.table != nullptr && !n.split && n.input == nullptr && n.right == nullptr &&
             n.columns.size() == n.names.size() &&
             std::set<std::string>(n.columns.begin(), n.columns.end()).size() == n.columns.size() &&
             (IsTrue(n.scan_filter) || (parent != nullptr && parent->kind == Kind::kFilter));
    case Kind::kFilter:
    case Kind::kProject:
      return n.input != nullptr && n.right == nullptr && MergeableBody(*n.input, &n);
    case Kind::kJoin:
      return n.join_type == JoinType::kInner && n.input != nullptr && n.right != nullptr &&
             MergeableBody(*n.input, &n) && MergeableBody(*n.right, &n);
    default:
      return false;
  }
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
  // A partial with a key is a COUNT(DISTINCT)'s: the final step counts that key distinctly.
  if (p->kind != Kind::kAggregate || p->final_phase || p->keys.size() > 1 || p->repeats_keys ||
      p->input == nullptr || (p->aggregates.empty() && p->keys.empty())) {
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
  if (!MergeableBody(*n, c.project)) return std::nullopt;
  c.body = n;
  // Every partial input is the projection's column, or the body's where there is none.
  const std::vector<std::string> inputs =
      c.project != nullptr ? c.project->names : n->OutputNames();
  for (const auto& a : p->aggregates) {
    if (!SkipsNulls(a.function) || (!a.input.empty() && !Contains(inputs, a.input))) {
      return std::nullopt;
    }
  }
  for (const auto& k : p->keys) {
    if (!Contains(inputs, k)) return std::nullopt;
  }
  // The final step merges the partial's results, or counts its key distinctly.
  for (const auto& a : f->aggregates) {
    const bool merges = std::any_of(p->aggregates.begin(), p->aggregates.end(),
                                    [&](const AggregateCall& b) { return b.output == a.input; });
    if (!merges && !(a.function == "count_distinct" && Contains(p->keys, a.input))) {
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

// One operator of the bodies of a group, in the same place in each: a filter may be missing
// from some (their condition there is true).
struct Position {
  Kind kind = Kind::kScan;
  std::vector<const PlanNode*> nodes;  // one per body; null for a missing filter or selection
  /// A projection that only passes columns on (column pruning's, above a filter or a join):
  /// its columns keep their ids, and the merged one passes the union.
  bool selection = false;
};

// A projection of input columns alone: it names no new value.
bool IsSelection(const PlanNode& n) {
  if (n.kind != Kind::kProject || n.keep_input || n.input == nullptr) return false;
  for (const auto& e : n.expressions) {
    if (e.field_ref() == nullptr || e.field_ref()->name() == nullptr) return false;
  }
  return true;
}

// The bodies of a group side by side. Each column gets a place-bound id (a scan's file column,
// a projection's k-th output) that names it in every body; what must be the same in all
// (projections, join keys) is compared by those ids. Filter conditions and scan pushdowns may
// differ, and scans may read different columns.
class Alignment {
 public:
  explicit Alignment(size_t n) : ids_(n) {}

  bool Align(const std::vector<const PlanNode*>& at) {
    const size_t n = at.size();
    bool any_filter = false, all_filter = true;
    for (const PlanNode* node : at) {
      any_filter |= node->kind == Kind::kFilter;
      all_filter &= node->kind == Kind::kFilter;
    }
    if (any_filter && !all_filter) {
      Position p{Kind::kFilter, std::vector<const PlanNode*>(n, nullptr)};
      std::vector<const PlanNode*> next(n);
      for (size_t j = 0; j < n; ++j) {
        const bool filter = at[j]->kind == Kind::kFilter;
        p.nodes[j] = filter ? at[j] : nullptr;
        next[j] = filter ? at[j]->input.get() : at[j];
      }
      positions_.push_back(std::move(p));
      return Align(next);
    }
    bool any_selection = false;
    for (const PlanNode* node : at) any_selection |= IsSelection(*node);
    if (any_selection) {  // present in all or some
      Position p{Kind::kProject, std::vector<const PlanNode*>(n, nullptr), /*selection=*/true};
      std::vector<const PlanNode*> next(n);
      for (size_t j = 0; j < n; ++j) {
        const bool selection = IsSelection(*at[j]);
        p.nodes[j] = selection ? at[j] : nullptr;
        next[j] = selection ? at[j]->input.get() : at[j];
      }
      positions_.push_back(std::move(p));
      if (!Align(next)) return false;
      for (size_t j = 0; j < n; ++j) {
        const PlanNode* node = at[j];
        if (!IsSelection(*node)) continue;
        for (size_t k = 0; k < node->names.size(); ++k) {
          auto it = ids_[j].find(*node->expressions[k].field_ref()->name());
          if (it == ids_[j].end()) return false;
          const std::string id = it->second;
          ids_[j][node->names[k]] = id;
        }
      }
      return true;
    }
    const PlanNode& first = *at[0];
    for (const PlanNode* node : at) {
      if (node->kind != first.kind || (node->right == nullptr) != (first.right == nullptr)) {
        return false;
      }
    }
    const size_t here = positions_.size();
    positions_.push_back(Position{first.kind, at});
    switch (first.kind) {
      case Kind::kScan:
        for (size_t j = 0; j < n; ++j) {
          if (!exec::SameTable(*at[j]->table, *first.table)) return false;
          for (size_t k = 0; k < at[j]->columns.size(); ++k) {
            ids_[j][at[j]->names[k]] = "s" + std::to_string(here) + ":" + at[j]->columns[k];
          }
        }
        return true;
      case Kind::kFilter:
        return Align(Inputs(at));
      case Kind::kProject: {
        for (const PlanNode* node : at) {
          if (node->keep_input != first.keep_input ||
              node->expressions.size() != first.expressions.size()) {
            return false;
          }
        }
        if (!Align(Inputs(at))) return false;
        for (size_t j = 0; j < n; ++j) {
          for (size_t k = 0; k < at[j]->expressions.size(); ++k) {
            if (!Id(j, at[j]->expressions[k]).Equals(Id(0, first.expressions[k]))) return false;
            // An output may reuse an input's name (a projection that passes a column on): then
            // that name means the output from here up, in every body alike, or names would
            // not map one to one.
            if (IdOf(j, at[j]->names[k]) != IdOf(0, first.names[k]) &&
                (ids_[j].count(at[j]->names[k]) || ids_[0].count(first.names[k]))) {
              return false;
            }
          }
        }
        for (size_t j = 0; j < n; ++j) {
          for (size_t k = 0; k < at[j]->names.size(); ++k) {
            ids_[j][at[j]->names[k]] = "p" + std::to_string(here) + ":" + std::to_string(k);
          }
        }
        return true;
      }
      case Kind::kJoin: {
        if (!Align(Inputs(at))) return false;
        std::vector<const PlanNode*> rights;
        for (const PlanNode* node : at) rights.push_back(node->right.get());
        if (!Align(rights)) return false;
        for (size_t j = 0; j < n; ++j) {
          const PlanNode& node = *at[j];
          if (node.join_type != first.join_type || node.build_input != first.build_input ||
              node.null_equal_keys != first.null_equal_keys ||
              node.left_keys.size() != first.left_keys.size() ||
              node.right_keys.size() != first.right_keys.size() ||
              !Id(j, node.join_filter).Equals(Id(0, first.join_filter))) {
            return false;
          }
          for (size_t k = 0; k < node.left_keys.size(); ++k) {
            if (IdOf(j, node.left_keys[k]) != IdOf(0, first.left_keys[k]) ||
                IdOf(j, node.right_keys[k]) != IdOf(0, first.right_keys[k])) {
              return false;
            }
          }
        }
        return true;
      }
      default:
        return false;
    }
  }

  const std::vector<Position>& positions() const { return positions_; }
  /// Body j's column names -> their ids.
  const std::map<std::string, std::string>& ids(size_t j) const { return ids_[j]; }

 private:
  static std::vector<const PlanNode*> Inputs(const std::vector<const PlanNode*>& at) {
    std::vector<const PlanNode*> out;
    for (const PlanNode* node : at) out.push_back(node->input.get());
    return out;
  }
  cp::Expression Id(size_t j, const cp::Expression& e) const { return RenameColumns(e, ids_[j]); }
  std::string IdOf(size_t j, const std::string& name) const {
    auto it = ids_[j].find(name);
    return it == ids_[j].end() ? "?" + name : it->second;
  }

  std::vector<std::map<std::string, std::string>> ids_;
  std::vector<Position> positions_;
};

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

// `value` where `condition` holds, NULL elsewhere (a NULL condition too).
cp::Expression Where(const cp::Expression& condition, const cp::Expression& value) {
  return cp::call(plan::kNullUnlessFunction, {value, condition});
}

// Builds the merged aggregate of a group for copy `self`: the columns of group[self] keep their
// names, every other one takes a prefix of this copy's own, so that copies differ in names only.
class CopyBuilder {
 public:
  CopyBuilder(const std::vector<Candidate>& group, const Alignment& alignment, size_t self)
      : group_(group),
        alignment_(alignment),
        self_(self),
        prefix_("__m" + std::to_string(self) + "@"),
        to_(group.size()),
        conditions_(group.size()) {
    // Each id's name in this copy: group[self]'s where it has the column, else the first
    // body's that has it, prefixed.
    std::map<std::string, std::string> name_of;
    for (size_t j = 0; j < group.size(); ++j) {
      for (const auto& [name, id] : alignment.ids(j)) {
        if (j == self) {
          name_of[id] = name;
        } else if (!name_of.count(id)) {
          name_of[id] = prefix_ + name;
        }
      }
    }
    for (size_t j = 0; j < group.size(); ++j) {
      for (const auto& [name, id] : alignment.ids(j)) to_[j][name] = name_of.at(id);
      const Candidate& c = group[j];
      if (c.project != nullptr) {
        for (const auto& n : c.project->names) to_[j][n] = Own(j, n);
      }
      for (const PlanNode* agg : {c.partial, c.final_agg}) {
        for (const auto& a : agg->aggregates) to_[j][a.output] = Own(j, a.output);
      }
    }
  }

  std::unique_ptr<PlanNode> Build() {
    next_ = 0;
    std::vector<std::string> flags;
    std::unique_ptr<PlanNode> body = Body(&flags);
    return Aggregates(std::move(body));
  }

 private:
  std::string Own(size_t j, const std::string& name) const {
    return j == self_ ? name : prefix_ + name;
  }

  // The body at the next position, and the condition columns (flags) it adds.
  std::unique_ptr<PlanNode> Body(std::vector<std::string>* flags) {
    const size_t here = next_++;
    const Position& p = alignment_.positions()[here];
    const size_t n = group_.size();
    switch (p.kind) {
      case Kind::kScan: {
        auto scan = FieldsOf(*p.nodes[0]);
        scan->columns.clear();
        scan->names.clear();
        std::vector<cp::Expression> pushdowns;
        bool everywhere = true;
        for (size_t j = 0; j < n; ++j) {
          const PlanNode& s = *p.nodes[j];
          for (size_t k = 0; k < s.columns.size(); ++k) {
            if (!Contains(scan->columns, s.columns[k])) {
              scan->columns.push_back(s.columns[k]);
              scan->names.push_back(to_[j].at(s.names[k]));
            }
          }
          scan->batch_rows = std::max(scan->batch_rows, s.batch_rows);
          everywhere &= !IsTrue(s.scan_filter);
          AddDistinct(&pushdowns, RenameColumns(s.scan_filter, to_[j]));
        }
        scan->scan_filter = everywhere ? OrOf(pushdowns) : cp::literal(true);
        return scan;
      }
      case Kind::kFilter: {
        std::unique_ptr<PlanNode> input = Body(flags);
        std::vector<std::optional<cp::Expression>> conditions(n);
        std::vector<cp::Expression> distinct;
        bool everywhere = true;
        const PlanNode* some = nullptr;
        for (size_t j = 0; j < n; ++j) {
          if (p.nodes[j] == nullptr) {
            everywhere = false;
            continue;
          }
          some = p.nodes[j];
          conditions[j] = RenameColumns(p.nodes[j]->predicate, to_[j]);
          AddDistinct(&distinct, *conditions[j]);
        }
        if (everywhere) {
          auto filter = FieldsOf(*some);
          filter->predicate = OrOf(distinct);
          filter->input = std::move(input);
          input = std::move(filter);
          if (distinct.size() == 1) return input;  // one condition for all: the filter is it
        }
        // Each body's condition here, as a column for the aggregates above to mask by.
        auto project = std::make_unique<PlanNode>();
        project->kind = Kind::kProject;
        project->keep_input = true;
        for (size_t j = 0; j < n; ++j) {
          if (!conditions[j].has_value()) continue;
          const std::string flag = Own(
              j, "__if" + std::to_string(here) + "@" + group_[j].final_agg->aggregates[0].output);
          project->expressions.push_back(*conditions[j]);
          project->names.push_back(flag);
          flags->push_back(flag);
          conditions_[j].push_back(cp::field_ref(flag));
        }
        project->input = std::move(input);
        return project;
      }
      case Kind::kProject: {
        std::vector<std::string> below;
        std::unique_ptr<PlanNode> input = Body(&below);
        flags->insert(flags->end(), below.begin(), below.end());
        if (p.selection) {
          // The union of the columns the bodies pass on; all of them where one passes all.
          auto project = std::make_unique<PlanNode>();
          project->kind = Kind::kProject;
          for (size_t j = 0; j < n; ++j) {
            if (p.nodes[j] == nullptr) return input;
            for (const auto& name : p.nodes[j]->names) {
              const std::string& copy = to_[j].at(name);
              if (Contains(project->names, copy)) continue;
              project->names.push_back(copy);
              project->expressions.push_back(cp::field_ref(copy));
            }
          }
          for (const auto& f : below) {
            project->names.push_back(f);
            project->expressions.push_back(cp::field_ref(f));
          }
          project->input = std::move(input);
          return project;
        }
        auto project = FieldsOf(*p.nodes[0]);
        project->names.clear();
        project->expressions.clear();
        for (size_t k = 0; k < p.nodes[0]->names.size(); ++k) {
          project->names.push_back(to_[0].at(p.nodes[0]->names[k]));
          project->expressions.push_back(RenameColumns(p.nodes[0]->expressions[k], to_[0]));
        }
        if (!project->keep_input) {  // the conditions pass on
          for (const auto& f : below) {
            project->names.push_back(f);
            project->expressions.push_back(cp::field_ref(f));
          }
        }
        project->input = std::move(input);
        return project;
      }
      case Kind::kJoin: {
        auto join = FieldsOf(*p.nodes[0]);
        join->input = Body(flags);
        join->right = Body(flags);
        for (auto& k : join->left_keys) k = to_[0].at(k);
        for (auto& k : join->right_keys) k = to_[0].at(k);
        join->join_filter = RenameColumns(join->join_filter, to_[0]);
        return join;
      }
      default:
        return nullptr;  // Alignment admits no other kind
    }
  }

  // The projection of every body's aggregate inputs, each only where its own conditions hold,
  // and the two aggregate steps over it.
  std::unique_ptr<PlanNode> Aggregates(std::unique_ptr<PlanNode> body) {
    auto project = std::make_unique<PlanNode>();
    project->kind = Kind::kProject;
    auto partial = FieldsOf(*group_[0].partial);
    partial->aggregates.clear();
    partial->keys.clear();
    auto final_agg = FieldsOf(*group_[0].final_agg);
    final_agg->aggregates.clear();
    for (size_t j = 0; j < group_.size(); ++j) {
      const Candidate& c = group_[j];
      std::optional<cp::Expression> condition;
      for (const auto& f : conditions_[j]) {
        condition = condition.has_value() ? cp::and_(*condition, f) : f;
      }
      std::map<std::string, std::string> input_name;  // the original's input -> this copy's
      auto input = [&](const std::string& name) {
        if (auto it = input_name.find(name); it != input_name.end()) return it->second;
        cp::Expression value = cp::field_ref(name);
        std::string out = Own(j, "__v@" + name);
        if (c.project != nullptr) {
          const size_t k = std::find(c.project->names.begin(), c.project->names.end(), name) -
                           c.project->names.begin();
          value = c.project->expressions[k];
          out = to_[j].at(name);
        }
        value = RenameColumns(value, to_[j]);
        project->expressions.push_back(condition.has_value() ? Where(*condition, value) : value);
        project->names.push_back(out);
        input_name[name] = out;
        return out;
      };
      // A distinct key, masked like any input: the final step counts it where it is not NULL,
      // and partials from several workers may repeat it.
      for (const auto& k : c.partial->keys) partial->keys.push_back(input(k));
      for (const auto& a : c.partial->aggregates) {
        AggregateCall call = a;
        call.output = to_[j].at(a.output);
        if (!a.input.empty()) {
          call.input = input(a.input);
        } else if (condition.has_value()) {  // COUNT(*) counts the rows its conditions keep
          call.function = "count";
          call.input = Own(j, "__row@" + a.output);
          project->expressions.push_back(Where(*condition, *condition));
          project->names.push_back(call.input);
        }
        partial->aggregates.push_back(std::move(call));
      }
      for (const auto& a : c.final_agg->aggregates) {
        AggregateCall call = a;
        call.output = to_[j].at(a.output);
        if (Contains(c.partial->keys, a.input)) {
          call.input = input(a.input);
        } else if (!a.input.empty()) {
          call.input = to_[j].at(a.input);
        }
        final_agg->aggregates.push_back(std::move(call));
      }
    }
    if (project->names.empty()) {  // only COUNT(*)s under one condition: some column for rows
      project->expressions.push_back(cp::literal(true));
      project->names.push_back(prefix_ + "__row");
    }
    project->input = std::move(body);
    partial->input = std::move(project);
    final_agg->input = std::move(partial);
    return final_agg;
  }

  const std::vector<Candidate>& group_;
  const Alignment& alignment_;
  const size_t self_;
  const std::string prefix_;
  // Each body's names -> this copy's, and its conditions' columns.
  std::vector<std::map<std::string, std::string>> to_;
  std::vector<std::vector<cp::Expression>> conditions_;
  size_t next_ = 0;
};

// Whether `group`'s bodies align (all with the first).
std::optional<Alignment> Aligned(const std::vector<Candidate>& group) {
  Alignment alignment(group.size());
  std::vector<const PlanNode*> bodies;
  for (const auto& c : group) bodies.push_back(c.body);
  if (!alignment.Align(bodies)) return std::nullopt;
  return alignment;
}

// Whether two aligned candidates' distinct keys are the same value. Under --workers the merged
// partial groups by every candidate's masked key at once: the same value keeps those groups to
// its own distinct values (per condition), where two values could make one per pair of them.
bool SameDistinctKey(const Candidate& a, const Candidate& b) {
  const std::optional<Alignment> alignment = Aligned({a, b});
  if (!alignment.has_value()) return false;
  auto id = [&](const Candidate& c, size_t j) {
    const std::string& key = c.partial->keys.front();
    cp::Expression value = cp::field_ref(key);
    if (c.project != nullptr) {
      const auto& names = c.project->names;
      value = c.project->expressions[std::find(names.begin(), names.end(), key) - names.begin()];
    }
    return RenameColumns(value, alignment->ids(j));
  };
  return id(a, 0).Equals(id(b, 1));
}

}  // namespace

void MergeScalarAggregates(PlanNode* plan) {
  auto root = std::make_unique<PlanNode>(std::move(*plan));
  std::vector<Candidate> candidates;
  Collect(&root, &candidates);
  std::vector<bool> grouped(candidates.size(), false);
  for (size_t i = 0; i < candidates.size(); ++i) {
    if (grouped[i]) continue;
    std::vector<Candidate> group = {candidates[i]};
    bool all_same = true;
    const Candidate* keyed = candidates[i].partial->keys.empty() ? nullptr : &candidates[i];
    for (size_t j = i + 1; j < candidates.size(); ++j) {
      if (grouped[j] || !Aligned({candidates[i], candidates[j]}).has_value()) continue;
      if (!candidates[j].partial->keys.empty()) {
        if (keyed != nullptr && !SameDistinctKey(*keyed, candidates[j])) continue;
        if (keyed == nullptr) keyed = &candidates[j];
      }
      grouped[j] = true;
      all_same = all_same && exec::SameSubplan(*candidates[i].final_agg, *candidates[j].final_agg);
      group.push_back(candidates[j]);
    }
    // One aggregate, or copies of one (a WITH query read twice), already reads its rows once.
    if (group.size() < 2 || all_same) continue;
    // The copies run before the rest of the query, on their own: only worth it for many rows.
    if (ScanRows(*group[0].body) < kMinMergedScanRows) continue;
    const std::optional<Alignment> alignment = Aligned(group);
    if (!alignment.has_value()) continue;
    // Every copy is built before any original is replaced: each reads all of them.
    std::vector<std::unique_ptr<PlanNode>> copies;
    for (size_t c = 0; c < group.size(); ++c) {
      copies.push_back(CopyBuilder(group, *alignment, c).Build());
    }
    for (size_t c = 0; c < group.size(); ++c) *group[c].slot = std::move(copies[c]);
  }
  *plan = std::move(*root);
}

}  // namespace sluice::sql
