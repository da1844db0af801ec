// Calls a batch transform through its C ABI and checks what comes back.
//
// Through bytes (Call), the host owns every byte: outputs are copied in emit() before the
// library's buffer can go away, and every emitted stream is decoded with ValidateFull(). Through
// Arrow C data (CallBatches, for a library with transform_batch_arrow), nothing is encoded or
// copied: the host takes the library's arrays, which keep the library loaded, and validates each
// column in full unless it is an unchanged view of an input column. Either way every output is
// checked against the stage's output schema, when it declares one, before anything downstream
// sees it, and every error names the transform.
//
// Thread-safety: Call() may run concurrently from several threads; each call has its own host
// struct and state.
#pragma once

#include <arrow/buffer.h>
#include <arrow/result.h>
#include <arrow/type_fwd.h>

#include <memory>
#include <string>
#include <vector>

#include "artifact/transform_library.h"
#include "storage/ipc_stream.h"

namespace sluice::exec {

class BatchTransform {
 public:
  /// `expected_output` may be null when the output schema is not known (e.g. `transform test`).
  BatchTransform(std::shared_ptr<artifact::TransformLibrary> library,
                 std::shared_ptr<arrow::Schema> expected_output);

  /// Runs the transform on one input IPC stream; returns the decoded, validated outputs in
  /// emission order.
  arrow::Result<std::vector<storage::IpcStream>> Call(
      const std::shared_ptr<arrow::Buffer>& input) const;

  /// Runs the transform on `batches` (the host's own, validated, all with `schema`): through
  /// Arrow C data when the library has that entry, else encoded as one IPC stream (into
  /// `scratch`, when given) through Call.
  arrow::Result<std::vector<storage::IpcStream>> CallBatches(
      const std::shared_ptr<arrow::Schema>& schema,
      const std::vector<std::shared_ptr<arrow::RecordBatch>>& batches,
      const std::shared_ptr<arrow::ResizableBuffer>& scratch = nullptr) const;

  /// Runs the transform and returns the emitted bytes as they are, unvalidated. For tests and
  /// for lanes that forward bytes elsewhere.
  arrow::Result<std::vector<std::shared_ptr<arrow::Buffer>>> CallRaw(const uint8_t* input,
                                                                     size_t len) const;

  const std::string& name() const { return library_->identity().qualified_name; }

 private:
  std::shared_ptr<artifact::TransformLibrary> library_;
  std::shared_ptr<arrow::Schema> expected_output_;
};

}  // namespace sluice::exec
