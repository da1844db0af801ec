// One registry suite, two backends: a SQLite file and a real PostgreSQL server on loopback.
#include "catalog/registry.h"

#include <dlfcn.h>
#include <gtest/gtest.h>

#include <filesystem>

#include "catalog/libpq_library.h"
#include "catalog/pipeline_spec.h"
#include "catalog/postgres_server_testing.h"
#include "catalog/signing.h"

namespace sluice::catalog {
namespace {

namespace fs = std::filesystem;

testing::PostgresServer* g_postgres = nullptr;

class PostgresEnvironment : public ::testing::Environment {
 public:
  void SetUp() override {
    auto server = testing::PostgresServer::Start();
    ASSERT_TRUE(server.ok()) << server.status().ToString();
    server_ = *std::move(server);
    g_postgres = server_.get();
  }
  void TearDown() override {
    g_postgres = nullptr;
    server_.reset();
  }

 private:
  std::unique_ptr<testing::PostgresServer> server_;
};

class RegistryTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    static int counter = 0;
    const std::string name = "reg_" + std::to_string(getpid()) + "_" + std::to_string(++counter);
    if (GetParam() == "sqlite") {
      dir_ = fs::temp_directory_path() / ("sluice-" + name);
      url_ = "sqlite://" + (dir_ / "registry.db").string();
    } else {
      ASSERT_NE(g_postgres, nullptr);
      auto url = g_postgres->CreateDatabase(name);
      ASSERT_TRUE(url.ok()) << url.status().ToString();
      url_ = *url;
    }
    auto registry = Registry::Open(url_);
    ASSERT_TRUE(registry.ok()) << registry.status().ToString();
    registry_ = *std::move(registry);
    auto identity = SigningIdentity::Generate();
    ASSERT_TRUE(identity.ok());
    identity_ = *identity;
    ASSERT_TRUE(registry_
                    ->AddPublisher({identity_.publisher_id(),
                                    "tester",
                                    {identity_.public_key().begin(), identity_.public_key().end()},
                                    ""})
                    .ok());
  }
  void TearDown() override {
    registry_.reset();
    if (!dir_.empty()) fs::remove_all(dir_);
  }

  ArtifactRecord Artifact(const std::string& digest) {
    return {digest,
            "conversation-message-extract",
            "0.1.0",
            "in.Schema",
            "out.Schema",
            12345,
            R"({"compiler":"g++"})",
            identity_.publisher_id(),
            "",
            {},
            {}};
  }
  PipelineSpec Spec(const std::string& digest) {
    return {"conversation-message-extract", "[pipeline]\nname = \"x\"\n",
            "conversation-message-extract", digest};
  }

  std::string url_;
  fs::path dir_;
  std::unique_ptr<Registry> registry_;
  SigningIdentity identity_;
};

TEST_P(RegistryTest, MigrationsApplyOnceAndReopenCleanly) {
  EXPECT_EQ(*registry_->SchemaVersion(), Registry::LatestSchemaVersion());
  auto again = Registry::Open(url_);
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_EQ(*(*again)->SchemaVersion(), Registry::LatestSchemaVersion());
  for (const char* table : {"transform_artifacts", "pipeline_specs", "runs"}) {
    EXPECT_EQ(*(*again)->CountRows(table), 0) << table;
  }
}

TEST_P(RegistryTest, RefusesADatabaseFromANewerSluice) {
  ASSERT_TRUE(registry_->database()
                  ->Exec("INSERT INTO schema_migrations (version, applied_at) VALUES (?, ?)",
                         {int64_t{999}, std::string("later")})
                  .ok());
  auto newer = Registry::Open(url_);
  ASSERT_FALSE(newer.ok());
  EXPECT_NE(newer.status().message().find("schema version 999, newer than this sluice knows"),
            std::string::npos)
      << newer.status().message();
}

TEST_P(RegistryTest, PublisherRoundTrip) {
  auto p = registry_->GetPublisher(identity_.publisher_id());
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  ASSERT_TRUE(p->has_value());
  EXPECT_EQ((*p)->name, "tester");
  EXPECT_EQ((*p)->public_key,
            std::vector<uint8_t>(identity_.public_key().begin(), identity_.public_key().end()));
  ASSERT_TRUE(
      registry_->AddPublisher({identity_.publisher_id(), "renamed", (*p)->public_key, ""}).ok());
  EXPECT_EQ(*registry_->CountRows("publishers"), 1);
  EXPECT_EQ((*registry_->GetPublisher(identity_.publisher_id()))->name, "renamed");
  EXPECT_FALSE(registry_->GetPublisher("ed25519:nobody")->has_value());
}

