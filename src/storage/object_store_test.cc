// One suite, two backends: a local directory and a real S3 HTTP endpoint (moto on loopback).
#include "storage/object_store.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <random>

#include "storage/moto_server_testing.h"

namespace sluice::storage {
namespace {

namespace fs = std::filesystem;

testing::MotoServer* g_moto = nullptr;

class MotoEnvironment : public ::testing::Environment {
 public:
  void SetUp() override {
    auto server = testing::MotoServer::Start();
    ASSERT_TRUE(server.ok()) << server.status().ToString();
    server_ = *std::move(server);
    g_moto = server_.get();
    ASSERT_TRUE(g_moto->CreateBucket("sluice-test").ok());
  }
  void TearDown() override {
    g_moto = nullptr;
    server_.reset();
    (void)FinalizeFilesystems();
  }

 private:
  std::unique_ptr<testing::MotoServer> server_;
};

std::shared_ptr<arrow::Buffer> Bytes(const std::string& s) { return arrow::Buffer::FromString(s); }

std::string Text(const std::shared_ptr<arrow::Buffer>& b) { return b->ToString(); }

class ObjectStoreTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    static int counter = 0;
    const std::string unique = "t" + std::to_string(getpid()) + "-" + std::to_string(++counter);
    if (GetParam() == "local") {
      local_dir_ = fs::temp_directory_path() / ("sluice-store-" + unique);
      url_ = "file://" + local_dir_.string();
    } else {
      ASSERT_NE(g_moto, nullptr);
      url_ = g_moto->StoreUrl("sluice-test", unique);
    }
    auto store = ObjectStore::Open(url_);
    ASSERT_TRUE(store.ok()) << store.status().ToString();
    store_ = *store;
  }
  void TearDown() override {
    if (!local_dir_.empty()) fs::remove_all(local_dir_);
  }

  std::string url_;
  fs::path local_dir_;
  std::shared_ptr<ObjectStore> store_;
};

TEST_P(ObjectStoreTest, PutGetRoundTrip) {
  ASSERT_TRUE(store_->Put("a/b/hello.txt", Bytes("hello")).ok());
  auto got = store_->Get("a/b/hello.txt");
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ(Text(*got), "hello");

  ASSERT_TRUE(store_->Put("empty", Bytes("")).ok());
  auto empty = store_->Get("empty");
  ASSERT_TRUE(empty.ok()) << empty.status().ToString();
  EXPECT_EQ((*empty)->size(), 0);
}

TEST_P(ObjectStoreTest, LargeObjectRoundTrip) {
  // Larger than one S3 multipart part, so the upload path with several parts is used.
  std::string big(12 * 1024 * 1024 + 3, '\0');
  std::mt19937 rng(7);
  for (char& c : big) c = static_cast<char>(rng());
  ASSERT_TRUE(store_->Put("big.bin", Bytes(big)).ok());
  auto got = store_->Get("big.bin");
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_TRUE(Text(*got) == big);
}

TEST_P(ObjectStoreTest, PutReplaces) {
  ASSERT_TRUE(store_->Put("k", Bytes("one")).ok());
  ASSERT_TRUE(store_->Put("k", Bytes("two")).ok());
  EXPECT_EQ(Text(*store_->Get("k")), "two");
  auto listed = store_->List("");
  ASSERT_TRUE(listed.ok());
  ASSERT_EQ(listed->size(), 1u);
  EXPECT_EQ((*listed)[0].size, 3);
}

TEST_P(ObjectStoreTest, MissingObjectNamesKeyAndStore) {
  auto got = store_->Get("no/such/object");
  ASSERT_FALSE(got.ok());
  EXPECT_TRUE(got.status().IsIOError());
  EXPECT_NE(got.status().message().find("object 'no/such/object' does not exist"),
            std::string::npos)
      << got.status().message();
  EXPECT_NE(got.status().message().find(store_->display_url()), std::string::npos);
}

TEST_P(ObjectStoreTest, ListIsSortedAndFiltersByPrefix) {
  for (const char* key :
       {"raw/b.jsonl", "raw/a/2.jsonl", "rawdata", "raw/a/1.jsonl", "other/x", "raw/c.jsonl"}) {
    ASSERT_TRUE(store_->Put(key, Bytes(key)).ok()) << key;
  }
  auto keys = [&](std::string_view prefix) {
    std::vector<std::string> out;
    auto listed = store_->List(prefix);
    EXPECT_TRUE(listed.ok()) << listed.status().ToString();
    if (listed.ok()) {
      for (auto& info : *listed) out.push_back(info.key);
    }
    return out;
  };
  EXPECT_EQ(keys("raw/"), (std::vector<std::string>{"raw/a/1.jsonl", "raw/a/2.jsonl", "raw/b.jsonl",
                                                    "raw/c.jsonl"}));
  EXPECT_EQ(keys("raw"), (std::vector<std::string>{"raw/a/1.jsonl", "raw/a/2.jsonl", "raw/b.jsonl",
                                                   "raw/c.jsonl", "rawdata"}));
  EXPECT_EQ(keys("raw/a/"), (std::vector<std::string>{"raw/a/1.jsonl", "raw/a/2.jsonl"}));
  EXPECT_EQ(keys("").size(), 6u);
  EXPECT_EQ(keys("nothing/here/"), std::vector<std::string>{});
  auto sized = store_->List("raw/b");
  ASSERT_TRUE(sized.ok());
  ASSERT_EQ(sized->size(), 1u);
  EXPECT_EQ((*sized)[0].size, static_cast<int64_t>(std::string("raw/b.jsonl").size()));
}

