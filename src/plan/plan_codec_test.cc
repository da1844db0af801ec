#include "plan/plan_codec.h"

#include <arrow/compute/api.h>

#include <arrow/api.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <functional>

#include <cstring>

#include "plan/cbor_fields.h"
#include "plan/compute_init.h"
#include "plan/expression_codec.h"

namespace sluice::plan {
namespace {

std::shared_ptr<arrow::Schema> RecordSchema() {
  return arrow::schema({arrow::field("data_hash", arrow::fixed_size_binary(32), false),
                        arrow::field("content", arrow::utf8())},
                       arrow::key_value_metadata({"sluice.schema"}, {"x.Y"}));
}

// A job's map task: scan objects, a transform, a shuffle write.
std::unique_ptr<PlanNode> MapPlan() {
  auto scan = MakeNode(PlanNode::Kind::kScanObjects);
  scan->objects =
      ScanObjects{"jsonl", {"raw/a.jsonl", "raw/b.jsonl"}, 10, "x.In", RecordSchema(), true};
  auto call = MakeNode(PlanNode::Kind::kTransform, std::move(scan));
  call->transform = CallTransform{"extract", std::string(64, 'a'), RecordSchema()};
  auto write = MakeNode(PlanNode::Kind::kShuffleWrite, std::move(call));
  write->shuffle_write = ShuffleWrite{{"data_hash"}, 4, "_sluice/shuffle/run-1/s0"};
  return write;
}

// A job's reduce task: the operators the map task does not have.
std::unique_ptr<PlanNode> ReducePlan() {
  auto read = MakeNode(PlanNode::Kind::kShuffleRead);
  read->shuffle_read =
      ShuffleRead{{"_sluice/shuffle/run-1/s0/s0p0-1/part-3.arrow",
                   "_sluice/shuffle/run-1/s0/s0p1-2/part-3.arrow"},
                  {std::string(64, 'a'), std::string(64, 'b')},
                  arrow::schema({arrow::field("data_hash", arrow::fixed_size_binary(32), false)}),
                  {"data_hash"},
                  {{"__agg1", {"sum(l_quantity)", false, true}},
                   {"__in2", {"l_extendedprice * (1 - l_discount)", true, false}},
                   {"__window_input", {"l_tax", false, false}}}};
  auto dedup = MakeNode(PlanNode::Kind::kDedup, std::move(read));
  dedup->dedup = DedupFirst{"data_hash"};
  auto sink = MakeNode(PlanNode::Kind::kSinkWrite, std::move(dedup));
  sink->sink = WriteSink{"parquet", "derived/x/run-1/part-00003.parquet"};
  return sink;
}

Fragment Sample(std::unique_ptr<PlanNode> root = MapPlan()) {
  Fragment f;
  f.run_id = "run-1";
  f.stage_id = 1;
  f.partition = 3;
  f.attempt = 2;
  f.session = {"file:///tmp/store", "/tmp/cache", {}, {}};
  f.root = std::move(root);
  return f;
}

arrow::Result<Fragment> RoundTrip(const Fragment& f) {
  ARROW_ASSIGN_OR_RAISE(auto bytes, EncodeFragment(f));
  return DecodeFragment(bytes.data(), bytes.size());
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
  const PlanNode& write = *back->root;
  ASSERT_EQ(write.kind, PlanNode::Kind::kShuffleWrite);
  EXPECT_EQ(write.shuffle_write.partitions, 4);
  EXPECT_EQ(write.shuffle_write.keys, std::vector<std::string>{"data_hash"});
  ASSERT_EQ(write.input->kind, PlanNode::Kind::kTransform);
  const PlanNode& scan = *write.input->input;
  ASSERT_EQ(scan.kind, PlanNode::Kind::kScanObjects);
  EXPECT_EQ(scan.objects.keys, (std::vector<std::string>{"raw/a.jsonl", "raw/b.jsonl"}));
  EXPECT_EQ(scan.objects.first_object_index, 10);
  EXPECT_TRUE(scan.objects.skip_bad_records);
  EXPECT_TRUE(scan.objects.schema->Equals(*RecordSchema(), true));
  // Encoding is deterministic.
  EXPECT_EQ(*EncodeFragment(*back), *bytes);
  auto reduce = RoundTrip(Sample(ReducePlan()));
  ASSERT_TRUE(reduce.ok()) << reduce.status().ToString();
  EXPECT_EQ(reduce->root->sink.key, "derived/x/run-1/part-00003.parquet");
  const ShuffleRead& read = reduce->root->input->input->shuffle_read;
  EXPECT_EQ(read.blake3[1], std::string(64, 'b'));
  // What the hidden columns computed travels with the read, for errors' text on a worker.
  ASSERT_EQ(read.column_texts.size(), 3u);
  EXPECT_EQ(read.column_texts.at("__agg1").text, "sum(l_quantity)");
  EXPECT_TRUE(read.column_texts.at("__agg1").aggregate);
  EXPECT_FALSE(read.column_texts.at("__agg1").infix);
  EXPECT_TRUE(read.column_texts.at("__in2").infix);
  EXPECT_FALSE(read.column_texts.at("__in2").aggregate);
  EXPECT_EQ(read.column_texts.at("__window_input").text, "l_tax");
  EXPECT_FALSE(read.column_texts.at("__window_input").infix);
  EXPECT_EQ(reduce->root->Explain(),
            "SinkWrite parquet derived/x/run-1/part-00003.parquet\n"
            "  DedupFirst data_hash\n"
            "    ShuffleRead (2 files) partitioned on data_hash\n");
}

TEST(PlanCodec, AFunctionsDefaultOptionsDoNotTravel) {
  // The binder's IS NULL is Arrow's is_null() with its default NullOptions, which plans need
  // not carry (TPC-DS q44 and q45 failed on them with --workers); options other than a
  // function's defaults are still encoded, or refused by name.
  namespace cp = arrow::compute;
  ASSERT_TRUE(EnsureComputeInitialized().ok());
  auto schema = arrow::schema({arrow::field("x", arrow::float64())});
  const cp::Expression is_null = cp::is_null(cp::field_ref("x"));
  ASSERT_NE(is_null.call()->options, nullptr);
  auto encoded = EncodeExpression(is_null);
  ASSERT_TRUE(encoded.ok()) << encoded.status().ToString();
  EXPECT_FALSE(encoded->contains("options")) << encoded->dump();
  auto decoded = DecodeExpression(*encoded);
  ASSERT_TRUE(decoded.ok()) << decoded.status().ToString();
  auto bound = is_null.Bind(*schema);
  auto rebound = decoded->Bind(*schema);
  ASSERT_TRUE(bound.ok() && rebound.ok()) << rebound.status().ToString();
  arrow::DoubleBuilder b;
  ASSERT_TRUE(b.AppendValues({1.0, std::nan("")}).ok());
  ASSERT_TRUE(b.AppendNull().ok());
  cp::ExecBatch batch({*b.Finish()}, 3);
  auto want = cp::ExecuteScalarExpression(*bound, batch);
  auto got = cp::ExecuteScalarExpression(*rebound, batch);
  ASSERT_TRUE(want.ok() && got.ok());
  EXPECT_TRUE(got->Equals(*want)) << got->ToString();

  auto nan_is_null = cp::call("is_null", {cp::field_ref("x")}, cp::NullOptions(true));
  auto refused = EncodeExpression(nan_is_null);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("NullOptions"), std::string::npos)
      << refused.status().ToString();
  auto cast = EncodeExpression(
      cp::call("cast", {cp::field_ref("x")}, cp::CastOptions::Safe(arrow::int32())));
  ASSERT_TRUE(cast.ok()) << cast.status().ToString();
  EXPECT_TRUE(cast->contains("options"));
}

// A checked cast that rounds an integer to the nearest double (an int64 IN doubles compares so)
// travels as one: a worker that read it as a plain checked cast failed past 2^53.
TEST(PlanCodec, ACastKeepsWhetherItRoundsToADouble) {
  namespace cp = arrow::compute;
  auto schema = arrow::schema({arrow::field("i", arrow::int64())});
  arrow::Int64Builder b;
  ASSERT_TRUE(b.AppendValues({1, (int64_t{1} << 53) + 1}).ok());
  cp::ExecBatch batch({*b.Finish()}, 2);
  for (const bool round : {false, true}) {
    cp::CastOptions options = cp::CastOptions::Safe(arrow::float64());
    options.allow_float_truncate = round;
    auto encoded = EncodeExpression(cp::call("cast", {cp::field_ref("i")}, options));
    ASSERT_TRUE(encoded.ok()) << encoded.status().ToString();
    auto decoded = DecodeExpression(*encoded);
    ASSERT_TRUE(decoded.ok()) << decoded.status().ToString();
    const auto& back = static_cast<const cp::CastOptions&>(*decoded->call()->options);
    EXPECT_EQ(back.allow_float_truncate, round);
    EXPECT_FALSE(back.allow_int_overflow);
    auto bound = decoded->Bind(*schema);
    ASSERT_TRUE(bound.ok());
    EXPECT_EQ(cp::ExecuteScalarExpression(*bound, batch).ok(), round);
  }
}

// The runner trusts these shapes; a fragment with a write below its top, or a job operator
// over a relational one, must never reach it.
TEST(PlanCodec, RefusesShapesNoTaskRuns) {
  auto refused = [](std::unique_ptr<PlanNode> root, const std::string& message) {
    auto back = RoundTrip(Sample(std::move(root)));
    ASSERT_FALSE(back.ok());
    EXPECT_NE(back.status().message().find(message), std::string::npos) << back.status().message();
  };
  // A sink write under a dedup.
  auto reduce = ReducePlan();
  auto dedup = MakeNode(PlanNode::Kind::kDedup, std::move(reduce));
  dedup->dedup = DedupFirst{"data_hash"};
  refused(std::move(dedup), "plan: a sink_write only at the top of a plan");
  // A job operator over a relational one.
  auto read = ReducePlan();
  auto filter = MakeNode(PlanNode::Kind::kFilter, std::move(read->input->input));
  filter->predicate = arrow::compute::literal(true);
  auto transform = MakeNode(PlanNode::Kind::kTransform, std::move(filter));
  transform->transform = CallTransform{"extract", std::string(64, 'a'), RecordSchema()};
  auto sink = MakeNode(PlanNode::Kind::kSinkWrite, std::move(transform));
  sink->sink = WriteSink{"parquet", "derived/x/run-1/part-00003.parquet"};
  refused(std::move(sink), "plan: job operators and relational operators in one fragment");
  // Shuffle files outside the shuffle folder, or without their digests.
  auto outside = ReducePlan();
  outside->input->input->shuffle_read.files[0] = "tables/t/part-0.parquet";
  refused(std::move(outside),
          "plan: shuffle_read 'tables/t/part-0.parquet' is not under _sluice/shuffle/");
  auto undigested = ReducePlan();
  undigested->input->input->shuffle_read.blake3.pop_back();
  refused(std::move(undigested), "plan: shuffle_read has 2 files and 1 digests");
  auto no_partitions = MapPlan();
  no_partitions->shuffle_write.partitions = 0;
  refused(std::move(no_partitions), "plan: partitions 0 out of range");
  auto keyless = MapPlan();
  keyless->shuffle_write.keys.clear();
  keyless->shuffle_write.one_row_per_key = true;
  refused(std::move(keyless), "plan: one row per key needs keys");
}

// Fragment bytes with `edit` applied to the object that holds `key`, wherever it is.
std::vector<uint8_t> Tampered(const Fragment& f, const std::string& key,
                              const std::function<void(nlohmann::json&)>& edit) {
  auto bytes = EncodeFragment(f);
  EXPECT_TRUE(bytes.ok());
  const size_t magic = std::strlen(kPlanMagic);
  nlohmann::json doc =
      nlohmann::json::from_cbor(std::vector<uint8_t>(bytes->begin() + magic, bytes->end()));
  std::function<bool(nlohmann::json&)> visit = [&](nlohmann::json& j) {
    if (j.is_object() && j.contains(key)) {
      edit(j);
      return true;
    }
    if (j.is_structured()) {
      for (auto& child : j) {
        if (visit(child)) return true;
      }
    }
    return false;
  };
  EXPECT_TRUE(visit(doc)) << key;
  return WithMagic(kPlanMagic, doc);
}

TEST(PlanCodec, RefusesColumnTextsThatDoNotPair) {
  const Fragment f = Sample(ReducePlan());
  auto short_texts = Tampered(f, "texts", [](nlohmann::json& j) { j["texts"].erase(0); });
  auto back = DecodeFragment(short_texts.data(), short_texts.size());
  ASSERT_FALSE(back.ok());
  EXPECT_NE(back.status().message().find("3 text columns, 2 texts and 3 text kinds"),
            std::string::npos)
      << back.status().message();
  auto odd_kind = Tampered(f, "text_kinds", [](nlohmann::json& j) { j["text_kinds"][0] = "sql"; });
  back = DecodeFragment(odd_kind.data(), odd_kind.size());
  ASSERT_FALSE(back.ok());
  EXPECT_NE(back.status().message().find("text kind 'sql' of column '__agg1' is unknown"),
            std::string::npos)
      << back.status().message();
}

TEST(PlanCodec, NeverEncodesWhatOnlyPlannersSee) {
  // An exchange the stage cutter did not replace, and the logical plan's kinds.
  for (auto kind :
       {PlanNode::Kind::kExchange, PlanNode::Kind::kJoinSet, PlanNode::Kind::kDependentJoin}) {
    auto sink = ReducePlan();
    auto node = MakeNode(kind, std::move(sink->input->input));
    sink->input->input = std::move(node);
    auto bytes = EncodeFragment(Sample(std::move(sink)));
    ASSERT_FALSE(bytes.ok()) << KindName(kind);
    EXPECT_NE(bytes.status().message().find("internal: "), std::string::npos)
        << bytes.status().message();
    EXPECT_NE(bytes.status().message().find(kind == PlanNode::Kind::kExchange ? "stage cutter"
                                                                              : "optimizer"),
              std::string::npos)
        << bytes.status().message();
  }
}

TEST(PlanCodec, RefusesOtherFormatsByName) {
  auto bytes = *EncodeFragment(Sample());
  std::vector<uint8_t> v3 = bytes;
  v3[12] = '3';  // SLUICE-PLAN/3
  auto st = DecodeFragment(v3.data(), v3.size());
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.status().message(),
            "plan bytes are format 'SLUICE-PLAN/3'; this sluice reads only SLUICE-PLAN/2");
  const char junk[] = "{\"json\": true}";
  st = DecodeFragment(reinterpret_cast<const uint8_t*>(junk), sizeof(junk));
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.status().message().find("missing the SLUICE-PLAN/2 header"), std::string::npos);
}

TEST(PlanCodec, TruncatedOrCorruptBytesAreErrorsNotCrashes) {
  for (const auto& f : {Sample(), Sample(ReducePlan())}) {
    auto bytes = *EncodeFragment(f);
    for (size_t cut = 0; cut < bytes.size(); cut += 7) {
      EXPECT_FALSE(DecodeFragment(bytes.data(), cut).ok()) << cut;
    }
    for (size_t i = std::strlen(kPlanMagic); i < bytes.size(); i += 13) {
      auto flipped = bytes;
      flipped[i] ^= 0x5a;
      (void)DecodeFragment(flipped.data(), flipped.size());  // must not crash; may decode
    }
  }
}

}  // namespace
}  // namespace sluice::plan
