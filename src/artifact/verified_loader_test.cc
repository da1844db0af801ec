// The verified loader against a real local store, with real transform libraries.
#include "artifact/verified_loader.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace sluice::artifact {
namespace {

namespace fs = std::filesystem;

std::shared_ptr<arrow::Buffer> ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  return arrow::Buffer::FromString(std::move(bytes));
}

class VerifiedLoaderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() /
            ("sluice-loader-" + std::to_string(getpid()) + "-" +
             ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(root_);
    store_ = *storage::ObjectStore::Open("file://" + (root_ / "store").string());
    cache_ = std::make_unique<ArtifactCache>(store_, (root_ / "cache").string());
  }
  void TearDown() override { fs::remove_all(root_); }

  Digest Publish(const std::string& path) {
    auto bytes = ReadFile(path);
    const Digest d = Blake3(*bytes);
    EXPECT_TRUE(store_->Put(TransformObjectKey(d), bytes).ok());
    return d;
  }

  fs::path root_;
  std::shared_ptr<storage::ObjectStore> store_;
  std::unique_ptr<ArtifactCache> cache_;
};

TEST_F(VerifiedLoaderTest, FetchVerifyLoad) {
  const Digest pin = Publish(TEST_IDENTITY_SO);
  auto verified = cache_->FetchVerified(pin);
  ASSERT_TRUE(verified.ok()) << verified.status().ToString();
  EXPECT_TRUE(fs::exists(cache_->CachePath(pin)));
  auto lib = LoadVerified(*verified, "test-identity");
  ASSERT_TRUE(lib.ok()) << lib.status().ToString();
  EXPECT_EQ((*lib)->identity().qualified_name, "test-identity");
  EXPECT_EQ((*lib)->path().rfind("/proc/self/fd/", 0), 0u);
}

TEST_F(VerifiedLoaderTest, TamperedStoreObjectIsRefused) {
  const Digest pin = Publish(TEST_IDENTITY_SO);
  auto bytes = ReadFile(TEST_IDENTITY_SO)->ToString();
  bytes[bytes.size() / 2] ^= 0x01;  // one byte
  ASSERT_TRUE(store_->Put(TransformObjectKey(pin), arrow::Buffer::FromString(bytes)).ok());
  auto verified = cache_->FetchVerified(pin);
  ASSERT_FALSE(verified.ok());
  EXPECT_NE(verified.status().message().find("fails verification"), std::string::npos)
      << verified.status().message();
  EXPECT_NE(verified.status().message().find(pin.ToHex()), std::string::npos);
  EXPECT_FALSE(fs::exists(cache_->CachePath(pin))) << "tampered bytes must not be cached";
}

TEST_F(VerifiedLoaderTest, TamperedCacheIsDroppedAndRefetched) {
  const Digest pin = Publish(TEST_IDENTITY_SO);
  ASSERT_TRUE(cache_->FetchVerified(pin).ok());
  std::ofstream(cache_->CachePath(pin), std::ios::binary | std::ios::trunc) << "evil";
  auto verified = cache_->FetchVerified(pin);
  ASSERT_TRUE(verified.ok()) << verified.status().ToString();
  EXPECT_EQ(Blake3(*verified->bytes), pin);
  EXPECT_EQ(Blake3(*ReadFile(cache_->CachePath(pin))), pin) << "the cache was repaired";
}

TEST_F(VerifiedLoaderTest, SwappingTheCacheAfterVerificationChangesNothing) {
  const Digest pin = Publish(TEST_IDENTITY_SO);
  auto verified = cache_->FetchVerified(pin);
  ASSERT_TRUE(verified.ok());
  // Between verification and load, an attacker replaces the cache file with another library.
  fs::copy_file(TEST_FAULTY_SO, cache_->CachePath(pin), fs::copy_options::overwrite_existing);
  auto lib = LoadVerified(*verified, "test-identity");
  ASSERT_TRUE(lib.ok()) << lib.status().ToString();
  EXPECT_EQ((*lib)->identity().qualified_name, "test-identity");
}

TEST_F(VerifiedLoaderTest, IdentityMismatchIsRefused) {
  const Digest pin = Publish(TEST_IDENTITY_SO);
  auto lib = LoadVerified(*cache_->FetchVerified(pin), "conversation-message-extract");
  ASSERT_FALSE(lib.ok());
  EXPECT_NE(lib.status().message().find(
                "is transform 'test-identity', but the stage names 'conversation-message-extract'"),
            std::string::npos)
      << lib.status().message();
}

