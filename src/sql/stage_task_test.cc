// The SQL stage task codec: bytes from another process are refused, with a message that names
// the check, unless every field has the shape the stage runner relies on.
#include "sql/stage_task.h"

#include <gtest/gtest.h>

#include <cstring>
#include <nlohmann/json.hpp>

#include "plan/cbor_fields.h"

namespace sluice::sql {
namespace {

StageTask FinalTask() {
  StageTask t;
  t.role = StageTask::Role::kFinal;
  t.plan = {1, 2, 3};
  t.partitions = 1;
  t.output_prefix = "_sluice/shuffle/q-1/s2";
  t.input_keys = {"_sluice/shuffle/q-1/s1/s1p0-1/part-0.arrow"};
  t.input_blake3 = {"ab"};
  return t;
}

std::string DecodeError(const std::vector<uint8_t>& bytes) {
  auto decoded = DecodeStageTask(bytes.data(), bytes.size());
  return decoded.ok() ? "ok" : decoded.status().message();
}

std::vector<uint8_t> Reencoded(const StageTask& t,
                               const std::function<void(nlohmann::json&)>& damage) {
  auto bytes = EncodeStageTask(t);
  EXPECT_TRUE(bytes.ok());
  const size_t magic = std::strlen(kStageTaskMagic);
  auto doc =
      nlohmann::json::from_cbor(bytes->begin() + static_cast<std::ptrdiff_t>(magic), bytes->end());
  damage(doc);
  return plan::WithMagic(kStageTaskMagic, doc);
}

TEST(StageTaskTest, RoundTrips) {
  auto bytes = EncodeStageTask(FinalTask());
  ASSERT_TRUE(bytes.ok());
  auto t = DecodeStageTask(bytes->data(), bytes->size());
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_EQ(t->role, StageTask::Role::kFinal);
  EXPECT_EQ(t->plan, (std::vector<uint8_t>{1, 2, 3}));
  EXPECT_EQ(t->input_keys, FinalTask().input_keys);
  EXPECT_EQ(t->input_blake3, FinalTask().input_blake3);
  EXPECT_EQ(t->output_prefix, "_sluice/shuffle/q-1/s2");
}

TEST(StageTaskTest, RefusesAnotherVersionByName) {
  auto bytes = EncodeStageTask(FinalTask());
  ASSERT_TRUE(bytes.ok());
  std::string text(bytes->begin(), bytes->end());
  text.replace(0, std::strlen("SLUICE-SQL-STAGE/1"), "SLUICE-SQL-STAGE/9");
  const std::vector<uint8_t> other(text.begin(), text.end());
  EXPECT_NE(DecodeError(other).find("SLUICE-SQL-STAGE/9"), std::string::npos) << DecodeError(other);
}

TEST(StageTaskTest, RefusesDamagedFields) {
  EXPECT_EQ(DecodeError(Reencoded(FinalTask(), [](auto& d) { d["role"] = "reduce"; })),
            "stage task: unknown role 'reduce'");
  EXPECT_EQ(DecodeError(Reencoded(FinalTask(), [](auto& d) { d["partitions"] = 0; })),
            "stage task: partitions 0 out of range");
  EXPECT_EQ(DecodeError(Reencoded(FinalTask(), [](auto& d) { d["input_blake3"] = nlohmann::json::array(); })),
            "stage task: 1 input files but 0 digests");
  EXPECT_EQ(DecodeError(Reencoded(FinalTask(),
                                  [](auto& d) { d["input_keys"] = {"tables/t/part-0.parquet"}; })),
            "stage task: input file 'tables/t/part-0.parquet' is not under _sluice/shuffle/");
  EXPECT_EQ(DecodeError(Reencoded(FinalTask(),
                                  [](auto& d) {
                                    d["input_keys"] = nlohmann::json::array();
                                    d["input_blake3"] = nlohmann::json::array();
                                  })),
            "stage task: a final task needs input files");
  EXPECT_NE(DecodeError(Reencoded(FinalTask(),
                                  [](auto& d) { d["output_prefix"] = "_sluice/shuffle/../x"; })),
            "ok");
  EXPECT_NE(DecodeError(Reencoded(FinalTask(), [](auto& d) { d.erase("plan"); })), "ok");
}

TEST(StageTaskTest, AttemptsNeverShareAFileName) {
  EXPECT_EQ(ShuffleFileKey("_sluice/shuffle/q-1/s1", "s1p3", 2, 0),
            "_sluice/shuffle/q-1/s1/s1p3-2/part-0.arrow");
  EXPECT_NE(ShuffleFileKey("p", "s1p3", 1, 0), ShuffleFileKey("p", "s1p3", 2, 0));
}

}  // namespace
}  // namespace sluice::sql
