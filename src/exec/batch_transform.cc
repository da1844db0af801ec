#include "exec/batch_transform.h"

#include <arrow/api.h>
#include <arrow/c/abi.h>
#include <arrow/c/bridge.h>
#include <arrow/memory_pool.h>
#include <sluice/transform_abi.h>

#include <cstring>
#include <optional>
#include <unordered_map>

#include "common/status.h"
#include "storage/validate.h"

namespace sluice::exec {

namespace {

// One emitted output: bytes (emit) or batches already imported (emit_arrow).
struct Output {
  std::shared_ptr<arrow::Buffer> bytes;
  std::optional<storage::IpcStream> imported;
};

// Per-call host state behind the opaque ctx pointer.
struct CallState {
  std::shared_ptr<artifact::TransformLibrary> library;
  std::vector<Output> outputs;
  std::string error;
  bool error_set = false;
  std::string alloc_failure;
  std::string emit_failure;
};

// A buffer of an array the library exported: it also keeps the library loaded, since releasing
// the array runs the library's code. (Members go in reverse: the array's buffer first.)
class LibraryBuffer : public arrow::Buffer {
 public:
  LibraryBuffer(std::shared_ptr<arrow::Buffer> inner,
                std::shared_ptr<artifact::TransformLibrary> library)
      : arrow::Buffer(inner->data(), inner->size()),
        library_(std::move(library)),
        inner_(std::move(inner)) {}

