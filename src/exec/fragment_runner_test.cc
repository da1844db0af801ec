// The fragment runner's Acero plans against a real local store, without transforms: a scan
// keeps each object's batches as they are (what a sink writes is what was read), a map task's
// shuffle files and a reduce task's dedup keep the first row per key in the job order, and
// errors name what is at fault.
#include "exec/fragment_runner.h"

#include <arrow/api.h>
#include <arrow/io/memory.h>
#include <arrow/ipc/api.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <map>
#include <thread>

#include "plan/session_spec.h"
#include "storage/object_store.h"

namespace sluice::exec {
namespace {

namespace fs = std::filesystem;

class FragmentRunnerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    home_ = fs::temp_directory_path() /
            ("sluice-fragment-runner-" + std::to_string(getpid()) + "-" +
             ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(home_);
    fs::create_directories(home_);
    store_url_ = "file://" + (home_ / "store").string();
    store_ = *storage::ObjectStore::Open(store_url_);
    schema_ = arrow::schema(
        {arrow::field("k", arrow::utf8(), false), arrow::field("v", arrow::int64(), false)});
  }
  void TearDown() override { fs::remove_all(home_); }

  std::shared_ptr<arrow::RecordBatch> Rows(
      const std::vector<std::pair<std::string, int64_t>>& rows) {
    arrow::StringBuilder k;
    arrow::Int64Builder v;
    for (const auto& [key, value] : rows) {
      EXPECT_TRUE(k.Append(key).ok());
      EXPECT_TRUE(v.Append(value).ok());
    }
    return arrow::RecordBatch::Make(schema_, static_cast<int64_t>(rows.size()),
                                    {*k.Finish(), *v.Finish()});
  }

  // Stores an Arrow IPC file of `batches`, each one record batch of the file.
  void Put(const std::string& key,
           const std::vector<std::shared_ptr<arrow::RecordBatch>>& batches) {
    auto sink = *arrow::io::BufferOutputStream::Create();
    auto writer = *arrow::ipc::MakeFileWriter(sink, schema_);
    for (const auto& b : batches) ASSERT_TRUE(writer->WriteRecordBatch(*b).ok());
    ASSERT_TRUE(writer->Close().ok());
    ASSERT_TRUE(store_->Put(key, *sink->Finish()).ok());
  }

  std::shared_ptr<arrow::ipc::RecordBatchFileReader> Open(const std::string& key) {
    auto bytes = *store_->Get(key);
    return *arrow::ipc::RecordBatchFileReader::Open(
        std::make_shared<arrow::io::BufferReader>(bytes));
  }

  plan::Fragment Task(int32_t stage, int32_t partition) {
    return plan::Fragment{"run-1",
                          stage,
                          partition,
                          1,
                          {store_url_, (home_ / "cache").string(), plan::LocalParity(), {}},
                          {}};
  }

