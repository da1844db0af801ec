// The C++ SDK for batch transform authors. Header-only; include it and write
//
//   arrow::Status RunTransform(std::shared_ptr<arrow::RecordBatchReader> input,
//                              sluice::sdk::Emitter& out);
//   SLUICE_TRANSFORM(RunTransform, "my-transform", "0.1.0", my::Input, my::Output)
//
// Input and Output are schema records (schemas/, e.g. ConversationMessageGateway): their type
// ids and their Arrow schemas (as IPC schema messages) go into the identity, and the SDK checks
// the input stream's schema and every emitted stream's schema against them.
// sluice::sdk::AnySchema skips the check and has no Arrow schema.
//
// The macro exports the ABI symbols and the identity (include/sluice/transform_abi.h). Through
// transform_batch (bytes) the SDK decodes the input IPC stream and validates every batch with
// ValidateFull() before the transform sees it, and encodes each Emit() as one IPC stream.
// Through transform_batch_arrow (Arrow C data, for a host in the same process) the input arrays
// are the host's own, already validated, and each Emit() hands the batches over as they are:
// nothing is encoded, copied or validated twice. Either way a non-OK Status or any exception
// becomes set_error(), so no exception ever crosses the C ABI.
//
// Why a generated header: the identity is static data that `transform check` reads from the
// ELF file without loading it, but a record's Arrow schema is only built at run time. So
// sluice_add_transform (cmake/SluiceTransform.cmake) first compiles the transform's sources with
// SLUICE_TRANSFORM_SCHEMA_GENERATOR defined, where the macro expands to a main() that writes the
// schemas' IPC bytes as hex string literals into a header, and then builds the library with
// SLUICE_TRANSFORM_SCHEMA_HEADER naming that header. A transform whose schemas are both
// AnySchema needs no generated header.
#pragma once

#include <arrow/api.h>
#include <arrow/c/abi.h>
#include <arrow/c/bridge.h>
#include <arrow/io/memory.h>
#include <arrow/ipc/api.h>
#include <arrow/util/byte_size.h>
#include <sluice/transform_abi.h>

#include <array>
#include <cstddef>
#include <cstdio>
#include <exception>
#include <functional>
#include <initializer_list>
#include <memory>
#include <string>
#include <vector>

#include "sluice/schemas/arrow.hpp"

#ifdef SLUICE_TRANSFORM_SCHEMA_HEADER
#include SLUICE_TRANSFORM_SCHEMA_HEADER
#endif
#ifndef SLUICE_GENERATED_INPUT_SCHEMA_ID
#define SLUICE_GENERATED_INPUT_SCHEMA_ID ""
#define SLUICE_GENERATED_INPUT_ARROW_SCHEMA nullptr
#define SLUICE_GENERATED_OUTPUT_SCHEMA_ID ""
#define SLUICE_GENERATED_OUTPUT_ARROW_SCHEMA nullptr
#endif

namespace sluice::sdk {

/// Stands in for a schema record when a transform accepts or emits any schema.
struct AnySchema {
  static constexpr char kTypeId[] = "any";
};

/// Hands output streams to the host. Belongs to one transform call, on its thread.
class Emitter {
 public:
  using SchemaCheck = std::function<arrow::Status(const arrow::Schema&, std::string_view)>;

  /// `check_output`, when set, vets every stream's schema before it is emitted. `arrow`: the
  /// host took the Arrow C data entry and has emit_arrow, so batches are handed over as they are.
  explicit Emitter(const sluice_transform_host* host, SchemaCheck check_output = nullptr,
                   bool arrow = false)
      : host_(host), check_output_(std::move(check_output)), arrow_(arrow) {}

