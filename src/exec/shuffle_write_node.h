// The Acero sink that ends a map stage (plan::HashExchange): gives the task's rows their
// __seq positions, splits them by the hash of the key into one Arrow IPC file per reduce
// partition under the attempt's own folder (plan::ShuffleAttemptFolder), and reports each
// file with its rows, size and BLAKE3, in partition order.
#pragma once

#include <arrow/acero/exec_plan.h>
#include <arrow/acero/options.h>

#include <memory>

#include "exec/job_task.h"
#include "plan/fragment.h"

namespace sluice::exec {

inline constexpr char kShuffleWriteNode[] = "sluice_shuffle_write";

class ShuffleWriteNodeOptions : public arrow::acero::ExecNodeOptions {
 public:
  ShuffleWriteNodeOptions(plan::HashExchange exchange, std::shared_ptr<JobTask> task)
      : exchange(std::move(exchange)), task(std::move(task)) {}

  plan::HashExchange exchange;
  std::shared_ptr<JobTask> task;
};

arrow::Status RegisterShuffleWriteNode(arrow::acero::ExecFactoryRegistry* registry);

}  // namespace sluice::exec
