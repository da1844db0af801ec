// Lowers a plan's relational operators to Arrow Acero and runs them in this process. A partial
// aggregate and the final one above it run as one Acero aggregate, unless the partials come
// from elsewhere (a shuffle read, or a result given in NodeInputs): that is where a distributed
// query cuts its plans into stages (sql/stage_planner.h).
#pragma once

#include <arrow/acero/exec_plan.h>
#include <arrow/record_batch.h>
#include <arrow/result.h>
#include <arrow/table.h>

#include <map>
#include <memory>

#include "exec/operator_probe.h"
#include "plan/plan_node.h"

namespace sluice::exec {

/// Measurements per plan operator, for EXPLAIN ANALYZE.
using OperatorProbes = std::map<const plan::PlanNode*, std::shared_ptr<OperatorStats>>;

/// Results computed elsewhere that stand in for plan nodes (and their subtrees): a distributed
/// query's driver and final-stage tasks run the plan above a cut on the tables that the stage
/// below it produced. A partial aggregate given here is not fused with its final one.
using NodeInputs = std::map<const plan::PlanNode*, std::shared_ptr<arrow::Table>>;

/// The Acero declaration of a plan (Limit is applied to the result, outside Acero). With
/// `probes`, every operator is followed by a probe recorded there.
arrow::Result<arrow::acero::Declaration> ToDeclaration(const plan::PlanNode& node,
                                                       OperatorProbes* probes = nullptr,
                                                       const NodeInputs* inputs = nullptr);

/// Runs a plan and streams its result with the given column names, batch by batch: memory holds
/// a bounded queue of batches, not the result. A top LIMIT stops the plan (and its scans) once
/// it has its rows. Errors met while running come from ReadNext.
arrow::Result<std::shared_ptr<arrow::RecordBatchReader>> ExecuteStream(
    const plan::PlanNode& plan, const std::vector<std::string>& names,
    const NodeInputs* inputs = nullptr);

/// Runs a plan and returns its result with the given column names.
arrow::Result<std::shared_ptr<arrow::Table>> Execute(const plan::PlanNode& plan,
                                                     const std::vector<std::string>& names,
                                                     OperatorProbes* probes = nullptr,
                                                     const NodeInputs* inputs = nullptr);

/// Runs `node` and returns its rows in its plan schema: its output names, and its types where
/// the executor gives others (a dictionary where the plan says string). For a result that stands
/// in for the node later (NodeInputs, an in-memory table).
arrow::Result<std::shared_ptr<arrow::Table>> ExecuteInPlanTypes(const plan::PlanNode& node,
                                                                const NodeInputs* inputs = nullptr);

}  // namespace sluice::exec
