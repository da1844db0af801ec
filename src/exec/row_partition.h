// Hash partitioning of rows on several key columns at once, for exchanges between a partial and
// a final aggregate: two rows with equal keys (NULLs equal, as GROUP BY treats them) land in the
// same partition in every process, whichever file or task they came from.
#pragma once

#include <arrow/result.h>
#include <arrow/table.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace sluice::exec {

/// The partition of each row: a hash that mixes, for each key column in order, a NULL marker or
/// the value (strings and wide fixed-size values by their bytes' hash; floats with -0.0 and
/// every NaN made one value), modulo `partitions`. Unseeded: equal keys meet in every process. No
/// keys put every row in partition 0. Integer, floating, decimal, boolean, date, time, timestamp,
/// string and binary keys are supported; a dictionary column hashes as its values.
arrow::Result<std::vector<int32_t>> PartitionRowsByKeys(const arrow::RecordBatch& batch,
                                                        const std::vector<std::string>& keys,
                                                        int32_t partitions);

}  // namespace sluice::exec
