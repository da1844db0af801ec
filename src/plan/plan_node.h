// The physical plan: one tree type for what a SQL query and a job compile to, and what the one
// plan codec (plan_codec.h) carries to workers. Relational operators run over Arrow compute
// expressions; job operators (scan objects, transform, dedup, sink write) and the exchange's two
// ends (shuffle read and shuffle write) sit in the same tree.
//
// Every column in a plan has a name unique in the whole query ("l_orderkey#3"), so a self-join
// or a correlated subquery over the same table never confuses two columns. Aggregates are always
// planned as a partial and a final step, even in one process, so that distributing a query only
// has to cut between them.
//
// Two kinds exist only in the logical plan, between the binder and the optimizer's first passes:
// an unordered set of inner joins (kJoinSet, which the join_order pass orders) and a join to a
// subquery that still reads the outer query's columns (kDependentJoin, which the decorrelate
// pass turns into a join). Plan bytes, the stage planner and the executors never see them.
#pragma once

#include <arrow/compute/expression.h>
#include <arrow/compute/ordering.h>
#include <arrow/result.h>
#include <arrow/type_fwd.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "plan/cardinality.h"
#include "plan/expression_text.h"
#include "plan/table_source.h"

namespace sluice::plan {

struct AggregateCall {
  /// Acero's hash_* / scalar function name without the prefix: sum, count, count_all, min,
  /// max.
  std::string function;
  /// Input column (after the pre-aggregation projection); empty for count_all.
  std::string input;
  std::string output;
};

enum class JoinType { kInner, kLeft, kSemi, kAnti, kFull };

/// The rows a window aggregate reads around each row of its partition, in the partition's
/// order: ROWS counts rows, RANGE moves in whole peer groups (rows equal on the ORDER BY keys).
struct WindowFrame {
  enum class Unit { kRows, kRange };
  enum class Bound {
    kUnboundedPreceding,
    kPreceding,
    kCurrentRow,
    kFollowing,
    kUnboundedFollowing
  };
  Unit unit = Unit::kRange;
  Bound start = Bound::kUnboundedPreceding;
  int64_t start_offset = 0;  // kPreceding / kFollowing: how many rows
  Bound end = Bound::kCurrentRow;
  int64_t end_offset = 0;
};

/// One window function: `function` over `arguments` (input columns) in each partition of rows
/// equal on `partition_keys`, ordered by `order_keys`.
struct WindowCall {
  /// row_number, rank, dense_rank, percent_rank, cume_dist, ntile, lag, lead, first_value,
  /// last_value, nth_value, or the aggregates sum, count, count_all, min, max over the frame.
  std::string function;
  /// The value; lag and lead may add their default's column.
  std::vector<std::string> arguments;
  /// ntile's bucket count, lag's and lead's offset, nth_value's n.
  int64_t parameter = 0;
  std::vector<std::string> partition_keys;
  std::vector<arrow::compute::SortKey> order_keys;
  WindowFrame frame;
  std::string output;
};

/// The window functions the executor computes (WindowCall::function).
bool IsWindowFunction(const std::string& name);

/// Reads JSONL, Parquet or IPC objects and parses them against `schema`. Object i of this task
/// has global index first_object_index + i in the job's sorted object list; that index orders
/// rows for dedup.
struct ScanObjects {
  std::string format;  // "jsonl" | "parquet" | "ipc"
  std::vector<std::string> keys;
  int64_t first_object_index = 0;
  /// The schema record type id the rows are parsed as (JSONL), and its Arrow schema.
  std::string schema_id;
  std::shared_ptr<arrow::Schema> schema;
  /// With skip_bad_records a bad JSONL line is counted and dropped instead of failing the task.
  bool skip_bad_records = false;
};

/// Reads this task's partition from the shuffle files that the stage below wrote. Each file's
/// BLAKE3, as its writer reported it, is checked before a byte of it is parsed: a flipped bit
/// that still makes valid Arrow must be an error, never another answer.
struct ShuffleRead {
  std::vector<std::string> files;
  /// Hex digests, one per file.
  std::vector<std::string> blake3;
  std::shared_ptr<arrow::Schema> schema;
  /// The columns the rows were hash-partitioned on (a worker checks a stage's shape by them).
  std::vector<std::string> partition_keys;
  /// What the rows' hidden columns computed in the stage below, for errors (column_texts.h).
  ColumnTexts column_texts;
};

/// Calls a published batch transform, loaded by pin through the verified loader, once per
/// input object.
struct CallTransform {
  std::string qualified_name;
  std::string pin;
  /// Null for a transform declared to emit `any` schema.
  std::shared_ptr<arrow::Schema> output_schema;
};

/// Ends a task's plan with an exchange: rows go to `partitions` shuffle files by the hash of
/// `keys` (no keys: one file). File p is `<folder>/<task>-<attempt>/part-<p>.arrow`
/// (ShuffleFileKey), so no two attempts share a file name.
struct ShuffleWrite {
  std::vector<std::string> keys;
  int32_t partitions = 1;
  std::string folder;
  /// Drop repeats of `keys` before writing, down to about one row per key (a semi or anti
  /// join's build side, which asks only whether a key is there: exec/key_repeats.h).
  bool one_row_per_key = false;
};

/// Where one stage's rows leave for the next, in a plan before the stage cutter
/// (dist/stage_cutter.h) makes it a shuffle write at the top of the producing stage's tasks and
/// a shuffle read of one partition in each consuming task: rows are hash-partitioned on `keys`
/// (none: all into one) into `partitions` parts, or gathered: each task writes one part that the
/// caller of the stages reads (SQL's driver).
struct Exchange {
  std::vector<std::string> keys;
  int32_t partitions = 1;
  bool gather = false;
  /// Drop repeats of `keys` before writing, down to about one row per key (a semi or anti
  /// join's build side, which asks only whether a key is there: exec/key_repeats.h).
  bool one_row_per_key = false;
  /// The rows' schema when it is not the input's output schema (a job's rows carry the hidden
  /// sequence column).
  std::shared_ptr<arrow::Schema> schema;
};

/// Keeps the first row of each `key` in sequence order (the hidden __seq column).
struct DedupFirst {
  std::string key;
};

/// Ends a task by writing one sink part object.
struct WriteSink {
  std::string format;  // "parquet" | "ipc"
  std::string key;
};

/// "inner", "left", "semi", "anti" or "full": for EXPLAIN and plan bytes.
const char* JoinTypeName(JoinType type);

/// What a node holds apart from its inputs, so that a plan can be copied node by node. Each
/// field is used by the kinds its comment names.
struct PlanNodeFields {
  enum class Kind {
    // Relational operators.
    kScan,
    kFilter,
    kProject,
    kAggregate,
    kSort,
    kLimit,
    kJoin,
    // Job operators: a chain from kScanObjects or kShuffleRead, run in object order.
    kScanObjects,
    kTransform,
    kDedup,
    kSinkWrite,
    // The two ends of an exchange between stages (both front doors).
    kShuffleRead,
    kShuffleWrite,
    // Logical plans only. kJoinSet: inner joins of `items` in no order yet, their conditions in
    // the Filter above (through the joins to subqueries). kDependentJoin: `input` joined to the
    // subquery `right` as `join_type` says (semi or anti: EXISTS or IN; left: a scalar
    // subquery), with the subquery's conditions on outer columns still in a Filter of their own
    // inside it; left_keys and right_keys already hold IN's column pair, or an uncorrelated
    // scalar subquery's constant key names.
    kJoinSet,
    kDependentJoin,
    // Between stages before the stage cutter runs (both front doors).
    kExchange,
    // UNION ALL: the rows of `input`, then those of `right`, column by column (both sides
    // already of the same types), output under `names`.
    kUnion,
    // The input's columns, then one per window function (`windows`).
    kWindow,
  };
  Kind kind = Kind::kScan;
  JoinType join_type = JoinType::kInner;
  std::vector<std::string> left_keys;
  std::vector<std::string> right_keys;
  /// kJoin other than inner: hash `input` and stream `right` past it (when `input` is smaller).
  bool build_input = false;
  /// kJoin: NULL keys match each other (INTERSECT and EXCEPT compare rows, not values).
  bool null_equal_keys = false;
  /// kJoin: a condition on matched pairs beyond the key equalities (ON ... AND a <> b).
  arrow::compute::Expression join_filter = arrow::compute::literal(true);
  /// kJoin: the join_order pass's estimates of the rows of `input` and of `right` (after the
  /// conditions on that side alone), or -1 where it made none. The physical planner's passes choose
  /// the build side and scan batch sizes from them; they do not travel in plan bytes.
  double input_estimate = -1;
  double right_estimate = -1;

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