  /// Emits one IPC stream holding `batches`, which must all have `schema`. No batches is a
  /// valid stream (schema only).
  arrow::Status Emit(const std::shared_ptr<arrow::Schema>& schema,
                     const std::vector<std::shared_ptr<arrow::RecordBatch>>& batches) {
    if (check_output_) {
      ARROW_RETURN_NOT_OK(check_output_(*schema, "output stream " + std::to_string(emitted_ + 1)));
    }
    if (arrow_) return EmitArrow(schema, batches);
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
  arrow::Status EmitArrow(const std::shared_ptr<arrow::Schema>& schema,
                          const std::vector<std::shared_ptr<arrow::RecordBatch>>& batches) {
    auto reader = arrow::RecordBatchReader::Make(batches, schema);
    if (!reader.ok()) return reader.status();
    struct ArrowArrayStream stream;
    ARROW_RETURN_NOT_OK(arrow::ExportRecordBatchReader(*reader, &stream));
    const int32_t rc = host_->emit_arrow(host_->ctx, &stream);
    if (stream.release != nullptr) stream.release(&stream);  // not taken by the host
    if (rc != 0) return arrow::Status::Cancelled("the host refused output stream ", emitted_ + 1);
    ++emitted_;
    return arrow::Status::OK();
  }

  const sluice_transform_host* host_;
  SchemaCheck check_output_;
  bool arrow_;
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

/// The schema check for a record type, or none for AnySchema.
template <typename Record>
Emitter::SchemaCheck SchemaCheckFor() {
  if constexpr (sluice::schemas::RecordType<Record>) {
    return [](const arrow::Schema& schema, std::string_view where) {
      return sluice::schemas::CheckArrowSchema<Record>(schema, where);
    };
  } else {
    return nullptr;
  }
}

constexpr size_t TextLength(const char* s) {
  size_t n = 0;
  while (s[n] != '\0') ++n;
  return n;
}

/// Bytes needed for the concatenation of `parts` plus a NUL.
constexpr size_t JoinedSize(std::initializer_list<const char*> parts) {
  size_t n = 1;
  for (const char* p : parts) n += TextLength(p);
  return n;
}

/// Concatenates `parts` at compile time, so the identity is static data in the library.
template <size_t N>
constexpr std::array<char, N> Join(std::initializer_list<const char*> parts) {
  std::array<char, N> out{};
  size_t pos = 0;
  for (const char* p : parts) {
    for (size_t i = 0; p[i] != '\0'; ++i) out[pos++] = p[i];
  }
  return out;
}

/// True for a schema record, false for AnySchema.
template <typename Record>
inline constexpr bool kIsTyped = sluice::schemas::RecordType<Record>;

// No null checks: GCC cannot fold comparing a static member's address with nullptr under
// -fsanitize, and both sides are always string literals ("" when no header was generated).
constexpr bool TextEquals(const char* a, const char* b) {
  size_t i = 0;
  for (; a[i] != '\0' && a[i] == b[i]; ++i) {
  }
  return a[i] == b[i];
}

/// True when the generated header describes `Record` (or none is needed, for AnySchema).
template <typename Record>
constexpr bool SchemaIsGenerated(const char* generated_id) {
  if constexpr (kIsTyped<Record>) {
    return TextEquals(generated_id, Record::kTypeId);
  } else {
    return true;
  }
}

/// `text` for a schema record, "" for AnySchema: the identity carries an Arrow schema only for
/// typed schemas.
template <typename Record>
constexpr const char* IfTyped(const char* text) {
  if constexpr (kIsTyped<Record>) {
    return text == nullptr ? "" : text;
  } else {
    return "";
  }
}

/// The Arrow schema of `Record` as the hex of its IPC schema message, or "" for AnySchema.
template <typename Record>
arrow::Result<std::string> ArrowSchemaHex() {
  if constexpr (kIsTyped<Record>) {
    auto bytes = arrow::ipc::SerializeSchema(*sluice::schemas::ArrowSchema<Record>());
    if (!bytes.ok()) return bytes.status();
    static constexpr char kDigits[] = "0123456789abcdef";
    std::string hex;
    for (int64_t i = 0; i < (*bytes)->size(); ++i) {
      hex += kDigits[(*bytes)->data()[i] >> 4];
      hex += kDigits[(*bytes)->data()[i] & 0xf];
    }
    return hex;
  } else {
    return std::string();
  }
}

/// The schema generator's main(): writes the header that SLUICE_TRANSFORM_SCHEMA_HEADER names
/// to the path in argv[1].
template <typename In, typename Out>
int WriteSchemaHeader(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s OUTPUT_HEADER\n", argv[0]);
    return 2;
  }
  auto in = ArrowSchemaHex<In>();
  auto out = ArrowSchemaHex<Out>();
  if (!in.ok() || !out.ok()) {
    std::fprintf(stderr, "cannot serialize the transform's schemas: %s\n",
                 (in.ok() ? out.status() : in.status()).ToString().c_str());
    return 1;
  }
  const std::string text =
      "// Generated by the sluice SDK's schema generator from SLUICE_TRANSFORM; do not edit.\n"
      "#pragma once\n"
      "#define SLUICE_GENERATED_INPUT_SCHEMA_ID \"" +
      std::string(In::kTypeId) +
      "\"\n"
      "#define SLUICE_GENERATED_INPUT_ARROW_SCHEMA \"" +
      *in +
      "\"\n"
      "#define SLUICE_GENERATED_OUTPUT_SCHEMA_ID \"" +
      std::string(Out::kTypeId) +
      "\"\n"
      "#define SLUICE_GENERATED_OUTPUT_ARROW_SCHEMA \"" +
      *out + "\"\n";
  std::FILE* file = std::fopen(argv[1], "wb");
  if (file == nullptr) {
    std::fprintf(stderr, "cannot write %s\n", argv[1]);
    return 1;
  }
  const bool written = std::fwrite(text.data(), 1, text.size(), file) == text.size();
  if (std::fclose(file) != 0 || !written) {
    std::fprintf(stderr, "cannot write %s\n", argv[1]);
    return 1;
  }
  return 0;
}

/// Checks the input's schema and runs the transform on it; nothing thrown escapes.
template <typename In, typename Out>
int32_t RunChecked(RunFn run, std::shared_ptr<arrow::RecordBatchReader> input,
                   const sluice_transform_host* host, bool arrow) {
  if (auto check = SchemaCheckFor<In>()) {
    arrow::Status st = check(*input->schema(), "input stream");
    if (!st.ok()) {
      SetError(host, st.ToString());
      return SLUICE_TRANSFORM_ERROR;
    }
  }
  Emitter out(host, SchemaCheckFor<Out>(), arrow);
  arrow::Status st = run(std::move(input), out);
  if (!st.ok()) {
    SetError(host, st.ToString());
    return SLUICE_TRANSFORM_ERROR;
  }
  return SLUICE_TRANSFORM_OK;
}

/// The body of the exported transform_batch: nothing thrown escapes it.
template <typename In, typename Out>
int32_t Invoke(RunFn run, const uint8_t* input, size_t len,
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
    return RunChecked<In, Out>(run, std::make_shared<ValidatingReader>(*std::move(opened)), host,
                               false);
  } catch (const std::exception& e) {
    SetError(host, std::string("uncaught exception: ") + e.what());
  } catch (...) {
    SetError(host, "uncaught exception of unknown type");
  }
  return SLUICE_TRANSFORM_ERROR;
}

/// The body of the exported transform_batch_arrow: takes `input` on every path, and nothing
/// thrown escapes it.
template <typename In, typename Out>
int32_t InvokeArrow(RunFn run, struct ArrowArrayStream* input,
                    const sluice_transform_host* host) noexcept {
  struct Release {  // the input is the library's to release, whatever happens
    struct ArrowArrayStream* stream;
    ~Release() {
      if (stream != nullptr && stream->release != nullptr) stream->release(stream);
    }
  } release{input};
  if (host == nullptr || host->emit == nullptr || host->set_error == nullptr) {
    return SLUICE_TRANSFORM_ERROR;
  }
  if (host->struct_size < offsetof(sluice_transform_host, emit_arrow) + sizeof(host->emit_arrow) ||
      host->emit_arrow == nullptr || input == nullptr) {
    SetError(host, "transform_batch_arrow needs an input stream and a host with emit_arrow");
    return SLUICE_TRANSFORM_ERROR;
  }
  try {
    auto imported = arrow::ImportRecordBatchReader(input);
    if (!imported.ok()) {
      SetError(host, "invalid input Arrow stream: " + imported.status().message());
      return SLUICE_TRANSFORM_ERROR;
    }
    // The host's arrays: validated by the host when they entered it.
    return RunChecked<In, Out>(run, *std::move(imported), host, true);
  } catch (const std::exception& e) {
    SetError(host, std::string("uncaught exception: ") + e.what());
  } catch (...) {
    SetError(host, "uncaught exception of unknown type");
  }
  return SLUICE_TRANSFORM_ERROR;
}

}  // namespace internal
}  // namespace sluice::sdk

