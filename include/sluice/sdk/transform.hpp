// The C++ SDK for batch transform authors. Header-only; include it and write
//
//   arrow::Status RunTransform(std::shared_ptr<arrow::RecordBatchReader> input,
//                              sluice::sdk::Emitter& out);
//   SLUICE_TRANSFORM(RunTransform, "my-transform", "0.1.0",
//                    "my.schemas.Input", "my.schemas.Output")
//
// The macro exports the ABI symbols and the identity (include/sluice/transform_abi.h). The SDK
// decodes the input IPC stream and validates every batch with ValidateFull() before the
// transform sees it, encodes each Emit() as one IPC stream, and turns a non-OK Status or any
// exception into set_error(), so no exception ever crosses the C ABI.
#pragma once

#include <arrow/api.h>
#include <arrow/io/memory.h>
#include <arrow/ipc/api.h>
#include <arrow/util/byte_size.h>
#include <sluice/transform_abi.h>

#include <exception>
#include <memory>
#include <string>
#include <vector>

namespace sluice::sdk {

/// Hands output streams to the host. Belongs to one transform call, on its thread.
class Emitter {
 public:
  explicit Emitter(const sluice_transform_host* host) : host_(host) {}

  /// Emits one IPC stream holding `batches`, which must all have `schema`. No batches is a
  /// valid stream (schema only).
  arrow::Status Emit(const std::shared_ptr<arrow::Schema>& schema,
                     const std::vector<std::shared_ptr<arrow::RecordBatch>>& batches) {
    // Size the buffer up front: growing it by doubling would copy a large stream several times.
    int64_t estimate = 64 * 1024;
    for (const auto& batch : batches) estimate += arrow::util::TotalBufferSize(*batch);
    auto sink = arrow::io::BufferOutputStream::Create(estimate);
    if (!sink.ok()) return sink.status();
    auto writer = arrow::ipc::MakeStreamWriter(*sink, schema);
    if (!writer.ok()) return writer.status();
    for (const auto& batch : batches) {
      if (!batch->schema()->Equals(*schema)) {
        return arrow::Status::Invalid("output batch schema ", batch->schema()->ToString(),
                                      " differs from the stream's schema ", schema->ToString());
      }
      ARROW_RETURN_NOT_OK((*writer)->WriteRecordBatch(*batch));
    }
    ARROW_RETURN_NOT_OK((*writer)->Close());
    auto bytes = (*sink)->Finish();
    if (!bytes.ok()) return bytes.status();
    return EmitBytes((*bytes)->data(), static_cast<size_t>((*bytes)->size()));
  }

  /// Emits one batch as its own stream.
  arrow::Status Emit(const std::shared_ptr<arrow::RecordBatch>& batch) {
    return Emit(batch->schema(), {batch});
  }

  /// Emits a table as one stream.
  arrow::Status Emit(const arrow::Table& table) {
    arrow::TableBatchReader reader(table);
    auto batches = reader.ToRecordBatches();
    if (!batches.ok()) return batches.status();
    return Emit(table.schema(), *batches);
  }

  /// Emits bytes that already form an IPC stream. The host validates them like any output.
  arrow::Status EmitBytes(const uint8_t* data, size_t size) {
    if (host_->emit(host_->ctx, data, size) != 0) {
      return arrow::Status::Cancelled("the host refused output stream ", emitted_ + 1);
    }
    ++emitted_;
    return arrow::Status::OK();
  }

  int64_t streams_emitted() const { return emitted_; }