  fs::path home_;
  std::string store_url_;
  std::shared_ptr<storage::ObjectStore> store_;
  std::shared_ptr<arrow::Schema> schema_;
  const std::thread::id caller_ = std::this_thread::get_id();
};

TEST_F(FragmentRunnerTest, ASinkPartHoldsEveryObjectsBatchesInOrder) {
  Put("in/a.arrow", {Rows({{"a", 0}, {"b", 1}}), Rows({{"c", 2}})});
  Put("in/b.arrow", {});  // no batches at all
  Put("in/c.arrow", {Rows({}), Rows({{"d", 3}})});
  plan::Fragment f = Task(0, 0);
  f.root =
      plan::Chain({plan::Step(plan::ScanObjects{
                       "ipc", {"in/a.arrow", "in/b.arrow", "in/c.arrow"}, 4, "", schema_, false}),
                   plan::Step(plan::WriteSink{"ipc", "out/part-0.arrow"})});
  std::vector<std::string> said;
  bool on_this_thread = true;  // the plan runs on the caller's thread, as the order needs
  TaskReport r = RunFragment(f, [&](const std::string& doing) {
    said.push_back(doing);
    on_this_thread = on_this_thread && std::this_thread::get_id() == caller_;
  });
  EXPECT_TRUE(on_this_thread);
  ASSERT_EQ(r.status, "ok") << r.error;
  EXPECT_EQ(r.objects, 3);
  EXPECT_EQ(r.records_in, 4);
  EXPECT_EQ(r.rows_out, 4);
  ASSERT_EQ(r.files.size(), 1u);
  EXPECT_EQ(r.files[0].rows, 4);
  EXPECT_EQ(said, (std::vector<std::string>{
                      "reading object 'in/a.arrow'", "reading object 'in/b.arrow'",
                      "reading object 'in/c.arrow'", "writing sink part 'out/part-0.arrow'"}));
  auto out = Open("out/part-0.arrow");
  EXPECT_TRUE(out->schema()->Equals(*schema_));  // __seq is not written
  ASSERT_EQ(out->num_record_batches(), 4);
  const int64_t rows[] = {2, 1, 0, 1};
  std::vector<int64_t> values;
  for (int i = 0; i < 4; ++i) {
    auto batch = *out->ReadRecordBatch(i);
    EXPECT_EQ(batch->num_rows(), rows[i]);
    auto v = std::static_pointer_cast<arrow::Int64Array>(batch->column(1));
    for (int64_t j = 0; j < v->length(); ++j) values.push_back(v->Value(j));
  }
  EXPECT_EQ(values, (std::vector<int64_t>{0, 1, 2, 3}));
}

TEST_F(FragmentRunnerTest, MapAndReduceKeepTheFirstRowOfEachKeyInJobOrder) {
  // Object 0 comes first in the job, whatever the row values say.
  Put("in/0.arrow", {Rows({{"x", 10}, {"y", 11}}), Rows({{"x", 12}})});
  Put("in/1.arrow", {Rows({{"y", 1}, {"z", 2}, {"z", 3}})});
  plan::Fragment map = Task(0, 0);
  map.root = plan::Chain(
      {plan::Step(plan::ScanObjects{"ipc", {"in/0.arrow", "in/1.arrow"}, 0, "", schema_, false}),
       plan::Step(plan::ShuffleWrite{{"k"}, 2, "_sluice/shuffle/run-1/s0"})});
  TaskReport m = RunFragment(map);
  ASSERT_EQ(m.status, "ok") << m.error;
  EXPECT_EQ(m.rows_out, 6);
  ASSERT_EQ(m.shuffle_files.size(), 2u);
  EXPECT_EQ(m.shuffle_files[0].key, "_sluice/shuffle/run-1/s0/s0p0-1/part-0.arrow");
  EXPECT_EQ(m.shuffle_files[0].rows + m.shuffle_files[1].rows, 6);

  auto seq_schema =
      *schema_->AddField(2, arrow::field(plan::kSequenceColumn, arrow::int64(), false));
  std::map<std::string, int64_t> kept;
  int64_t dropped = 0;
  for (int32_t p = 0; p < 2; ++p) {
    plan::Fragment reduce = Task(1, p);
    const OutputFile& file = m.shuffle_files[static_cast<size_t>(p)];
    std::vector<plan::PlanNodeFields> steps = {
        plan::Step(plan::ShuffleRead{{file.key}, {file.blake3}, seq_schema, {"k"}, {}}),
        plan::Step(plan::DedupFirst{"k"})};
    const std::string out = "out/part-" + std::to_string(p) + ".arrow";
    steps.push_back(plan::Step(plan::WriteSink{"ipc", out}));
    reduce.root = plan::Chain(std::move(steps));
    TaskReport r = RunFragment(reduce);
    ASSERT_EQ(r.status, "ok") << r.error;
    dropped += r.duplicates_dropped;
    auto reader = Open(out);
    ASSERT_GE(reader->num_record_batches(), 1);
    for (int b = 0; b < reader->num_record_batches(); ++b) {
      auto batch = *reader->ReadRecordBatch(b);
      auto k = std::static_pointer_cast<arrow::StringArray>(batch->column(0));
      auto v = std::static_pointer_cast<arrow::Int64Array>(batch->column(1));
      for (int64_t i = 0; i < batch->num_rows(); ++i) kept[k->GetString(i)] = v->Value(i);
    }
  }
  EXPECT_EQ(dropped, 3);
  EXPECT_EQ(kept, (std::map<std::string, int64_t>{{"x", 10}, {"y", 11}, {"z", 2}}));

  // A shuffle file that is not what its writer reported is an error naming it.
  plan::Fragment damaged = Task(1, 0);
  damaged.root = plan::Chain(
      {plan::Step(plan::ShuffleRead{
           {m.shuffle_files[0].key}, {std::string(64, '0')}, seq_schema, {"k"}, {}}),
       plan::Step(plan::DedupFirst{"k"}), plan::Step(plan::WriteSink{"ipc", "out/damaged.arrow"})});
  TaskReport d = RunFragment(damaged);
  EXPECT_EQ(d.status, "error");
  EXPECT_NE(
      d.error.find("task s1p0: IOError: shuffle file '" + m.shuffle_files[0].key + "' hashes to "),
      std::string::npos)
      << d.error;
  EXPECT_FALSE(*store_->Exists("out/damaged.arrow"));
}

TEST_F(FragmentRunnerTest, ADedupOfNoRowsStillWritesAPartWithTheSchema) {
  // A partition no key hashed to: its reduce task's part has the job's columns and no rows.
  Put("in/empty.arrow", {});
  plan::Fragment map = Task(0, 0);
  map.root =
      plan::Chain({plan::Step(plan::ScanObjects{"ipc", {"in/empty.arrow"}, 0, "", schema_, false}),
                   plan::Step(plan::ShuffleWrite{{"k"}, 2, "_sluice/shuffle/run-1/s0"})});
  TaskReport m = RunFragment(map);
  ASSERT_EQ(m.status, "ok") << m.error;
  ASSERT_EQ(m.shuffle_files.size(), 2u);
  auto seq_schema =
      *schema_->AddField(2, arrow::field(plan::kSequenceColumn, arrow::int64(), false));
  plan::Fragment reduce = Task(1, 0);
  const OutputFile& file = m.shuffle_files[0];
  reduce.root = plan::Chain(
      {plan::Step(plan::ShuffleRead{{file.key}, {file.blake3}, seq_schema, {"k"}, {}}),
       plan::Step(plan::DedupFirst{"k"}), plan::Step(plan::WriteSink{"ipc", "out/part-0.arrow"})});
  TaskReport r = RunFragment(reduce);
  ASSERT_EQ(r.status, "ok") << r.error;
  EXPECT_EQ(r.rows_out, 0);
  ASSERT_EQ(r.files.size(), 1u);
  auto out = Open("out/part-0.arrow");
  EXPECT_TRUE(out->schema()->Equals(*schema_)) << out->schema()->ToString();
  int64_t rows = 0;
  for (int b = 0; b < out->num_record_batches(); ++b)
    rows += (*out->ReadRecordBatch(b))->num_rows();
  EXPECT_EQ(rows, 0);
}

TEST_F(FragmentRunnerTest, ADataErrorNamesTheObjectAndWritesNothing) {
  Put("in/good.arrow", {Rows({{"a", 0}})});
  ASSERT_TRUE(store_->Put("in/bad.arrow", arrow::Buffer::FromString("not arrow")).ok());
  plan::Fragment f = Task(0, 3);
  f.root = plan::Chain({plan::Step(plan::ScanObjects{
                            "ipc", {"in/good.arrow", "in/bad.arrow"}, 0, "", schema_, false}),
                        plan::Step(plan::WriteSink{"ipc", "out/part-3.arrow"})});
  TaskReport r = RunFragment(f);
  EXPECT_EQ(r.status, "error");
  EXPECT_EQ(r.error.rfind("task s0p3: Invalid: object 'in/bad.arrow': not an Arrow IPC file", 0),
            0u)
      << r.error;
  EXPECT_EQ(r.objects, 1);
  EXPECT_FALSE(*store_->Exists("out/part-3.arrow"));
}

TEST_F(FragmentRunnerTest, AFragmentOutOfShapeIsAnInternalError) {
  plan::Fragment f = Task(0, 0);
  f.root = plan::Chain({plan::Step(plan::WriteSink{"ipc", "out/part-0.arrow"})});
  TaskReport r = RunFragment(f);
  EXPECT_EQ(r.status, "error");
  EXPECT_NE(r.error.find("internal: plan:"), std::string::npos) << r.error;
}

}  // namespace
}  // namespace sluice::exec
