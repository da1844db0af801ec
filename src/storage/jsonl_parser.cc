#include "storage/jsonl_parser.h"

#include <arrow/api.h>
#include <arrow/json/api.h>

#include <nlohmann/json.hpp>
#include <optional>
#include <string_view>
#include <vector>

#include "storage/jsonl_fast_parser.h"
#include "storage/validate.h"

namespace sluice::storage {

namespace {

// Arrow's JSON reader refuses a null struct whose children are non-nullable (it sees the
// children as null), which valid data may hold. So lines are read against a copy of the schema
// whose every nested field is nullable, non-nullable fields are checked by FindForbiddenNull
// below with the right rule, and the arrays are then given the declared types (same layout).
std::shared_ptr<arrow::DataType> Relaxed(const std::shared_ptr<arrow::DataType>& type);

std::shared_ptr<arrow::Field> RelaxedField(const std::shared_ptr<arrow::Field>& field) {
  return field->WithType(Relaxed(field->type()))->WithNullable(true);
}

std::shared_ptr<arrow::DataType> Relaxed(const std::shared_ptr<arrow::DataType>& type) {
  switch (type->id()) {
    case arrow::Type::STRUCT: {
      arrow::FieldVector fields;
      for (const auto& f : type->fields()) fields.push_back(RelaxedField(f));
      return arrow::struct_(fields);
    }
    case arrow::Type::LIST:
      return arrow::list(RelaxedField(type->field(0)));
    case arrow::Type::LARGE_LIST:
      return arrow::large_list(RelaxedField(type->field(0)));
    case arrow::Type::FIXED_SIZE_LIST:
      return arrow::fixed_size_list(
          RelaxedField(type->field(0)),
          static_cast<const arrow::FixedSizeListType&>(*type).list_size());
    case arrow::Type::MAP: {
      const auto& map = static_cast<const arrow::MapType&>(*type);
      // Map keys can never be null in Arrow; only the item is relaxed.
      return std::make_shared<arrow::MapType>(map.key_field(), RelaxedField(map.item_field()),
                                              map.keys_sorted());
    }
    default:
      return type;
  }
}

// `data` (read against the relaxed type) with the declared `type` at every level.
std::shared_ptr<arrow::ArrayData> Retyped(const std::shared_ptr<arrow::ArrayData>& data,
                                          const std::shared_ptr<arrow::DataType>& type) {
  auto out = std::make_shared<arrow::ArrayData>(*data);
  out->type = type;
  if (type->num_fields() == static_cast<int>(data->child_data.size())) {
    for (size_t i = 0; i < data->child_data.size(); ++i) {
      out->child_data[i] = Retyped(data->child_data[i], type->field(static_cast<int>(i))->type());
    }
  }
  return out;
}

// The path of the first non-nullable field that holds a null where its parents are valid, or
// nothing. `array` has the relaxed type and `field` the declared one. `live` marks the rows of
// `array` reachable through valid parents (null: all).
std::optional<std::string> FindForbiddenNull(const arrow::Array& array, const arrow::Field& field,
                                             const std::vector<bool>* live,
                                             const std::string& path) {
  const int64_t n = array.length();
  auto is_live = [&](int64_t r) { return live == nullptr || (*live)[static_cast<size_t>(r)]; };
  if (!field.nullable() && array.null_count() > 0) {
    for (int64_t r = 0; r < n; ++r) {
      if (is_live(r) && array.IsNull(r)) return path;
    }
  }
  if (array.type()->num_fields() == 0) return std::nullopt;
  // The rows of this array that children may be reached from.
  std::vector<bool> own;
  const std::vector<bool>* own_live = live;
  if (array.null_count() > 0) {
    own.resize(static_cast<size_t>(n));
    for (int64_t r = 0; r < n; ++r) own[static_cast<size_t>(r)] = is_live(r) && array.IsValid(r);
    own_live = &own;
  }
  switch (array.type_id()) {
    case arrow::Type::STRUCT: {
      const auto& st = static_cast<const arrow::StructArray&>(array);
      for (int i = 0; i < st.num_fields(); ++i) {
        const auto& child_field = *field.type()->field(i);  // declared, not the relaxed one
        if (auto bad = FindForbiddenNull(*st.field(i), child_field, own_live,
                                         path + "." + child_field.name())) {
          return bad;
        }
      }
      return std::nullopt;
    }
    case arrow::Type::LIST:
    case arrow::Type::LARGE_LIST:
    case arrow::Type::MAP:
    case arrow::Type::FIXED_SIZE_LIST: {
      std::shared_ptr<arrow::Array> values;
      std::vector<bool> value_live;
      auto mark = [&](int64_t r, int64_t begin, int64_t end) {
        if (own_live != nullptr && !(*own_live)[static_cast<size_t>(r)]) return;
        for (int64_t v = begin; v < end; ++v) value_live[static_cast<size_t>(v)] = true;
      };
      if (array.type_id() == arrow::Type::LARGE_LIST) {
        const auto& list = static_cast<const arrow::LargeListArray&>(array);
        values = list.values();
        value_live.assign(static_cast<size_t>(values->length()), false);
        for (int64_t r = 0; r < n; ++r) mark(r, list.value_offset(r), list.value_offset(r + 1));
      } else if (array.type_id() == arrow::Type::FIXED_SIZE_LIST) {
        const auto& list = static_cast<const arrow::FixedSizeListArray&>(array);
        values = list.values();
        value_live.assign(static_cast<size_t>(values->length()), false);
        for (int64_t r = 0; r < n; ++r) mark(r, list.value_offset(r), list.value_offset(r + 1));
      } else {
        const auto& list = static_cast<const arrow::ListArray&>(array);  // MapArray is one
        values = list.values();
        value_live.assign(static_cast<size_t>(values->length()), false);
        for (int64_t r = 0; r < n; ++r) mark(r, list.value_offset(r), list.value_offset(r + 1));
      }
      return FindForbiddenNull(*values, *field.type()->field(0), &value_live, path + "[]");
    }
    default:
      return std::nullopt;
  }
}

// The path of the first key in `value` that `type` has no field for, or nothing.
std::optional<std::string> FindUnknownField(const nlohmann::json& value,
                                            const arrow::DataType& type, const std::string& path) {
  if (value.is_object() && type.id() == arrow::Type::STRUCT) {
    for (const auto& [key, child] : value.items()) {
      auto field = static_cast<const arrow::StructType&>(type).GetFieldByName(key);
      const std::string child_path = path.empty() ? key : path + "." + key;
      if (field == nullptr) return child_path;
      if (auto bad = FindUnknownField(child, *field->type(), child_path)) return bad;
    }
  } else if (value.is_array() && type.num_fields() == 1 && type.id() != arrow::Type::STRUCT) {
    for (const auto& item : value) {
      if (auto bad = FindUnknownField(item, *type.field(0)->type(), path + "[]")) return bad;
    }
  }
  return std::nullopt;
}

constexpr char kOneObjectPerLine[] = "expected one JSON object per line";

struct Line {
  std::string_view text;
  int64_t number = 0;
};

class Parser {
 public:
  Parser(const arrow::Buffer& bytes, const std::shared_ptr<arrow::Schema>& schema,
         const std::string& object, bool skip_bad)
      : schema_(schema), relaxed_(RelaxedSchema(*schema)), object_(object), skip_bad_(skip_bad) {
    const std::string_view text(reinterpret_cast<const char*>(bytes.data()),
                                static_cast<size_t>(bytes.size()));
    size_t start = 0;
    for (int64_t number = 1; start < text.size(); ++number) {
      size_t end = text.find('\n', start);
      if (end == std::string_view::npos) end = text.size();
      std::string_view line = text.substr(start, end - start);
      start = end + 1;
      if (line.find_first_not_of(" \t\r") == std::string_view::npos) continue;  // blank
      lines_.push_back({line, number});
    }
  }

