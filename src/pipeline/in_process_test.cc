// The in-process stage runner (`submit --workers 0`) against a real local store: tasks run in
// order through the worker's fragment runner, report as a worker would, and the first user or
// data error stops the stage with the task's own message. No transform is needed: a scan and a
// sink make a whole task.
#include "pipeline/in_process.h"

#include <arrow/api.h>
#include <arrow/io/memory.h>
#include <arrow/ipc/api.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>

#include "storage/object_store.h"

namespace sluice::pipeline {
namespace {

namespace fs = std::filesystem;

class InProcessStageTest : public ::testing::Test {
 protected:
  void SetUp() override {
    home_ = fs::temp_directory_path() /
            ("sluice-in-process-" + std::to_string(getpid()) + "-" +
             ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(home_);
    fs::create_directories(home_);
    store_url_ = "file://" + (home_ / "store").string();
    store_ = *storage::ObjectStore::Open(store_url_);
    schema_ = arrow::schema({arrow::field("id", arrow::int64(), false)});
  }
  void TearDown() override { fs::remove_all(home_); }

  // Stores an Arrow IPC file of ids [first, first + n).
  void PutIds(const std::string& key, int64_t first, int64_t n) {
    arrow::Int64Builder ids;
    for (int64_t i = 0; i < n; ++i) ASSERT_TRUE(ids.Append(first + i).ok());
    auto batch = arrow::RecordBatch::Make(schema_, n, {*ids.Finish()});
    auto sink = *arrow::io::BufferOutputStream::Create();
    auto writer = *arrow::ipc::MakeFileWriter(sink, schema_);
    ASSERT_TRUE(writer->WriteRecordBatch(*batch).ok());
    ASSERT_TRUE(writer->Close().ok());
    ASSERT_TRUE(store_->Put(key, *sink->Finish()).ok());
  }

  // Task s0p<partition>: reads `key` and writes it to `out`.
  plan::Fragment Copy(int32_t partition, const std::string& key, const std::string& out) {
    plan::Fragment f{"run-1", 0, partition, 7, {store_url_, (home_ / "cache").string(), {}, {}},
                     {}};
    f.root =
        plan::Chain({plan::Step(plan::ScanObjects{"ipc", {key}, partition, "", schema_, false}),
                     plan::Step(plan::WriteSink{"ipc", out})});
    return f;
  }

  fs::path home_;
  std::string store_url_;
  std::shared_ptr<storage::ObjectStore> store_;
  std::shared_ptr<arrow::Schema> schema_;
};

// Device and inode of a descriptor, to see that it is the same file afterwards.
std::pair<dev_t, ino_t> FileOf(int fd) {
  struct stat st {};
  if (fstat(fd, &st) != 0) return {0, 0};
  return {st.st_dev, st.st_ino};
}

TEST_F(InProcessStageTest, RunsEveryTaskInOrderAndReportsLikeAWorker) {
  PutIds("in/a.arrow", 0, 3);
  PutIds("in/b.arrow", 100, 5);
  const auto stdin_before = FileOf(STDIN_FILENO), stdout_before = FileOf(STDOUT_FILENO);
  std::vector<std::string> seen;
  auto reports = RunStageInProcess({Copy(0, "in/a.arrow", "out/part-00000-att.arrow"),
                                    Copy(1, "in/b.arrow", "out/part-00001-att.arrow")},
                                   [&](const exec::TaskReport& r) { seen.push_back(r.task); });
  ASSERT_TRUE(reports.ok()) << reports.status().ToString();
  ASSERT_EQ(reports->size(), 2u);
  EXPECT_EQ(seen, (std::vector<std::string>{"s0p0", "s0p1"}));
  const int64_t rows[] = {3, 5};
  for (size_t i = 0; i < 2; ++i) {
    const exec::TaskReport& r = (*reports)[i];
    EXPECT_EQ(r.task, "s0p" + std::to_string(i));
    EXPECT_EQ(r.status, "ok") << r.error;
    EXPECT_EQ(r.attempt, 1);  // the only attempt there is, whatever the fragment said
    EXPECT_EQ(r.worker_pid, 0);
    EXPECT_EQ(r.objects, 1);
    EXPECT_EQ(r.records_in, rows[i]);
    ASSERT_EQ(r.files.size(), 1u);
    EXPECT_EQ(r.files[0].key, "out/part-0000" + std::to_string(i) + "-att.arrow");
    EXPECT_EQ(r.files[0].rows, rows[i]);
    EXPECT_EQ(r.files[0].blake3.size(), 64u);
    EXPECT_TRUE(*store_->Exists(r.files[0].key));
  }
  // Standard input and output are the driver's own again.
  EXPECT_EQ(FileOf(STDIN_FILENO), stdin_before);
  EXPECT_EQ(FileOf(STDOUT_FILENO), stdout_before);
}

TEST_F(InProcessStageTest, AUserErrorStopsTheStageWithTheTasksMessage) {
  ASSERT_TRUE(store_->Put("in/bad.arrow", arrow::Buffer::FromString("not arrow at all")).ok());
  PutIds("in/good.arrow", 0, 2);
  int reported = 0;
  auto reports = RunStageInProcess({Copy(0, "in/bad.arrow", "out/part-00000-att.arrow"),
                                    Copy(1, "in/good.arrow", "out/part-00001-att.arrow")},
                                   [&](const exec::TaskReport&) { ++reported; });
  ASSERT_FALSE(reports.ok());
  EXPECT_TRUE(reports.status().IsInvalid());
  const std::string message = reports.status().message();
  EXPECT_NE(message.find("task s0p0: "), std::string::npos) << message;
  EXPECT_NE(message.find("object 'in/bad.arrow': not an Arrow IPC file"), std::string::npos)
      << message;
  // No task starts after the failure, and nothing was written.
  EXPECT_EQ(reported, 0);
  EXPECT_FALSE(*store_->Exists("out/part-00000-att.arrow"));
  EXPECT_FALSE(*store_->Exists("out/part-00001-att.arrow"));
}

TEST_F(InProcessStageTest, APlanThatDoesNotDecodeIsRefusedBeforeItRuns) {
  PutIds("in/a.arrow", 0, 1);
  plan::Fragment f = Copy(0, "in/a.arrow", "out/part-00000-att.arrow");
  // A sink below the scan: the codec's shape check refuses it, as a worker would.
  f.root =
      plan::Chain({plan::Step(plan::WriteSink{"ipc", "out/part-00000-att.arrow"}),
                   plan::Step(plan::ScanObjects{"ipc", {"in/a.arrow"}, 0, "", schema_, false})});
  auto reports = RunStageInProcess({f});
  ASSERT_FALSE(reports.ok());
  EXPECT_NE(reports.status().message().find("task s0p0: its plan"), std::string::npos)
      << reports.status().ToString();
  EXPECT_FALSE(*store_->Exists("out/part-00000-att.arrow"));
}

}  // namespace
}  // namespace sluice::pipeline
