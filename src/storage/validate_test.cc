// The fast checks must give Arrow's answers exactly: they are compared with Arrow's own
// validator on text built to hit every kind of UTF-8 error at every place in a 32-byte block,
// and with RecordBatch::ValidateFull on batches whose string values are valid, invalid, or
// invalid only under null slots.
#include "storage/validate.h"

#include <arrow/api.h>
#include <arrow/util/utf8.h>
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

namespace sluice::storage {
namespace {

bool ArrowSays(const std::string& s) {
  arrow::util::InitializeUTF8();
  return arrow::util::ValidateUTF8(reinterpret_cast<const uint8_t*>(s.data()),
                                   static_cast<int64_t>(s.size()));
}

// Valid characters of every length, and the byte sequences around each error class.
const std::vector<std::string>& Pieces() {
  static const std::vector<std::string> pieces = {
      "a",
      "Z",
      " ",
      std::string(1, '\0'),
      "\x7f",
      "\xc2\x80",
      "\xdf\xbf",
      "\xc3\xa9",  // 2 bytes
      "\xe0\xa0\x80",
      "\xef\xbf\xbf",
      "\xe6\x97\xa5",
      "\xed\x9f\xbf",  // 3 bytes
      "\xf0\x90\x80\x80",
      "\xf4\x8f\xbf\xbf",
      "\xf0\x9f\x9a\x80",  // 4 bytes
      "\x80",
      "\xbf",  // lone continuation
      "\xc0\x80",
      "\xc1\xbf",  // overlong 2
      "\xe0\x80\x80",
      "\xe0\x9f\xbf",  // overlong 3
      "\xf0\x80\x80\x80",
      "\xf0\x8f\xbf\xbf",  // overlong 4
      "\xed\xa0\x80",
      "\xed\xbf\xbf",  // surrogates
      "\xf4\x90\x80\x80",
      "\xf5\x80\x80\x80",
      "\xff",
      "\xfe",  // too large
      "\xc3",
      "\xe6\x97",
      "\xf0\x9f\x9a",  // cut short
      "\xe6\x97\xa5\xa5",
      "\xc3\xa9\xa9",  // too long
  };
  return pieces;
}

TEST(Utf8, AgreesWithArrowOnEveryErrorAtEveryOffset) {
  const auto& pieces = Pieces();
  for (size_t lead = 0; lead < 70; ++lead) {
    for (const auto& bad : pieces) {
      for (const auto& after : {std::string(), std::string("ok"), std::string(40, 'x'),
                                std::string("\xe6\x97\xa5\xc3\xa9")}) {
        // Plain ASCII before the piece, or a three-byte character first.
        std::string s = lead >= 3 && lead % 2 == 1
                            ? std::string("\xe6\x97\xa5") + std::string(lead - 3, 'c')
                            : std::string(lead, 'a');
        s += bad;
        s += after;
        EXPECT_EQ(IsValidUtf8(s), ArrowSays(s))
            << "lead " << lead << " piece of " << bad.size() << " bytes";
      }
    }
  }
}

TEST(Utf8, AgreesWithArrowOnRandomText) {
  std::mt19937_64 rng(42);
  const auto& pieces = Pieces();
  for (int round = 0; round < 20000; ++round) {
    std::string s;
    // Some texts long enough to pass the validator's periodic error checks.
    const int n = static_cast<int>(round % 10 == 0 ? rng() % 4000 : rng() % 120);
    const bool corrupt = rng() % 4 == 0;
    for (int i = 0; i < n; ++i) {
      // Mostly valid characters, so that errors are rare and sit anywhere.
      const size_t k = corrupt ? rng() % pieces.size() : rng() % 15;
      s += pieces[k];
    }
    if (rng() % 8 == 0 && !s.empty()) s[rng() % s.size()] = static_cast<char>(rng());
    ASSERT_EQ(IsValidUtf8(s), ArrowSays(s)) << "round " << round;
  }
  for (int round = 0; round < 5000; ++round) {
    std::string s(rng() % 100, '\0');
    for (auto& c : s) c = static_cast<char>(rng());
    ASSERT_EQ(IsValidUtf8(s), ArrowSays(s)) << "random bytes, round " << round;
  }
}

TEST(Utf8, LongTextWithOneErrorFarIn) {
  std::string s;
  while (s.size() < 100000) s += "日本語 naïve 🚀 mixed text ";
  EXPECT_TRUE(IsValidUtf8(s));
  for (size_t at : {size_t{5000}, size_t{4095}, size_t{99999}}) {
    std::string bad = s;
    bad[at] = '\xff';
    EXPECT_FALSE(IsValidUtf8(bad)) << at;
  }
}

std::shared_ptr<arrow::Array> Strings(const std::vector<std::string>& values,
                                      const std::vector<bool>& valid) {
  arrow::BinaryBuilder b;
  for (size_t i = 0; i < values.size(); ++i) {
    EXPECT_TRUE((valid[i] ? b.Append(values[i]) : b.AppendNull()).ok());
  }
  auto binary = *b.Finish();
  auto data = binary->data()->Copy();
  data->type = arrow::utf8();
  return arrow::MakeArray(data);
}

std::shared_ptr<arrow::Array> StringsOver(const std::string& bytes,
                                          const std::vector<int32_t>& offsets,
                                          const std::vector<bool>& valid) {
  const int64_t n = static_cast<int64_t>(offsets.size()) - 1;
  arrow::TypedBufferBuilder<bool> bits;
  for (bool v : valid) EXPECT_TRUE(bits.Append(v).ok());
  auto validity = *bits.Finish();
  int64_t nulls = 0;
  for (bool v : valid) nulls += v ? 0 : 1;
  return arrow::MakeArray(arrow::ArrayData::Make(
      arrow::utf8(), n,
      {validity, arrow::Buffer::FromVector(offsets), arrow::Buffer::FromString(bytes)}, nulls));
}

arrow::Status Both(const std::shared_ptr<arrow::Array>& column, arrow::Status* arrow_says) {
  auto schema = arrow::schema({arrow::field("s", column->type())});
  auto batch = arrow::RecordBatch::Make(schema, column->length(), {column});
  *arrow_says = batch->ValidateFull();
  return ValidateFull(*batch);
}

TEST(ValidateFull, SameAnswerAndMessageAsArrow) {
  std::vector<std::shared_ptr<arrow::Array>> columns = {
      Strings({"a", "日本", "", "🚀x"}, {true, true, true, true}),
      Strings({"a", "\xff", "c"}, {true, true, true}),
      StringsOver("a\xff"
                  "c",
                  {0, 1, 2, 3}, {true, false, true}),  // bad only under a null
      // One character split between two values: each value is invalid by itself.
      StringsOver("\xe6\x97\xa5", {0, 1, 3}, {true, true}),
      StringsOver("\xe6\x97\xa5", {0, 1, 3}, {false, true}),
      StringsOver("\xe6\x97\xa5", {0, 1, 1, 3}, {false, true, false}),  // empty, mid-character
      StringsOver("ab", {0, 1, 5}, {true, true}),                       // offsets past the end
      StringsOver("ab", {0, 2, 1}, {true, true}),                       // offsets going back
  };
  // Nested: strings inside a struct and a list, and a slice.
  auto inner = Strings({"x", "\xc3\xa9", "\xc3"}, {true, true, true});
  columns.push_back(*arrow::StructArray::Make({inner}, {arrow::field("t", arrow::utf8())}));
  arrow::Int32Builder offsets;
  EXPECT_TRUE(offsets.AppendValues({0, 2, 3}).ok());
  columns.push_back(*arrow::ListArray::FromArrays(**offsets.Finish(), *inner));
  columns.push_back(Strings({"\xff", "fine", "ok"}, {true, true, true})->Slice(1));
  for (size_t i = 0; i < columns.size(); ++i) {
    arrow::Status arrow_says;
    arrow::Status ours = Both(columns[i], &arrow_says);
    EXPECT_EQ(ours.ok(), arrow_says.ok()) << "column " << i << ": " << arrow_says.ToString();
    EXPECT_EQ(ours.ToString(), arrow_says.ToString()) << "column " << i;
  }
}

}  // namespace
}  // namespace sluice::storage