  arrow::Result<ParsedJsonl> Run() {
    ParsedJsonl out;
    // The first read is the fast path: the whole object at once. Only a bad object is split.
    ARROW_RETURN_NOT_OK(Bisect(0, lines_.size()));
    std::vector<std::shared_ptr<arrow::RecordBatch>> batches;
    for (const auto& b : good_) {
      out.records += b->num_rows();
      arrow::ArrayVector columns;
      for (int i = 0; i < b->num_columns(); ++i) {
        columns.push_back(
            arrow::MakeArray(Retyped(b->column(i)->data(), schema_->field(i)->type())));
      }
      batches.push_back(arrow::RecordBatch::Make(schema_, b->num_rows(), std::move(columns)));
    }
    out.bad_records = bad_;
    if (batches.size() == 1) {
      out.batch = batches[0];
    } else {
      ARROW_ASSIGN_OR_RAISE(auto table, arrow::Table::FromRecordBatches(schema_, batches));
      ARROW_ASSIGN_OR_RAISE(out.batch, table->CombineChunksToBatch());
    }
    return out;
  }

 private:
  static std::shared_ptr<arrow::Schema> RelaxedSchema(const arrow::Schema& schema) {
    arrow::FieldVector fields;
    for (const auto& f : schema.fields()) fields.push_back(RelaxedField(f));
    return arrow::schema(fields);
  }

  // The text from line `begin` to the end of line `end - 1`, blank lines between included.
  std::string_view Span(size_t begin, size_t end) const {
    const char* first = lines_[begin].text.data();
    const char* last = lines_[end - 1].text.data() + lines_[end - 1].text.size();
    return std::string_view(first, static_cast<size_t>(last - first));
  }