 private:
  const sluice_transform_host* host_;
  int64_t emitted_ = 0;
};

namespace internal {

/// Wraps the decoded input so every batch is fully validated before the transform reads it:
/// the input bytes are untrusted as far as the library is concerned.
class ValidatingReader : public arrow::RecordBatchReader {
 public:
  explicit ValidatingReader(std::shared_ptr<arrow::RecordBatchReader> inner)
      : inner_(std::move(inner)) {}
  std::shared_ptr<arrow::Schema> schema() const override { return inner_->schema(); }
  arrow::Status ReadNext(std::shared_ptr<arrow::RecordBatch>* batch) override {
    ARROW_RETURN_NOT_OK(inner_->ReadNext(batch));
    if (*batch != nullptr) {
      arrow::Status st = (*batch)->ValidateFull();
      if (!st.ok()) {
        return arrow::Status::Invalid("invalid input batch ", index_, ": ", st.message());
      }
      ++index_;
    }
    return arrow::Status::OK();
  }

 private:
  std::shared_ptr<arrow::RecordBatchReader> inner_;
  int64_t index_ = 0;
};

inline void SetError(const sluice_transform_host* host, const std::string& message) {
  host->set_error(host->ctx, message.data(), message.size());
}

using RunFn = arrow::Status (*)(std::shared_ptr<arrow::RecordBatchReader>, Emitter&);

/// The body of the exported transform_batch: nothing thrown escapes it.
inline int32_t Invoke(RunFn run, const uint8_t* input, size_t len,
                      const sluice_transform_host* host) noexcept {
  if (host == nullptr || host->emit == nullptr || host->set_error == nullptr) {
    return SLUICE_TRANSFORM_ERROR;
  }
  try {
    // Non-owning view: the host keeps the input alive for the duration of the call.
    auto buffer = std::make_shared<arrow::Buffer>(input, static_cast<int64_t>(len));
    auto opened = arrow::ipc::RecordBatchStreamReader::Open(
        std::make_shared<arrow::io::BufferReader>(buffer));
    if (!opened.ok()) {
      SetError(host, "invalid input IPC stream: " + opened.status().message());
      return SLUICE_TRANSFORM_ERROR;
    }
    Emitter out(host);
    arrow::Status st = run(std::make_shared<ValidatingReader>(*std::move(opened)), out);
    if (!st.ok()) {
      SetError(host, st.ToString());
      return SLUICE_TRANSFORM_ERROR;
    }
    return SLUICE_TRANSFORM_OK;
  } catch (const std::exception& e) {
    SetError(host, std::string("uncaught exception: ") + e.what());
  } catch (...) {
    SetError(host, "uncaught exception of unknown type");
  }
  return SLUICE_TRANSFORM_ERROR;
}

}  // namespace internal
}  // namespace sluice::sdk

/// Defines the exported ABI of a transform library. The four strings must be literals; names
/// and ids use letters, digits, '.', '_' and '-' (transform check enforces it).
#define SLUICE_TRANSFORM(RUN, QUALIFIED_NAME, VERSION, INPUT_SCHEMA_ID, OUTPUT_SCHEMA_ID)        \
  extern "C" {                                                                                   \
  __attribute__((visibility("default"))) extern const uint32_t transform_batch_abi_version;      \
  const uint32_t transform_batch_abi_version = SLUICE_TRANSFORM_ABI_VERSION;                     \
  __attribute__((visibility("default"))) extern const char transform_batch_identity[];           \
  __attribute__((used, section(SLUICE_TRANSFORM_IDENTITY_SECTION)))                              \
  const char transform_batch_identity[] = SLUICE_TRANSFORM_IDENTITY_MAGIC                        \
      "{\"abi_version\":" SLUICE_TRANSFORM_ABI_VERSION_TEXT                                      \
      ",\"qualified_name\":\"" QUALIFIED_NAME "\",\"version\":\"" VERSION                        \
      "\",\"input_schema\":\"" INPUT_SCHEMA_ID "\",\"output_schema\":\"" OUTPUT_SCHEMA_ID "\"}"; \
  __attribute__((visibility("default"))) int32_t transform_batch(                                \
      const uint8_t* input, size_t len, const sluice_transform_host* host) {                     \
    return ::sluice::sdk::internal::Invoke(&RUN, input, len, host);                              \
  }                                                                                              \
  }
