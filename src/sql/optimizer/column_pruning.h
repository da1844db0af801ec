// Column pruning: every scan reads only the columns some operator above it reads. Columns are
// named uniquely in the whole plan ("l_orderkey#3"), so one set of names read anywhere decides
// for every scan. Other operators keep their columns, since the binder only projects what the
// query asks for; except that a scan's filter's own columns, and a join's columns that nothing
// above it reads, are dropped right after it.
#pragma once

#include <set>
#include <string>

#include "sql/plan_node.h"

namespace sluice::sql {

/// The plan columns that the expressions, keys and filters of `plan`'s operators read.
std::set<std::string> ColumnsRead(const PlanNode& plan);

/// Adds to `out` the columns of its inputs that `node` itself reads (not its inputs' operators).
void AddColumnsReadBy(const PlanNode& node, std::set<std::string>* out);

/// Drops from every scan in `plan` the columns not in ColumnsRead(*plan). A scan none of whose
/// columns is read (count(*)) keeps its first, so that it still produces rows. Above a filter
/// of a scan that reads columns nothing above it reads, and above a join that outputs such
/// columns, adds a project that drops them.
void PruneColumns(PlanNode* plan);

}  // namespace sluice::sql
