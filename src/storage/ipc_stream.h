// Arrow IPC streams as bytes: the form in which batches cross the transform ABI and are stored
// as shuffle files. Bytes from outside the process are untrusted, so reading validates every
// batch fully before anyone sees it.
#pragma once

#include <arrow/buffer.h>
#include <arrow/record_batch.h>
#include <arrow/result.h>
#include <arrow/type_fwd.h>

#include <memory>
#include <string_view>
#include <vector>

namespace sluice::storage {

struct IpcStream {
  std::shared_ptr<arrow::Schema> schema;
  std::vector<std::shared_ptr<arrow::RecordBatch>> batches;

  int64_t num_rows() const;
};

/// Encodes batches (all with `schema`) as one IPC stream.
arrow::Result<std::shared_ptr<arrow::Buffer>> WriteIpcStream(
    const std::shared_ptr<arrow::Schema>& schema,
    const std::vector<std::shared_ptr<arrow::RecordBatch>>& batches);

/// Encodes batches as one IPC stream into `buffer`, reusing its memory (it grows as needed and
/// keeps what it has), for a caller that encodes one stream after another: fresh memory costs
/// the kernel a zeroed page each. The result is `buffer`, valid until it is written again.
arrow::Result<std::shared_ptr<arrow::Buffer>> WriteIpcStream(
    const std::shared_ptr<arrow::Schema>& schema,
    const std::vector<std::shared_ptr<arrow::RecordBatch>>& batches,
    const std::shared_ptr<arrow::ResizableBuffer>& buffer);

/// Decodes one IPC stream and runs ValidateFull() on every batch (storage/validate.h). Errors are
/// Invalid and start with `what`, e.g. "transform 'x' output stream 2".
arrow::Result<IpcStream> ReadIpcStream(const std::shared_ptr<arrow::Buffer>& bytes,
                                       std::string_view what);

/// Checks that `actual` equals `expected` (names, types, nullability; metadata ignored).
/// A mismatch is a TypeError naming `what` and both field lists.
arrow::Status CheckSchema(const arrow::Schema& expected, const arrow::Schema& actual,
                          std::string_view what);

}  // namespace sluice::storage
