#include "plan/session_spec.h"

#include <arrow/config.h>

#include "common/version.h"

namespace sluice::plan {

const ParityValues& LocalParity() {
  static const ParityValues values = {
      {"engine", std::string("sluice ") + SluiceVersion()},
      {"arrow", arrow::GetBuildInfo().version_string},
      // Timestamps without a zone are read, compared and printed as UTC.
      {"time_zone", "UTC"},
      // PostgreSQL's default: NULLs sort last ascending and first descending.
      {"null_order", "postgresql"},
      // Decimal arithmetic follows Arrow's precision and scale promotion, checked by the binder.
      {"decimal_rules", "arrow-decimal128"},
      // The table providers a plan's scans may name (plan_codec.cc refuses others): a worker
      // without one of them could not read a table the driver planned over.
      {"table_providers", "directory:parquet,ipc,jsonl"},
  };
  return values;
}

arrow::Status CheckParity(const ParityValues& driver) {
  const ParityValues& local = LocalParity();
  std::string differences;
  auto add = [&](const std::string& text) {
    differences += (differences.empty() ? "" : "; ") + text;
  };
  for (const auto& [key, value] : driver) {
    auto it = local.find(key);
    if (it == local.end()) {
      add(key + " = '" + value + "' is a setting this worker does not know");
    } else if (it->second != value) {
      add(key + ": the driver has '" + value + "', this worker has '" + it->second + "'");
    }
  }
  for (const auto& [key, value] : local) {
    if (!driver.contains(key)) add(key + ": the driver sent none, this worker has '" + value + "'");
  }
  if (differences.empty()) return arrow::Status::OK();
  return arrow::Status::Invalid("session spec: this worker cannot match the driver (", differences,
                                ")");
}

}  // namespace sluice::plan
