// Submit's trust checks against a real SQLite registry and local store: a function stage runs
// only what a trusted publisher signed for exactly that stage. They fail before any task, so no
// transform library is needed.
#include "pipeline/submit.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "catalog/pipeline_spec.h"
#include "catalog/registry.h"
#include "catalog/signing.h"
#include "catalog/trust.h"

namespace sluice::pipeline {
namespace {

namespace fs = std::filesystem;

constexpr char kPin[] = "1111111111111111111111111111111111111111111111111111111111111111";

class SubmitTrustTest : public ::testing::Test {
 protected:
  void SetUp() override {
    home_ = fs::temp_directory_path() /
            ("sluice-submit-" + std::to_string(getpid()) + "-" +
             ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(home_);
    fs::create_directories(home_);
    config_.home = home_.string();
    config_.store_url = "file://" + (home_ / "store").string();
    config_.database_url = "sqlite://" + (home_ / "registry.db").string();
    registry_ = *catalog::Registry::Open(config_.database_url);
    std::ofstream(home_ / "job.toml") << "[dataflow.source]\nkind = \"jsonl\"\nprefix = \"raw/\"\n"
                                         "[[dataflow.stages]]\nkind = \"function\"\n"
                                         "qualified_name = \"stage-a\"\n"
                                         "pin_artifact_hash = \""
                                      << kPin
                                      << "\"\n[dataflow.sink]\nkind = \"parquet\"\n"
                                         "path = \"out/{run_id}\"\n";
  }
  void TearDown() override { fs::remove_all(home_); }

  // Registers artifact kPin as `stage-a` with a spec signed by `signer` whose pipeline text
  // names `spec_stage`.
  void Publish(const catalog::SigningIdentity& signer, const std::string& spec_stage) {
    catalog::ArtifactRecord artifact;
    artifact.artifact_blake3 = kPin;
    artifact.qualified_name = "stage-a";
    artifact.version = "1.0.0";
    artifact.input_schema = "any";
    artifact.output_schema = "any";
    artifact.build_info = "{}";
    artifact.publisher_id = signer.publisher_id();
    catalog::PipelineSpec spec;
    spec.name = "p";
    spec.manifest_toml = std::string(
                             "[pipeline]\nname = \"p\"\n[[pipeline.stages]]\nkind = \"function\"\n"
                             "qualified_name = \"") +
                         spec_stage + "\"\npin_artifact_hash = \"" + kPin + "\"\n";
    spec.transform_name = "stage-a";
    spec.artifact_blake3 = kPin;
    const auto& pk = signer.public_key();
    catalog::PublisherRecord publisher{signer.publisher_id(), "someone",
                                       std::vector<uint8_t>(pk.begin(), pk.end()), ""};
    ASSERT_TRUE(
        registry_
            ->RegisterPublication(artifact, catalog::SignPipelineSpec(spec, signer), &publisher)
            .ok());
  }

  arrow::Status SubmitJob() {
    SubmitOptions options;
    options.manifest_path = (home_ / "job.toml").string();
    options.run_id = "r1";
    return Submit(config_, options).status();
  }

  fs::path home_;
  Config config_;
  std::unique_ptr<catalog::Registry> registry_;
};

TEST_F(SubmitTrustTest, ASpecSignedByAnUntrustedKeyIsRefused) {
  Publish(*catalog::SigningIdentity::Generate(), "stage-a");
  arrow::Status st = SubmitJob();
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("which this machine does not trust"), std::string::npos)
      << st.message();
  EXPECT_FALSE(registry_->GetRun("r1")->has_value()) << "nothing ran";
}

// The signature holds and the signer is trusted, but what it signed is a pipeline with another
// stage: the pin may not run under a name the publisher never signed.
TEST_F(SubmitTrustTest, ASignedPipelineWithoutTheStageIsRefused) {
  auto signer = *catalog::SigningIdentity::Generate();
  ASSERT_TRUE(
      catalog::TrustedPublishers::Add((home_ / "keys").string(), signer.publisher_id()).ok());
  Publish(signer, "stage-b");
  arrow::Status st = SubmitJob();
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("refusing stage 'stage-a': the signed pipeline spec 'p' does not "
                              "have a stage 'stage-a' pinned to " +
                              std::string(kPin)),
            std::string::npos)
      << st.message();
  EXPECT_FALSE(registry_->GetRun("r1")->has_value());
}

// With a matching signed stage the trust checks pass, and the job goes on to its source.
TEST_F(SubmitTrustTest, ATrustedSignedStagePasses) {
  auto signer = *catalog::SigningIdentity::Generate();
  ASSERT_TRUE(
      catalog::TrustedPublishers::Add((home_ / "keys").string(), signer.publisher_id()).ok());
  Publish(signer, "stage-a");
  arrow::Status st = SubmitJob();
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.message().find("refusing stage"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("has no jsonl objects"), std::string::npos) << st.message();
}

}  // namespace
}  // namespace sluice::pipeline