/// Defines the exported ABI of a transform library. QUALIFIED_NAME and VERSION are string
/// literals of [A-Za-z0-9._-] (transform check enforces it); INPUT and OUTPUT are schema record
/// types, or sluice::sdk::AnySchema. A typed schema's Arrow schema comes from the generated
/// header (see the top of this file).
#define SLUICE_TRANSFORM_IDENTITY_PARTS_(QUALIFIED_NAME, VERSION, INPUT, OUTPUT)          \
  {                                                                                       \
    SLUICE_TRANSFORM_IDENTITY_MAGIC "{\"abi_version\":" SLUICE_TRANSFORM_ABI_VERSION_TEXT \
                                    ",\"qualified_name\":\"" QUALIFIED_NAME               \
                                    "\",\"version\":\"" VERSION "\",\"input_schema\":\"", \
        INPUT::kTypeId, "\",\"output_schema\":\"", OUTPUT::kTypeId, "\"",                 \
        ::sluice::sdk::internal::IfTyped<INPUT>(",\"input_arrow_schema\":\""),            \
        ::sluice::sdk::internal::IfTyped<INPUT>(SLUICE_GENERATED_INPUT_ARROW_SCHEMA),     \
        ::sluice::sdk::internal::IfTyped<INPUT>("\""),                                    \
        ::sluice::sdk::internal::IfTyped<OUTPUT>(",\"output_arrow_schema\":\""),          \
        ::sluice::sdk::internal::IfTyped<OUTPUT>(SLUICE_GENERATED_OUTPUT_ARROW_SCHEMA),   \
        ::sluice::sdk::internal::IfTyped<OUTPUT>("\""), "}"                               \
  }

