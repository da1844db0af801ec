// The Acero node of one function stage: calls a published batch transform, loaded by pin
// through the verified loader, once per input object, on that object's rows as one IPC stream.
//
// The node collects its whole input first and loads the transform then, as a stage always ran:
// after the stage before it finished every object. Each object's input is checked against the
// transform's declared input schema (the stage before may write `any`); each output is checked
// by BatchTransform against the declared output schema, or, for an `any` output, against the
// first stream the stage emitted, which fixes the schema it passes on. Errors name the stage
// and the object.
#pragma once

#include <arrow/acero/exec_plan.h>
#include <arrow/acero/options.h>

#include <memory>

#include "exec/job_task.h"
#include "plan/fragment.h"

namespace sluice::exec {

inline constexpr char kCallTransformNode[] = "sluice_call_transform";

class CallTransformNodeOptions : public arrow::acero::ExecNodeOptions {
 public:
  CallTransformNodeOptions(plan::CallTransform call, std::shared_ptr<JobTask> task)
      : call(std::move(call)), task(std::move(task)) {}

  plan::CallTransform call;
  std::shared_ptr<JobTask> task;
};

arrow::Status RegisterCallTransformNode(arrow::acero::ExecFactoryRegistry* registry);

}  // namespace sluice::exec