TEST_P(RegistryTest, BytesSurviveExactly) {
  std::vector<uint8_t> all(256);
  for (int i = 0; i < 256; ++i) all[static_cast<size_t>(i)] = static_cast<uint8_t>(i);
  ASSERT_TRUE(registry_->AddPublisher({"ed25519:bytes", "b", all, ""}).ok());
  EXPECT_EQ((*registry_->GetPublisher("ed25519:bytes"))->public_key, all);
}

TEST_P(RegistryTest, PublishingTwiceAddsNothing) {
  const std::string digest(64, 'a');
  auto spec = SignPipelineSpec(Spec(digest), identity_);
  ASSERT_TRUE(registry_->RegisterPublication(Artifact(digest), spec).ok());
  ASSERT_TRUE(registry_->RegisterPublication(Artifact(digest), spec).ok());
  EXPECT_EQ(*registry_->CountRows("transform_artifacts"), 1);
  EXPECT_EQ(*registry_->CountRows("pipeline_specs"), 1);
  auto artifact = registry_->GetArtifact(digest);
  ASSERT_TRUE(artifact.ok() && artifact->has_value());
  EXPECT_EQ((*artifact)->qualified_name, "conversation-message-extract");
  EXPECT_EQ((*artifact)->size_bytes, 12345);
  auto latest = registry_->LatestPipelineSpec("conversation-message-extract");
  ASSERT_TRUE(latest.ok() && latest->has_value());
  EXPECT_EQ((*latest)->spec_cbor, spec.spec_cbor);
  EXPECT_EQ((*latest)->signature, spec.signature);
}

TEST_P(RegistryTest, ArtifactSchemasRoundTripAndAbsentOnesReadEmpty) {
  const std::string typed(64, 'c'), untyped(64, 'd');
  ArtifactRecord with = Artifact(typed);
  with.input_arrow_schema = {0xff, 0xff, 0xff, 0xff, 0x00, 0x01, 0x02};
  with.output_arrow_schema = {0x10, 0x00, 0x20};
  ASSERT_TRUE(registry_->RegisterPublication(with, SignPipelineSpec(Spec(typed), identity_)).ok());
  ASSERT_TRUE(
      registry_->RegisterPublication(Artifact(untyped), SignPipelineSpec(Spec(untyped), identity_))
          .ok());
  auto got = registry_->GetArtifact(typed);
  ASSERT_TRUE(got.ok() && got->has_value()) << got.status().ToString();
  EXPECT_EQ((*got)->input_arrow_schema, with.input_arrow_schema);
  EXPECT_EQ((*got)->output_arrow_schema, with.output_arrow_schema);
  got = registry_->GetArtifact(untyped);
  ASSERT_TRUE(got.ok() && got->has_value()) << got.status().ToString();
  EXPECT_TRUE((*got)->input_arrow_schema.empty());
  EXPECT_TRUE((*got)->output_arrow_schema.empty());
  // Absent schemas are NULL, not empty bytes.
  auto nulls = registry_->database()->Query(
      "SELECT COUNT(*) FROM transform_artifacts WHERE input_arrow_schema IS NULL");
  ASSERT_TRUE(nulls.ok()) << nulls.status().ToString();
  EXPECT_EQ(std::get<int64_t>((*nulls)[0][0]), 1);
}

TEST_P(RegistryTest, AFailedRegistrationLeavesNoHalf) {
  const std::string digest(64, 'b');
  auto spec = SignPipelineSpec(Spec(digest), identity_);
  spec.publisher_id = "ed25519:unregistered";  // violates the foreign key, after the artifact
  auto st = registry_->RegisterPublication(Artifact(digest), spec);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("registering transform 'conversation-message-extract'"),
            std::string::npos)
      << st.message();
  EXPECT_EQ(*registry_->CountRows("transform_artifacts"), 0);
  EXPECT_EQ(*registry_->CountRows("pipeline_specs"), 0);
}