  // kProject (and kScan's and kUnion's output names). With keep_input the input's columns pass
  // through first, whichever of them survive column pruning.
  std::vector<arrow::compute::Expression> expressions;
  std::vector<std::string> names;
  bool keep_input = false;

  // kAggregate: no aggregates with keys is a DISTINCT.
  bool final_phase = false;
  /// A final step whose consumer combines its rows by key again (eager aggregation's grouping
  /// below a join): it may give a key in several rows, and passes rows through, each its own
  /// group, where grouping does not shrink them.
  bool repeats_keys = false;
  std::vector<std::string> keys;
  std::vector<AggregateCall> aggregates;

  // kSort
  std::vector<arrow::compute::SortKey> sort_keys;

  // kWindow
  std::vector<WindowCall> windows;

  // kLimit
  int64_t offset = 0;
  int64_t count = -1;

  /// kScan: this task reads only its share of the table (a map stage's split scan).
  bool split = false;

  // Logical plans only. kJoinSet: per item (PlanNode::items), its cardinality and its name in
  // FROM; `join_set` receives what ordering learned. kJoin and kDependentJoin: where set, the
  // join_order pass fills input_estimate and right_estimate from these.
  std::vector<DeferredCardinality> item_cardinalities;
  std::vector<std::string> item_names;
  std::shared_ptr<JoinSetResult> join_set;
  DeferredCardinality input_cardinality;
  DeferredCardinality right_cardinality;
  /// kDependentJoin: the subquery reads the outer query (decorrelate must find its Filter).
  bool correlated = false;

