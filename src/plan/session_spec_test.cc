#include "plan/session_spec.h"

#include <arrow/api.h>
#include <gtest/gtest.h>

#include "plan/plan_codec.h"

namespace sluice::plan {
namespace {

TEST(SessionSpec, EncodedTasksCarryTheDriversValuesAndTheyMatchHere) {
  Fragment f;
  f.run_id = "r";
  auto read = std::make_unique<PlanNode>();
  read->kind = PlanNode::Kind::kShuffleRead;
  read->shuffle_read = ShuffleRead{{"_sluice/shuffle/r/s0/s0p0-1/part-0.arrow"},
                                   {std::string(64, 'a')},
                                   arrow::schema({arrow::field("k", arrow::utf8())}),
                                   {},
                                   {}};
  f.root = std::move(read);
  auto bytes = EncodeFragment(f);
  ASSERT_TRUE(bytes.ok());
  auto decoded = DecodeFragment(bytes->data(), bytes->size());
  ASSERT_TRUE(decoded.ok()) << decoded.status().ToString();
  EXPECT_EQ(decoded->session.parity, LocalParity());
  EXPECT_TRUE(CheckParity(decoded->session.parity).ok());
  EXPECT_TRUE(LocalParity().contains("engine") && LocalParity().contains("null_order"));
}

TEST(SessionSpec, EveryDifferenceIsNamed) {
  ParityValues driver = LocalParity();
  driver["engine"] = "sluice 9.9.9";
  driver["time_zone"] = "Europe/Paris";
  driver["collation"] = "de_DE";
  driver.erase("null_order");
  arrow::Status st = CheckParity(driver);
  ASSERT_FALSE(st.ok());
  const std::string m = st.message();
  EXPECT_NE(m.find("session spec: this worker cannot match the driver"), std::string::npos) << m;
  EXPECT_NE(m.find("engine: the driver has 'sluice 9.9.9', this worker has 'sluice "),
            std::string::npos)
      << m;
  EXPECT_NE(m.find("time_zone: the driver has 'Europe/Paris', this worker has 'UTC'"),
            std::string::npos)
      << m;
  EXPECT_NE(m.find("collation = 'de_DE' is a setting this worker does not know"), std::string::npos)
      << m;
  EXPECT_NE(m.find("null_order: the driver sent none"), std::string::npos) << m;
}

}  // namespace
}  // namespace sluice::plan
