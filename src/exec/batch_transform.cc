#include "exec/batch_transform.h"

#include <arrow/memory_pool.h>
#include <sluice/transform_abi.h>

#include <cstring>

#include "common/status.h"

namespace sluice::exec {

namespace {

// Per-call host state behind the opaque ctx pointer.
struct CallState {
  std::vector<std::shared_ptr<arrow::Buffer>> outputs;
  std::string error;
  bool error_set = false;
  std::string alloc_failure;
};

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
    state->outputs.push_back(std::shared_ptr<arrow::Buffer>(*std::move(buffer)));
    return 0;
  } catch (...) {
    state->alloc_failure = "out of memory copying an output stream";
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

}  // namespace

BatchTransform::BatchTransform(std::shared_ptr<artifact::TransformLibrary> library,
                               std::shared_ptr<arrow::Schema> expected_output)
    : library_(std::move(library)), expected_output_(std::move(expected_output)) {}

arrow::Result<std::vector<std::shared_ptr<arrow::Buffer>>> BatchTransform::CallRaw(
    const uint8_t* input, size_t len) const {
  CallState state;
  sluice_transform_host host{};
  host.abi_version = SLUICE_TRANSFORM_ABI_VERSION;
  host.struct_size = sizeof(sluice_transform_host);
  host.ctx = &state;
  host.emit = &EmitCallback;
  host.set_error = &SetErrorCallback;

  const int32_t rc = library_->function()(input, len, &host);
  const std::string where = "transform '" + name() + "'";
  if (!state.alloc_failure.empty()) {
    return arrow::Status::OutOfMemory(where, ": output could not be kept: ", state.alloc_failure);
  }
  if (rc != SLUICE_TRANSFORM_OK) {
    if (state.error_set) return arrow::Status::Invalid(where, " failed: ", state.error);
    return arrow::Status::Invalid(where, " failed with code ", rc, " and no error message");
  }
  if (state.error_set) {
    return arrow::Status::Invalid(where, " reported an error but returned success: ", state.error);
  }
  return std::move(state.outputs);
}

arrow::Result<std::vector<storage::IpcStream>> BatchTransform::Call(
    const std::shared_ptr<arrow::Buffer>& input) const {
  ARROW_ASSIGN_OR_RAISE(auto raw, CallRaw(input->data(), static_cast<size_t>(input->size())));
  std::vector<storage::IpcStream> out;
  out.reserve(raw.size());
  for (size_t i = 0; i < raw.size(); ++i) {
    const std::string what = "transform '" + name() + "' output stream " + std::to_string(i + 1) +
                             " of " + std::to_string(raw.size());
    ARROW_ASSIGN_OR_RAISE(storage::IpcStream stream, storage::ReadIpcStream(raw[i], what));
    if (expected_output_ != nullptr) {
      ARROW_RETURN_NOT_OK(storage::CheckSchema(*expected_output_, *stream.schema, what));
    }
    out.push_back(std::move(stream));
  }
  return out;
}

}  // namespace sluice::exec
