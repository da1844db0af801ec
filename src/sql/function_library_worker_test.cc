// Name-only function encoding across processes: a real `sluice worker` decodes real plan bytes
// that call a function library by name and digest, and resolves the library itself.
//   1. The session spec lists the library and the worker has nothing registered: it loads the
//      library from the store (verified) and runs the task.
//   2. The worker's session registered the library (an earlier task of this long-lived worker
//      loaded it) and this task's spec does not list it: it runs.
//   3. Neither: the task fails naming the function and the library digest.
// The test process registers the library too, as the driver does: a worker that quietly
// relied on the driver's state could not pass case 3 in a fresh process, and case 1 runs in a
// fresh process whose only path to the library is the spec.
// Parity: a spec that lists another build of a library the worker has loaded is refused,
// naming both digests.
#include <arrow/api.h>
#include <arrow/io/file.h>
#include <gtest/gtest.h>
#include <parquet/arrow/writer.h>
#include <signal.h>
#include <unistd.h>

#include <filesystem>

#include "artifact/blake3_digest.h"
#include "artifact/verified_loader.h"
#include "dist/worker_process.h"
#include "exec/task_report.h"
#include "plan/compute_init.h"
#include "plan/fragment.h"
#include "plan/library_functions.h"
#include "plan/plan_codec.h"
#include "plan/session_spec.h"
#include "sql/plan_node.h"
#include "storage/object_store.h"

#ifndef SLUICE_BINARY
#error "SLUICE_BINARY must name the sluice binary"
#endif

namespace sluice::sql {
namespace {

namespace cp = arrow::compute;
namespace fs = std::filesystem;

class FunctionLibraryWorkerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    signal(SIGPIPE, SIG_IGN);
    ASSERT_TRUE(plan::EnsureComputeInitialized().ok());
    dir_ = fs::temp_directory_path() / ("sluice-fn-worker-" + std::to_string(getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_ / "store" / "t");
    store_url_ = "file://" + (dir_ / "store").string();
    store_ = storage::ObjectStore::Open(store_url_).ValueOrDie();
    // The table: price and discount, 100 rows.
    arrow::DoubleBuilder price, discount;
    for (int i = 0; i < 100; ++i) {
      ASSERT_TRUE(price.Append(i).ok());
      ASSERT_TRUE(discount.Append(0.5).ok());
    }
    schema_ = arrow::schema(
        {arrow::field("price", arrow::float64()), arrow::field("discount", arrow::float64())});
    auto table =
        arrow::Table::Make(schema_, {price.Finish().ValueOrDie(), discount.Finish().ValueOrDie()});
    auto out = arrow::io::FileOutputStream::Open((dir_ / "store" / "t" / "part-0.parquet").string())
                   .ValueOrDie();
    ASSERT_TRUE(
        parquet::arrow::WriteTable(*table, arrow::default_memory_pool(), out, 1 << 20).ok());
    ASSERT_TRUE(out->Close().ok());
    // The library, published; and another build of it (same identity, other bytes).
    auto file = arrow::io::ReadableFile::Open(SLUICE_EXAMPLE_FUNCTIONS_SO).ValueOrDie();
    auto bytes = file->Read(file->GetSize().ValueOrDie()).ValueOrDie();
    digest_ = artifact::Blake3(*bytes).ToHex();
    ASSERT_TRUE(store_->Put("functions/" + digest_ + ".so", bytes).ok());
    auto other = arrow::Buffer::FromString(bytes->ToString() + std::string(16, '\0'));
    other_digest_ = artifact::Blake3(*other).ToHex();
    ASSERT_TRUE(store_->Put("functions/" + other_digest_ + ".so", other).ok());
    // The driver's state: the library registered in this process, as a query's driver has it.
    ASSERT_TRUE(
        plan::EnsureFunctionLibrary(store_, (dir_ / "driver-cache").string(), digest_).ok());
  }
  void TearDown() override { fs::remove_all(dir_); }

  plan::Fragment Task(std::vector<std::string> spec_libraries, int32_t stage) {
    auto scan = plan::MakeNode(PlanNode::Kind::kScan);
    auto t = std::make_shared<TableSource>();
    t->name = "t";
    t->location = "t";
    t->format = "parquet";
    t->files = {"t/part-0.parquet"};
    t->schema = t->file_schema = schema_;
    t->num_rows = 100;
    t->row_group_ranges = {{0, 1}};  // this task's share: the file's one row group
    scan->table = t;
    scan->split = true;
    scan->columns = {"price", "discount"};
    scan->names = {"price", "discount"};
    auto project = plan::MakeNode(PlanNode::Kind::kProject, std::move(scan));
    project->expressions = {cp::call(plan::LibraryFunctionName(digest_, "net_revenue"),
                                     {cp::field_ref("price"), cp::field_ref("discount")})};
    project->names = {"revenue"};
    auto write = plan::MakeNode(PlanNode::Kind::kShuffleWrite, std::move(project));
    write->shuffle_write =
        plan::ShuffleWrite{{}, 1, "_sluice/shuffle/q-1/s" + std::to_string(stage)};
    plan::Fragment f;
    f.run_id = "q-1";
    f.stage_id = stage;
    f.session = {store_url_, (dir_ / "worker-cache").string(), plan::LocalParity(),
                 std::move(spec_libraries)};
    f.root = std::move(write);
    return f;
  }

