#include "plan/plan_codec.h"

#include <arrow/api.h>
#include <gtest/gtest.h>

#include <cstring>

namespace sluice::plan {
namespace {

Fragment Sample() {
  auto schema = arrow::schema({arrow::field("data_hash", arrow::fixed_size_binary(32), false),
                               arrow::field("content", arrow::utf8())},
                              arrow::key_value_metadata({"sluice.schema"}, {"x.Y"}));
  Fragment f;
  f.run_id = "run-1";
  f.stage_id = 1;
  f.partition = 3;
  f.attempt = 2;
  f.session = {"file:///tmp/store", "/tmp/cache", {}};
  f.operators = {ScanObjects{"jsonl", {"raw/a.jsonl", "raw/b.jsonl"}, 10, "x.In", schema, true},
                 CallTransform{"extract", std::string(64, 'a'), schema},
                 HashExchange{"data_hash", 4, "tmp/shuffle/run-1/s0/p3"}};
  return f;
}

// A reduce task: the operators the map task above does not have.
Fragment ReduceSample() {
  auto schema = arrow::schema({arrow::field("data_hash", arrow::fixed_size_binary(32), false)});
  Fragment f = Sample();
  f.operators = {
      ScanShuffle{{"f1.arrow", "f2.arrow"}, {std::string(64, 'a'), std::string(64, 'b')}, schema},
      DedupFirst{"data_hash"}, WriteSink{"parquet", "derived/x/run-1/part-00003.parquet"}};
  return f;
}

TEST(PlanCodec, RoundTrip) {
  const Fragment f = Sample();
  auto bytes = EncodeFragment(f);
  ASSERT_TRUE(bytes.ok());
  auto back = DecodeFragment(bytes->data(), bytes->size());
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->run_id, "run-1");
  EXPECT_EQ(back->task_name(), "s1p3");
  EXPECT_EQ(back->attempt, 2);
  EXPECT_EQ(back->session.cache_dir, "/tmp/cache");
  ASSERT_EQ(back->operators.size(), 3u);
  const auto& scan = std::get<ScanObjects>(back->operators[0]);
  EXPECT_EQ(scan.keys, (std::vector<std::string>{"raw/a.jsonl", "raw/b.jsonl"}));
  EXPECT_EQ(scan.first_object_index, 10);
  EXPECT_TRUE(scan.skip_bad_records);
  EXPECT_TRUE(scan.schema->Equals(*std::get<ScanObjects>(f.operators[0]).schema, true));
  EXPECT_EQ(std::get<HashExchange>(back->operators[2]).partitions, 4);
  // Encoding is deterministic.
  EXPECT_EQ(*EncodeFragment(*back), *bytes);
  auto reduce = EncodeFragment(ReduceSample());
  ASSERT_TRUE(reduce.ok());
  auto reduce_back = DecodeFragment(reduce->data(), reduce->size());
  ASSERT_TRUE(reduce_back.ok()) << reduce_back.status().ToString();
  EXPECT_EQ(std::get<ScanShuffle>(reduce_back->operators[0]).blake3[1], std::string(64, 'b'));
  EXPECT_EQ(std::get<WriteSink>(reduce_back->operators[2]).key,
            "derived/x/run-1/part-00003.parquet");
}

// The runner trusts this shape; a fragment without a source, with a second source, or with
// operators after its sink once crashed a worker.
TEST(PlanCodec, OperatorsComeInTheirOrder) {
  auto refused = [](std::vector<Operator> ops, const std::string& message) {
    Fragment f = Sample();
    f.operators = std::move(ops);
    auto bytes = EncodeFragment(f);
    ASSERT_TRUE(bytes.ok());
    auto back = DecodeFragment(bytes->data(), bytes->size());
    ASSERT_FALSE(back.ok());
    EXPECT_NE(back.status().message().find(message), std::string::npos) << back.status().message();
  };
  refused({DedupFirst{"k"}}, "a fragment must start with a scan, not operator 0");
  const auto shuffle = std::get<ScanShuffle>(ReduceSample().operators[0]);
  refused({shuffle, shuffle}, "operator 1 is a source, but only the first may be");
  refused({shuffle, WriteSink{"parquet", "a/b.parquet"}, DedupFirst{"k"}},
          "operator 1 ends a fragment, but 1 follow it");
}

TEST(PlanCodec, RefusesOtherFormatsByName) {
  auto bytes = *EncodeFragment(Sample());
  std::vector<uint8_t> v2 = bytes;
  v2[12] = '2';  // SLUICE-PLAN/2
  auto st = DecodeFragment(v2.data(), v2.size());
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.status().message(),
            "plan bytes are format 'SLUICE-PLAN/2'; this sluice reads only SLUICE-PLAN/1");
  const char junk[] = "{\"json\": true}";
  st = DecodeFragment(reinterpret_cast<const uint8_t*>(junk), sizeof(junk));
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.status().message().find("missing the SLUICE-PLAN/1 header"), std::string::npos);
}

TEST(PlanCodec, TruncatedOrCorruptBytesAreErrorsNotCrashes) {
  auto bytes = *EncodeFragment(Sample());
  for (size_t cut = 0; cut < bytes.size(); cut += 7) {
    EXPECT_FALSE(DecodeFragment(bytes.data(), cut).ok()) << cut;
  }
  for (size_t i = std::strlen(kPlanMagic); i < bytes.size(); i += 13) {
    auto flipped = bytes;
    flipped[i] ^= 0x5a;
    (void)DecodeFragment(flipped.data(), flipped.size());  // must not crash; may decode
  }
}

}  // namespace
}  // namespace sluice::plan