TEST_P(RegistryTest, SignedSpecsVerifyAndTamperingIsRefused) {
  const std::string digest(64, 'c');
  auto record = SignPipelineSpec(Spec(digest), identity_);
  ASSERT_TRUE(registry_->RegisterPublication(Artifact(digest), record).ok());
  auto stored = *registry_->GetPipelineSpec(record.spec_blake3);
  ASSERT_TRUE(stored.has_value());
  auto spec = VerifyPipelineSpec(*stored, registry_.get());
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  EXPECT_EQ(*spec, Spec(digest));

  auto altered = *stored;
  altered.spec_cbor[altered.spec_cbor.size() / 2] ^= 1;
  auto st = VerifyPipelineSpec(altered, registry_.get());
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.status().message().find("was altered"), std::string::npos);

  auto stranger = *stored;
  stranger.publisher_id = "ed25519:unknown";
  st = VerifyPipelineSpec(stranger, registry_.get());
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.status().message().find("signed by unknown publisher 'ed25519:unknown'"),
            std::string::npos);

  auto forged = *stored;
  forged.signature = SigningIdentity::Generate()->Sign(forged.spec_cbor);
  st = VerifyPipelineSpec(forged, registry_.get());
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.status().message().find("signature does not verify"), std::string::npos);
}

TEST_P(RegistryTest, SpecsAreFoundByTheArtifactTheyPin) {
  const std::string digest(64, 'd');
  auto spec = SignPipelineSpec(Spec(digest), identity_);
  ASSERT_TRUE(registry_->RegisterPublication(Artifact(digest), spec).ok());
  auto specs = registry_->SpecsForArtifact(digest);
  ASSERT_TRUE(specs.ok()) << specs.status().ToString();
  ASSERT_EQ(specs->size(), 1u);
  EXPECT_EQ((*specs)[0].spec_blake3, spec.spec_blake3);
  EXPECT_TRUE(registry_->SpecsForArtifact(std::string(64, 'e'))->empty());
}

TEST_P(RegistryTest, RunsAreRecordedAndUpdated) {
  RunRecord run;
  run.run_id = "run-1";
  run.user_id = "alice";
  run.manifest_blake3 = std::string(64, 'f');
  run.pins = "[]";
  run.status = "running";
  run.sink_path = "derived/x/run-1";
  ASSERT_TRUE(registry_->UpsertRun(run).ok());
  run.status = "committed";
  run.rows_in = 10;
  run.rows_out = 7;
  run.duplicates_dropped = 3;
  run.stage_timings = R"({"s0":1.5})";
  run.finished_at = NowUtc();
  ASSERT_TRUE(registry_->UpsertRun(run).ok());
  auto got = registry_->GetRun("run-1");
  ASSERT_TRUE(got.ok() && got->has_value()) << got.status().ToString();
  EXPECT_EQ((*got)->status, "committed");
  EXPECT_EQ((*got)->rows_out, 7);
  EXPECT_EQ((*got)->duplicates_dropped, 3);
  EXPECT_EQ((*got)->stage_timings, R"({"s0":1.5})");
  EXPECT_EQ((*got)->sink_path, "derived/x/run-1");
  EXPECT_EQ(*registry_->CountRows("runs"), 1);
  auto list = registry_->ListRuns(10);
  ASSERT_TRUE(list.ok());
  ASSERT_EQ(list->size(), 1u);
  EXPECT_FALSE(registry_->GetRun("nope")->has_value());
}

// A registry file edited by hand: a wrong-typed field is an error naming the run and the
// registry, never an internal error. (PostgreSQL enforces column types itself.)
TEST_P(RegistryTest, AWrongTypedRunFieldIsAnErrorNamingTheRun) {
  if (registry_->database()->dialect() != "sqlite") GTEST_SKIP() << "typed columns";
  RunRecord run;
  run.run_id = "typed";
  run.user_id = "alice";
  run.manifest_blake3 = std::string(64, 'f');
  run.pins = "[]";
  run.status = "committed";
  ASSERT_TRUE(registry_->UpsertRun(run).ok());
  ASSERT_TRUE(
      registry_->database()->Exec("UPDATE runs SET rows_out = 'x' WHERE run_id = 'typed'").ok());
  auto got = registry_->GetRun("typed");
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.status().code(), arrow::StatusCode::Invalid);
  EXPECT_NE(got.status().message().find("run 'typed': registry column 7 holds text, expected an "
                                        "integer"),
            std::string::npos)
      << got.status().message();
  EXPECT_EQ(got.status().message().find("internal"), std::string::npos);
  EXPECT_FALSE(registry_->ListRuns(10).ok());
}