  // Runs `f` on `worker` and returns its report.
  exec::TaskReport Run(dist::SupervisedChild& worker, const plan::Fragment& f) {
    auto bytes = plan::EncodeFragment(f);
    EXPECT_TRUE(bytes.ok()) << bytes.status().ToString();
    dist::ProcessLimits limits;
    limits.timeout = std::chrono::seconds(120);
    dist::ProcessResult result = worker.Call(*bytes, limits);
    EXPECT_EQ(result.end, dist::ProcessResult::End::kReplied) << result.stdout_text;
    auto report = exec::TaskReport::FromJsonLine(result.stdout_text);
    EXPECT_TRUE(report.ok()) << report.status().ToString() << ": " << result.stdout_text;
    return report.ok() ? *report : exec::TaskReport{};
  }

  std::unique_ptr<dist::SupervisedChild> Worker() {
    auto worker = dist::SupervisedChild::Start(
        {SLUICE_BINARY, "worker", "--report-fd", std::to_string(dist::kReplyFd)});
    EXPECT_TRUE(worker.ok()) << worker.status().ToString();
    return worker.ok() ? std::move(*worker) : nullptr;
  }

  fs::path dir_;
  std::string store_url_;
  std::shared_ptr<storage::ObjectStore> store_;
  std::shared_ptr<arrow::Schema> schema_;
  std::string digest_, other_digest_;
};

TEST_F(FunctionLibraryWorkerTest, ResolvesThroughTheSpecOrItsOwnSessionAndNeverTheDrivers) {
  auto worker = Worker();
  ASSERT_NE(worker, nullptr);
  // 1. Listed in the spec, nothing registered in the worker: loaded from the store.
  exec::TaskReport listed = Run(*worker, Task({digest_}, 1));
  EXPECT_EQ(listed.status, "ok") << listed.error;
  EXPECT_EQ(listed.rows_out, 100);
  EXPECT_TRUE(fs::exists(dir_ / "worker-cache" / "functions" / (digest_ + ".so")));
  // 2. Registered in this worker's session, not in the spec.
  exec::TaskReport registered = Run(*worker, Task({}, 2));
  EXPECT_EQ(registered.status, "ok") << registered.error;
  EXPECT_EQ(registered.rows_out, 100);
  // Parity: the spec names another build of the library this worker has loaded.
  exec::TaskReport other = Run(*worker, Task({other_digest_}, 3));
  EXPECT_EQ(other.status, "error");
  EXPECT_NE(other.error.find(other_digest_), std::string::npos) << other.error;
  EXPECT_NE(other.error.find("already has sluice-example-functions " + digest_ + " loaded"),
            std::string::npos)
      << other.error;
  worker->Stop(std::chrono::seconds(5));

  // 3. A fresh worker: neither the spec nor its session has the library. The driver (this
  // process) has it registered, which must not help.
  auto fresh = Worker();
  ASSERT_NE(fresh, nullptr);
  exec::TaskReport neither = Run(*fresh, Task({}, 4));
  EXPECT_EQ(neither.status, "error");
  EXPECT_NE(neither.error.find("function net_revenue of library " + digest_ +
                               " is not available on this worker"),
            std::string::npos)
      << neither.error;
  fresh->Stop(std::chrono::seconds(5));
}

TEST_F(FunctionLibraryWorkerTest, AlteredLibraryBytesAreRefusedBeforeLoading) {
  // The store's copy no longer hashes to the pin the spec gives.
  auto bytes = store_->Get("functions/" + digest_ + ".so").ValueOrDie()->ToString();
  bytes[bytes.size() / 2] ^= 1;
  ASSERT_TRUE(store_->Put("functions/" + digest_ + ".so", arrow::Buffer::FromString(bytes)).ok());
  auto worker = Worker();
  ASSERT_NE(worker, nullptr);
  exec::TaskReport report = Run(*worker, Task({digest_}, 1));
  EXPECT_EQ(report.status, "error");
  EXPECT_NE(report.error.find("artifact " + digest_), std::string::npos) << report.error;
  EXPECT_NE(report.error.find("fails verification"), std::string::npos) << report.error;
  EXPECT_FALSE(fs::exists(dir_ / "worker-cache" / "functions" / (digest_ + ".so")));
  worker->Stop(std::chrono::seconds(5));
}

}  // namespace
}  // namespace sluice::sql
