// `sluice gc`: removes what runs that will never finish left behind.
//
// Shuffle folders of attempts that are not running any more, the part files of failed and
// abandoned attempts, and temp files whose writer is gone. Live attempts (a running run whose
// driver holds its lease) and committed outputs are never touched: everything is found by the
// attempt-unique names of run_files.h.
#pragma once

#include <arrow/result.h>

#include "common/config.h"

namespace sluice::pipeline {

struct GcResult {
  int64_t shuffle_objects = 0;
  int64_t part_objects = 0;
  int64_t temp_files = 0;
};

arrow::Result<GcResult> CollectGarbage(const Config& config);

}  // namespace sluice::pipeline
