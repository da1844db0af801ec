// Test support for transform authors: load a built transform library with dlopen and call it
// through the real C ABI, as the host does, without linking sluice. Header-only; use it in a
// transform's inline test.
#pragma once

#include <arrow/api.h>
#include <arrow/io/memory.h>
#include <arrow/ipc/api.h>
#include <dlfcn.h>
#include <sluice/transform_abi.h>

#include <cstring>
#include <memory>
#include <string>
#include <vector>

namespace sluice::sdk::testing {

/// A decoded output stream.
struct Stream {
  std::shared_ptr<arrow::Schema> schema;
  std::vector<std::shared_ptr<arrow::RecordBatch>> batches;
};

/// Encodes batches (all with `schema`) as one IPC stream, the transform's input form.
inline arrow::Result<std::shared_ptr<arrow::Buffer>> ToIpc(
    const std::shared_ptr<arrow::Schema>& schema,
    const std::vector<std::shared_ptr<arrow::RecordBatch>>& batches) {
  ARROW_ASSIGN_OR_RAISE(auto sink, arrow::io::BufferOutputStream::Create());
  ARROW_ASSIGN_OR_RAISE(auto writer, arrow::ipc::MakeStreamWriter(sink, schema));
  for (const auto& b : batches) ARROW_RETURN_NOT_OK(writer->WriteRecordBatch(*b));
  ARROW_RETURN_NOT_OK(writer->Close());
  return sink->Finish();
}

/// A transform library opened with dlopen. Closes it on destruction.
class LoadedTransform {
 public:
  static arrow::Result<std::unique_ptr<LoadedTransform>> Open(const std::string& path) {
    void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle == nullptr) return arrow::Status::IOError("cannot load ", path, ": ", dlerror());
    std::unique_ptr<LoadedTransform> t(new LoadedTransform(handle));
    auto* version =
        static_cast<const uint32_t*>(dlsym(handle, SLUICE_TRANSFORM_ABI_VERSION_SYMBOL));
    t->fn_ =
        reinterpret_cast<sluice_transform_batch_fn>(dlsym(handle, SLUICE_TRANSFORM_BATCH_SYMBOL));
    if (version == nullptr || t->fn_ == nullptr) {
      return arrow::Status::Invalid(path, " does not export the transform ABI symbols");
    }
    if (*version != SLUICE_TRANSFORM_ABI_VERSION) {
      return arrow::Status::Invalid(path, " speaks ABI version ", *version);
    }
    return t;
  }
  ~LoadedTransform() { dlclose(handle_); }

  /// Calls the transform on `input` and decodes every emitted stream with ValidateFull.
  arrow::Result<std::vector<Stream>> Call(const arrow::Buffer& input) const {
    struct State {
      std::vector<std::string> outputs;
      std::string error;
      bool failed = false;
    } state;
    sluice_transform_host host{};
    host.abi_version = SLUICE_TRANSFORM_ABI_VERSION;
    host.struct_size = sizeof(host);
    host.ctx = &state;
    host.emit = [](void* ctx, const uint8_t* bytes, size_t len) -> int32_t {
      static_cast<State*>(ctx)->outputs.emplace_back(reinterpret_cast<const char*>(bytes), len);
      return 0;
    };
    host.set_error = [](void* ctx, const char* msg, size_t len) {
      static_cast<State*>(ctx)->error.assign(msg, len);
      static_cast<State*>(ctx)->failed = true;
    };
    const int32_t rc = fn_(input.data(), static_cast<size_t>(input.size()), &host);
    if (rc != SLUICE_TRANSFORM_OK || state.failed) {
      return arrow::Status::Invalid("transform failed (code ", rc, "): ", state.error);
    }
    std::vector<Stream> out;
    for (const std::string& bytes : state.outputs) {
      auto buffer = arrow::Buffer::FromString(bytes);
      ARROW_ASSIGN_OR_RAISE(auto reader, arrow::ipc::RecordBatchStreamReader::Open(
                                             std::make_shared<arrow::io::BufferReader>(buffer)));
      Stream stream;
      stream.schema = reader->schema();
      ARROW_ASSIGN_OR_RAISE(stream.batches, reader->ToRecordBatches());
      for (const auto& b : stream.batches) ARROW_RETURN_NOT_OK(b->ValidateFull());
      out.push_back(std::move(stream));
    }
    return out;
  }

 private:
  explicit LoadedTransform(void* handle) : handle_(handle) {}
  void* handle_;
  sluice_transform_batch_fn fn_ = nullptr;
};

}  // namespace sluice::sdk::testing