TEST_P(ObjectStoreTest, ExistsAndDelete) {
  ASSERT_TRUE(store_->Put("d/x", Bytes("x")).ok());
  EXPECT_TRUE(*store_->Exists("d/x"));
  EXPECT_FALSE(*store_->Exists("d/y"));
  EXPECT_FALSE(*store_->Exists("d"));  // a "directory" is not an object
  ASSERT_TRUE(store_->Delete("d/x").ok());
  EXPECT_FALSE(*store_->Exists("d/x"));
  EXPECT_TRUE(store_->Delete("d/x").ok()) << "deleting a missing object succeeds";
}

TEST_P(ObjectStoreTest, UncommittedWriteIsInvisible) {
  auto pending = store_->Create("out/part-0.parquet");
  ASSERT_TRUE(pending.ok()) << pending.status().ToString();
  ASSERT_TRUE((*pending)->stream()->Write("partial", 7).ok());
  EXPECT_FALSE(*store_->Exists("out/part-0.parquet"));
  EXPECT_TRUE(store_->List("out/")->empty());
  ASSERT_TRUE((*pending)->Commit().ok());
  EXPECT_EQ(Text(*store_->Get("out/part-0.parquet")), "partial");
  EXPECT_FALSE((*pending)->Commit().ok()) << "a second commit is refused";
}

TEST_P(ObjectStoreTest, AbortedWriteLeavesNothing) {
  {
    auto pending = store_->Create("out/aborted");
    ASSERT_TRUE(pending.ok());
    ASSERT_TRUE((*pending)->stream()->Write("junk", 4).ok());
    ASSERT_TRUE((*pending)->Abort().ok());
  }
  {
    auto dropped = store_->Create("out/dropped");
    ASSERT_TRUE(dropped.ok());
    ASSERT_TRUE((*dropped)->stream()->Write("junk", 4).ok());
    // Destroyed without Commit: aborted.
  }
  EXPECT_TRUE(store_->List("")->empty());
  if (!local_dir_.empty() && fs::exists(local_dir_)) {
    for (auto& entry : fs::recursive_directory_iterator(local_dir_)) {
      EXPECT_FALSE(entry.is_regular_file()) << "left behind: " << entry.path();
    }
  }
}

TEST_P(ObjectStoreTest, InvalidKeysAreRefused) {
  for (const char* key :
       {"", "/abs", "a//b", "a/../b", "./a", "a/", ".sluice-tmp-x", "d/.sluice-tmp-y.1.2.3"}) {
    auto st = store_->Put(key, Bytes("x"));
    ASSERT_FALSE(st.ok()) << "'" << key << "'";
    EXPECT_TRUE(st.IsInvalid());
    EXPECT_NE(st.message().find("invalid object key '" + std::string(key) + "'"), std::string::npos)
        << st.message();
    EXPECT_FALSE(store_->Get(key).ok());
  }
  EXPECT_FALSE(store_->List("../x").ok());
}

INSTANTIATE_TEST_SUITE_P(Backends, ObjectStoreTest, ::testing::Values("local", "s3"),
                         [](const auto& info) { return info.param; });

TEST(ObjectStoreLocal, TempFilesLiveBesideTheTargetAndAreUnlisted) {
  const fs::path dir =
      fs::temp_directory_path() / ("sluice-store-temp-" + std::to_string(getpid()));
  auto store = ObjectStore::Open("file://" + dir.string());
  ASSERT_TRUE(store.ok());
  auto pending = (*store)->Create("x/y.bin");
  ASSERT_TRUE(pending.ok());
  std::vector<fs::path> files;
  for (auto& e : fs::directory_iterator(dir / "x")) files.push_back(e.path());
  ASSERT_EQ(files.size(), 1u);
  EXPECT_EQ(files[0].filename().string().rfind(".sluice-tmp-y.bin.", 0), 0u) << files[0];
  EXPECT_TRUE((*store)->List("")->empty());
  ASSERT_TRUE((*pending)->Commit().ok());
  files.clear();
  for (auto& e : fs::directory_iterator(dir / "x")) files.push_back(e.path().filename());
  EXPECT_EQ(files, std::vector<fs::path>{"y.bin"});
  fs::remove_all(dir);
}

TEST(ObjectStoreOpen, MalformedUrlsGetClearErrors) {
  struct Case {
    std::string url;
    std::string expect;
  };
  for (const Case& c : std::vector<Case>{
           {"just-a-path", "store URL 'just-a-path' is malformed: no scheme"},
           {"file://relative/dir", "needs an absolute path"},
           {"http://example/x", "unsupported scheme 'http'"},
           {"s3://", "needs a bucket"},
           {"s3:///x", "needs a bucket"},
           {"s3://b/p?endpoint_override=127.0.0.1:1&bogus=1", "store URL 's3://b/p?"}}) {
    auto store = ObjectStore::Open(c.url);
    ASSERT_FALSE(store.ok()) << c.url;
    EXPECT_NE(store.status().ToString().find(c.expect), std::string::npos)
        << c.url << " -> " << store.status().ToString();
  }
}

TEST(ObjectStoreOpen, SecretsAreMaskedInErrors) {
  auto store = ObjectStore::Open("s3://b/p?secret_key=hunter2&bogus=1");
  ASSERT_FALSE(store.ok());
  EXPECT_EQ(store.status().ToString().find("hunter2"), std::string::npos)
      << store.status().ToString();
  EXPECT_NE(store.status().ToString().find("secret_key=***"), std::string::npos);
}

}  // namespace
}  // namespace sluice::storage

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  ::testing::AddGlobalTestEnvironment(new sluice::storage::MotoEnvironment());
  return RUN_ALL_TESTS();
}
