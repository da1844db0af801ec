#include "sql/optimizer/join_order.h"

#include <arrow/compute/api.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <utility>

#include "plan/conjuncts.h"
#include "sql/optimizer/conjuncts.h"
#include "sql/optimizer/plan_rewrite.h"
#include "sql/optimizer/semi_joins.h"

namespace sluice::sql {

namespace cp = arrow::compute;

std::unique_ptr<PlanNode> WithFilter(std::unique_ptr<PlanNode> input,
                                     const std::vector<cp::Expression>& conjuncts) {
  if (conjuncts.empty()) return input;
  auto f = std::make_unique<PlanNode>();
  f->kind = PlanNode::Kind::kFilter;
  f->predicate = conjuncts.size() == 1 ? conjuncts[0] : cp::and_(conjuncts);
  f->input = std::move(input);
  return f;
}

std::vector<cp::Expression> FactorOr(const cp::Expression& e) {
  std::vector<cp::Expression> disjuncts;
  Disjuncts(e, &disjuncts);
  if (disjuncts.size() < 2) return {e};
  std::vector<std::vector<cp::Expression>> branches;
  for (const auto& a : disjuncts) {
    std::vector<cp::Expression> c;
    Conjuncts(a, &c);
    branches.push_back(std::move(c));
  }
  std::vector<cp::Expression> common;
  for (const auto& candidate : branches[0]) {
    bool everywhere = true;
    for (size_t b = 1; b < branches.size() && everywhere; ++b) {
      everywhere = std::any_of(branches[b].begin(), branches[b].end(),
                               [&](const cp::Expression& x) { return x.Equals(candidate); });
    }
    if (everywhere) common.push_back(candidate);
  }
  if (common.empty()) return {e};
  std::vector<cp::Expression> rest;
  for (auto& branch : branches) {
    std::vector<cp::Expression> kept;
    for (auto& x : branch) {
      if (!std::any_of(common.begin(), common.end(),
                       [&](const cp::Expression& c) { return c.Equals(x); })) {
        kept.push_back(x);
      }
    }
    rest.push_back(kept.empty() ? cp::literal(true) : cp::and_(kept));
  }
  common.push_back(cp::or_(rest));
  return common;
}

namespace {

// The conjuncts of `conditions`, each OR with its common conditions factored out.
std::vector<cp::Expression> SplitConditions(const std::vector<cp::Expression>& conditions) {
  std::vector<cp::Expression> conjuncts;
  for (const auto& condition : conditions) {
    std::vector<cp::Expression> raw;
    Conjuncts(condition, &raw);
    for (const auto& c : raw) {
      for (auto& f : FactorOr(c)) Conjuncts(f, &conjuncts);
    }
  }
  return conjuncts;
}

// (a1 AND b1) OR (a2 AND b2) over relations A and B implies (a1 OR a2) on A alone: a weaker
// copy filters A before the joins (TPC-H Q7 keeps 2 of 25 nations, Q19 a sliver of part). The
// copies `c`, which reads `tables`, implies, by relation.
std::vector<std::pair<size_t, cp::Expression>> ImpliedConditions(
    const cp::Expression& c, const std::set<size_t>& tables,
    const std::map<std::string, size_t>& owner) {
  std::vector<std::pair<size_t, cp::Expression>> out;
  std::vector<cp::Expression> disjuncts;
  Disjuncts(c, &disjuncts);
  if (disjuncts.size() < 2) return out;
  for (size_t t : tables) {
    std::vector<cp::Expression> per_branch;
    for (const auto& d : disjuncts) {
      std::vector<cp::Expression> conj, mine;
      Conjuncts(d, &conj);
      for (const auto& x : conj) {
        bool only_t = true;
        for (const auto& ref : cp::FieldsInExpression(x)) {
          auto it = owner.find(*ref.name());
          only_t = only_t && it != owner.end() && it->second == t;
        }
        if (only_t) mine.push_back(x);
      }
      if (mine.empty()) break;
      per_branch.push_back(mine.size() == 1 ? mine[0] : cp::and_(mine));
    }
    if (per_branch.size() == disjuncts.size()) out.emplace_back(t, cp::or_(per_branch));
  }
  return out;
}

// OrderJoins' greedy left-deep order over `relations`, each taken whole.
arrow::Result<JoinInput> OrderGreedily(std::vector<JoinInput> relations,
                                       const std::vector<cp::Expression>& conditions,
                                       std::vector<cp::Expression>* filters,
                                       std::vector<cp::Expression>* rest) {
  std::map<std::string, size_t> owner;
  for (size_t i = 0; i < relations.size(); ++i) {
    for (const auto& id : relations[i].ids) owner[id] = i;
  }
  const std::vector<cp::Expression> conjuncts = SplitConditions(conditions);
  // Per-relation conditions (for the estimates), equi-join edges, and what remains. Every
  // condition that is no join key goes to `filters`, in order.
  std::vector<std::vector<cp::Expression>> local(relations.size());
  struct Edge {
    size_t a, b;
    std::string a_col, b_col;
    bool used = false;
    bool null_equal = false;  // a IS NOT DISTINCT FROM b
  };
  std::vector<Edge> edges;
  std::vector<cp::Expression> residual;
  int computed_keys = 0;
  for (const auto& c : conjuncts) {
    if (c.Equals(cp::literal(true))) continue;
    std::set<size_t> tables;
    bool foreign = false;  // reads a scalar subquery's result, joined later
    for (const auto& ref : cp::FieldsInExpression(c)) {
      auto it = owner.find(*ref.name());
      if (it == owner.end()) {
        foreign = true;
      } else {
        tables.insert(it->second);
      }
    }
    if (foreign) {
      rest->push_back(c);
      continue;
    }
    if (tables.size() == 1) {
      local[*tables.begin()].push_back(c);
      filters->push_back(c);
      continue;
    }
    // An equality, or a IS NOT DISTINCT FROM b (a key compared with NULLs equal).
    const cp::Expression::Call* call = c.call();
    std::optional<std::pair<cp::Expression, cp::Expression>> operands;
    bool null_equal = false;
    if (call != nullptr && call->function_name == "equal" && call->arguments.size() == 2) {
      operands.emplace(call->arguments[0], call->arguments[1]);
    } else {
      operands = plan::NotDistinctOperands(c);
      null_equal = operands.has_value();
    }
    if (tables.size() == 2 && operands) {
      // Each side reads one relation: a join key. A side that is an expression
      // (t1.k = t2.k + 1) is computed first by a projection on its relation.
      const cp::Expression* args[2] = {&operands->first, &operands->second};
      std::optional<size_t> sides[2];
      for (int k = 0; k < 2; ++k) {
        std::set<size_t> reads;
        for (const auto& ref : cp::FieldsInExpression(*args[k])) {
          reads.insert(owner.at(*ref.name()));
        }
        if (reads.size() == 1) sides[k] = *reads.begin();
      }
      if (sides[0] && sides[1] && *sides[0] != *sides[1]) {
        std::string names[2];
        for (int k = 0; k < 2; ++k) {
          const cp::Expression& side = *args[k];
          if (side.field_ref() != nullptr) {
            names[k] = *side.field_ref()->name();
            continue;
          }
          JoinInput& r = relations[*sides[k]];
          // Unique in the query: the relation's first column id is.
          names[k] = "__key" + std::to_string(computed_keys++) + "@" + r.ids.front();
          auto project = plan::MakeNode(PlanNode::Kind::kProject, std::move(r.plan));
          project->keep_input = true;
          project->expressions.push_back(side);
          project->names.push_back(names[k]);
          r.plan = std::move(project);
          r.ids.push_back(names[k]);
          owner[names[k]] = *sides[k];
        }
        edges.push_back({*sides[0], *sides[1], names[0], names[1], false, null_equal});
        continue;
      }
    }
    residual.push_back(c);
    filters->push_back(c);
    for (auto& [t, implied] : ImpliedConditions(c, tables, owner)) {
      // Already there where a branch of the join graph was ordered on its own (OrderJoins).
      if (std::any_of(filters->begin(), filters->end(),
                      [&](const cp::Expression& f) { return f.Equals(implied); })) {
        continue;
      }
      local[t].push_back(implied);
      filters->push_back(implied);
    }
  }
  // Each relation's rows after its own conditions, which the filter_pushdown pass places on it.
  for (size_t i = 0; i < relations.size(); ++i) {
    if (local[i].empty()) continue;
    relations[i].estimate *= ConjunctionSelectivity(local[i], relations[i]);
  }
  // Greedy join order. The relation estimated largest after its filters probes (TPC-H Q12's
  // lineitem, filtered to 2 %, is hashed and orders stream past it). Each step builds the connected
  // relation whose join multiplies the rows least: one joined on a key with about one row per value
  // (fanout = rows / distinct bound of the key, from Parquet statistics) before one joined on a
  // low-cardinality column, which is how TPC-H Q5 avoids customer x lineitem on nationkey.
  // Ties go to the smaller relation. No cross product is planned while an edge exists.
  const size_t n = relations.size();
  std::vector<bool> joined(n, false);
  size_t start = 0;
  for (size_t i = 1; i < n; ++i) {
    if (relations[i].estimate > relations[start].estimate) start = i;
  }
  JoinInput plan = std::move(relations[start]);
  joined[start] = true;
  for (size_t step = 1; step < n; ++step) {
    size_t best = n;
    double best_fanout = 0;
    for (size_t t = 0; t < n; ++t) {
      if (joined[t]) continue;
      double distinct = 0;  // the most selective key's bound, 0 if not connected
      for (const auto& e : edges) {
        std::string column;
        if (joined[e.a] && e.b == t) column = e.b_col;
        if (joined[e.b] && e.a == t) column = e.a_col;
        if (column.empty()) continue;
        // A key without statistics (a string: TPC-DS q85's marital status) is not taken for
        // unique: its guess is the square root of the rows, so that a key with known distinct
        // values (a surrogate key) goes first.
        const JoinInput& r = relations[t];
        distinct = std::max(distinct, r.distinct.count(column) ? r.DistinctBound(column)
                                                               : std::sqrt(std::max(r.rows, 1.0)));
      }
      if (distinct == 0) continue;
      // Rows after its filters per key value: a filtered dimension (Q9's part LIKE '%green%')
      // shrinks the stream and goes first.
      const double fanout = relations[t].estimate / distinct;
      if (best == n || fanout < best_fanout ||
          (fanout == best_fanout && relations[t].rows < relations[best].rows)) {
        best = t;
        best_fanout = fanout;
      }
    }
    auto join = std::make_unique<PlanNode>();
    join->kind = PlanNode::Kind::kJoin;
    if (best == n) {
      // No equality connects what is left: a cross product with the smallest of it, as a hash
      // join on a constant key. One beyond kMaxCrossJoinRows (by the estimates) is refused
      // rather than left to exhaust memory.
      for (size_t t = 0; t < n; ++t) {
        if (!joined[t] && (best == n || relations[t].estimate < relations[best].estimate)) {
          best = t;
        }
      }
      const double product = plan.estimate * relations[best].estimate;
      if (plan.estimate > 1 && relations[best].estimate > 1 && product > kMaxCrossJoinRows) {
        return arrow::Status::NotImplemented(
            "not supported: a cross join of about ", static_cast<int64_t>(product), " rows (\"",
            relations[best].name.empty() ? "a FROM item" : relations[best].name,
            "\" has no equality condition with the other FROM items)");
      }
      std::string keys[2];
      JoinInput* sides[2] = {&plan, &relations[best]};
      for (int k = 0; k < 2; ++k) {
        keys[k] = "__cross" + std::to_string(computed_keys++) + "@" + sides[k]->ids.front();
        auto project = plan::MakeNode(PlanNode::Kind::kProject, std::move(sides[k]->plan));
        project->keep_input = true;
        project->expressions.push_back(cp::literal(int32_t{0}));
        project->names.push_back(keys[k]);
        sides[k]->plan = std::move(project);
      }
      join->left_keys.push_back(keys[0]);
      join->right_keys.push_back(keys[1]);
      join->input_estimate = plan.estimate;
      join->right_estimate = relations[best].estimate;
      plan.estimate = product;
      join->input = std::move(plan.plan);
      join->right = std::move(relations[best].plan);
      joined[best] = true;
      plan.plan = std::move(join);
      for (auto& id : relations[best].ids) plan.ids.push_back(std::move(id));
      plan.ranges.insert(relations[best].ranges.begin(), relations[best].ranges.end());
      continue;
    }
    // |A join B| = |A| |B| / max(distinct keys of either side), by the most selective key.
    double key_distinct = 1;
    for (const auto& e : edges) {
      const bool a_in = joined[e.a] && e.b == best, b_in = joined[e.b] && e.a == best;
      if (!a_in && !b_in) continue;
      const JoinInput& left_side = a_in ? relations[e.a] : relations[e.b];
      const std::string& left_col = a_in ? e.a_col : e.b_col;
      const std::string& right_col = a_in ? e.b_col : e.a_col;
      const double left_distinct =
          plan.distinct.count(left_col) ? plan.DistinctBound(left_col) : left_side.rows;
      key_distinct =
          std::max({key_distinct, left_distinct, relations[best].DistinctBound(right_col)});
    }
    const double before = plan.estimate;
    plan.estimate = JoinEstimate(plan.estimate, relations[best].estimate, key_distinct);
    // Equalities are the keys where there are any; else IS NOT DISTINCT FROM, all of whose
    // keys then compare NULLs as equal (the other kind stays a filter).
    const bool null_equal = std::none_of(edges.begin(), edges.end(), [&](const Edge& e) {
      return !e.null_equal && ((joined[e.a] && e.b == best) || (joined[e.b] && e.a == best));
    });
    join->null_equal_keys = null_equal;
    for (auto& e : edges) {
      if (e.null_equal != null_equal) continue;
      if (joined[e.a] && e.b == best) {
        join->left_keys.push_back(e.a_col);
        join->right_keys.push_back(e.b_col);
        e.used = true;
      } else if (joined[e.b] && e.a == best) {
        join->left_keys.push_back(e.b_col);
        join->right_keys.push_back(e.a_col);
        e.used = true;
      }
    }
    join->input_estimate = before;
    join->right_estimate = relations[best].estimate;
    join->input = std::move(plan.plan);
    join->right = std::move(relations[best].plan);
    joined[best] = true;
    plan.plan = std::move(join);
    for (auto& id : relations[best].ids) plan.ids.push_back(std::move(id));
    plan.distinct.insert(relations[best].distinct.begin(), relations[best].distinct.end());
    plan.ranges.insert(relations[best].ranges.begin(), relations[best].ranges.end());
  }
  for (const auto& c : residual) plan.estimate *= Selectivity(c, plan);
  // An equality between two relations that were joined by other keys is a filter after the
  // join.
  for (const auto& e : edges) {
    if (e.used) continue;
    const cp::Expression a = cp::field_ref(e.a_col), b = cp::field_ref(e.b_col);
    filters->push_back(e.null_equal ? cp::not_(plan::IsDistinctFrom(cp::not_equal(a, b), a, b))
                                    : cp::equal(a, b));
  }
  return plan;
}

}  // namespace

// Classes of columns that stated equalities make equal (l_partkey, p_partkey, ps_partkey in
// TPC-H Q9), as a class number per column.
std::map<std::string, int> EqualColumns(const std::vector<cp::Expression>& conjuncts) {
  std::map<std::string, std::string> parent;
  std::function<std::string(const std::string&)> find = [&](const std::string& x) {
    auto it = parent.find(x);
    if (it == parent.end() || it->second == x) return x;
    return it->second = find(it->second);
  };
  for (const auto& c : conjuncts) {
    if (auto eq = ColumnEquality(c)) {
      parent.emplace(eq->first, eq->first);
      parent.emplace(eq->second, eq->second);
      parent[find(eq->first)] = find(eq->second);
    }
  }
  std::map<std::string, int> number, out;
  for (const auto& [column, unused] : parent) {
    out[column] = number.emplace(find(column), static_cast<int>(number.size())).first->second;
  }
  return out;
}

arrow::Result<JoinInput> OrderJoins(std::vector<JoinInput> relations,
                                    const std::vector<cp::Expression>& conditions,
                                    std::vector<cp::Expression>* filters,
                                    std::vector<cp::Expression>* rest) {
  const size_t n = relations.size();
  if (n < 3) return OrderGreedily(std::move(relations), conditions, filters, rest);
  std::map<std::string, size_t> owner;
  for (size_t i = 0; i < n; ++i) {
    for (const auto& id : relations[i].ids) owner[id] = i;
  }
  // Which relations each conjunct reads (none where it reads a column of none: a scalar
  // subquery's result, which stays with the outer order).
  std::vector<cp::Expression> conjuncts = SplitConditions(conditions);
  std::vector<std::set<size_t>> reads(conjuncts.size());
  std::vector<std::vector<cp::Expression>> local(n);
  const size_t given = conjuncts.size();
  for (size_t c = 0; c < given; ++c) {
    for (const auto& ref : cp::FieldsInExpression(conjuncts[c])) {
      auto it = owner.find(*ref.name());
      if (it == owner.end()) {
        reads[c].clear();
        break;
      }
      reads[c].insert(it->second);
    }
    if (reads[c].size() == 1) local[*reads[c].begin()].push_back(conjuncts[c]);
    if (reads[c].size() < 2) continue;
    // Q7's nations: their weaker copies count in the estimates and filter inside a branch.
    for (auto& [t, implied] : ImpliedConditions(conjuncts[c], reads[c], owner)) {
      local[t].push_back(implied);
      conjuncts.push_back(implied);
      reads.push_back({t});
    }
  }
  // Equalities that the stated ones imply between two relations not yet compared in their
  // class (ps_partkey = p_partkey, from l_partkey = p_partkey and l_partkey = ps_partkey): a
  // branch may join on them on its own. They are used only inside a branch.
  const size_t stated = conjuncts.size();
  std::vector<cp::Expression> joining;  // conditions between two of the relations
  for (size_t c = 0; c < stated; ++c) {
    if (reads[c].size() == 2) joining.push_back(conjuncts[c]);
  }
  const std::map<std::string, int> equal_class = EqualColumns(joining);
  {
    std::map<int, std::map<size_t, std::string>> by_class;  // a column of each relation
    std::set<std::tuple<int, size_t, size_t>> compared;
    for (const auto& [column, k] : equal_class) by_class[k].emplace(owner.at(column), column);
    for (size_t c = 0; c < stated; ++c) {
      if (auto eq = ColumnEquality(conjuncts[c]); eq && reads[c].size() == 2) {
        compared.emplace(equal_class.at(eq->first), *reads[c].begin(), *reads[c].rbegin());
      }
    }
    for (const auto& [k, columns] : by_class) {
      for (auto i = columns.begin(); i != columns.end(); ++i) {
        for (auto j = std::next(i); j != columns.end(); ++j) {
          if (compared.count({k, i->first, j->first})) continue;
          auto ti = plan::OutputSchema(*relations[i->first].plan);
          auto tj = plan::OutputSchema(*relations[j->first].plan);
          if (!ti.ok() || !tj.ok()) continue;
          const auto fi = (*ti)->GetFieldByName(i->second);
          const auto fj = (*tj)->GetFieldByName(j->second);
          if (fi == nullptr || fj == nullptr || !fi->type()->Equals(*fj->type())) continue;
          conjuncts.push_back(cp::equal(cp::field_ref(i->second), cp::field_ref(j->second)));
          reads.push_back({i->first, j->first});
        }
      }
    }
  }
  auto derived = [&](size_t c) { return c >= stated && reads[c].size() == 2; };
  std::set<std::tuple<int, size_t, size_t>> linked;  // (class, relation, relation) compared
  for (size_t c = 0; c < conjuncts.size(); ++c) {
    if (auto eq = ColumnEquality(conjuncts[c]); eq && reads[c].size() == 2) {
      linked.emplace(equal_class.at(eq->first), *reads[c].begin(), *reads[c].rbegin());
    }
  }
  auto is_equality = [&](size_t c) {
    const auto* call = conjuncts[c].call();
    return reads[c].size() == 2 && call != nullptr && call->function_name == "equal";
  };
  std::vector<double> estimate(n);
  size_t start = 0;
  for (size_t i = 0; i < n; ++i) {
    estimate[i] = relations[i].estimate;
    if (!local[i].empty()) estimate[i] *= ConjunctionSelectivity(local[i], relations[i]);
    if (estimate[i] > estimate[start]) start = i;
  }
  // Components of the join graph without the relation that probes.
  std::vector<int> component(n, -1);
  int components = 0;
  for (size_t i = 0; i < n; ++i) {
    if (i == start || component[i] >= 0) continue;
    std::vector<size_t> todo = {i};
    component[i] = components;
    while (!todo.empty()) {
      const size_t at = todo.back();
      todo.pop_back();
      for (size_t c = 0; c < conjuncts.size(); ++c) {
        const auto& r = reads[c];
        if (!is_equality(c) || !r.count(at) || r.count(start)) continue;
        for (size_t other : r) {
          if (component[other] < 0) {
            component[other] = components;
            todo.push_back(other);
          }
        }
      }
    }
    ++components;
  }
  // A branch that meets the probing relation through one of its relations (its root), and only
  // by equalities, is joined on its own first where its other relations keep at most
  // kBranchShare of the root's rows: the build side is then the root's few matching rows (TPC-H
  // Q7 hashes 120K orders of French and German customers, not all 1.5M).
  std::vector<bool> taken(conjuncts.size(), false);
  std::vector<JoinInput> ordered;
  std::vector<bool> merged(n, false);
  // Branches to try, with their roots: a component of its own that meets the probing relation
  // through one root, or else, within a component, a relation that meets it with the smaller
  // relations it reaches by stated equalities (TPC-H Q5's supplier, nation and region, whose
  // customer meets orders): their other edges join the branch later.
  struct Candidate {
    std::set<size_t> members;
    size_t root;
    // A whole component that meets the probing relation through several members on keys of
    // different classes; tried and found small (below), so the share rule does not apply.
    bool tried = false;
  };
  std::vector<Candidate> candidates;
  // The conditions among `members` alone.
  auto inside_of = [&](const std::set<size_t>& members, size_t c) {
    return !reads[c].empty() && std::all_of(reads[c].begin(), reads[c].end(),
                                            [&](size_t t) { return members.count(t) > 0; });
  };
  for (int b = 0; b < components; ++b) {
    std::set<size_t> members;
    for (size_t i = 0; i < n; ++i) {
      if (component[i] == b) members.insert(i);
    }
    if (members.size() < 2) continue;
    std::set<size_t> roots;
    std::set<int> crossing;  // the classes of the equalities across the branch's edge
    bool separable = true;
    for (size_t c = 0; c < conjuncts.size() && separable; ++c) {
      std::vector<size_t> in, out;
      for (size_t t : reads[c]) (members.count(t) ? in : out).push_back(t);
      if (in.empty() || out.empty() || derived(c)) continue;
      // Other conditions across the branch's edge filter above the joins, as they would.
      if (!is_equality(c)) continue;
      separable = out[0] == start;
      roots.insert(in[0]);
      const auto eq = ColumnEquality(conjuncts[c]);
      crossing.insert(eq ? equal_class.at(eq->first) : -1);
    }
    if (separable && roots.size() > 1 && !crossing.count(-1)) {
      // Several members meet the probing relation, each on a column equal to one of the root's
      // (Q9's part and partsupp on partkey): the root's equalities imply the others'. The root
      // is the largest member with a column in every crossing class.
      std::optional<size_t> best;
      for (size_t r : members) {
        bool in_every = true;
        for (int k : crossing) {
          bool has = false;
          for (const auto& [column, kc] : equal_class) {
            has = has || (kc == k && owner.at(column) == r);
          }
          in_every = in_every && has;
        }
        if (in_every && (!best || relations[r].rows > relations[*best].rows)) best = r;
      }
      if (best) roots = {*best};
    }
    if (separable && roots.size() == 1) {
      candidates.push_back({std::move(members), *roots.begin()});
      continue;
    }
    if (separable && roots.size() > 1 && !crossing.count(-1)) {
      // Members meet the probing relation on keys of different classes (TPC-DS q72: catalog
      // sales on the item, the inventory's date_dim on the date, which a week joins to the
      // sales' date_dim): joined on its own, the component meets it on all those keys at once.
      // Taken where, so ordered, it keeps at most kBranchShare of its largest member's rows
      // after its filters; a branch that multiplies rows (TPC-H Q5's customers and suppliers
      // on their nation) is not.
      size_t largest = *members.begin();
      for (size_t m : members) {
        if (estimate[m] > estimate[largest]) largest = m;
      }
      std::vector<JoinInput> trial;
      std::map<size_t, size_t> copy_of;
      for (size_t m : members) {
        JoinInput copy;
        static_cast<Cardinality&>(copy) = relations[m];
        copy.plan = plan::CopyPlan(*relations[m].plan);
        copy.ids = relations[m].ids;
        copy.name = relations[m].name;
        copy_of[m] = trial.size();
        trial.push_back(std::move(copy));
      }
      // In the trial a key without statistics is guessed at the square root of its rows, as
      // the greedy choice guesses it, not taken for unique: the join could multiply rows. A
      // key that is an expression has no guess, and the rule is not tried.
      bool column_keys = true;
      for (size_t c = 0; c < conjuncts.size(); ++c) {
        if (!is_equality(c) || !inside_of(members, c)) continue;
        const auto eq = ColumnEquality(conjuncts[c]);
        if (!eq) {
          column_keys = false;
          break;
        }
        for (const std::string& column : {eq->first, eq->second}) {
          JoinInput& copy = trial[copy_of.at(owner.at(column))];
          if (!copy.distinct.count(column)) {
            copy.distinct[column] = static_cast<int64_t>(std::sqrt(std::max(copy.rows, 1.0)));
          }
        }
      }
      std::vector<cp::Expression> inside, unused_filters, unused_rest;
      for (size_t c = 0; c < conjuncts.size(); ++c) {
        if (inside_of(members, c)) inside.push_back(conjuncts[c]);
      }
      std::optional<JoinInput> ordered_trial;
      if (column_keys) {
        ARROW_ASSIGN_OR_RAISE(ordered_trial,
                              OrderJoins(std::move(trial), inside, &unused_filters, &unused_rest));
      }
      if (ordered_trial && ordered_trial->estimate <= kBranchShare * estimate[largest]) {
        candidates.push_back({std::move(members), largest, /*tried=*/true});
        continue;
      }
    }
    std::set<size_t> used;
    for (size_t r : members) {
      std::set<size_t> dims = {r};
      std::vector<size_t> todo = {r};
      while (!todo.empty()) {
        const size_t at = todo.back();
        todo.pop_back();
        for (size_t c = 0; c < stated; ++c) {
          if (!is_equality(c) || !reads[c].count(at)) continue;
          for (size_t t : reads[c]) {
            if (t != start && !dims.count(t) && relations[t].rows < relations[at].rows) {
              dims.insert(t);
              todo.push_back(t);
            }
          }
        }
      }
      bool through_root = false, only_root = true;
      for (size_t c = 0; c < stated; ++c) {
        if (!is_equality(c) || !reads[c].count(start)) continue;
        for (size_t t : reads[c]) {
          if (t == start || !dims.count(t)) continue;
          through_root = through_root || t == r;
          only_root = only_root && t == r;
        }
      }
      const bool apart =
          std::none_of(dims.begin(), dims.end(), [&](size_t t) { return used.count(t) > 0; });
      if (dims.size() < 2 || !through_root || !only_root || !apart) continue;
      used.insert(dims.begin(), dims.end());
      candidates.push_back({std::move(dims), r});
    }
  }
  for (auto& [members, root, tried] : candidates) {
    // The root's share of rows that its dimensions' filters keep (each joined on its key). A
    // member larger than the root is no dimension of it, and its join could multiply rows.
    double share = 1;
    bool dimensions = true;
    for (size_t d : members) {
      if (d == root) continue;
      dimensions = dimensions && relations[d].rows <= relations[root].rows;
      share *= estimate[d] / std::max(relations[d].rows, 1.0);
    }
    if (!tried && (!dimensions || share > kBranchShare)) continue;
    std::vector<JoinInput> branch;
    for (size_t d : members) {
      branch.push_back(std::move(relations[d]));
      merged[d] = true;
    }
    std::vector<cp::Expression> inside;
    for (size_t c = 0; c < conjuncts.size(); ++c) {
      if (inside_of(members, c)) {
        inside.push_back(conjuncts[c]);
        taken[c] = true;
      } else if (auto eq = ColumnEquality(conjuncts[c]);
                 eq && !derived(c) && reads[c].size() == 2 && reads[c].count(start) &&
                 !reads[c].count(root)) {
        // Across the edge from a member other than the root: implied by the root's equality
        // of its class and the branch's own between the two.
        const size_t member = *reads[c].begin() == start ? *reads[c].rbegin() : *reads[c].begin();
        taken[c] = members.count(member) > 0 &&
                   linked.count({equal_class.at(eq->first), std::min(member, root),
                                 std::max(member, root)}) > 0;
      }
    }
    ARROW_ASSIGN_OR_RAISE(JoinInput joined, OrderJoins(std::move(branch), inside, filters, rest));
    ordered.push_back(std::move(joined));
  }
  if (ordered.empty()) return OrderGreedily(std::move(relations), conditions, filters, rest);
  for (size_t i = 0; i < n; ++i) {
    if (!merged[i]) ordered.push_back(std::move(relations[i]));
  }
  std::vector<cp::Expression> outside;
  for (size_t c = 0; c < conjuncts.size(); ++c) {
    if (!taken[c] && !derived(c)) outside.push_back(conjuncts[c]);
  }
  return OrderGreedily(std::move(ordered), outside, filters, rest);
}

bool IsSubqueryStep(const PlanNode& n) {
  return (n.kind == PlanNode::Kind::kJoin && n.join_type != JoinType::kInner) ||
         (n.kind == PlanNode::Kind::kProject && n.keep_input);
}

bool IsLevelFilter(const PlanNode& filter) {
  if (filter.kind != PlanNode::Kind::kFilter) return false;
  const PlanNode* n = filter.input.get();
  while (n != nullptr && IsSubqueryStep(*n)) n = n->input.get();
  return n != nullptr && n->kind == PlanNode::Kind::kJoinSet;
}

namespace {

// Fills a join's estimates from the deferred cardinalities the binder left on it.
arrow::Status FillDeferredEstimates(PlanNode* join) {
  if (join->input_cardinality) {
    ARROW_ASSIGN_OR_RAISE(Cardinality c, join->input_cardinality());
    join->input_estimate = c.estimate;
    join->input_cardinality = nullptr;
  }
  if (join->right_cardinality) {
    ARROW_ASSIGN_OR_RAISE(Cardinality c, join->right_cardinality());
    join->right_estimate = c.estimate;
    join->right_cardinality = nullptr;
  }
  return arrow::Status::OK();
}

// Where WHERE compares an uncorrelated scalar subquery's result with the columns of one FROM
// item alone (TPC-DS q06's `d_month_seq = (select distinct d_month_seq ...)`), the subquery's
// join (a left join on a constant key, with the projection of that key, from `lefts`) and those
// conditions go onto that item, out of `lefts` and `*predicate`, and its estimate shrinks by
// their selectivity. Above all the joins, the condition filtered the whole join (q06: 2.7M
// rows joined to keep 29K); on its item, the item is small and joins early.
void ScalarSubqueriesOntoItems(std::vector<std::unique_ptr<PlanNode>>* lefts,
                               std::vector<JoinInput>* relations, cp::Expression* predicate) {
  // The constant keys the projections among `lefts` compute, each the projection's only column.
  std::map<std::string, size_t> constant_key;
  std::map<std::string, int> key_uses;
  for (size_t j = 0; j < lefts->size(); ++j) {
    const PlanNode& step = *(*lefts)[j];
    if (step.kind == PlanNode::Kind::kProject && step.expressions.size() == 1 &&
        step.expressions[0].literal() != nullptr) {
      constant_key[step.names[0]] = j;
    }
    if (step.kind == PlanNode::Kind::kJoin) {
      for (const auto& k : step.left_keys) ++key_uses[k];
    }
  }
  std::vector<cp::Expression> conjuncts;
  Conjuncts(*predicate, &conjuncts);
  std::vector<bool> conjunct_moved(conjuncts.size(), false);
  std::vector<bool> step_moved(lefts->size(), false);
  // The FROM item that has column `id`.
  const auto item_of = [&](const std::string& id) -> std::optional<size_t> {
    for (size_t r = 0; r < relations->size(); ++r) {
      const auto& ids = (*relations)[r].ids;
      if (std::find(ids.begin(), ids.end(), id) != ids.end()) return r;
    }
    return std::nullopt;
  };
  for (size_t j = 0; j < lefts->size(); ++j) {
    PlanNode& join = *(*lefts)[j];
    if (join.kind != PlanNode::Kind::kJoin || join.join_type != JoinType::kLeft ||
        join.left_keys.size() != 1 || !join.join_filter.Equals(cp::literal(true))) {
      continue;
    }
    const auto key = constant_key.find(join.left_keys[0]);
    if (key == constant_key.end() || key_uses[join.left_keys[0]] != 1) continue;
    const std::vector<std::string> result_ids = join.right->OutputNames();
    const std::set<std::string> result(result_ids.begin(), result_ids.end());
    std::optional<size_t> item;
    std::vector<size_t> mine;
    bool several_items = false;
    for (size_t c = 0; c < conjuncts.size() && !several_items; ++c) {
      if (conjunct_moved[c]) continue;
      bool reads_result = false, one_item = true;
      std::optional<size_t> at;
      for (const auto& ref : cp::FieldsInExpression(conjuncts[c])) {
        if (ref.name() == nullptr) {
          one_item = false;
        } else if (result.count(*ref.name())) {
          reads_result = true;
        } else if (const auto r = item_of(*ref.name()); r && (!at || *at == *r)) {
          at = r;
        } else {
          one_item = false;  // another item's column, or another subquery's result
        }
      }
      if (!reads_result || !one_item || !at) continue;
      several_items = item && *item != *at;
      item = at;
      mine.push_back(c);
    }
    if (several_items || !item) continue;
    JoinInput& r = (*relations)[*item];
    std::vector<cp::Expression> conditions;
    double selectivity = 1;
    for (size_t c : mine) {
      conditions.push_back(conjuncts[c]);
      selectivity *= Selectivity(conjuncts[c], r);
      conjunct_moved[c] = true;
    }
    std::unique_ptr<PlanNode> project = std::move((*lefts)[key->second]);
    std::unique_ptr<PlanNode> moved = std::move((*lefts)[j]);
    step_moved[key->second] = step_moved[j] = true;
    project->input = std::move(r.plan);
    moved->input = std::move(project);
    moved->input_estimate = r.estimate;
    r.plan = WithFilter(std::move(moved), conditions);
    r.ids = r.plan->OutputNames();
    r.estimate = std::max(1.0, r.estimate * selectivity);
  }
  std::vector<std::unique_ptr<PlanNode>> kept;
  for (size_t j = 0; j < lefts->size(); ++j) {
    if (!step_moved[j]) kept.push_back(std::move((*lefts)[j]));
  }
  *lefts = std::move(kept);
  std::vector<cp::Expression> rest;
  for (size_t c = 0; c < conjuncts.size(); ++c) {
    if (!conjunct_moved[c]) rest.push_back(conjuncts[c]);
  }
  *predicate = rest.empty() ? cp::literal(true) : rest.size() == 1 ? rest[0] : cp::and_(rest);
}

// A FROM item that is a left join L ⟕ R, where no condition of the level reads R together with
// another item: (L ⟕ R) ⋈ X is (L ⋈ X) ⟕ R, so the other items may join L first and the left
// join runs on what they keep. Done for the largest item, whose joins to the others keep few of
// its rows when they filter and no more when they do not (TPC-DS q80 probed store_returns with
// all 2.9M store_sales rows, of which the date filter then kept 1/60). The same holds for an
// anti join L ▷ R (a left join whose padded rows alone are kept, outer_join_simplification.h),
// whose R no condition above it can read: TPC-DS q78 probed store_returns with all 2.9M rows,
// of which the date join then kept a fifth. Its relation becomes L (several times over for
// L ⟕ R1 ▷ R2); returns the joins taken off, outermost first, for OrderLevel to put back above
// the joins. Conditions reading R stay above them (OrderJoins' rest).
std::vector<std::unique_ptr<PlanNode>> LiftLeftJoins(std::vector<JoinInput>* relations,
                                                     const cp::Expression& predicate) {
  std::vector<std::unique_ptr<PlanNode>> lifted;
  if (relations->size() < 2) return lifted;
  size_t big = 0;
  for (size_t i = 1; i < relations->size(); ++i) {
    if ((*relations)[i].estimate > (*relations)[big].estimate) big = i;
  }
  std::set<std::string> others;
  for (size_t i = 0; i < relations->size(); ++i) {
    if (i != big) others.insert((*relations)[i].ids.begin(), (*relations)[i].ids.end());
  }
  std::vector<cp::Expression> conjuncts;
  Conjuncts(predicate, &conjuncts);
  JoinInput& r = (*relations)[big];
  while (r.plan->kind == PlanNode::Kind::kJoin &&
         (r.plan->join_type == JoinType::kLeft || r.plan->join_type == JoinType::kAnti) &&
         !r.plan->null_equal_keys && r.plan->right != nullptr) {
    const std::vector<std::string> right_ids = r.plan->right->OutputNames();
    const std::set<std::string> right(right_ids.begin(), right_ids.end());
    bool mixed = false;
    for (const auto& c : conjuncts) {
      bool reads_right = false, reads_other = false;
      for (const auto& ref : cp::FieldsInExpression(c)) {
        if (ref.name() == nullptr) continue;
        reads_right = reads_right || right.count(*ref.name()) != 0;
        reads_other = reads_other || others.count(*ref.name()) != 0;
      }
      mixed = mixed || (reads_right && reads_other);
    }
    if (mixed) break;
    std::unique_ptr<PlanNode> join = std::move(r.plan);
    r.plan = std::move(join->input);
    r.ids = r.plan->OutputNames();
    lifted.push_back(std::move(join));
  }
  return lifted;
}

// Whether `n` is a semi or anti join whose outer keys include all of `names`.
bool IsSemiJoinOn(const PlanNode& n, const std::vector<std::string>& names) {
  if (n.kind != PlanNode::Kind::kJoin ||
      (n.join_type != JoinType::kSemi && n.join_type != JoinType::kAnti)) {
    return false;
  }
  return std::all_of(names.begin(), names.end(), [&](const std::string& name) {
    return std::find(n.left_keys.begin(), n.left_keys.end(), name) != n.left_keys.end();
  });
}

// Orders the level whose WHERE Filter is at *slot (IsLevelFilter).
arrow::Status OrderLevel(std::unique_ptr<PlanNode>* slot) {
  PlanNode& filter = **slot;
  // The subqueries' joins, bottom-up: the semi joins, then the left joins of scalar subqueries
  // (with their constant keys).
  std::vector<std::unique_ptr<PlanNode>> chain;
  std::unique_ptr<PlanNode> node = std::move(filter.input);
  while (IsSubqueryStep(*node)) {
    std::unique_ptr<PlanNode> below = std::move(node->input);
    chain.insert(chain.begin(), std::move(node));
    node = std::move(below);
  }
  std::unique_ptr<PlanNode> set = std::move(node);
  std::vector<SemiJoin> semis;
  std::vector<std::unique_ptr<PlanNode>> lefts;
  for (size_t i = 0; i < chain.size(); ++i) {
    auto& j = chain[i];
    std::unique_ptr<PlanNode> key_project;
    if (j->kind == PlanNode::Kind::kProject && i + 1 < chain.size() &&
        IsSemiJoinOn(*chain[i + 1], j->names)) {
      // The binder's projection of an IN's key that is an expression: it goes with its join.
      key_project = std::move(j);
      j = std::move(chain[++i]);
    }
    if (j->kind == PlanNode::Kind::kProject || j->join_type == JoinType::kLeft) {
      lefts.push_back(std::move(j));
      continue;
    }
    if (!lefts.empty()) {
      return arrow::Status::Invalid("internal: join_order: a semi join above a scalar subquery's");
    }
    SemiJoin s;
    s.key_project = std::move(key_project);
    s.plan = std::move(j->right);
    s.outer_keys = j->left_keys;
    s.inner_keys = j->right_keys;
    s.filter = j->join_filter;
    s.anti = j->join_type == JoinType::kAnti;
    s.estimate = j->right_estimate;
    semis.push_back(std::move(s));
  }
  if (set->item_cardinalities.size() != set->items.size() ||
      set->item_names.size() != set->items.size()) {
    return arrow::Status::Invalid("internal: join_order: a join set without an estimate per item");
  }
  std::vector<JoinInput> relations;
  for (size_t i = 0; i < set->items.size(); ++i) {
    JoinInput r;
    ARROW_ASSIGN_OR_RAISE(static_cast<Cardinality&>(r), set->item_cardinalities[i]());
    r.plan = std::move(set->items[i]);
    r.ids = r.plan->OutputNames();
    r.name = set->item_names[i];
    relations.push_back(std::move(r));
  }
  std::vector<std::unique_ptr<PlanNode>> lifted = LiftLeftJoins(&relations, filter.predicate);
  // A semi join on one FROM item other than the largest runs on it before the joins.
  if (relations.size() > 1 && !semis.empty()) {
    semis = PlaceSemiJoins(&relations, std::move(semis));
  }
  if (relations.size() > 1) ScalarSubqueriesOntoItems(&lefts, &relations, &filter.predicate);
  std::vector<cp::Expression> filters, rest;
  ARROW_ASSIGN_OR_RAISE(JoinInput joined,
                        OrderJoins(std::move(relations), {filter.predicate}, &filters, &rest));
  const Cardinality estimate = joined;
  double filtered = joined.estimate;
  for (const auto& c : rest) filtered *= Selectivity(c, joined);
  // Semi joins only drop rows, and read no scalar subquery's result: they go right after the
  // joins, so that a correlated scalar subquery is joined to fewer rows (Q20: 8.5K partsupp
  // rows, not 800K).
  std::unique_ptr<PlanNode> plan = std::move(joined.plan);
  for (auto it = lifted.rbegin(); it != lifted.rend(); ++it) {
    (*it)->input = std::move(plan);
    (*it)->input_estimate = joined.estimate;
    plan = std::move(*it);
  }
  plan = ApplySemiJoins(std::move(plan), std::move(semis), joined.estimate);
  for (auto& left : lefts) {
    left->input = std::move(plan);
    plan = std::move(left);
  }
  filters.insert(filters.end(), rest.begin(), rest.end());
  if (set->join_set != nullptr) {
    set->join_set->joined = estimate;
    set->join_set->filtered = filtered;
    set->join_set->ready = true;
  }
  *slot = WithFilter(std::move(plan), filters);
  return arrow::Status::OK();
}

arrow::Status OrderAt(std::unique_ptr<PlanNode>* slot) {
  PlanNode* node = slot->get();
  if (node->kind == PlanNode::Kind::kDependentJoin) {
    return arrow::Status::Invalid("internal: join_order runs after decorrelate");
  }
  if (node->kind == PlanNode::Kind::kJoin) ARROW_RETURN_NOT_OK(FillDeferredEstimates(node));
  if (IsLevelFilter(*node)) return OrderLevel(slot);
  return arrow::Status::OK();
}

bool HasJoinSet(const PlanNode* node) {
  if (node == nullptr) return false;
  if (node->kind == PlanNode::Kind::kJoinSet) return true;
  return HasJoinSet(node->input.get()) || HasJoinSet(node->right.get());
}

}  // namespace

arrow::Status OrderJoinSets(PlanNode* plan) {
  // Inner levels first: a level's items and subqueries are ordered before it is.
  ARROW_RETURN_NOT_OK(RewriteBottomUp(plan, OrderAt));
  if (HasJoinSet(plan)) {
    return arrow::Status::Invalid("internal: join_order: a join set without its WHERE Filter");
  }
  return arrow::Status::OK();
}

}  // namespace sluice::sql
