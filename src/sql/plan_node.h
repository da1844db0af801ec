// The SQL layer's names for the physical plan types (plan/plan_node.h, plan/table_source.h):
// the binder and the optimizer passes build the one plan type that jobs compile to as well, and
// that one codec carries to workers.
#pragma once

#include "plan/plan_node.h"
#include "plan/table_source.h"

namespace sluice::sql {

using plan::AggregateCall;
using plan::AggregateOutputType;
using plan::JoinType;
using plan::JoinTypeName;
using plan::NodeOutputSchema;
using plan::OpenTable;
using plan::OutputSchema;
using plan::PlanNode;
using plan::TableSource;

}  // namespace sluice::sql