// Two drivers that race for one run id: the database lets exactly one have it, for a new id
// and for the takeover of an attempt both have read.
TEST_P(RegistryTest, ARunIdIsClaimedByOneAttempt) {
  RunRecord a;
  a.run_id = "run-claim";
  a.user_id = "alice";
  a.manifest_blake3 = std::string(64, 'f');
  a.pins = "[]";
  a.status = "running";
  a.attempt_id = "aaaa";
  RunRecord b = a;
  b.attempt_id = "bbbb";
  auto first = registry_->ClaimRun(a, "");
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  EXPECT_TRUE(*first);
  auto second = registry_->ClaimRun(b, "");
  ASSERT_TRUE(second.ok()) << second.status().ToString();
  EXPECT_FALSE(*second) << "a second first claim must lose";
  EXPECT_EQ((*registry_->GetRun("run-claim"))->attempt_id, "aaaa");
  // Both saw attempt aaaa (say, abandoned); the first to replace it wins.
  RunRecord c = a;
  c.attempt_id = "cccc";
  EXPECT_TRUE(*registry_->ClaimRun(b, "aaaa"));
  EXPECT_FALSE(*registry_->ClaimRun(c, "aaaa"));
  EXPECT_EQ((*registry_->GetRun("run-claim"))->attempt_id, "bbbb");
  // Only the holder may update the run.
  a.status = "failed";
  EXPECT_FALSE(*registry_->UpdateClaimedRun(a));
  b.status = "committed";
  EXPECT_TRUE(*registry_->UpdateClaimedRun(b));
  EXPECT_EQ((*registry_->GetRun("run-claim"))->status, "committed");
  ASSERT_TRUE(registry_->Heartbeat("run-claim", "bbbb", 12345).ok());
  EXPECT_EQ((*registry_->GetRun("run-claim"))->heartbeat_at, 12345);
}

INSTANTIATE_TEST_SUITE_P(Backends, RegistryTest, ::testing::Values("sqlite", "postgresql"),
                         [](const auto& info) { return info.param; });

TEST(Database, BadUrlsAreNamedWithoutPasswords) {
  auto relative = Database::Open("sqlite://relative.db");
  ASSERT_FALSE(relative.ok());
  EXPECT_NE(relative.status().message().find("expected sqlite:///absolute/path.db"),
            std::string::npos);
  auto mysql = Database::Open("mysql://x");
  ASSERT_FALSE(mysql.ok());
  EXPECT_NE(mysql.status().message().find("unsupported scheme"), std::string::npos);
  auto unreachable = Database::Open("postgresql://u:hunter2@127.0.0.1:1/db?connect_timeout=2");
  ASSERT_FALSE(unreachable.ok());
  EXPECT_EQ(unreachable.status().message().find("hunter2"), std::string::npos)
      << unreachable.status().message();
  EXPECT_NE(unreachable.status().message().find("cannot connect"), std::string::npos);
}

bool LibPqIsLoaded() {
  void* handle = dlopen(kLibPqSoname, RTLD_NOW | RTLD_NOLOAD);
  if (handle == nullptr) return false;
  dlclose(handle);  // only drops the reference RTLD_NOLOAD took
  return true;
}

// Set by main() before any test runs.
bool g_libpq_loaded_at_start = true;

TEST(LibPq, IsLoadedOnlyWhenAPostgresRegistryOpens) {
  EXPECT_FALSE(g_libpq_loaded_at_start) << "libpq is linked into the process again";
  ASSERT_NE(g_postgres, nullptr);
  auto url = g_postgres->CreateDatabase("reg_libpq_" + std::to_string(getpid()));
  ASSERT_TRUE(url.ok()) << url.status().ToString();
  auto db = Database::Open(*url);
  ASSERT_TRUE(db.ok()) << db.status().ToString();
  EXPECT_TRUE(LibPqIsLoaded());
  ASSERT_TRUE((*db)->ExecScript("select 1").ok());
}

TEST(LibPq, AMissingLibraryIsNamedWithItsPackage) {
  auto missing = LoadLibPqFrom("libpq-sluice-missing.so.5");
  ASSERT_FALSE(missing.ok());
  const std::string message = missing.status().message();
  EXPECT_TRUE(missing.status().IsIOError());
  EXPECT_NE(message.find("libpq-sluice-missing.so.5"), std::string::npos) << message;
  EXPECT_NE(message.find("libpq5"), std::string::npos) << message;
  // A library that loads but lacks the functions is named with the one it lacks.
  auto wrong = LoadLibPqFrom("libm.so.6");
  ASSERT_FALSE(wrong.ok());
  EXPECT_NE(wrong.status().message().find("has no PQconnectdb"), std::string::npos)
      << wrong.status().message();
}

}  // namespace
}  // namespace sluice::catalog

int main(int argc, char** argv) {
  sluice::catalog::g_libpq_loaded_at_start = sluice::catalog::LibPqIsLoaded();
  ::testing::InitGoogleTest(&argc, argv);
  ::testing::AddGlobalTestEnvironment(new sluice::catalog::PostgresEnvironment());
  return RUN_ALL_TESTS();
}