 private:
  std::shared_ptr<artifact::TransformLibrary> library_;
  std::shared_ptr<arrow::Buffer> inner_;
};

std::shared_ptr<arrow::ArrayData> KeepLoaded(
    const std::shared_ptr<arrow::ArrayData>& data,
    const std::shared_ptr<artifact::TransformLibrary>& library) {
  auto copy = data->Copy();
  for (auto& buffer : copy->buffers) {
    if (buffer != nullptr) buffer = std::make_shared<LibraryBuffer>(buffer, library);
  }
  for (auto& child : copy->child_data) child = KeepLoaded(child, library);
  if (copy->dictionary != nullptr) copy->dictionary = KeepLoaded(copy->dictionary, library);
  return copy;
}

int32_t EmitCallback(void* ctx, const uint8_t* bytes, size_t len) {
  auto* state = static_cast<CallState*>(ctx);
  // A C callback: nothing may throw out of it, and the copy is ours to own.
  try {
    if (bytes == nullptr && len > 0) {
      state->alloc_failure = "emit() was passed a null pointer with length " + std::to_string(len);
      return 1;
    }
    auto buffer = arrow::AllocateBuffer(static_cast<int64_t>(len));
    if (!buffer.ok()) {
      state->alloc_failure = buffer.status().ToString();
      return 1;
    }
    if (len > 0) std::memcpy((*buffer)->mutable_data(), bytes, len);
    state->outputs.push_back({std::shared_ptr<arrow::Buffer>(*std::move(buffer)), std::nullopt});
    return 0;
  } catch (...) {
    state->alloc_failure = "out of memory copying an output stream";
    return 1;
  }
}

// Takes the stream and reads every batch now, while the library's code is certainly running;
// what the batches hold is validated after the call.
int32_t EmitArrowCallback(void* ctx, struct ArrowArrayStream* stream) {
  auto* state = static_cast<CallState*>(ctx);
  const std::string which = "output stream " + std::to_string(state->outputs.size() + 1);
  try {
    if (stream == nullptr || stream->release == nullptr) {
      state->emit_failure = "emit_arrow() was passed no stream for " + which;
      return 1;
    }
    auto reader = arrow::ImportRecordBatchReader(stream);
    if (!reader.ok()) {
      if (stream->release != nullptr) stream->release(stream);
      state->emit_failure = which + " is not a valid Arrow C stream: " + reader.status().message();
      return 1;
    }
    storage::IpcStream imported;
    imported.schema = (*reader)->schema();
    while (true) {
      std::shared_ptr<arrow::RecordBatch> batch;
      arrow::Status st = (*reader)->ReadNext(&batch);
      if (!st.ok()) {
        state->emit_failure = which + " batch " + std::to_string(imported.batches.size()) +
                              " could not be read: " + st.message();
        return 1;
      }
      if (batch == nullptr) break;
      std::vector<std::shared_ptr<arrow::ArrayData>> columns;
      for (const auto& column : batch->column_data()) {
        columns.push_back(KeepLoaded(column, state->library));
      }
      imported.batches.push_back(
          arrow::RecordBatch::Make(batch->schema(), batch->num_rows(), std::move(columns)));
    }
    (void)(*reader)->Close();
    state->outputs.push_back({nullptr, std::move(imported)});
    return 0;
  } catch (...) {
    state->alloc_failure = "out of memory keeping " + which;
    return 1;
  }
}

void SetErrorCallback(void* ctx, const char* message, size_t len) {
  auto* state = static_cast<CallState*>(ctx);
  try {
    state->error.assign(message == nullptr ? "" : message, message == nullptr ? 0 : len);
    state->error_set = true;
  } catch (...) {
    state->error_set = true;
  }
}

// Whether two arrays are one view of the same memory: same type, length, offset, null count,
// buffers (address and size), children and dictionary.
bool SameView(const arrow::ArrayData& a, const arrow::ArrayData& b) {
  if (a.length != b.length || a.offset != b.offset || a.null_count != b.null_count ||
      a.buffers.size() != b.buffers.size() || a.child_data.size() != b.child_data.size() ||
      (a.dictionary == nullptr) != (b.dictionary == nullptr) || !a.type->Equals(*b.type)) {
    return false;
  }
  for (size_t i = 0; i < a.buffers.size(); ++i) {
    const auto& x = a.buffers[i];
    const auto& y = b.buffers[i];
    if ((x == nullptr) != (y == nullptr)) return false;
    if (x != nullptr && (x->address() != y->address() || x->size() != y->size())) return false;
  }
  for (size_t i = 0; i < a.child_data.size(); ++i) {
    if (!SameView(*a.child_data[i], *b.child_data[i])) return false;
  }
  return a.dictionary == nullptr || SameView(*a.dictionary, *b.dictionary);
}

// The input's columns by the address of their second buffer (values or offsets), to find the
// ones an output passes through unchanged.
using InputColumns = std::unordered_multimap<uint64_t, const arrow::ArrayData*>;

uint64_t ViewKey(const arrow::ArrayData& data) {
  return data.buffers.size() > 1 && data.buffers[1] != nullptr ? data.buffers[1]->address() : 0;
}

// Validates an imported batch: its structure, and every column in full except one that is an
// unchanged view of an input column (the host validated those when they entered it).
arrow::Status ValidateImported(const arrow::RecordBatch& batch, const InputColumns& inputs,
                               const std::string& what) {
  arrow::Status st = batch.Validate();
  if (!st.ok()) return arrow::Status::Invalid(what, ": ", st.message());
  for (int i = 0; i < batch.num_columns(); ++i) {
    const arrow::ArrayData& column = *batch.column_data(i);
    bool passed_through = false;
    auto [first, last] = inputs.equal_range(ViewKey(column));
    for (auto it = first; it != last && !passed_through; ++it) {
      passed_through = SameView(column, *it->second);
    }
    if (passed_through) continue;
    // Alone in a batch, for storage's faster UTF-8 check and a message naming the column.
    st = storage::ValidateFull(*arrow::RecordBatch::Make(arrow::schema({batch.schema()->field(i)}),
                                                         batch.num_rows(), {batch.column(i)}));
    if (!st.ok()) {
      return arrow::Status::Invalid(what, " column '", batch.schema()->field(i)->name(),
                                    "': ", st.message());
    }
  }
  return arrow::Status::OK();
}

}  // namespace

BatchTransform::BatchTransform(std::shared_ptr<artifact::TransformLibrary> library,
                               std::shared_ptr<arrow::Schema> expected_output)
    : library_(std::move(library)), expected_output_(std::move(expected_output)) {}

namespace {

// The call's result: its error, or its outputs as they were emitted.
arrow::Status Outcome(int32_t rc, const CallState& state, const std::string& where) {
  if (!state.alloc_failure.empty()) {
    return arrow::Status::OutOfMemory(where, ": output could not be kept: ", state.alloc_failure);
  }
  if (!state.emit_failure.empty()) return arrow::Status::Invalid(where, ": ", state.emit_failure);
  if (rc != SLUICE_TRANSFORM_OK) {
    if (state.error_set) return arrow::Status::Invalid(where, " failed: ", state.error);
    return arrow::Status::Invalid(where, " failed with code ", rc, " and no error message");
  }
  if (state.error_set) {
    return arrow::Status::Invalid(where, " reported an error but returned success: ", state.error);
  }
  return arrow::Status::OK();
}

sluice_transform_host MakeHost(CallState* state) {
  sluice_transform_host host{};
  host.abi_version = SLUICE_TRANSFORM_ABI_VERSION;
  host.struct_size = sizeof(sluice_transform_host);
  host.ctx = state;
  host.emit = &EmitCallback;
  host.set_error = &SetErrorCallback;
  host.emit_arrow = &EmitArrowCallback;
  return host;
}

}  // namespace

arrow::Result<std::vector<std::shared_ptr<arrow::Buffer>>> BatchTransform::CallRaw(
    const uint8_t* input, size_t len) const {
  CallState state;
  state.library = library_;
  // Bytes in, bytes out: no emit_arrow for this caller.
  sluice_transform_host host = MakeHost(&state);
  host.emit_arrow = nullptr;
  const int32_t rc = library_->function()(input, len, &host);
  ARROW_RETURN_NOT_OK(Outcome(rc, state, "transform '" + name() + "'"));
  std::vector<std::shared_ptr<arrow::Buffer>> out;
  for (auto& o : state.outputs) out.push_back(std::move(o.bytes));
  return out;
}

namespace {

// The emitted outputs as checked streams, in emission order: bytes decoded and validated in full,
// imported arrays validated except where they are unchanged views of `inputs`, and each checked
// against `expected` when the stage declares it.
arrow::Result<std::vector<storage::IpcStream>> CheckedOutputs(
    std::vector<Output> outputs, const InputColumns& inputs, const std::string& transform,
    const std::shared_ptr<arrow::Schema>& expected) {
  std::vector<storage::IpcStream> out;
  out.reserve(outputs.size());
  for (size_t i = 0; i < outputs.size(); ++i) {
    const std::string what = "transform '" + transform + "' output stream " +
                             std::to_string(i + 1) + " of " + std::to_string(outputs.size());
    storage::IpcStream stream;
    if (outputs[i].imported.has_value()) {
      stream = std::move(*outputs[i].imported);
      for (size_t b = 0; b < stream.batches.size(); ++b) {
        ARROW_RETURN_NOT_OK(
            ValidateImported(*stream.batches[b], inputs, what + " batch " + std::to_string(b)));
      }
    } else {
      ARROW_ASSIGN_OR_RAISE(stream, storage::ReadIpcStream(outputs[i].bytes, what));
    }
    if (expected != nullptr) {
      ARROW_RETURN_NOT_OK(storage::CheckSchema(*expected, *stream.schema, what));
    }
    out.push_back(std::move(stream));
  }
  return out;
}

}  // namespace

arrow::Result<std::vector<storage::IpcStream>> BatchTransform::Call(
    const std::shared_ptr<arrow::Buffer>& input) const {
  ARROW_ASSIGN_OR_RAISE(auto raw, CallRaw(input->data(), static_cast<size_t>(input->size())));
  std::vector<Output> outputs;
  for (auto& bytes : raw) outputs.push_back({std::move(bytes), std::nullopt});
  return CheckedOutputs(std::move(outputs), {}, name(), expected_output_);
}

arrow::Result<std::vector<storage::IpcStream>> BatchTransform::CallBatches(
    const std::shared_ptr<arrow::Schema>& schema,
    const std::vector<std::shared_ptr<arrow::RecordBatch>>& batches,
    const std::shared_ptr<arrow::ResizableBuffer>& scratch) const {
  if (library_->arrow_function() == nullptr) {
    ARROW_ASSIGN_OR_RAISE(auto bytes, scratch == nullptr
                                          ? storage::WriteIpcStream(schema, batches)
                                          : storage::WriteIpcStream(schema, batches, scratch));
    return Call(bytes);
  }
  CallState state;
  state.library = library_;
  sluice_transform_host host = MakeHost(&state);
  ARROW_ASSIGN_OR_RAISE(auto reader, arrow::RecordBatchReader::Make(batches, schema));
  struct ArrowArrayStream input;
  ARROW_RETURN_NOT_OK(arrow::ExportRecordBatchReader(reader, &input));
  const int32_t rc = library_->arrow_function()(&input, &host);
  if (input.release != nullptr) input.release(&input);  // a library that did not take it
  ARROW_RETURN_NOT_OK(Outcome(rc, state, "transform '" + name() + "'"));

  InputColumns inputs;
  for (const auto& batch : batches) {
    for (const auto& column : batch->column_data()) inputs.emplace(ViewKey(*column), column.get());
  }
  return CheckedOutputs(std::move(state.outputs), inputs, name(), expected_output_);
}

}  // namespace sluice::exec