  ScanObjects objects;         // kScanObjects
  CallTransform transform;     // kTransform
  DedupFirst dedup;            // kDedup
  WriteSink sink;              // kSinkWrite
  ShuffleRead shuffle_read;    // kShuffleRead
  ShuffleWrite shuffle_write;  // kShuffleWrite
  Exchange exchange;           // kExchange
};

struct PlanNode : PlanNodeFields {
  std::unique_ptr<PlanNode> input;
  /// kJoin: the build side; `input` is the probe side (and the preserved side of a left join,
  /// the side a semi or anti join keeps rows of).
  std::unique_ptr<PlanNode> right;
  /// kJoinSet: the FROM items, in FROM order.
  std::vector<std::unique_ptr<PlanNode>> items;

  /// The columns this node outputs, in order.
  std::vector<std::string> OutputNames() const;

  /// One line per node, children indented; `annotate` adds text to a node's line.
  std::string Explain(int indent = 0,
                      const std::function<std::string(const PlanNode&)>& annotate = {}) const;
};

/// The kind's name in plan bytes and messages ("scan", "shuffle_write", ...).
const char* KindName(PlanNode::Kind kind);

/// Whether `kind` is a job operator (kScanObjects, kTransform, kDedup, kSinkWrite).
bool IsJobKind(PlanNode::Kind kind);

/// Whether `kind` exists only in logical plans (kJoinSet, kDependentJoin).
bool IsLogicalKind(PlanNode::Kind kind);

/// Whether `node` outputs every row of one table: a scan of all of it (not a map stage's split),
/// under projects only. A hash join that builds on such a side drops only probe rows whose key
/// the table lacks, which a foreign key join has none of.
bool IsWholeTable(const PlanNode& node);

/// A deep copy of `node`, where `replace` (when given) may return a node to stand in for a
/// subtree (null: copy it).
std::unique_ptr<PlanNode> CopyPlan(
    const PlanNode& node,
    const std::function<std::unique_ptr<PlanNode>(const PlanNode&)>& replace = {});

/// A new node of `kind` over `input`, its other fields at their defaults.
std::unique_ptr<PlanNode> MakeNode(PlanNode::Kind kind, std::unique_ptr<PlanNode> input = nullptr);

/// A node holding one of the non-relational operators, without inputs: the steps of Chain.
PlanNodeFields Step(ScanObjects scan);
PlanNodeFields Step(CallTransform call);
PlanNodeFields Step(DedupFirst dedup);
PlanNodeFields Step(WriteSink sink);
PlanNodeFields Step(ShuffleRead read);
PlanNodeFields Step(ShuffleWrite write);

/// A chain of single-input nodes, `steps[0]` at the bottom: a job task's plan.
std::unique_ptr<PlanNode> Chain(std::vector<PlanNodeFields> steps);

/// The type an aggregate step produces from its input type.
arrow::Result<std::shared_ptr<arrow::DataType>> AggregateOutputType(
    const AggregateCall& call, const std::shared_ptr<arrow::DataType>& input);

/// The type a window function produces from its value's type (null for functions without).
arrow::Result<std::shared_ptr<arrow::DataType>> WindowOutputType(
    const WindowCall& call, const std::shared_ptr<arrow::DataType>& value);

/// `in` with one more column per window function (the kWindow node's schema).
arrow::Result<std::shared_ptr<arrow::Schema>> WindowSchema(const arrow::Schema& in,
                                                           const std::vector<WindowCall>& calls);

/// The schema a plan produces, derived without running it: expression types are bound against
/// each operator's input, aggregate types resolved through Arrow's function registry.
arrow::Result<std::shared_ptr<arrow::Schema>> OutputSchema(const PlanNode& node);

/// The same for one node, given its inputs' schemas (`right` only for a join).
arrow::Result<std::shared_ptr<arrow::Schema>> NodeOutputSchema(
    const PlanNode& node, const std::shared_ptr<arrow::Schema>& in,
    const std::shared_ptr<arrow::Schema>& right);

}  // namespace sluice::plan