#ifdef SLUICE_TRANSFORM_SCHEMA_GENERATOR

#define SLUICE_TRANSFORM(RUN, QUALIFIED_NAME, VERSION, INPUT, OUTPUT)             \
  int main(int argc, char** argv) {                                               \
    (void)&RUN; /* compiled as in the library, but only the schemas are used */   \
    return ::sluice::sdk::internal::WriteSchemaHeader<INPUT, OUTPUT>(argc, argv); \
  }

#else

#define SLUICE_TRANSFORM(RUN, QUALIFIED_NAME, VERSION, INPUT, OUTPUT)                            \
  static_assert(                                                                                 \
      ::sluice::sdk::internal::SchemaIsGenerated<INPUT>(SLUICE_GENERATED_INPUT_SCHEMA_ID) &&     \
          ::sluice::sdk::internal::SchemaIsGenerated<OUTPUT>(SLUICE_GENERATED_OUTPUT_SCHEMA_ID), \
      "a schema record's Arrow schema must be generated at build time: build the "               \
      "transform with sluice_add_transform (cmake/SluiceTransform.cmake); if it is, "            \
      "the generated header is stale, so rebuild");                                              \
  extern "C" {                                                                                   \
  __attribute__((visibility("default"))) extern const uint32_t transform_batch_abi_version;      \
  const uint32_t transform_batch_abi_version = SLUICE_TRANSFORM_ABI_VERSION;                     \
  __attribute__((visibility("default"), used,                                                    \
                 section(SLUICE_TRANSFORM_IDENTITY_SECTION))) extern const std::                 \
      array<char, ::sluice::sdk::internal::JoinedSize(                                           \
                      SLUICE_TRANSFORM_IDENTITY_PARTS_(QUALIFIED_NAME, VERSION, INPUT, OUTPUT))> \
          transform_batch_identity =                                                             \
              ::sluice::sdk::internal::Join<::sluice::sdk::internal::JoinedSize(                 \
                  SLUICE_TRANSFORM_IDENTITY_PARTS_(QUALIFIED_NAME, VERSION, INPUT, OUTPUT))>(    \
                  SLUICE_TRANSFORM_IDENTITY_PARTS_(QUALIFIED_NAME, VERSION, INPUT, OUTPUT));     \
  __attribute__((visibility("default"))) int32_t transform_batch(                                \
      const uint8_t* input, size_t len, const sluice_transform_host* host) {                     \
    return ::sluice::sdk::internal::Invoke<INPUT, OUTPUT>(&RUN, input, len, host);               \
  }                                                                                              \
  __attribute__((visibility("default"))) int32_t transform_batch_arrow(                          \
      struct ArrowArrayStream* input, const sluice_transform_host* host) {                       \
    return ::sluice::sdk::internal::InvokeArrow<INPUT, OUTPUT>(&RUN, input, host);               \
  }                                                                                              \
  }

#endif  // SLUICE_TRANSFORM_SCHEMA_GENERATOR
