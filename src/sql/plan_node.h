// The logical/physical plan of a query: a tree of operators over Arrow compute expressions.
// Aggregates are always planned as a partial and a final step, even in one process, so that
// distributing a query only has to cut between them.
#pragma once

#include <arrow/compute/expression.h>
#include <arrow/compute/ordering.h>
#include <arrow/type_fwd.h>

#include <memory>
#include <string>
#include <vector>

#include "sql/table_source.h"

namespace sluice::sql {

struct AggregateCall {
  /// Acero's hash_* / scalar function name without the prefix: sum, count, count_all, min,
  /// max, count_distinct.
  std::string function;
  /// Input column (after the pre-aggregation projection); empty for count_all.
  std::string input;
  std::string output;
};

struct PlanNode {
  enum class Kind { kScan, kFilter, kProject, kAggregate, kSort, kLimit, kJoin };
  Kind kind;
  std::unique_ptr<PlanNode> input;
  /// kJoin: the build side; `input` is the probe side.
  std::unique_ptr<PlanNode> right;
  std::vector<std::string> left_keys;
  std::vector<std::string> right_keys;

  // kScan: the columns to read and a filter pushed down to row groups (also applied by a
  // kFilter above it, since pushdown only skips whole row groups).
  std::shared_ptr<TableSource> table;
  std::vector<std::string> columns;
  arrow::compute::Expression scan_filter = arrow::compute::literal(true);

  // kFilter
  arrow::compute::Expression predicate;

  // kProject
  std::vector<arrow::compute::Expression> expressions;
  std::vector<std::string> names;

  // kAggregate
  bool final_phase = false;
  std::vector<std::string> keys;
  std::vector<AggregateCall> aggregates;

  // kSort
  std::vector<arrow::compute::SortKey> sort_keys;

  // kLimit
  int64_t offset = 0;
  int64_t count = -1;

  /// One line per node, children indented.
  std::string Explain(int indent = 0) const;
};

}  // namespace sluice::sql