TEST_F(VerifiedLoaderTest, WrongAbiVersionIsRefused) {
  const Digest pin = Publish(TEST_ABI_V2_SO);
  auto lib = LoadVerified(*cache_->FetchVerified(pin), "anything");
  ASSERT_FALSE(lib.ok());
  EXPECT_NE(lib.status().message().find("speaks transform ABI version 2"), std::string::npos)
      << lib.status().message();
}

TEST_F(VerifiedLoaderTest, MissingObjectIsRefused) {
  const Digest pin = Blake3("never published");
  auto verified = cache_->FetchVerified(pin);
  ASSERT_FALSE(verified.ok());
  EXPECT_NE(verified.status().message().find("artifact " + pin.ToHex() + " is not in store"),
            std::string::npos)
      << verified.status().message();
}

TEST_F(VerifiedLoaderTest, UnverifiedBytesAreNeverLoaded) {
  const Digest pin = Publish(TEST_IDENTITY_SO);
  VerifiedArtifact forged{pin, ReadFile(TEST_FAULTY_SO)};  // claims a digest it does not have
  auto lib = LoadVerified(forged, "test-faulty");
  ASSERT_FALSE(lib.ok());
  EXPECT_NE(lib.status().message().find("do not match the digest"), std::string::npos);
}

// Calls a library of tests/transforms/versioned.c and returns the message it reports, which
// names the build whose code ran.
std::string CallVersioned(const TransformLibrary& lib) {
  std::string message;
  sluice_transform_host host{};
  host.abi_version = SLUICE_TRANSFORM_ABI_VERSION;
  host.struct_size = sizeof(host);
  host.ctx = &message;
  host.emit = [](void*, const uint8_t*, size_t) -> int32_t { return 1; };
  host.set_error = [](void* ctx, const char* m, size_t n) {
    static_cast<std::string*>(ctx)->assign(m, n);
  };
  EXPECT_EQ(lib.function()(nullptr, 0, &host), SLUICE_TRANSFORM_ERROR);
  return message;
}

std::vector<std::string> Split(const std::string& list) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= list.size()) {
    const size_t comma = std::min(list.find(',', start), list.size());
    out.push_back(list.substr(start, comma - start));
    start = comma + 1;
  }
  return out;
}

// The dynamic loader knows a library by its path; a memfd path reused by the next artifact
// once handed back the library loaded before. Every pin must run its own bytes, also for many
// builds of one transform with one qualified name, loaded and released in turn.
TEST_F(VerifiedLoaderTest, EveryPinLoadsItsOwnBytes) {
  const std::vector<std::string> versioned = Split(TEST_VERSIONED_SOS);
  ASSERT_GE(versioned.size(), 18u);
  std::vector<Digest> pins;
  for (const auto& path : versioned) pins.push_back(Publish(path));
  const Digest identity = Publish(TEST_IDENTITY_SO);
  const Digest frozen = Publish(TEST_FROZEN_V1_SO);
  {
    auto lib = LoadVerified(*cache_->FetchVerified(identity), "test-identity");
    ASSERT_TRUE(lib.ok()) << lib.status().ToString();
  }
  for (size_t i = 0; i < pins.size(); ++i) {
    auto lib = LoadVerified(*cache_->FetchVerified(pins[i]), "test-versioned");
    ASSERT_TRUE(lib.ok()) << lib.status().ToString();
    EXPECT_EQ((*lib)->identity().version, "1.0." + std::to_string(i + 1));
    EXPECT_EQ(CallVersioned(**lib), "test-versioned build " + std::to_string(i + 1));
  }  // each library is released before the next is loaded
  {
    auto lib = LoadVerified(*cache_->FetchVerified(frozen), "test-frozen-v1");
    ASSERT_TRUE(lib.ok()) << lib.status().ToString();
  }
  // And again in reverse, while all of them are loaded.
  for (size_t i = pins.size(); i-- > 0;) {
    auto lib = LoadVerified(*cache_->FetchVerified(pins[i]), "test-versioned");
    ASSERT_TRUE(lib.ok()) << lib.status().ToString();
    EXPECT_EQ(CallVersioned(**lib), "test-versioned build " + std::to_string(i + 1));
  }
}

}  // namespace
}  // namespace sluice::artifact
