// Worker parity: what must be the same in the driver and a worker for a task to give the
// driver's answer.
//
// Every task carries the driver's parity values: the engine's version, the Arrow it runs, and
// each setting that changes results (time zone, NULL ordering, decimal rules). A worker compares
// them with its own before it runs anything, and refuses the task naming every difference, so a
// node with another build or other defaults can never quietly answer differently. Function
// libraries and table providers join this list as they arrive (by digest).
#pragma once

#include <arrow/status.h>

#include <map>
#include <string>

namespace sluice::plan {

using ParityValues = std::map<std::string, std::string>;

/// This process's values: "engine", "arrow", "time_zone", "null_order", "decimal_rules".
const ParityValues& LocalParity();

/// OK when `driver` equals LocalParity(); otherwise an Invalid error naming each key whose
/// value differs, is missing, or is unknown here, with both values.
arrow::Status CheckParity(const ParityValues& driver);

}  // namespace sluice::plan
