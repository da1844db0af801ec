#include "plan/like_kernels.h"

#include <arrow/api.h>
#include <arrow/compute/api.h>
#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "plan/compute_init.h"

namespace sluice::plan {
namespace {

namespace cp = arrow::compute;

// Strings that pieces can be found in, overlap in, or miss: empty, repeats, a piece whose
// prefix and suffix overlap, multi-byte UTF-8, and NULLs.
std::shared_ptr<arrow::Array> Strings() {
  const std::vector<std::optional<std::string>> values = {"",
                                                          "a",
                                                          "ab",
                                                          "aba",
                                                          "abab",
                                                          "abc",
                                                          "ba",
                                                          "bab",
                                                          "special requests",
                                                          "special packages requests",
                                                          "requests special",
                                                          "xspecialxrequestsx",
                                                          std::nullopt,
                                                          "specialrequests",
                                                          "%",
                                                          "50% off",
                                                          "naïve café",
                                                          "café",
                                                          "aaaa",
                                                          std::nullopt,
                                                          "PROMO BRUSHED",
                                                          "STANDARD PROMO",
                                                          "x furiously pending deposits sleep x",
                                                          "furiously pending deposits slee",
                                                          "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaab"};
  arrow::StringBuilder builder;
  for (const auto& v : values) {
    EXPECT_TRUE((v ? builder.Append(*v) : builder.AppendNull()).ok());
  }
  return builder.Finish().ValueOrDie();
}

const std::vector<std::string> kPatterns = {
    "", "%", "%%", "a", "a%", "%a", "%a%", "ab%ba", "ab%b", "a%a%a", "%a%a%", "%ab%bc%", "%b%a%",
    "aba", "%special%requests%", "special%requests", "%requests%special%", "%é%", "na%é", "PROMO%",
    "%PROMO", "%PROMO%", "%aa%aa%", "%aaaa%",
    // Pieces past 16 bytes (memmem's), one that almost matches at every byte, and one of 16.
    "%furiously pending deposits sleep%", "x%furiously pending deposits sleep%",
    "%aaaaaaaaaaaaaaaaaaaaab%", "%aaaaaaaaaaaaaaab%"};

TEST(LikeKernels, MatchWhatArrowsMatchLikeMatches) {
  ASSERT_TRUE(EnsureComputeInitialized().ok());
  auto strings = Strings();
  // Every string type the kernel takes (Arrow's match_like has no string_view kernel, so the
  // answer for utf8 is the one wanted), and a slice (an offset into the offsets).
  std::vector<std::pair<std::shared_ptr<arrow::Array>, std::shared_ptr<arrow::Array>>> inputs = {
      {strings, strings},
      {cp::Cast(*strings, arrow::large_utf8()).ValueOrDie(), strings},
      {cp::Cast(*strings, arrow::utf8_view()).ValueOrDie(), strings},
      {strings->Slice(3, 15), strings->Slice(3, 15)}};
  for (const auto& pattern : kPatterns) {
    cp::MatchSubstringOptions options(pattern);
    for (const auto& [input, utf8] : inputs) {
      auto want = cp::CallFunction("match_like", {utf8}, &options);
      auto got = cp::CallFunction(kLikeFunction, {input}, &options);
      ASSERT_TRUE(want.ok()) << want.status().ToString();
      ASSERT_TRUE(got.ok()) << got.status().ToString();
      EXPECT_TRUE(got->make_array()->Equals(*want->make_array()))
          << "'" << pattern << "' over " << input->type()->ToString() << ": "
          << got->make_array()->ToString() << " want " << want->make_array()->ToString();
    }
    // A scalar, and a NULL one.
    for (const auto& scalar :
         {arrow::MakeScalar("special packages requests"), arrow::MakeNullScalar(arrow::utf8())}) {
      auto want = cp::CallFunction("match_like", {scalar}, &options);
      auto got = cp::CallFunction(kLikeFunction, {scalar}, &options);
      ASSERT_TRUE(got.ok()) << got.status().ToString();
      EXPECT_TRUE(got->scalar()->Equals(*want->scalar())) << pattern;
    }
  }
}

TEST(LikeKernels, OnlyPlainPatternsAreRewritten) {
  ASSERT_TRUE(EnsureComputeInitialized().ok());
  auto like = [](const std::string& pattern, bool ignore_case = false) {
    return cp::call("invert", {cp::call("match_like", {cp::field_ref("s")},
                                        cp::MatchSubstringOptions(pattern, ignore_case))});
  };
  EXPECT_NE(WithLikeKernels(like("%special%requests%")).ToString().find(kLikeFunction),
            std::string::npos);
  // '_', an escape and ILIKE stay Arrow's.
  for (const auto& e : {like("a_c%"), like("50\\%%"), like("%special%", true)}) {
    EXPECT_EQ(WithLikeKernels(e).ToString(), e.ToString());
  }
  // The kernel refuses what it cannot match rather than answer wrongly.
  cp::MatchSubstringOptions underscore("a_c");
  auto refused = cp::CallFunction(kLikeFunction, {Strings()}, &underscore);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("a_c"), std::string::npos);
}

}  // namespace
}  // namespace sluice::plan
