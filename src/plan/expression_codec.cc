#include "plan/expression_codec.h"

#include <arrow/api.h>
#include <arrow/compute/api.h>

#include "plan/cbor_fields.h"
#include "plan/library_functions.h"
#include "storage/ipc_stream.h"

namespace sluice::plan {

namespace {

namespace cp = arrow::compute;
using json = nlohmann::json;

// A one-row (literal) or one-column (IN list) array as IPC stream bytes, validated on reading.
arrow::Result<json> ArrayBytes(const std::shared_ptr<arrow::Array>& array) {
  auto schema = arrow::schema({arrow::field("v", array->type())});
  ARROW_ASSIGN_OR_RAISE(auto buffer,
                        storage::WriteIpcStream(
                            schema, {arrow::RecordBatch::Make(schema, array->length(), {array})}));
  return json::binary(std::vector<uint8_t>(buffer->data(), buffer->data() + buffer->size()));
}

arrow::Result<std::shared_ptr<arrow::Array>> ArrayFrom(const json& node, const char* key) {
  ARROW_ASSIGN_OR_RAISE(auto buffer, Bytes(node, key));
  auto stream = storage::ReadIpcStream(buffer, std::string("plan: field '") + key + "'");
  if (!stream.ok()) return stream.status();
  if (stream->schema->num_fields() != 1 || stream->batches.size() != 1) {
    return arrow::Status::Invalid("plan: field '", key, "' is not one column in one batch");
  }
  return stream->batches[0]->column(0);
}

arrow::Result<json> EncodeOptions(const cp::FunctionOptions& options) {
  const std::string type = options.type_name();
  if (type == "CastOptions") {
    const auto& o = static_cast<const cp::CastOptions&>(options);
    ARROW_ASSIGN_OR_RAISE(
        json to, SchemaBytes(arrow::schema({arrow::field("t", o.to_type.GetSharedPtr())})));
    json cast{{"kind", "cast"}, {"to", to}, {"safe", !o.allow_int_overflow}};
    // A checked cast that rounds an integer to the nearest double (SQL's comparison of a number
    // with a double) says so; without the key, a checked cast refuses to round.
    if (!o.allow_int_overflow && o.allow_float_truncate) cast["float_truncate"] = true;
    return cast;
  }
  if (type == "MatchSubstringOptions") {
    const auto& o = static_cast<const cp::MatchSubstringOptions&>(options);
    return json{
        {"kind", "match_substring"}, {"pattern", o.pattern}, {"ignore_case", o.ignore_case}};
  }
  if (type == "SetLookupOptions") {
    const auto& o = static_cast<const cp::SetLookupOptions&>(options);
    if (!o.value_set.is_array()) return arrow::Status::Invalid("internal: IN set not an array");
    ARROW_ASSIGN_OR_RAISE(json values, ArrayBytes(o.value_set.make_array()));
    return json{{"kind", "set_lookup"},
                {"values", values},
                {"null_matching", static_cast<int>(o.null_matching_behavior)}};
  }
  if (type == "MakeStructOptions") {
    const auto& o = static_cast<const cp::MakeStructOptions&>(options);
    return json{{"kind", "make_struct"}, {"names", o.field_names}};
  }
  if (type == "SliceOptions") {
    const auto& o = static_cast<const cp::SliceOptions&>(options);
    return json{{"kind", "slice"}, {"start", o.start}, {"stop", o.stop}, {"step", o.step}};
  }
  if (type == "RoundOptions") {
    const auto& o = static_cast<const cp::RoundOptions&>(options);
    return json{
        {"kind", "round"}, {"ndigits", o.ndigits}, {"mode", static_cast<int>(o.round_mode)}};
  }
  if (type == "JoinOptions") {
    const auto& o = static_cast<const cp::JoinOptions&>(options);
    return json{{"kind", "join"},
                {"null_handling", static_cast<int>(o.null_handling)},
                {"null_replacement", o.null_replacement}};
  }
  if (type == "SplitPatternOptions") {
    const auto& o = static_cast<const cp::SplitPatternOptions&>(options);
    return json{{"kind", "split_pattern"}, {"pattern", o.pattern}, {"max_splits", o.max_splits}};
  }
  if (type == "TrimOptions") {
    const auto& o = static_cast<const cp::TrimOptions&>(options);
    return json{{"kind", "trim"}, {"characters", o.characters}};
  }
  if (type == "ReplaceSubstringOptions") {
    const auto& o = static_cast<const cp::ReplaceSubstringOptions&>(options);
    return json{{"kind", "replace_substring"},
                {"pattern", o.pattern},
                {"replacement", o.replacement},
                {"max_replacements", o.max_replacements}};
  }
  if (type == "PadOptions") {
    const auto& o = static_cast<const cp::PadOptions&>(options);
    return json{{"kind", "pad"}, {"width", o.width}, {"padding", o.padding}};
  }
  if (type == "ElementWiseAggregateOptions") {
    const auto& o = static_cast<const cp::ElementWiseAggregateOptions&>(options);
    return json{{"kind", "element_wise"}, {"skip_nulls", o.skip_nulls}};
  }
  if (type == "DayOfWeekOptions") {
    const auto& o = static_cast<const cp::DayOfWeekOptions&>(options);
    return json{{"kind", "day_of_week"},
                {"count_from_zero", o.count_from_zero},
                {"week_start", o.week_start}};
  }
  if (type == "RoundTemporalOptions") {
    const auto& o = static_cast<const cp::RoundTemporalOptions&>(options);
    return json{{"kind", "round_temporal"},
                {"multiple", o.multiple},
                {"unit", static_cast<int>(o.unit)},
                {"week_starts_monday", o.week_starts_monday}};
  }
  return arrow::Status::Invalid("internal: plans cannot carry ", type);
}

arrow::Result<std::shared_ptr<cp::FunctionOptions>> DecodeOptions(const json& v) {
  ARROW_ASSIGN_OR_RAISE(std::string kind, Text(v, "kind"));
  if (kind == "cast") {
    ARROW_ASSIGN_OR_RAISE(const json* to, Field(v, "to"));
    ARROW_ASSIGN_OR_RAISE(auto schema, SchemaFrom(*to));
    if (schema == nullptr || schema->num_fields() != 1) {
      return arrow::Status::Invalid("plan: a cast needs one target type");
    }
    ARROW_ASSIGN_OR_RAISE(bool safe, Bool(v, "safe"));
    auto type = schema->field(0)->type();
    auto options = std::make_shared<cp::CastOptions>(safe ? cp::CastOptions::Safe(type)
                                                          : cp::CastOptions::Unsafe(type));
    if (safe && v.contains("float_truncate")) {
      ARROW_ASSIGN_OR_RAISE(options->allow_float_truncate, Bool(v, "float_truncate"));
    }
    return options;
  }
  if (kind == "match_substring") {
    ARROW_ASSIGN_OR_RAISE(std::string pattern, Text(v, "pattern"));
    ARROW_ASSIGN_OR_RAISE(bool ignore_case, Bool(v, "ignore_case"));
    return std::make_shared<cp::MatchSubstringOptions>(pattern, ignore_case);
  }
  if (kind == "set_lookup") {
    ARROW_ASSIGN_OR_RAISE(auto values, ArrayFrom(v, "values"));
    ARROW_ASSIGN_OR_RAISE(int64_t null_matching, Int(v, "null_matching"));
    if (null_matching < cp::SetLookupOptions::MATCH ||
        null_matching > cp::SetLookupOptions::INCONCLUSIVE) {
      return arrow::Status::Invalid("plan: unknown null matching ", null_matching);
    }
    return std::make_shared<cp::SetLookupOptions>(
        values, static_cast<cp::SetLookupOptions::NullMatchingBehavior>(null_matching));
  }
  if (kind == "make_struct") {
    ARROW_ASSIGN_OR_RAISE(auto names, TextList(v, "names"));
    return std::make_shared<cp::MakeStructOptions>(names);
  }
  if (kind == "slice") {
    ARROW_ASSIGN_OR_RAISE(int64_t start, Int(v, "start"));
    ARROW_ASSIGN_OR_RAISE(int64_t stop, Int(v, "stop"));
    ARROW_ASSIGN_OR_RAISE(int64_t step, Int(v, "step"));
    if (step == 0) return arrow::Status::Invalid("plan: a slice step of 0");
    return std::make_shared<cp::SliceOptions>(start, stop, step);
  }
  if (kind == "round") {
    ARROW_ASSIGN_OR_RAISE(int64_t ndigits, Int(v, "ndigits"));
    ARROW_ASSIGN_OR_RAISE(int64_t mode, Int(v, "mode"));
    if (mode < static_cast<int>(cp::RoundMode::DOWN) ||
        mode > static_cast<int>(cp::RoundMode::HALF_TO_ODD) || ndigits < -38 || ndigits > 38) {
      return arrow::Status::Invalid("plan: bad rounding options");
    }
    return std::make_shared<cp::RoundOptions>(ndigits, static_cast<cp::RoundMode>(mode));
  }
  if (kind == "join") {
    ARROW_ASSIGN_OR_RAISE(int64_t handling, Int(v, "null_handling"));
    ARROW_ASSIGN_OR_RAISE(std::string replacement, Text(v, "null_replacement"));
    if (handling < cp::JoinOptions::EMIT_NULL || handling > cp::JoinOptions::REPLACE) {
      return arrow::Status::Invalid("plan: bad join null handling ", handling);
    }
    return std::make_shared<cp::JoinOptions>(
        static_cast<cp::JoinOptions::NullHandlingBehavior>(handling), replacement);
  }
  if (kind == "split_pattern") {
    ARROW_ASSIGN_OR_RAISE(std::string pattern, Text(v, "pattern"));
    ARROW_ASSIGN_OR_RAISE(int64_t max_splits, Int(v, "max_splits"));
    if (pattern.empty()) return arrow::Status::Invalid("plan: an empty split pattern");
    return std::make_shared<cp::SplitPatternOptions>(pattern, max_splits);
  }
  if (kind == "trim") {
    ARROW_ASSIGN_OR_RAISE(std::string characters, Text(v, "characters"));
    return std::make_shared<cp::TrimOptions>(characters);
  }
  if (kind == "replace_substring") {
    ARROW_ASSIGN_OR_RAISE(std::string pattern, Text(v, "pattern"));
    ARROW_ASSIGN_OR_RAISE(std::string replacement, Text(v, "replacement"));
    ARROW_ASSIGN_OR_RAISE(int64_t max_replacements, Int(v, "max_replacements"));
    return std::make_shared<cp::ReplaceSubstringOptions>(pattern, replacement, max_replacements);
  }
  if (kind == "pad") {
    ARROW_ASSIGN_OR_RAISE(int64_t width, Int(v, "width"));
    ARROW_ASSIGN_OR_RAISE(std::string padding, Text(v, "padding"));
    if (width < 0 || width > (int64_t{1} << 24)) {
      return arrow::Status::Invalid("plan: pad width ", width, " out of range");
    }
    return std::make_shared<cp::PadOptions>(width, padding);
  }
  if (kind == "element_wise") {
    ARROW_ASSIGN_OR_RAISE(bool skip_nulls, Bool(v, "skip_nulls"));
    return std::make_shared<cp::ElementWiseAggregateOptions>(skip_nulls);
  }
  if (kind == "day_of_week") {
    ARROW_ASSIGN_OR_RAISE(bool count_from_zero, Bool(v, "count_from_zero"));
    ARROW_ASSIGN_OR_RAISE(int64_t week_start, Int(v, "week_start"));
    if (week_start < 1 || week_start > 7) return arrow::Status::Invalid("plan: bad week start");
    return std::make_shared<cp::DayOfWeekOptions>(count_from_zero,
                                                  static_cast<uint32_t>(week_start));
  }
  if (kind == "round_temporal") {
    ARROW_ASSIGN_OR_RAISE(int64_t multiple, Int(v, "multiple"));
    ARROW_ASSIGN_OR_RAISE(int64_t unit, Int(v, "unit"));
    ARROW_ASSIGN_OR_RAISE(bool monday, Bool(v, "week_starts_monday"));
    if (multiple < 1 || multiple > (int64_t{1} << 30) ||
        unit < static_cast<int>(cp::CalendarUnit::NANOSECOND) ||
        unit > static_cast<int>(cp::CalendarUnit::YEAR)) {
      return arrow::Status::Invalid("plan: bad temporal rounding options");
    }
    return std::make_shared<cp::RoundTemporalOptions>(static_cast<int>(multiple),
                                                      static_cast<cp::CalendarUnit>(unit), monday);
  }
  return arrow::Status::Invalid("plan: unknown function options '", kind, "'");
}

}  // namespace

arrow::Result<json> EncodeExpression(const cp::Expression& e) {
  if (const auto* ref = e.field_ref()) {
    if (ref->name() == nullptr) return arrow::Status::Invalid("internal: a field ref by index");
    return json{{"field", *ref->name()}};
  }
  if (const auto* literal = e.literal()) {
    if (!literal->is_scalar()) return arrow::Status::Invalid("internal: an array literal");
    ARROW_ASSIGN_OR_RAISE(auto array, arrow::MakeArrayFromScalar(*literal->scalar(), 1));
    ARROW_ASSIGN_OR_RAISE(json bytes, ArrayBytes(array));
    return json{{"literal", bytes}};
  }
  const auto* call = e.call();
  json args = json::array();
  for (const auto& a : call->arguments) {
    ARROW_ASSIGN_OR_RAISE(json arg, EncodeExpression(a));
    args.push_back(std::move(arg));
  }
  json out = {{"call", call->function_name}, {"args", std::move(args)}};
  // A bound call carries its function's default options (is_null's NullOptions) even where the
  // plan gave none: those need not travel, since binding on the worker adds them again.
  auto function = cp::GetFunctionRegistry()->GetFunction(call->function_name);
  const bool defaults = call->options != nullptr && function.ok() &&
                        (*function)->default_options() != nullptr &&
                        call->options->Equals(*(*function)->default_options());
  if (call->options != nullptr && !defaults) {
    ARROW_ASSIGN_OR_RAISE(out["options"], EncodeOptions(*call->options));
  }
  return out;
}

arrow::Result<cp::Expression> DecodeExpression(const json& v, int depth) {
  if (depth > kMaxExpressionDepth) {
    return arrow::Status::Invalid("plan: an expression nested deeper than ", kMaxExpressionDepth);
  }
  if (v.is_object() && v.contains("field")) {
    ARROW_ASSIGN_OR_RAISE(std::string name, Text(v, "field"));
    return cp::field_ref(name);
  }
  if (v.is_object() && v.contains("literal")) {
    ARROW_ASSIGN_OR_RAISE(auto array, ArrayFrom(v, "literal"));
    if (array->length() != 1) return arrow::Status::Invalid("plan: a literal is one value");
    ARROW_ASSIGN_OR_RAISE(auto scalar, array->GetScalar(0));
    return cp::literal(std::move(scalar));
  }
  ARROW_ASSIGN_OR_RAISE(std::string function, Text(v, "call"));
  ARROW_ASSIGN_OR_RAISE(const json* args, Field(v, "args"));
  if (!args->is_array()) return arrow::Status::Invalid("plan: call arguments are not a list");
  std::vector<cp::Expression> arguments;
  for (const auto& a : *args) {
    ARROW_ASSIGN_OR_RAISE(auto arg, DecodeExpression(a, depth + 1));
    arguments.push_back(std::move(arg));
  }
  std::shared_ptr<cp::FunctionOptions> options;
  if (v.contains("options")) {
    ARROW_ASSIGN_OR_RAISE(options, DecodeOptions(v.at("options")));
  }
  if (!cp::GetFunctionRegistry()->GetFunction(function).ok()) {
    if (auto ref = ParseLibraryFunctionName(function)) {
      return arrow::Status::Invalid("plan: ", MissingLibraryFunctionMessage(*ref));
    }
    return arrow::Status::Invalid("plan: unknown function '", function, "'");
  }
  return cp::call(function, std::move(arguments), std::move(options));
}

}  // namespace sluice::plan
