#include "pipeline/manifest.h"

#include <gtest/gtest.h>

namespace sluice::pipeline {
namespace {

const std::string kPin(64, 'a');

std::string Job(const std::string& source_extra = "", const std::string& stage_extra = "",
                const std::string& sink_path = "derived/x/{run_id}") {
  return "[dataflow.source]\nkind = \"jsonl\"\nprefix = \"raw/x/\"\n" + source_extra +
         "\n[[dataflow.stages]]\nkind = \"function\"\nqualified_name = \"extract\"\n"
         "pin_artifact_hash = \"" +
         kPin + "\"\n" + stage_extra +
         "\n[[dataflow.stages]]\nkind = \"dedup\"\nkey = \"data_hash\"\n"
         "\n[dataflow.sink]\nkind = \"parquet\"\npath = \"" +
         sink_path + "\"\n";
}

TEST(JobManifest, ParsesAValidJob) {
  auto job = ParseJobManifest(Job("limit = 50\non_error = \"skip\"\n"), "job.toml");
  ASSERT_TRUE(job.ok()) << job.status().ToString();
  EXPECT_EQ(job->source.kind, "jsonl");
  EXPECT_EQ(job->source.prefix, "raw/x/");
  EXPECT_EQ(job->source.limit, 50);
  EXPECT_EQ(job->source.on_error, "skip");
  ASSERT_EQ(job->stages.size(), 2u);
  EXPECT_EQ(job->stages[0].kind, StageSpec::Kind::kFunction);
  EXPECT_EQ(job->stages[0].qualified_name, "extract");
  EXPECT_EQ(job->stages[0].pin_artifact_hash, kPin);
  EXPECT_EQ(job->stages[0].location, "job.toml:7:1");
  EXPECT_EQ(job->stages[1].kind, StageSpec::Kind::kDedup);
  EXPECT_EQ(job->stages[1].key, "data_hash");
  EXPECT_EQ(job->sink.path, "derived/x/{run_id}");
}

void ExpectError(const std::string& text, const std::string& expect,
                 const ParseOptions& options = {}) {
  auto job = ParseJobManifest(text, "job.toml", options);
  ASSERT_FALSE(job.ok()) << text;
  EXPECT_NE(job.status().message().find(expect), std::string::npos)
      << "want: " << expect << "\ngot:  " << job.status().message();
}

TEST(JobManifest, ErrorsGiveFileLineAndColumn) {
  ExpectError(Job("colour = \"red\"\n"),
              "job.toml:4:1: unknown key 'colour' in [dataflow.source] (allowed: kind, limit, "
              "on_error, prefix)");
  ExpectError(Job("limit = \"fifty\"\n"),
              "job.toml:4:9: dataflow.source.limit must be an integer, not a string");
  ExpectError(Job("limit = 0\n"), "job.toml:4:9: dataflow.source.limit must be at least 1");
  ExpectError(Job("on_error = \"ignore\"\n"),
              "job.toml:4:12: dataflow.source.on_error is \"ignore\"; expected one of \"fail\", "
              "\"skip\"");
  ExpectError(Job("", "extra = 1\n"), "job.toml:9:1: unknown key 'extra' in dataflow.stages[0]");
  ExpectError(Job("", "", "derived/x/latest"),
              "job.toml:16:8: dataflow.sink.path 'derived/x/latest' must contain {run_id}");
  ExpectError("[dataflow.source]\nprefix = 3\n",
              "job.toml:2:10: dataflow.source.prefix must be "
              "a string, not an integer");
  ExpectError("[dataflow.source]\nprefix = 3\n", "job.toml: missing table [dataflow.sink]");
  ExpectError("[dataflow\n", "job.toml:1:10: ");
}

TEST(JobManifest, ReportsEveryErrorAtOnce) {
  auto job = ParseJobManifest(Job("colour = 1\nlimit = -3\n", "", "no-run-id"), "job.toml");
  ASSERT_FALSE(job.ok());
  const std::string m = job.status().message();
  EXPECT_NE(m.find("unknown key 'colour'"), std::string::npos) << m;
  EXPECT_NE(m.find("limit must be at least 1"), std::string::npos) << m;
  EXPECT_NE(m.find("must contain {run_id}"), std::string::npos) << m;
}

TEST(JobManifest, PlaceholderPinIsRefusedUnlessAllowed) {
  std::string text = Job();
  text.replace(text.find(kPin), kPin.size(), kPlaceholderPin);
  ExpectError(text,
              "job.toml:8:21: dataflow.stages[0].pin_artifact_hash is the placeholder "
              "PUBLISH_RESULT_GOES_HERE: publish the transform");
  ParseOptions lenient;
  lenient.allow_placeholder_pin = true;
  EXPECT_TRUE(ParseJobManifest(text, "job.toml", lenient).ok());

  std::string bad = Job();
  bad.replace(bad.find(kPin), kPin.size(), "ABC");
  ExpectError(bad, "pin_artifact_hash 'ABC' is not a BLAKE3 digest", lenient);
}

TEST(JobManifest, LimitsAreOptionalAndChecked) {
  auto plain = ParseJobManifest(Job(), "job.toml");
  ASSERT_TRUE(plain.ok()) << plain.status().ToString();
  EXPECT_FALSE(plain->limits.task_timeout_seconds.has_value());
  EXPECT_FALSE(plain->limits.task_memory_mb.has_value());
  const std::string limits = Job() + "\n[dataflow.limits]\n";  // its first key is on line 19
  auto job =
      ParseJobManifest(limits + "task_timeout_seconds = 30\ntask_memory_mb = 512\n", "job.toml");
  ASSERT_TRUE(job.ok()) << job.status().ToString();
  EXPECT_EQ(job->limits.task_timeout_seconds, 30);
  EXPECT_EQ(job->limits.task_memory_mb, 512);

  ExpectError(limits + "task_timeout_seconds = 0\n",
              "job.toml:19:24: dataflow.limits.task_timeout_seconds is 0; it must be between 1 "
              "and 604800");
  ExpectError(limits + "task_timeout_seconds = \"5m\"\n",
              "job.toml:19:24: dataflow.limits.task_timeout_seconds must be an integer, not a "
              "string");
  ExpectError(limits + "task_memory_mb = 10\n",
              "job.toml:19:18: dataflow.limits.task_memory_mb is 10; it must be between 64 and "
              "1073741824");
  ExpectError(limits + "wall = 1\n",
              "job.toml:19:1: unknown key 'wall' in [dataflow.limits] (allowed: task_memory_mb, "
              "task_timeout_seconds)");
  ExpectError(Job() + "\n[dataflow]\nlimits = 5\n",
              "job.toml:19:10: dataflow.limits must be a table");
}

TEST(PipelineManifest, ParsesStagesWithoutRoutes) {
  auto manifest = ParsePipelineManifest(
      "[pipeline]\nname = \"p\"\n[[pipeline.stages]]\nkind = \"function\"\n"
      "qualified_name = \"extract\"\npin_artifact_hash = \"PUBLISH_RESULT_GOES_HERE\"\n",
      "pipeline.toml", {.allow_placeholder_pin = true});
  ASSERT_TRUE(manifest.ok()) << manifest.status().ToString();
  EXPECT_EQ(manifest->name, "p");
  ASSERT_EQ(manifest->stages.size(), 1u);
  auto with_source = ParsePipelineManifest(
      "[pipeline]\nname = \"p\"\n[pipeline.source]\nkind = \"jsonl\"\n", "pipeline.toml");
  ASSERT_FALSE(with_source.ok());
  EXPECT_NE(with_source.status().message().find("unknown key 'source' in [pipeline]"),
            std::string::npos)
      << with_source.status().message();
}

TEST(PipelineManifest, InjectPinChangesOnlyThePin) {
  const std::string text =
      "# comment stays\n[pipeline]\nname = \"p\"\n\n[[pipeline.stages]]\nkind = \"function\"\n"
      "qualified_name = \"other\"\npin_artifact_hash = \"" +
      kPin +
      "\"\n\n"
      "[[pipeline.stages]]\nkind = \"function\"\nqualified_name = \"extract\"\n"
      "pin_artifact_hash   =   \"PUBLISH_RESULT_GOES_HERE\"  # trailing comment\n";
  const std::string pin(64, 'e');
  auto out = InjectPin(text, "pipeline.toml", "extract", pin);
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  std::string expected = text;
  expected.replace(expected.find("\"PUBLISH_RESULT_GOES_HERE\""), 26, "\"" + pin + "\"");
  EXPECT_EQ(*out, expected);
  auto missing = InjectPin(text, "pipeline.toml", "nobody", pin);
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("no function stage with qualified_name = \"nobody\""),
            std::string::npos);
}

TEST(Manifests, CommittedFilesParse) {
  const std::string root = SLUICE_SOURCE_DIR;
  const std::string example = root + "/transforms/conversation-message-extract";
  ParseOptions lenient;
  lenient.allow_placeholder_pin = true;
  auto job = ReadJobManifest(example + "/job.toml", lenient);
  EXPECT_TRUE(job.ok()) << job.status().ToString();
  auto pipeline = ReadPipelineManifest(example + "/pipeline.toml", lenient);
  EXPECT_TRUE(pipeline.ok()) << pipeline.status().ToString();
  auto missing = ReadJobManifest(example + "/nope.toml");
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("nope.toml"), std::string::npos);
}

}  // namespace
}  // namespace sluice::pipeline
