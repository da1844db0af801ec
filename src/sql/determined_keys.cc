#include "sql/determined_keys.h"

#include <arrow/api.h>
#include <arrow/compute/api.h>

#include <algorithm>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "exec/plan_executor.h"
#include "exec/shared_subplans.h"
#include "plan/conjuncts.h"
#include "plan/library_functions.h"
#include "plan/stage_shape.h"
#include "sql/optimizer/column_pruning.h"

namespace sluice::sql {

namespace cp = arrow::compute;
using Kind = PlanNode::Kind;

namespace {

void Walk(PlanNode* node, const std::function<void(PlanNode*)>& visit) {
  if (node == nullptr) return;
  visit(node);
  Walk(node->input.get(), visit);
  Walk(node->right.get(), visit);
  for (auto& item : node->items) Walk(item.get(), visit);
}

std::set<std::string> NamesIn(const cp::Expression& e) {
  std::set<std::string> out;
  plan::AddColumnNames(e, &out);
  return out;
}

// Adds to `live` what `node` reads of its inputs, given that `live` holds the columns some
// operator above it (or the result) needs: a project's expressions only where their outputs are
// needed. Names are unique in a plan, and operators that pass columns on keep their names. The
// keys of `unread` (an aggregate whose keys are in question) count as not read.
void AddReads(const PlanNode& node, const PlanNode* unread, std::set<std::string>* live) {
  if (&node == unread) {
    for (const auto& a : node.aggregates) {
      if (!a.input.empty()) live->insert(a.input);
    }
    return;
  }
  if (node.kind != Kind::kProject) {
    AddColumnsReadBy(node, live);  // column pruning's reads (a union's: all its columns)
    return;
  }
  for (size_t i = 0; i < node.expressions.size(); ++i) {
    if (live->count(node.names[i])) plan::AddColumnNames(node.expressions[i], live);
  }
}

// The columns that the result or some operator needs, to a fixed point, but for the keys of
// the aggregates `final_agg` and `partial` (its partial step).
std::set<std::string> LiveNames(PlanNode* root, const PlanNode* final_agg,
                                const PlanNode* partial) {
  std::set<std::string> live;
  for (auto& n : root->OutputNames()) live.insert(std::move(n));
  for (size_t before = 0; before != live.size();) {
    before = live.size();
    Walk(root, [&](PlanNode* node) {
      AddReads(*node, node == final_agg || node == partial ? node : nullptr, &live);
    });
  }
  return live;
}

// Whether `e` gives one value for one row of its columns: no library function (whose author may
// not promise it) and no random().
bool Deterministic(const cp::Expression& e) {
  const cp::Expression::Call* call = e.call();
  if (call == nullptr) return true;
  if (call->function_name == "random" ||
      plan::ParseLibraryFunctionName(call->function_name).has_value()) {
    return false;
  }
  return std::all_of(call->arguments.begin(), call->arguments.end(), Deterministic);
}

// Whether column `column` of `scan`'s table holds no NULL and no value twice, read from the data
// (once per table and column in a process).
arrow::Result<bool> UniqueColumn(const PlanNode& scan, size_t column) {
  const TableSource& table = *scan.table;
  // Surrogate keys are integers; a string column (a name, a color) is seldom unique, and reading
  // it to find out costs more.
  const auto field = table.schema->GetFieldByName(scan.columns[column]);
  if (field == nullptr || !arrow::is_integer(field->type()->id())) return false;
  if ((table.format != "parquet" && table.format != "ipc") || scan.split ||
      !table.row_group_ranges.empty() || table.num_rows <= 0 ||
      table.num_rows > kUniqueProbeMaxRows) {
    return false;
  }
  // Fewer values in the column's range than rows: some value repeats (TPC-DS q79's ticket
  // numbers, 240K of them over store_sales' 2.9M rows), known from the footers alone.
  auto range = table.int_ranges.find(scan.columns[column]);
  if (range != table.int_ranges.end() &&
      static_cast<double>(range->second.second) - static_cast<double>(range->second.first) + 1 <
          static_cast<double>(table.num_rows)) {
    return false;
  }
  std::string key = table.location + '\n' + scan.columns[column];
  for (size_t i = 0; i < table.files.size(); ++i) {
    key += '\n' + table.files[i] + ' ' +
           (i < table.file_bytes.size() ? std::to_string(table.file_bytes[i]) : "");
  }
  static std::mutex mutex;
  static std::map<std::string, bool> known;
  {
    std::lock_guard<std::mutex> lock(mutex);
    auto at = known.find(key);
    if (at != known.end()) return at->second;
  }
  auto probe = plan::MakeNode(Kind::kScan);
  probe->table = scan.table;
  probe->columns = {scan.columns[column]};
  probe->names = {scan.names[column]};
  ARROW_ASSIGN_OR_RAISE(auto rows, exec::ExecuteInPlanTypes(*probe));
  const auto values = rows->column(0);
  bool unique = values->null_count() == 0;
  if (unique) {
    ARROW_ASSIGN_OR_RAISE(
        arrow::Datum distinct,
        cp::CallFunction("count_distinct", {values},
                         std::make_shared<cp::CountOptions>(cp::CountOptions::ALL).get()));
    unique = distinct.scalar_as<arrow::Int64Scalar>().value == values->length();
  }
  std::lock_guard<std::mutex> lock(mutex);
  known[key] = unique;
  return unique;
}

// Drops from `names` (and `expressions`, index for index) the entries `drop` says to.
void EraseWhere(PlanNode* project, const std::function<bool(size_t)>& drop) {
  std::vector<cp::Expression> expressions;
  std::vector<std::string> names;
  for (size_t i = 0; i < project->names.size(); ++i) {
    if (drop(i)) continue;
    expressions.push_back(std::move(project->expressions[i]));
    names.push_back(std::move(project->names[i]));
  }
  project->expressions = std::move(expressions);
  project->names = std::move(names);
}

// The keys of `final_agg` (over `partial`) that may go. `root`: the whole plan, whose liveness
// decides what is read above.
arrow::Result<std::vector<std::string>> DropKeys(PlanNode* root, PlanNode* final_agg,
                                                 PlanNode* partial) {
  std::vector<std::string> dropped;
  const std::vector<std::string> keys = final_agg->keys;
  if (keys.size() < 2) return dropped;
  // Each key's expression: the projection under the partial step computes it, or it passes.
  const PlanNode* defs = partial->input->kind == Kind::kProject ? partial->input.get() : nullptr;
  auto def = [&](const std::string& name) -> cp::Expression {
    if (defs != nullptr) {
      for (size_t i = 0; i < defs->names.size(); ++i) {
        if (defs->names[i] == name) return defs->expressions[i];
      }
    }
    return cp::field_ref(name);
  };
  // The scans under the aggregate, by their output names.
  std::map<std::string, std::pair<const PlanNode*, size_t>> scanned;
  for (const PlanNode* scan : plan::ScansOf(*partial)) {
    if (scan->table == nullptr) continue;
    for (size_t i = 0; i < scan->names.size(); ++i) scanned[scan->names[i]] = {scan, i};
  }
  std::optional<std::set<std::string>> live;  // computed once, where some key may go
  for (const auto& key : keys) {
    // A key that goes determines nothing: each that stays must be determined by one that stays.
    if (std::find(dropped.begin(), dropped.end(), key) != dropped.end()) continue;
    const cp::Expression key_def = def(key);
    const arrow::FieldRef* ref = key_def.field_ref();
    if (ref == nullptr || ref->name() == nullptr) continue;
    auto at = scanned.find(*ref->name());
    if (at == scanned.end()) continue;
    const PlanNode* scan = at->second.first;
    const std::set<std::string> table_columns(scan->names.begin(), scan->names.end());
    std::vector<std::string> candidates;
    for (const auto& other : keys) {
      if (other == key || std::find(dropped.begin(), dropped.end(), other) != dropped.end()) {
        continue;
      }
      const cp::Expression other_def = def(other);
      const std::set<std::string> reads = NamesIn(other_def);
      if (!Deterministic(other_def) ||
          !std::includes(table_columns.begin(), table_columns.end(), reads.begin(), reads.end())) {
        continue;
      }
      // Read above? Only its own aggregate may read it.
      if (!live) live = LiveNames(root, final_agg, partial);
      if (live->count(other) == 0) candidates.push_back(other);
    }
    if (candidates.empty()) continue;
    ARROW_ASSIGN_OR_RAISE(bool unique, UniqueColumn(*scan, at->second.second));
    if (!unique) continue;
    dropped.insert(dropped.end(), candidates.begin(), candidates.end());
  }
  return dropped;
}

}  // namespace

arrow::Status DropDeterminedGroupKeys(PlanNode* plan) {
  std::vector<std::pair<PlanNode*, PlanNode*>> aggregates;
  Walk(plan, [&](PlanNode* node) {
    if (node->kind == Kind::kAggregate && node->final_phase && node->input != nullptr &&
        node->input->kind == Kind::kAggregate && !node->input->final_phase &&
        node->input->keys == node->keys && node->input->input != nullptr) {
      aggregates.emplace_back(node, node->input.get());
    }
  });
  // Which keys each may drop, by position.
  std::vector<std::set<size_t>> drops(aggregates.size());
  bool any = false;
  for (size_t i = 0; i < aggregates.size(); ++i) {
    auto [final_agg, partial] = aggregates[i];
    ARROW_ASSIGN_OR_RAISE(auto dropped, DropKeys(plan, final_agg, partial));
    for (const auto& d : dropped) {
      drops[i].insert(static_cast<size_t>(
          std::find(final_agg->keys.begin(), final_agg->keys.end(), d) - final_agg->keys.begin()));
    }
    any |= !drops[i].empty();
  }
  if (!any) return arrow::Status::OK();
  // Copies of one subplan (a WITH query read twice) run once (exec/shared_subplans.h) only while
  // they stay the same: where their readings differ in what they read (TPC-DS q64's cross_sales,
  // whose product name one reading selects), none drops a key.
  for (bool changed = true; changed;) {
    changed = false;
    for (size_t i = 0; i < aggregates.size(); ++i) {
      for (size_t j = i + 1; j < aggregates.size(); ++j) {
        if (drops[i] == drops[j] ||
            !exec::SameSubplan(*aggregates[i].first, *aggregates[j].first)) {
          continue;
        }
        drops[i].clear();
        drops[j].clear();
        changed = true;
      }
    }
  }
  std::set<std::string> removed;
  for (size_t i = 0; i < aggregates.size(); ++i) {
    auto [final_agg, partial] = aggregates[i];
    std::vector<std::string> keys;
    for (size_t k = 0; k < final_agg->keys.size(); ++k) {
      if (drops[i].count(k)) {
        removed.insert(final_agg->keys[k]);
      } else {
        keys.push_back(final_agg->keys[k]);
      }
    }
    final_agg->keys = keys;
    partial->keys = std::move(keys);
  }
  if (removed.empty()) return arrow::Status::OK();
  // The projections that computed the dropped keys, and those above that read them (whose
  // outputs nothing reads either, or the keys would have been read), go too.
  for (bool changed = true; changed;) {
    changed = false;
    Walk(plan, [&](PlanNode* node) {
      if (node->kind != Kind::kProject) return;
      const size_t before = node->names.size();
      EraseWhere(node, [&](size_t i) {
        if (removed.count(node->names[i])) return true;
        for (const auto& n : NamesIn(node->expressions[i])) {
          if (removed.count(n)) {
            removed.insert(node->names[i]);
            return true;
          }
        }
        return false;
      });
      changed |= node->names.size() != before;
    });
  }
  PruneColumns(plan);
  return arrow::Status::OK();
}

}  // namespace sluice::sql
