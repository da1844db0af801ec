// ABI overhead: the identity transform called through the C ABI against the same identity run
// in-process on the decoded input, both starting from the same IPC bytes. Through bytes: call,
// SDK decode and validate, re-encode, host copy, host decode and validate. Through Arrow C data:
// host decode and validate (as in-process), export, call, import, and the host's validation of
// what is not an unchanged input column. 1M rows in 64K-row batches; run by `make bench`.
#include <arrow/api.h>
#include <benchmark/benchmark.h>

#include "exec/batch_transform.h"
#include "storage/jsonl_parser.h"

namespace sluice::exec {
namespace {

constexpr int64_t kRows = 1 << 20;
constexpr int64_t kBatchRows = 64 * 1024;

std::shared_ptr<arrow::Buffer> MakeInput() {
  auto schema =
      arrow::schema({arrow::field("id", arrow::int64()), arrow::field("score", arrow::float64()),
                     arrow::field("text", arrow::utf8())});
  std::vector<std::shared_ptr<arrow::RecordBatch>> batches;
  for (int64_t start = 0; start < kRows; start += kBatchRows) {
    arrow::Int64Builder ids;
    arrow::DoubleBuilder scores;
    arrow::StringBuilder texts;
    for (int64_t i = start; i < start + kBatchRows; ++i) {
      (void)ids.Append(i);
      (void)scores.Append(static_cast<double>(i) * 0.5);
      (void)texts.Append("message body number " + std::to_string(i));
    }
    batches.push_back(arrow::RecordBatch::Make(schema, kBatchRows,
                                               {*ids.Finish(), *scores.Finish(), *texts.Finish()}));
  }
  return *storage::WriteIpcStream(schema, batches);
}

// What the transform itself does, called directly.
arrow::Status Identity(const storage::IpcStream& in, std::vector<storage::IpcStream>* out) {
  out->push_back(in);
  return arrow::Status::OK();
}

void BM_InProcessIdentity(benchmark::State& state) {
  auto input = MakeInput();
  for (auto _ : state) {
    auto decoded = storage::ReadIpcStream(input, "input");
    std::vector<storage::IpcStream> out;
    if (!decoded.ok() || !Identity(*decoded, &out).ok()) state.SkipWithError("failed");
    benchmark::DoNotOptimize(out);
  }
  state.SetItemsProcessed(state.iterations() * kRows);
  state.SetBytesProcessed(state.iterations() * input->size());
}

void BM_AbiIdentity(benchmark::State& state) {
  auto input = MakeInput();
  auto lib = artifact::TransformLibrary::Open(TEST_IDENTITY_SO);
  if (!lib.ok()) {
    state.SkipWithError(lib.status().ToString().c_str());
    return;
  }
  BatchTransform transform(*lib, nullptr);
  for (auto _ : state) {
    auto out = transform.Call(input);
    if (!out.ok()) state.SkipWithError(out.status().ToString().c_str());
    benchmark::DoNotOptimize(out);
  }
  state.SetItemsProcessed(state.iterations() * kRows);
  state.SetBytesProcessed(state.iterations() * input->size());
}

void BM_AbiArrowIdentity(benchmark::State& state) {
  auto input = MakeInput();
  auto lib = artifact::TransformLibrary::Open(TEST_IDENTITY_SO);
  if (!lib.ok() || (*lib)->arrow_function() == nullptr) {
    state.SkipWithError("the identity library has no Arrow C data entry");
    return;
  }
  BatchTransform transform(*lib, nullptr);
  for (auto _ : state) {
    auto decoded = storage::ReadIpcStream(input, "input");
    if (!decoded.ok()) state.SkipWithError(decoded.status().ToString().c_str());
    auto out = transform.CallBatches(decoded->schema, decoded->batches);
    if (!out.ok()) state.SkipWithError(out.status().ToString().c_str());
    benchmark::DoNotOptimize(out);
  }
  state.SetItemsProcessed(state.iterations() * kRows);
  state.SetBytesProcessed(state.iterations() * input->size());
}

// The maintained example: 10K gateway requests of a growing conversation history (5.5 messages
// each on average), through the ABI, as the pipeline calls it. Items are output rows. The input
// is JSONL parsed against the schema the library declares, as a job's source would be: the
// engine knows no example record types.
void BM_ConversationExtract(benchmark::State& state) {
  auto lib = artifact::TransformLibrary::Open(CONVERSATION_EXTRACT_SO);
  if (!lib.ok()) {
    state.SkipWithError(lib.status().ToString().c_str());
    return;
  }
  const artifact::TransformIdentity& identity = (*lib)->identity();
  if (identity.input_arrow_schema == nullptr || identity.output_arrow_schema == nullptr) {
    state.SkipWithError("the example's identity carries no Arrow schemas");
    return;
  }
  std::string jsonl;
  std::string history;
  int64_t rows = 0, messages = 0;
  for (int i = 0; i < 10000; ++i) {
    if (i % 10 == 0) {
      history.clear();
      messages = 0;
    }
    history += std::string(history.empty() ? "" : ",") + R"({"role":")" +
               (i % 2 ? "assistant" : "user") + R"(","content":"message )" + std::to_string(i) +
               R"( with some ordinary text in it","name":null})";
    ++messages;
    jsonl += R"({"request_id":"req-)" + std::to_string(i) + R"(","user_id":"user-)" +
             std::to_string(i % 97) + R"(","conversation_id":"conv-)" + std::to_string(i / 10) +
             R"(","model":"model","received_at":"2026-01-01T00:00:00.000000Z","messages":[)" +
             history + "]}\n";
    rows += messages;
  }
  auto parsed = storage::ParseJsonl(*arrow::Buffer::FromString(jsonl), identity.input_arrow_schema,
                                    "benchmark", false);
  if (!parsed.ok()) {
    state.SkipWithError(parsed.status().ToString().c_str());
    return;
  }
  auto input = *storage::WriteIpcStream(parsed->batch->schema(), {parsed->batch});
  BatchTransform transform(*lib, identity.output_arrow_schema);
  const bool arrow = state.range(0) == 1;  // as a job calls it: the parsed batch, through C data
  for (auto _ : state) {
    auto out = arrow ? transform.CallBatches(parsed->batch->schema(), {parsed->batch})
                     : transform.Call(input);
    if (!out.ok()) state.SkipWithError(out.status().ToString().c_str());
    benchmark::DoNotOptimize(out);
  }
  state.SetItemsProcessed(state.iterations() * rows);
  state.SetBytesProcessed(state.iterations() * input->size());
}

BENCHMARK(BM_InProcessIdentity)->Unit(benchmark::kMillisecond)->MinTime(2.0);
BENCHMARK(BM_AbiIdentity)->Unit(benchmark::kMillisecond)->MinTime(2.0);
BENCHMARK(BM_AbiArrowIdentity)->Unit(benchmark::kMillisecond)->MinTime(2.0);
// 0: through bytes, 1: through Arrow C data.
BENCHMARK(BM_ConversationExtract)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond)->MinTime(2.0);

}  // namespace
}  // namespace sluice::exec

BENCHMARK_MAIN();