  // Lines [begin, end) read as one batch of the relaxed schema, or the first reason they do not
  // form exactly one valid row each.
  arrow::Result<std::shared_ptr<arrow::RecordBatch>> ParseRange(size_t begin, size_t end) const {
    const std::string_view text = Span(begin, end);
    // Arrow's JSON reader lets invalid UTF-8 through into string columns, so it is checked here.
    if (!IsValidUtf8(text)) return arrow::Status::Invalid("not valid UTF-8");
    arrow::json::ParseOptions parse = arrow::json::ParseOptions::Defaults();
    parse.explicit_schema = relaxed_;
    parse.unexpected_field_behavior = arrow::json::UnexpectedFieldBehavior::Error;
    // One block, parsed on this thread. TableReader would start a read-ahead thread per call
    // (one per object) to cut text that is already in memory into blocks.
    auto buffer = std::make_shared<arrow::Buffer>(reinterpret_cast<const uint8_t*>(text.data()),
                                                  static_cast<int64_t>(text.size()));
    ARROW_ASSIGN_OR_RAISE(auto batch, arrow::json::ParseOne(parse, buffer));
    // Two objects on one line read as two rows; a line is one record.
    if (batch->num_rows() != static_cast<int64_t>(end - begin)) {
      return arrow::Status::Invalid(kOneObjectPerLine, ", got ", batch->num_rows(), " objects on ",
                                    end - begin, " lines");
    }
    for (int i = 0; i < schema_->num_fields(); ++i) {
      const auto& field = *schema_->field(i);
      // The declared field, which carries the nullability the relaxed one dropped.
      if (auto path = FindForbiddenNull(*batch->column(i), field, nullptr, field.name())) {
        return arrow::Status::Invalid("field '", *path,
                                      "' is null or missing, but the schema does not allow null");
      }
    }
    return batch;
  }

  // The error for one bad line, with the unknown field named where Arrow does not name it.
  arrow::Status LineError(const Line& line, const arrow::Status& st) const {
    std::string message = st.message();
    if (message.find(kOneObjectPerLine) == std::string::npos && IsValidUtf8(line.text) &&
        !nlohmann::json::accept(line.text)) {
      message = "not valid JSON (" + message + ")";
    } else if (message.find("unexpected field") != std::string::npos) {
      auto doc = nlohmann::json::parse(line.text, nullptr, /*allow_exceptions=*/false);
      if (!doc.is_discarded()) {
        if (auto field = FindUnknownField(doc, *arrow::struct_(schema_->fields()), "")) {
          message = "field '" + *field + "' is not in the schema";
        }
      }
    }
    return arrow::Status::Invalid("object '", object_, "' line ", line.number, ": ", message);
  }

  // Reads lines [begin, end) in halves until every bad line is found; keeps line order.
  arrow::Status Bisect(size_t begin, size_t end) {
    if (begin == end) return arrow::Status::OK();
    auto batch = ParseRange(begin, end);
    if (batch.ok()) {
      good_.push_back(*batch);
      return arrow::Status::OK();
    }
    if (end - begin == 1) {
      if (!skip_bad_) return LineError(lines_[begin], batch.status());
      ++bad_;
      return arrow::Status::OK();
    }
    const size_t mid = begin + (end - begin) / 2;
    ARROW_RETURN_NOT_OK(Bisect(begin, mid));
    return Bisect(mid, end);
  }

  std::shared_ptr<arrow::Schema> schema_;
  std::shared_ptr<arrow::Schema> relaxed_;
  const std::string& object_;
  bool skip_bad_;
  std::vector<Line> lines_;
  std::vector<std::shared_ptr<arrow::RecordBatch>> good_;
  int64_t bad_ = 0;
};

}  // namespace

arrow::Result<ParsedJsonl> ParseJsonl(const arrow::Buffer& bytes,
                                      const std::shared_ptr<arrow::Schema>& schema,
                                      const std::string& object, bool skip_bad) {
  // Good objects take the fast path; it declines anything else, which Arrow's reader then reads
  // and, where a line is bad, names it.
  if (auto batch = TryParseJsonlFast(bytes, schema)) {
    ParsedJsonl out;
    out.records = batch->num_rows();
    out.batch = std::move(batch);
    return out;
  }
  return ParseJsonlWithArrowReader(bytes, schema, object, skip_bad);
}

arrow::Result<ParsedJsonl> ParseJsonlWithArrowReader(const arrow::Buffer& bytes,
                                                     const std::shared_ptr<arrow::Schema>& schema,
                                                     const std::string& object, bool skip_bad) {
  Parser parser(bytes, schema, object, skip_bad);
  return parser.Run();
}

}  // namespace sluice::storage
