#include "cli/csv_text.h"

#include <arrow/api.h>
#include <arrow/compute/cast.h>

#include <charconv>
#include <cstring>
#include <limits>
#include <memory>
#include <string_view>
#include <vector>

namespace sluice::cli {

namespace {

// `text` in quotes, a quote in it doubled.
void AppendQuoted(std::string_view text, std::string* out) {
  out->push_back('"');
  for (const char c : text) {
    if (c == '"') out->push_back('"');
    out->push_back(c);
  }
  out->push_back('"');
}

bool IsText(const arrow::DataType& type) {
  return type.id() == arrow::Type::STRING || type.id() == arrow::Type::LARGE_STRING ||
         type.id() == arrow::Type::STRING_VIEW;
}

// One column's cells as text: a decimal128 column's values (written as PlainDecimal writes them),
// or text, quoted where the column holds strings.
struct TextColumn {
  std::shared_ptr<arrow::Array> text;  // utf8, large_utf8 or utf8_view; null for decimals
  bool quoted = false;
  const arrow::Decimal128Array* decimals = nullptr;
  int32_t scale = 0;
};

arrow::Result<TextColumn> TextOf(const std::shared_ptr<arrow::Array>& column) {
  const arrow::DataType& type = *column->type();
  if (IsText(type)) return TextColumn{column, true};
  if (type.id() == arrow::Type::DECIMAL128) {
    TextColumn out;
    out.decimals = static_cast<const arrow::Decimal128Array*>(column.get());
    out.scale = static_cast<const arrow::Decimal128Type&>(type).scale();
    return out;
  }
  const bool dictionary_text =
      type.id() == arrow::Type::DICTIONARY &&
      IsText(*static_cast<const arrow::DictionaryType&>(type).value_type());
  ARROW_ASSIGN_OR_RAISE(auto cast, arrow::compute::Cast(*column, arrow::utf8()));
  return TextColumn{std::move(cast), dictionary_text};
}

// Appends PlainDecimal(value, scale). Most values fit in 64 bits, whose digits need no 128-bit
// division.
void AppendDecimal(const uint8_t* bytes, int32_t scale, std::string* out) {
  int64_t low, high;
  std::memcpy(&low, bytes, 8);
  std::memcpy(&high, bytes + 8, 8);
  if (high != (low >> 63) || low == std::numeric_limits<int64_t>::min()) {
    out->append(PlainDecimal(arrow::Decimal128(high, static_cast<uint64_t>(low)), scale));
    return;
  }
  if (low < 0) out->push_back('-');
  char digits[24];
  const auto end = std::to_chars(digits, digits + sizeof(digits), low < 0 ? -low : low).ptr;
  const auto count = static_cast<int32_t>(end - digits);
  if (scale <= 0) {
    out->append(digits, end);
  } else if (count > scale) {
    out->append(digits, static_cast<size_t>(count - scale));
    out->push_back('.');
    out->append(end - scale, end);
  } else {
    out->append("0.");
    out->append(static_cast<size_t>(scale - count), '0');
    out->append(digits, end);
  }
}

std::string_view View(const arrow::Array& text, int64_t row) {
  switch (text.type_id()) {
    case arrow::Type::LARGE_STRING:
      return static_cast<const arrow::LargeStringArray&>(text).GetView(row);
    case arrow::Type::STRING_VIEW:
      return static_cast<const arrow::StringViewArray&>(text).GetView(row);
    default:
      return static_cast<const arrow::StringArray&>(text).GetView(row);
  }
}

}  // namespace

std::string PlainDecimal(arrow::Decimal128 value, int32_t scale) {
  const bool negative = value.IsNegative();
  if (negative) value.Negate();
  std::string digits = value.ToIntegerString();
  if (scale > 0) {
    const size_t places = static_cast<size_t>(scale);
    if (digits.size() <= places) digits.insert(0, places + 1 - digits.size(), '0');
    digits.insert(digits.size() - places, ".");
  }
  return negative ? "-" + digits : digits;
}

std::string CsvHeader(const arrow::Schema& schema) {
  std::string out;
  for (int c = 0; c < schema.num_fields(); ++c) {
    if (c > 0) out.push_back(',');
    AppendQuoted(schema.field(c)->name(), &out);
  }
  out.push_back('\n');
  return out;
}

arrow::Status AppendCsvRows(const arrow::RecordBatch& batch, std::string* out) {
  std::vector<TextColumn> columns;
  int64_t bytes = 0;
  for (int c = 0; c < batch.num_columns(); ++c) {
    ARROW_ASSIGN_OR_RAISE(auto column, TextOf(batch.column(c)));
    if (column.text != nullptr) {
      const auto& data = *column.text->data();
      if (data.buffers.size() > 2 && data.buffers[2] != nullptr) bytes += data.buffers[2]->size();
    } else {
      bytes += batch.num_rows() * 8;
    }
    columns.push_back(std::move(column));
  }
  out->reserve(out->size() +
               static_cast<size_t>(bytes + batch.num_rows() * (batch.num_columns() * 3 + 1)));
  for (int64_t r = 0; r < batch.num_rows(); ++r) {
    for (size_t c = 0; c < columns.size(); ++c) {
      if (c > 0) out->push_back(',');
      const TextColumn& column = columns[c];
      if (column.decimals != nullptr) {
        if (column.decimals->IsValid(r)) {
          AppendDecimal(column.decimals->GetValue(r), column.scale, out);
        }
        continue;
      }
      const arrow::Array& text = *column.text;
      if (text.IsNull(r)) continue;
      if (column.quoted) {
        AppendQuoted(View(text, r), out);
      } else {
        out->append(View(text, r));
      }
    }
    out->push_back('\n');
  }
  return arrow::Status::OK();
}

}  // namespace sluice::cli
