// Test transform: returns its input as one stream with the same schema and batches.
#include <sluice/sdk/transform.hpp>

namespace {

arrow::Status RunTransform(std::shared_ptr<arrow::RecordBatchReader> input,
                           sluice::sdk::Emitter& out) {
  ARROW_ASSIGN_OR_RAISE(auto batches, input->ToRecordBatches());
  return out.Emit(input->schema(), batches);
}

}  // namespace

SLUICE_TRANSFORM(RunTransform, "test-identity", "1.0.0", sluice::sdk::AnySchema,
                 sluice::sdk::AnySchema)
