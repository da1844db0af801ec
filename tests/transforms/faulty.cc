// Test transform that misbehaves on request. The input's first field name picks the fault, so
// one library covers every case the host must survive. On gateway records (first field
// `request_id`, as a JSONL job reads them), the first row's request_id picks it instead, so the
// end-to-end tests can publish this file with typed schemas and choose the fault per object.
#include <signal.h>
#include <unistd.h>

#include <sluice/sdk/transform.hpp>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

extern char** environ;

namespace {

std::string Mode(const arrow::Schema& schema,
                 const std::vector<std::shared_ptr<arrow::RecordBatch>>& batches) {
  if (schema.num_fields() == 0) return "";
  const std::string name = schema.field(0)->name();
  if (name != "request_id" || schema.field(0)->type()->id() != arrow::Type::STRING) return name;
  for (const auto& b : batches) {
    if (b->num_rows() > 0)
      return static_cast<const arrow::StringArray&>(*b->column(0)).GetString(0);
  }
  return name;
}

// Starts a child that holds our stdout (and every other descriptor) open and sleeps until it is
// killed, as a transform that launches a helper process might.
void ForkSleeper() {
  if (fork() == 0) {
    while (true) pause();
  }
}

[[noreturn]] void Spin() {
  volatile uint64_t counter = 0;
  while (true) counter = counter + 1;
}

arrow::Status RunTransform(std::shared_ptr<arrow::RecordBatchReader> input,
                           sluice::sdk::Emitter& out) {
  ARROW_ASSIGN_OR_RAISE(auto batches, input->ToRecordBatches());
  const std::string mode = Mode(*input->schema(), batches);
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
  // Faults that take the whole worker down, for the pool's limits and retries.
  if (mode == "loop") Spin();
  if (mode == "alloc") {
    // Touches every page, so the memory is resident, not only reserved; the pause bounds the
    // rate so that a test's small limit is passed by tens of MiB, not gigabytes. It stops
    // growing at 1 GiB, more than any test's limit, so that a host without the limit survives
    // (the task then hangs until its time limit).
    std::vector<std::unique_ptr<char[]>> held;
    constexpr size_t kChunk = size_t{16} << 20;
    while (true) {
      if (held.size() * kChunk < (size_t{1} << 30)) {
        held.emplace_back(new char[kChunk]);
        std::memset(held.back().get(), 1, kChunk);
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
  }
  if (mode == "fork_stdout") {
    ForkSleeper();
    return arrow::Status::OK();  // no output: the task succeeds while the child lives on
  }
  if (mode == "fork_loop") {
    ForkSleeper();
    Spin();
  }
  if (mode == "abort") std::abort();
  if (mode == "segfault") {
    int* volatile nowhere = nullptr;
    *nowhere = 42;
  }
  if (mode == "read") {
    // Tries to read the file that the first row's second column (user_id) names.
    const auto& column = static_cast<const arrow::StringArray&>(*batches.at(0)->column(1));
    const std::string path = column.GetString(0);
    std::FILE* file = std::fopen(path.c_str(), "rb");
    if (file == nullptr) {
      return arrow::Status::Invalid("read [", path, "]: cannot open: ", std::strerror(errno));
    }
    char buf[4096];
    const size_t n = std::fread(buf, 1, sizeof(buf), file);
    std::fclose(file);
    return arrow::Status::Invalid("read [", path, "]: ", n, " bytes");
  }
  if (mode == "env") {
    // What a transform can see: the names of its environment variables and its directory.
    std::string names;
    for (char** e = environ; *e != nullptr; ++e) {
      const char* eq = std::strchr(*e, '=');
      if (!names.empty()) names.push_back(' ');
      names.append(*e, eq != nullptr ? static_cast<size_t>(eq - *e) : std::strlen(*e));
    }
    char cwd[4096] = "?";
    if (getcwd(cwd, sizeof(cwd)) == nullptr) std::strcpy(cwd, "?");
    return arrow::Status::Invalid("environment: [", names, "] cwd: [", cwd, "]");
  }
  return out.Emit(input->schema(), batches);
}

}  // namespace

SLUICE_TRANSFORM(RunTransform, "test-faulty", "1.0.0", sluice::sdk::AnySchema,
                 sluice::sdk::AnySchema)
