// The logical/physical plan of a query: a tree of operators over Arrow compute expressions.
// Every column in a plan has a name unique in the whole query ("l_orderkey#3"), so a self-join
// or a correlated subquery over the same table never confuses two columns. Aggregates are always
// planned as a partial and a final step, even in one process, so that distributing a query only
// has to cut between them.
#pragma once

#include <arrow/compute/expression.h>
#include <arrow/compute/ordering.h>
#include <arrow/result.h>
#include <arrow/type_fwd.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "sql/table_source.h"

namespace sluice::sql {

struct AggregateCall {
  /// Acero's hash_* / scalar function name without the prefix: sum, count, count_all, min,
  /// max.
  std::string function;
  /// Input column (after the pre-aggregation projection); empty for count_all.
  std::string input;
  std::string output;
};

enum class JoinType { kInner, kLeft, kSemi, kAnti };

/// "inner", "left", "semi" or "anti": for EXPLAIN and plan bytes.
const char* JoinTypeName(JoinType type);

struct PlanNode {
  enum class Kind { kScan, kFilter, kProject, kAggregate, kSort, kLimit, kJoin };
  Kind kind;
  std::unique_ptr<PlanNode> input;
  /// kJoin: the build side; `input` is the probe side (and the preserved side of a left join,
  /// the side a semi or anti join keeps rows of).
  std::unique_ptr<PlanNode> right;
  JoinType join_type = JoinType::kInner;
  std::vector<std::string> left_keys;
  std::vector<std::string> right_keys;
  /// kJoin other than inner: hash `input` and stream `right` past it (when `input` is smaller).
  bool build_input = false;
  /// kJoin: a condition on matched pairs beyond the key equalities (ON ... AND a <> b).
  arrow::compute::Expression join_filter = arrow::compute::literal(true);

  // kScan: the file columns to read, output under `names`, and a filter (over `names`) pushed
  // down to row groups, also applied by a kFilter above it since pushdown only skips whole row
  // groups.
  std::shared_ptr<TableSource> table;
  std::vector<std::string> columns;
  arrow::compute::Expression scan_filter = arrow::compute::literal(true);
  /// Rows per scanned batch: large batches amortize per-batch work in scans and aggregates;
  /// smaller ones bound what waits in memory for a hash join's build side.
  int64_t batch_rows = 128 * 1024;

  // kFilter
  arrow::compute::Expression predicate;

  // kProject (and kScan's output names). With keep_input the input's columns pass through
  // first, whichever of them survive column pruning.
  std::vector<arrow::compute::Expression> expressions;
  std::vector<std::string> names;
  bool keep_input = false;

  // kAggregate: no aggregates with keys is a DISTINCT.
  bool final_phase = false;
  std::vector<std::string> keys;
  std::vector<AggregateCall> aggregates;

  // kSort
  std::vector<arrow::compute::SortKey> sort_keys;

  // kLimit
  int64_t offset = 0;
  int64_t count = -1;

  /// The columns this node outputs, in order.
  std::vector<std::string> OutputNames() const;

  /// One line per node, children indented; `annotate` adds text to a node's line.
  std::string Explain(int indent = 0,
                      const std::function<std::string(const PlanNode&)>& annotate = {}) const;
};

/// The type an aggregate step produces from its input type.
arrow::Result<std::shared_ptr<arrow::DataType>> AggregateOutputType(
    const AggregateCall& call, const std::shared_ptr<arrow::DataType>& input);

/// The schema a plan produces, derived without running it: expression types are bound against
/// each operator's input, aggregate types resolved through Arrow's function registry.
arrow::Result<std::shared_ptr<arrow::Schema>> OutputSchema(const PlanNode& node);

/// The same for one node, given its inputs' schemas (`right` only for a join).
arrow::Result<std::shared_ptr<arrow::Schema>> NodeOutputSchema(
    const PlanNode& node, const std::shared_ptr<arrow::Schema>& in,
    const std::shared_ptr<arrow::Schema>& right);

}  // namespace sluice::sql
