// Test transform that misbehaves on request. The input's first field name picks the fault, so
// one library covers every case the host must survive.
#include <sluice/sdk/transform.hpp>

#include <stdexcept>

namespace {

arrow::Status RunTransform(std::shared_ptr<arrow::RecordBatchReader> input,
                           sluice::sdk::Emitter& out) {
  const std::string mode =
      input->schema()->num_fields() > 0 ? input->schema()->field(0)->name() : "";
  ARROW_ASSIGN_OR_RAISE(auto batches, input->ToRecordBatches());
  if (mode == "error") return arrow::Status::Invalid("row 7 has no conversation_id");
  if (mode == "throw") throw std::runtime_error("transform blew up");
  if (mode == "throw_int") throw 42;
  if (mode == "garbage") {
    static const uint8_t kGarbage[] = "this is not an arrow ipc stream";
    return out.EmitBytes(kGarbage, sizeof(kGarbage));
  }
  if (mode == "truncated") {
    auto schema = input->schema();
    auto sink = arrow::io::BufferOutputStream::Create().ValueOrDie();
    auto writer = arrow::ipc::MakeStreamWriter(sink, schema).ValueOrDie();
    for (auto& b : batches) ARROW_RETURN_NOT_OK(writer->WriteRecordBatch(*b));
    ARROW_RETURN_NOT_OK(writer->Close());
    auto bytes = sink->Finish().ValueOrDie();
    return out.EmitBytes(bytes->data(), static_cast<size_t>(bytes->size() / 2));
  }
  if (mode == "wrong_schema") {
    auto schema = arrow::schema({arrow::field("unexpected", arrow::int32())});
    return out.Emit(schema, {});
  }
  if (mode == "none") return arrow::Status::OK();
  if (mode == "twice") {
    ARROW_RETURN_NOT_OK(out.Emit(input->schema(), batches));
    return out.Emit(input->schema(), batches);
  }
  return out.Emit(input->schema(), batches);
}

}  // namespace

SLUICE_TRANSFORM(RunTransform, "test-faulty", "1.0.0", sluice::sdk::AnySchema,
                 sluice::sdk::AnySchema)
