// The host side of the transform ABI, through real libraries loaded with dlopen and real Arrow
// IPC bytes, including Arrow's own golden integration streams.
#include "exec/batch_transform.h"

#include <arrow/api.h>
#include <arrow/array/array_base.h>
#include <arrow/io/file.h>
#include <arrow/json/from_string.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <thread>

namespace sluice::exec {
namespace {

std::shared_ptr<arrow::RecordBatch> Batch(const std::string& first_field, int64_t n) {
  arrow::Int64Builder ids;
  arrow::StringBuilder names;
  for (int64_t i = 0; i < n; ++i) {
    EXPECT_TRUE(ids.Append(i).ok());
    EXPECT_TRUE(names.Append("row-" + std::to_string(i)).ok());
  }
  auto schema = arrow::schema(
      {arrow::field(first_field, arrow::int64()), arrow::field("name", arrow::utf8())});
  return arrow::RecordBatch::Make(schema, n, {*ids.Finish(), *names.Finish()});
}

std::shared_ptr<arrow::Buffer> Stream(const std::vector<std::shared_ptr<arrow::RecordBatch>>& b) {
  return *storage::WriteIpcStream(b.front()->schema(), b);
}

BatchTransform Load(const char* path, std::shared_ptr<arrow::Schema> expected = nullptr) {
  auto lib = artifact::TransformLibrary::Open(path);
  EXPECT_TRUE(lib.ok()) << lib.status().ToString();
  return BatchTransform(*lib, std::move(expected));
}

TEST(BatchTransform, IdentityReturnsItsInput) {
  auto a = Batch("id", 10), b = Batch("id", 3);
  auto out = Load(TEST_IDENTITY_SO).Call(Stream({a, b}));
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  ASSERT_EQ(out->size(), 1u);
  ASSERT_EQ((*out)[0].batches.size(), 2u);
  EXPECT_TRUE((*out)[0].batches[0]->Equals(*a));
  EXPECT_TRUE((*out)[0].batches[1]->Equals(*b));
}

TEST(BatchTransform, ZeroAndSeveralOutputsAreValid) {
  auto none = Load(TEST_FAULTY_SO).Call(Stream({Batch("none", 4)}));
  ASSERT_TRUE(none.ok()) << none.status().ToString();
  EXPECT_TRUE(none->empty());
  auto twice = Load(TEST_FAULTY_SO).Call(Stream({Batch("twice", 4)}));
  ASSERT_TRUE(twice.ok()) << twice.status().ToString();
  ASSERT_EQ(twice->size(), 2u);
  EXPECT_EQ((*twice)[1].num_rows(), 4);
}

TEST(BatchTransform, FrozenV1LibraryStillWorks) {
  auto input = Stream({Batch("id", 5)});
  auto out = Load(TEST_FROZEN_V1_SO).Call(input);
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  ASSERT_EQ(out->size(), 1u);
  EXPECT_TRUE((*out)[0].batches[0]->Equals(*Batch("id", 5)));
}

void ExpectFailure(const char* lib, const std::string& mode, const std::string& expect,
                   std::shared_ptr<arrow::Schema> expected_schema = nullptr) {
  auto out = Load(lib, expected_schema).Call(Stream({Batch(mode, 3)}));
  ASSERT_FALSE(out.ok()) << mode;
  EXPECT_NE(out.status().ToString().find(expect), std::string::npos)
      << mode << ": " << out.status().ToString();
}

TEST(BatchTransform, FaultsAreErrorsNamingTheTransform) {
  ExpectFailure(TEST_FAULTY_SO, "error",
                "transform 'test-faulty' failed: Invalid: row 7 has no conversation_id");
  ExpectFailure(TEST_FAULTY_SO, "throw",
                "transform 'test-faulty' failed: uncaught exception: transform blew up");
  ExpectFailure(TEST_FAULTY_SO, "throw_int",
                "transform 'test-faulty' failed: uncaught exception of unknown type");
  ExpectFailure(TEST_FAULTY_SO, "garbage",
                "transform 'test-faulty' output stream 1 of 1: not a valid Arrow IPC stream");
  ExpectFailure(TEST_FAULTY_SO, "truncated", "transform 'test-faulty' output stream 1 of 1");
  ExpectFailure(TEST_FAULTY_SO, "wrong_schema",
                "transform 'test-faulty' output stream 1 of 1: schema mismatch: expected "
                "[wrong_schema: int64, name: string], got [unexpected: int32]",
                Batch("wrong_schema", 1)->schema());
}

TEST(BatchTransform, GarbageOrTruncatedInputIsRefusedByTheSdk) {
  auto transform = Load(TEST_IDENTITY_SO);
  auto garbage = transform.Call(arrow::Buffer::FromString("garbage, not IPC"));
  ASSERT_FALSE(garbage.ok());
  EXPECT_NE(
      garbage.status().message().find("transform 'test-identity' failed: invalid input IPC stream"),
      std::string::npos)
      << garbage.status().message();

  auto good = Stream({Batch("id", 1000)});
  for (int64_t cut : {int64_t{0}, int64_t{4}, good->size() / 3, good->size() - 16}) {
    auto truncated = transform.Call(arrow::SliceBuffer(good, 0, cut));
    ASSERT_FALSE(truncated.ok()) << "cut at " << cut;
    EXPECT_NE(truncated.status().message().find("transform 'test-identity' failed"),
              std::string::npos)
        << truncated.status().message();
  }
}

TEST(BatchTransform, InputThatFailsValidateFullIsRefused) {
  // Structurally decodable, but the utf8 column holds invalid UTF-8: only ValidateFull sees it.
  arrow::BinaryBuilder builder;
  ASSERT_TRUE(builder.Append(std::string("\xff\xfe\xfd", 3)).ok());
  auto binary = *builder.Finish();
  auto data = binary->data()->Copy();
  data->type = arrow::utf8();
  auto bad = arrow::MakeArray(data);
  auto schema = arrow::schema({arrow::field("text", arrow::utf8())});
  auto batch = arrow::RecordBatch::Make(schema, 1, {bad});
  auto out = Load(TEST_IDENTITY_SO).Call(Stream({batch}));
  ASSERT_FALSE(out.ok());
  EXPECT_NE(out.status().message().find("invalid input batch 0"), std::string::npos)
      << out.status().message();
}

TEST(BatchTransform, ExampleTransformRefusesInputWithTheWrongSchema) {
  auto lib = artifact::TransformLibrary::Open(CONVERSATION_EXTRACT_SO);
  ASSERT_TRUE(lib.ok()) << lib.status().ToString();
  BatchTransform transform(*lib, nullptr);
  auto out = transform.Call(Stream({Batch("request_id", 2)}));
  ASSERT_FALSE(out.ok());
  EXPECT_NE(out.status().message().find(
                "transform 'conversation-message-extract' failed: Type error: input stream: schema "
                "mismatch for sluice.examples.conversation.ConversationMessageGateway: expected "
                "[request_id: string, user_id: string,"),
            std::string::npos)
      << out.status().message();
  EXPECT_NE(out.status().message().find("got [request_id: int64, name: string]"), std::string::npos)
      << out.status().message();
}

// Through Arrow C data (CallBatches): the SDK's libraries export transform_batch_arrow.
arrow::Result<std::vector<storage::IpcStream>> CallArrow(
    const BatchTransform& transform, const std::vector<std::shared_ptr<arrow::RecordBatch>>& b) {
  return transform.CallBatches(b.front()->schema(), b);
}

TEST(BatchTransformArrow, IdentityHandsBackTheSameArrays) {
  auto a = Batch("id", 10), b = Batch("id", 3);
  auto transform = Load(TEST_IDENTITY_SO);
  auto out = CallArrow(transform, {a, b});
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  ASSERT_EQ(out->size(), 1u);
  ASSERT_EQ((*out)[0].batches.size(), 2u);
  EXPECT_TRUE((*out)[0].batches[0]->Equals(*a));
  EXPECT_TRUE((*out)[0].batches[1]->Equals(*b));
  // Nothing was copied: the output's strings are the input's memory.
  EXPECT_EQ((*out)[0].batches[0]->column_data(1)->buffers[2]->address(),
            a->column_data(1)->buffers[2]->address());
}

TEST(BatchTransformArrow, FaultsAreTheSameErrorsAsThroughBytes) {
  auto expect = [](const std::string& mode, const std::string& message,
                   std::shared_ptr<arrow::Schema> schema = nullptr) {
    auto out = CallArrow(Load(TEST_FAULTY_SO, schema), {Batch(mode, 3)});
    ASSERT_FALSE(out.ok()) << mode;
    EXPECT_NE(out.status().ToString().find(message), std::string::npos)
        << mode << ": " << out.status().ToString();
  };
  expect("error", "transform 'test-faulty' failed: Invalid: row 7 has no conversation_id");
  expect("throw", "transform 'test-faulty' failed: uncaught exception: transform blew up");
  expect("throw_int", "transform 'test-faulty' failed: uncaught exception of unknown type");
  // Bytes emitted with EmitBytes still arrive through emit(), decoded and validated as ever.
  expect("garbage", "transform 'test-faulty' output stream 1 of 1");
  expect("truncated", "transform 'test-faulty' output stream 1 of 1");
  expect("wrong_schema", "output stream 1 of 1",
         arrow::schema({arrow::field("wrong_schema", arrow::int64())}));
  auto none = CallArrow(Load(TEST_FAULTY_SO), {Batch("none", 4)});
  ASSERT_TRUE(none.ok()) << none.status().ToString();
  EXPECT_TRUE(none->empty());
  auto twice = CallArrow(Load(TEST_FAULTY_SO), {Batch("twice", 4)});
  ASSERT_TRUE(twice.ok()) << twice.status().ToString();
  ASSERT_EQ(twice->size(), 2u);
  EXPECT_EQ((*twice)[1].num_rows(), 4);
}

TEST(BatchTransformArrow, ALibraryWithoutTheEntryIsCalledThroughBytes) {
  auto transform = Load(TEST_FROZEN_V1_SO);
  auto out = CallArrow(transform, {Batch("id", 5)});
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  ASSERT_EQ(out->size(), 1u);
  EXPECT_TRUE((*out)[0].batches[0]->Equals(*Batch("id", 5)));
}

TEST(BatchTransformArrow, NewArraysAreValidatedInFull) {
  // A plain C library whose second string is not UTF-8: the host refuses the column.
  auto out = CallArrow(Load(TEST_ARROW_C_BAD_SO), {Batch("id", 2)});
  ASSERT_FALSE(out.ok());
  EXPECT_NE(out.status().ToString().find(
                "transform 'test-arrow-c' output stream 1 of 1 batch 0 column 's': "),
            std::string::npos)
      << out.status().ToString();
  // The same library with good offsets is accepted.
  auto good = CallArrow(Load(TEST_ARROW_C_SO), {Batch("id", 2)});
  ASSERT_TRUE(good.ok()) << good.status().ToString();
  EXPECT_EQ((*good)[0].batches[0]->column(0)->ToString(),
            arrow::json::ArrayFromJSONString(arrow::utf8(), R"(["abc", "def"])")
                .ValueOrDie()
                ->ToString());
}

TEST(BatchTransformArrow, KeptArraysKeepTheLibraryLoaded) {
  // The arrays point into the library's static data and release through its code: they stay
  // usable after the transform and the last handle on the library are gone.
  std::vector<storage::IpcStream> out;
  {
    auto lib = artifact::TransformLibrary::Open(TEST_ARROW_C_SO);
    ASSERT_TRUE(lib.ok()) << lib.status().ToString();
    BatchTransform transform(*lib, nullptr);
    auto result = CallArrow(transform, {Batch("id", 2)});
    ASSERT_TRUE(result.ok()) << result.status().ToString();
    out = *std::move(result);
  }
  auto strings = std::static_pointer_cast<arrow::StringArray>(out[0].batches[0]->column(0));
  EXPECT_EQ(strings->GetString(1), "def");
  out.clear();  // releases through the library, which is unloaded only now
}

TEST(BatchTransform, ConcurrentCallsAreIndependent) {
  auto transform = Load(TEST_IDENTITY_SO);
  std::vector<std::thread> threads;
  std::atomic<int> ok{0};
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 20; ++i) {
        auto batch = Batch("id", 10 + t * 100 + i);
        auto out = transform.Call(Stream({batch}));
        if (out.ok() && out->size() == 1 && (*out)[0].batches[0]->Equals(*batch)) ++ok;
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(ok.load(), 80);
}

// Arrow's golden integration streams, written by Arrow C++ 21 and by Arrow 1.0, cover every
// type and the empty and no-batch cases. The identity must return each unchanged, except where
// the host refuses data on purpose; then the error must name the column and its type.
TEST(BatchTransform, IdentityReturnsEveryArrowIntegrationStream) {
  namespace fs = std::filesystem;
  const fs::path root = fs::path(SLUICE_SHARED_DIR) / "testdata" / "arrow-integration";
  ASSERT_TRUE(fs::exists(root)) << root
                                << " is missing: the shared/ folder must sit beside "
                                   "the repository";
  // Arrow 1.0's generator wrote date64 values that are not whole days and decimals wider than
  // their precision. ValidateFull() in Arrow 26 rejects them, and so does every sluice path
  // that reads untrusted IPC; the streams Arrow C++ 21 wrote all pass.
  const std::string prefix = "transform 'test-identity' failed: Invalid: invalid input batch 0: ";
  const std::map<std::string, std::string> refused = {
      {"1.0.0-littleendian/generated_datetime.stream",
       prefix + "In column 1: Invalid: date64[ms] 213620221665533 does not represent a whole "
                "number of days"},
      {"1.0.0-littleendian/generated_decimal.stream",
       prefix + "In column 0: Invalid: Decimal value 12810 does not fit in precision of "
                "decimal128(3, 2)"},
      {"1.0.0-littleendian/generated_decimal256.stream",
       prefix + "In column 0: Invalid: Decimal value"}};
  std::vector<fs::path> files;
  for (auto& entry : fs::recursive_directory_iterator(root)) {
    if (entry.path().extension() == ".stream") files.push_back(entry.path());
  }
  std::sort(files.begin(), files.end());
  ASSERT_GE(files.size(), 50u);
  auto transform = Load(TEST_IDENTITY_SO);
  int round_tripped = 0;
  for (const fs::path& file : files) {
    const std::string name = fs::relative(file, root).string();
    SCOPED_TRACE(name);
    auto in = arrow::io::ReadableFile::Open(file.string());
    ASSERT_TRUE(in.ok());
    auto bytes = (*in)->Read(*(*in)->GetSize());
    ASSERT_TRUE(bytes.ok());
    auto out = transform.Call(*bytes);
    if (auto it = refused.find(name); it != refused.end()) {
      ASSERT_FALSE(out.ok());
      EXPECT_NE(out.status().message().find(it->second), std::string::npos)
          << out.status().message();
      continue;
    }
    EXPECT_TRUE(out.ok()) << out.status().ToString();
    if (!out.ok()) continue;
    auto expected = storage::ReadIpcStream(*bytes, name);
    ASSERT_TRUE(expected.ok()) << expected.status().ToString();
    ASSERT_EQ(out->size(), 1u);
    const storage::IpcStream& got = (*out)[0];
    EXPECT_TRUE(got.schema->Equals(*expected->schema, /*check_metadata=*/true))
        << got.schema->ToString() << "\nvs\n"
        << expected->schema->ToString();
    ASSERT_EQ(got.batches.size(), expected->batches.size());
    for (size_t i = 0; i < got.batches.size(); ++i) {
      EXPECT_TRUE(got.batches[i]->Equals(*expected->batches[i], /*check_metadata=*/true))
          << "batch " << i;
    }
    ++round_tripped;
  }
  EXPECT_EQ(round_tripped + refused.size(), files.size());
}

}  // namespace
}  // namespace sluice::exec
