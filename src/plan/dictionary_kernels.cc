#include "plan/dictionary_kernels.h"

#include <arrow/api.h>
#include <arrow/array/concatenate.h>
#include <arrow/compute/api.h>
#include <arrow/util/bit_util.h>
#include <arrow/util/bitmap_ops.h>

#include <algorithm>

#include <deque>
#include <mutex>
#include <optional>
#include <string_view>
#include <unordered_map>

#include "plan/common_subexpressions.h"

namespace sluice::plan {

namespace {

namespace cp = arrow::compute;

// One dictionary's answers, held with the dictionary itself: its buffers cannot be freed, so an
// equal buffer address later means the same immutable bytes.
struct MappedDictionary {
  std::shared_ptr<arrow::ArrayData> dictionary;
  // One per value, then the answer for NULL; null where some value fails (a cast of a string
  // that no row may hold), so the expression must run per row, to fail only for a row's value.
  std::shared_ptr<arrow::Array> answers;
};

bool SameBuffers(const arrow::ArrayData& a, const arrow::ArrayData& b) {
  if (a.length != b.length || a.offset != b.offset || a.buffers.size() != b.buffers.size()) {
    return false;
  }
  for (size_t i = 0; i < a.buffers.size(); ++i) {
    const uint8_t* x = a.buffers[i] ? a.buffers[i]->data() : nullptr;
    const uint8_t* y = b.buffers[i] ? b.buffers[i]->data() : nullptr;
    if (x != y) return false;
  }
  return true;
}

// Shared by every copy of one expression's options: the scan hands each row group's dictionary
// to many batches, on several threads.
class DictionaryMapCache {
 public:
  static constexpr size_t kMaxEntries = 8;

  std::optional<MappedDictionary> Find(const arrow::ArrayData& dictionary) {
    std::lock_guard<std::mutex> lock(mutex_);
    for (const auto& e : entries_) {
      if (SameBuffers(*e.dictionary, dictionary)) return e;
    }
    return std::nullopt;
  }
  void Add(std::shared_ptr<arrow::ArrayData> dictionary, std::shared_ptr<arrow::Array> answers) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (entries_.size() == kMaxEntries) entries_.pop_front();
    entries_.push_back({std::move(dictionary), std::move(answers)});
  }

 private:
  std::mutex mutex_;
  std::deque<MappedDictionary> entries_;
};

class DictionaryMapOptions : public cp::FunctionOptions {
 public:
  explicit DictionaryMapOptions(cp::Expression body);
  cp::Expression body;  // over one column, named as in the plan, typed as the dictionary's values
  std::shared_ptr<DictionaryMapCache> cache = std::make_shared<DictionaryMapCache>();
};

class DictionaryMapOptionsType : public cp::FunctionOptionsType {
 public:
  static const DictionaryMapOptionsType* Get() {
    static const DictionaryMapOptionsType instance;
    return &instance;
  }
  const char* type_name() const override { return "DictionaryMapOptions"; }
  std::string Stringify(const cp::FunctionOptions& options) const override {
    return static_cast<const DictionaryMapOptions&>(options).body.ToString();
  }
  bool Compare(const cp::FunctionOptions& a, const cp::FunctionOptions& b) const override {
    return static_cast<const DictionaryMapOptions&>(a).body.Equals(
        static_cast<const DictionaryMapOptions&>(b).body);
  }
  std::unique_ptr<cp::FunctionOptions> Copy(const cp::FunctionOptions& options) const override {
    const auto& from = static_cast<const DictionaryMapOptions&>(options);
    auto copy = std::make_unique<DictionaryMapOptions>(from.body);
    copy->cache = from.cache;
    return copy;
  }
};

DictionaryMapOptions::DictionaryMapOptions(cp::Expression body)
    : cp::FunctionOptions(DictionaryMapOptionsType::Get()), body(std::move(body)) {}

// The options, and the body bound to one dictionary value type.
struct DictionaryMapState : public cp::KernelState {
  const DictionaryMapOptions* options = nullptr;
  cp::Expression bound;
};

arrow::Result<cp::Expression> BindBody(const DictionaryMapOptions& options,
                                       const arrow::DataType& input) {
  const auto refs = cp::FieldsInExpression(options.body);
  if (refs.empty() || refs[0].name() == nullptr || input.id() != arrow::Type::DICTIONARY) {
    return arrow::Status::Invalid("internal: ", kDictionaryMapFunction, " over ", input.ToString(),
                                  " of ", options.body.ToString());
  }
  const auto& values = static_cast<const arrow::DictionaryType&>(input).value_type();
  return options.body.Bind(arrow::Schema({arrow::field(*refs[0].name(), values)}));
}

arrow::Result<std::unique_ptr<cp::KernelState>> InitMap(cp::KernelContext*,
                                                        const cp::KernelInitArgs& args) {
  if (args.options == nullptr || args.inputs.size() != 1) {
    return arrow::Status::Invalid("internal: ", kDictionaryMapFunction, " needs its options");
  }
  auto state = std::make_unique<DictionaryMapState>();
  state->options = static_cast<const DictionaryMapOptions*>(args.options);
  ARROW_ASSIGN_OR_RAISE(state->bound, BindBody(*state->options, *args.inputs[0]));
  return state;
}

arrow::Result<arrow::TypeHolder> ResolveMap(cp::KernelContext* ctx,
                                            const std::vector<arrow::TypeHolder>&) {
  return static_cast<const DictionaryMapState*>(ctx->state())->bound.type();
}

// The body's value on each dictionary value, then on NULL (so IS NULL and COALESCE are right).
arrow::Result<std::shared_ptr<arrow::Array>> Answers(const DictionaryMapState& state,
                                                     const std::shared_ptr<arrow::ArrayData>& dict,
                                                     cp::ExecContext* ctx) {
  auto values = arrow::MakeArray(dict);
  ARROW_ASSIGN_OR_RAISE(auto null, arrow::MakeArrayOfNull(values->type(), 1));
  ARROW_ASSIGN_OR_RAISE(auto with_null, arrow::Concatenate({values, null}));
  const int64_t n = with_null->length();
  ARROW_ASSIGN_OR_RAISE(arrow::Datum out, cp::ExecuteScalarExpression(
                                              state.bound, cp::ExecBatch({with_null}, n), ctx));
  if (out.is_scalar()) return arrow::MakeArrayFromScalar(*out.scalar(), n);
  return out.make_array();
}

// answers[code] per row of `codes` (int32; a NULL code reads answers[null_code]), as a boolean
// array; a code outside the dictionary is an error.
arrow::Result<std::shared_ptr<arrow::ArrayData>> TakeBits(const arrow::ArraySpan& codes,
                                                          int64_t null_code,
                                                          const arrow::Array& answers,
                                                          arrow::MemoryPool* pool) {
  const auto& bools = static_cast<const arrow::BooleanArray&>(answers);
  std::vector<uint8_t> value(bools.length()), valid(bools.length());
  for (int64_t i = 0; i < bools.length(); ++i) {
    valid[i] = bools.IsValid(i);
    value[i] = valid[i] && bools.Value(i);
  }
  const int64_t n = codes.length;
  const int32_t* code = codes.GetValues<int32_t>(1);
  const uint8_t* code_valid = codes.GetNullCount() > 0 ? codes.buffers[0].data : nullptr;
  ARROW_ASSIGN_OR_RAISE(auto values, arrow::AllocateBitmap(n, pool));
  ARROW_ASSIGN_OR_RAISE(auto validity, arrow::AllocateBitmap(n, pool));
  uint8_t* value_bits = values->mutable_data();
  uint8_t* valid_bits = validity->mutable_data();
  const int64_t limit = static_cast<int64_t>(value.size());
  int64_t nulls = 0;
  for (int64_t start = 0; start < n; start += 8) {
    uint8_t value_byte = 0, valid_byte = 0;
    const int64_t end = std::min<int64_t>(start + 8, n);
    for (int64_t i = start; i < end; ++i) {
      int64_t c = code[i];
      if (code_valid != nullptr && !arrow::bit_util::GetBit(code_valid, codes.offset + i)) {
        c = null_code;
      }
      if (c < 0 || c >= limit) {
        return arrow::Status::Invalid("dictionary code ", c, " is outside its dictionary of ",
                                      null_code, " values");
      }
      value_byte |= static_cast<uint8_t>(value[c] << (i - start));
      valid_byte |= static_cast<uint8_t>(valid[c] << (i - start));
      nulls += 1 - valid[c];
    }
    value_bits[start / 8] = value_byte;
    valid_bits[start / 8] = valid_byte;
  }
  if (nulls == 0) validity = nullptr;
  return arrow::ArrayData::Make(arrow::boolean(), n, {std::move(validity), std::move(values)},
                                nulls);
}

// answers[code] per row of `codes`, as TakeBits, for answers of a fixed width of kWidth bytes
// (ids, numbers, dates): one copy per row, where Arrow's take checks and widens each index.
template <int kWidth>
arrow::Result<std::shared_ptr<arrow::ArrayData>> TakeFixedWidth(const arrow::ArraySpan& codes,
                                                                int64_t null_code,
                                                                const arrow::ArrayData& answers,
                                                                arrow::MemoryPool* pool) {
  struct Value {
    uint8_t bytes[kWidth];
  };
  const int64_t n = codes.length;
  const int32_t* code = codes.GetValues<int32_t>(1);
  const uint8_t* code_valid = codes.GetNullCount() > 0 ? codes.buffers[0].data : nullptr;
  const auto* from = reinterpret_cast<const Value*>(answers.buffers[1]->data()) + answers.offset;
  const uint8_t* from_valid = answers.GetNullCount() > 0 ? answers.buffers[0]->data() : nullptr;
  // Codes are checked first, in one pass that vectorizes; a NULL code's slot gets code 0 here
  // and its answer below.
  uint32_t largest = 0;  // as unsigned, a negative code is larger than any dictionary
  for (int64_t i = 0; i < n; ++i) largest = std::max(largest, static_cast<uint32_t>(code[i]));
  const bool out_of_range = n > 0 && largest >= static_cast<uint64_t>(null_code);
  if (out_of_range) {
    for (int64_t i = 0; i < n; ++i) {
      const bool valid =
          code_valid == nullptr || arrow::bit_util::GetBit(code_valid, codes.offset + i);
      if (valid && (code[i] < 0 || code[i] >= null_code)) {
        return arrow::Status::Invalid("dictionary code ", code[i], " is outside its dictionary of ",
                                      null_code, " values");
      }
    }
  }
  // The answer for NULL is usually NULL; it matters only where a code is NULL.
  const bool values_have_nulls =
      from_valid != nullptr &&
      arrow::internal::CountSetBits(from_valid, answers.offset, null_code) != null_code;
  if constexpr (kWidth == 4) {
    // Interned codes of a dictionary seen first are its own codes (TPC-H Q1's flags): the codes
    // are then the answer, shared rather than copied. Checked where the dictionary is no longer
    // than the batch, so the check costs no more than the copy.
    if (code_valid == nullptr && !values_have_nulls && answers.type->id() == arrow::Type::INT32 &&
        null_code <= n) {
      const auto* answer = reinterpret_cast<const int32_t*>(from);
      bool identity = true;
      for (int64_t c = 0; c < null_code; ++c) identity &= answer[c] == c;
      if (identity) {
        return arrow::ArrayData::Make(answers.type, n, {nullptr, codes.GetBuffer(1)}, 0,
                                      codes.offset);
      }
    }
  }
  ARROW_ASSIGN_OR_RAISE(auto values, arrow::AllocateBuffer(n * kWidth, pool));
  auto* to = reinterpret_cast<Value*>(values->mutable_data());
  if (code_valid == nullptr && !values_have_nulls) {
    for (int64_t i = 0; i < n; ++i) to[i] = from[code[i]];
    return arrow::ArrayData::Make(answers.type, n, {nullptr, std::move(values)}, 0);
  }
  ARROW_ASSIGN_OR_RAISE(auto validity, arrow::AllocateBitmap(n, pool));
  uint8_t* valid_bits = validity->mutable_data();
  int64_t nulls = 0;
  for (int64_t i = 0; i < n; ++i) {
    const bool code_is_valid =
        code_valid == nullptr || arrow::bit_util::GetBit(code_valid, codes.offset + i);
    const int64_t c = code_is_valid && code[i] >= 0 && code[i] < null_code ? code[i] : null_code;
    to[i] = from[c];
    const bool valid =
        from_valid == nullptr || arrow::bit_util::GetBit(from_valid, answers.offset + c);
    arrow::bit_util::SetBitTo(valid_bits, i, valid);
    nulls += !valid;
  }
  if (nulls == 0) validity = nullptr;
  return arrow::ArrayData::Make(answers.type, n, {std::move(validity), std::move(values)}, nulls);
}

arrow::Result<std::shared_ptr<arrow::ArrayData>> TakeFixedWidth(const arrow::ArraySpan& codes,
                                                                int64_t null_code,
                                                                const arrow::ArrayData& answers,
                                                                int width,
                                                                arrow::MemoryPool* pool) {
  if (answers.length != null_code + 1) return nullptr;  // one answer per value, and NULL's
  switch (width) {
    case 1:
      return TakeFixedWidth<1>(codes, null_code, answers, pool);
    case 2:
      return TakeFixedWidth<2>(codes, null_code, answers, pool);
    case 4:
      return TakeFixedWidth<4>(codes, null_code, answers, pool);
    case 8:
      return TakeFixedWidth<8>(codes, null_code, answers, pool);
    case 16:
      return TakeFixedWidth<16>(codes, null_code, answers, pool);
    default:
      return nullptr;
  }
}

arrow::Status ExecMap(cp::KernelContext* ctx, const cp::ExecSpan& batch, cp::ExecResult* out) {
  const auto& state = *static_cast<const DictionaryMapState*>(ctx->state());
  if (!batch[0].is_array()) {
    // A dictionary scalar: its value, decoded, through the body.
    const auto& scalar = static_cast<const arrow::DictionaryScalar&>(*batch[0].scalar);
    ARROW_ASSIGN_OR_RAISE(auto value, scalar.GetEncodedValue());
    ARROW_ASSIGN_OR_RAISE(
        arrow::Datum answer,
        cp::ExecuteScalarExpression(state.bound, cp::ExecBatch({value}, 1), ctx->exec_context()));
    std::shared_ptr<arrow::Scalar> one = answer.is_scalar() ? answer.scalar() : nullptr;
    if (one == nullptr) {
      ARROW_ASSIGN_OR_RAISE(one, answer.make_array()->GetScalar(0));
    }
    ARROW_ASSIGN_OR_RAISE(auto array, arrow::MakeArrayFromScalar(*one, batch.length));
    out->value = array->data();
    return arrow::Status::OK();
  }
  const std::shared_ptr<arrow::ArrayData> data = batch[0].array.ToArrayData();
  const std::shared_ptr<arrow::ArrayData>& dict = data->dictionary;
  std::shared_ptr<arrow::Array> answers;
  if (auto found = state.options->cache->Find(*dict)) {
    answers = found->answers;
  } else {
    auto computed = Answers(state, dict, ctx->exec_context());
    if (computed.ok()) answers = *computed;
    state.options->cache->Add(dict, answers);
  }
  if (answers == nullptr) {
    // Per row, on the decoded column: fails, if at all, as the plain expression would.
    const auto& type = static_cast<const arrow::DictionaryType&>(*data->type);
    ARROW_ASSIGN_OR_RAISE(auto decoded, cp::Cast(arrow::MakeArray(data), type.value_type(),
                                                 cp::CastOptions::Safe(), ctx->exec_context()));
    ARROW_ASSIGN_OR_RAISE(
        arrow::Datum answer,
        cp::ExecuteScalarExpression(state.bound, cp::ExecBatch({decoded}, batch.length),
                                    ctx->exec_context()));
    if (answer.is_scalar()) {
      ARROW_ASSIGN_OR_RAISE(auto array, arrow::MakeArrayFromScalar(*answer.scalar(), batch.length));
      out->value = array->data();
    } else {
      out->value = answer.array();
    }
    return arrow::Status::OK();
  }
  if (answers->type_id() == arrow::Type::BOOL && data->type->id() == arrow::Type::DICTIONARY &&
      static_cast<const arrow::DictionaryType&>(*data->type).index_type()->id() ==
          arrow::Type::INT32) {
    // A predicate: bits straight from the codes (Arrow's take checks and widens per row).
    ARROW_ASSIGN_OR_RAISE(auto bits,
                          TakeBits(batch[0].array, dict->length, *answers, ctx->memory_pool()));
    out->value = std::move(bits);
    return arrow::Status::OK();
  }
  const auto& index_type = *static_cast<const arrow::DictionaryType&>(*data->type).index_type();
  const auto* fixed = dynamic_cast<const arrow::FixedWidthType*>(answers->type().get());
  if (index_type.id() == arrow::Type::INT32 && fixed != nullptr &&
      answers->type_id() != arrow::Type::BOOL && answers->type_id() != arrow::Type::DICTIONARY &&
      answers->data()->buffers.size() == 2 && answers->data()->buffers[1] != nullptr &&
      fixed->bit_width() % 8 == 0 && fixed->bit_width() <= 128) {
    ARROW_ASSIGN_OR_RAISE(auto taken, TakeFixedWidth(batch[0].array, dict->length, *answers->data(),
                                                     fixed->bit_width() / 8, ctx->memory_pool()));
    if (taken != nullptr) {
      out->value = std::move(taken);
      return arrow::Status::OK();
    }
  }
  // The codes, with each NULL pointing at the answer for NULL.
  auto codes_data = data->Copy();
  codes_data->type = static_cast<const arrow::DictionaryType&>(*data->type).index_type();
  codes_data->dictionary = nullptr;
  arrow::Datum codes(codes_data);
  if (codes_data->GetNullCount() != 0) {
    ARROW_ASSIGN_OR_RAISE(auto null_code, arrow::MakeScalar(codes_data->type, dict->length));
    ARROW_ASSIGN_OR_RAISE(codes,
                          cp::CallFunction("coalesce", {codes, null_code}, ctx->exec_context()));
  }
  ARROW_ASSIGN_OR_RAISE(arrow::Datum taken,
                        cp::Take(answers, codes, cp::TakeOptions::Defaults(), ctx->exec_context()));
  out->value = taken.array();
  return arrow::Status::OK();
}

std::optional<std::string> DictionaryColumn(const arrow::FieldRef& ref,
                                            const arrow::Schema& schema) {
  const std::string* name = ref.name();
  if (name == nullptr) return std::nullopt;
  const auto field = schema.GetFieldByName(*name);
  if (field == nullptr || field->type()->id() != arrow::Type::DICTIONARY) return std::nullopt;
  return *name;
}

// Ids for strings in order of first sight; shared by the threads of one plan.
class StringInterner {
 public:
  // Ids for `strings`' valid values (others untouched).
  void Intern(const arrow::ArraySpan& strings, int32_t* ids) {
    const auto* offsets = strings.GetValues<int32_t>(1);
    const auto* data = reinterpret_cast<const char*>(strings.buffers[2].data);
    std::lock_guard<std::mutex> lock(mutex_);
    for (int64_t i = 0; i < strings.length; ++i) {
      if (!strings.IsValid(i)) {
        ids[i] = 0;
        continue;
      }
      std::string_view value(data + offsets[i], offsets[i + 1] - offsets[i]);
      auto it = ids_.find(value);
      if (it == ids_.end()) {
        values_.push_back(std::make_unique<std::string>(value));
        it = ids_.emplace(*values_.back(), static_cast<int32_t>(values_.size() - 1)).first;
      }
      ids[i] = it->second;
    }
  }

  arrow::Status Lookup(const arrow::ArraySpan& ids, arrow::StringBuilder* out) {
    const int32_t* id = ids.GetValues<int32_t>(1);
    std::lock_guard<std::mutex> lock(mutex_);
    for (int64_t i = 0; i < ids.length; ++i) {
      if (!ids.IsValid(i)) {
        ARROW_RETURN_NOT_OK(out->AppendNull());
      } else if (id[i] < 0 || static_cast<size_t>(id[i]) >= values_.size()) {
        return arrow::Status::Invalid("internal: interned id ", id[i], " was never given");
      } else {
        ARROW_RETURN_NOT_OK(out->Append(*values_[id[i]]));
      }
    }
    return arrow::Status::OK();
  }

 private:
  std::mutex mutex_;
  std::vector<std::unique_ptr<std::string>> values_;  // stable: the map's keys view them
  std::unordered_map<std::string_view, int32_t> ids_;
};

class InternOptions : public cp::FunctionOptions {
 public:
  InternOptions();
  std::shared_ptr<StringInterner> interner = std::make_shared<StringInterner>();
};

class InternOptionsType : public cp::FunctionOptionsType {
 public:
  static const InternOptionsType* Get() {
    static const InternOptionsType instance;
    return &instance;
  }
  const char* type_name() const override { return "InternOptions"; }
  std::string Stringify(const cp::FunctionOptions&) const override { return "interner"; }
  bool Compare(const cp::FunctionOptions& a, const cp::FunctionOptions& b) const override {
    return static_cast<const InternOptions&>(a).interner ==
           static_cast<const InternOptions&>(b).interner;
  }
  std::unique_ptr<cp::FunctionOptions> Copy(const cp::FunctionOptions& options) const override {
    auto copy = std::make_unique<InternOptions>();
    copy->interner = static_cast<const InternOptions&>(options).interner;
    return copy;
  }
};

InternOptions::InternOptions() : cp::FunctionOptions(InternOptionsType::Get()) {}

struct InternState : public cp::KernelState {
  std::shared_ptr<StringInterner> interner;
};

arrow::Result<std::unique_ptr<cp::KernelState>> InitIntern(cp::KernelContext*,
                                                           const cp::KernelInitArgs& args) {
  if (args.options == nullptr) {
    return arrow::Status::Invalid("internal: ", kInternFunction, " needs its options");
  }
  auto state = std::make_unique<InternState>();
  state->interner = static_cast<const InternOptions*>(args.options)->interner;
  return state;
}

arrow::Status ExecIntern(cp::KernelContext* ctx, const cp::ExecSpan& batch, cp::ExecResult* out) {
  auto& interner = *static_cast<const InternState*>(ctx->state())->interner;
  // Preallocated int32 values and the input's validity (NullHandling::INTERSECTION).
  interner.Intern(batch[0].array, out->array_span_mutable()->GetValues<int32_t>(1));
  return arrow::Status::OK();
}

arrow::Status ExecLookup(cp::KernelContext* ctx, const cp::ExecSpan& batch, cp::ExecResult* out) {
  auto& interner = *static_cast<const InternState*>(ctx->state())->interner;
  arrow::StringBuilder builder(ctx->memory_pool());
  ARROW_RETURN_NOT_OK(builder.Reserve(batch.length));
  ARROW_RETURN_NOT_OK(interner.Lookup(batch[0].array, &builder));
  ARROW_ASSIGN_OR_RAISE(auto strings, builder.Finish());
  out->value = strings->data();
  return arrow::Status::OK();
}

}  // namespace

arrow::Status RegisterDictionaryKernels(cp::FunctionRegistry* registry) {
  auto function = std::make_shared<cp::ScalarFunction>(
      kDictionaryMapFunction, cp::Arity::Unary(),
      cp::FunctionDoc("An expression of a dictionary column, evaluated per dictionary value", "",
                      {"dictionary"}, "DictionaryMapOptions", /*options_required=*/true));
  cp::ScalarKernel kernel({cp::InputType(arrow::Type::DICTIONARY)}, cp::OutputType(ResolveMap),
                          ExecMap, InitMap);
  kernel.null_handling = cp::NullHandling::COMPUTED_NO_PREALLOCATE;
  kernel.mem_allocation = cp::MemAllocation::NO_PREALLOCATE;
  kernel.can_write_into_slices = false;
  ARROW_RETURN_NOT_OK(function->AddKernel(std::move(kernel)));
  ARROW_RETURN_NOT_OK(registry->AddFunction(std::move(function), /*allow_overwrite=*/true));

  auto intern = std::make_shared<cp::ScalarFunction>(
      kInternFunction, cp::Arity::Unary(),
      cp::FunctionDoc("An id per distinct string", "", {"strings"}, "InternOptions",
                      /*options_required=*/true));
  cp::ScalarKernel to_ids({cp::InputType(arrow::utf8())}, arrow::int32(), ExecIntern, InitIntern);
  to_ids.can_write_into_slices = false;
  ARROW_RETURN_NOT_OK(intern->AddKernel(std::move(to_ids)));
  ARROW_RETURN_NOT_OK(registry->AddFunction(std::move(intern), /*allow_overwrite=*/true));

  auto lookup = std::make_shared<cp::ScalarFunction>(
      kInternLookupFunction, cp::Arity::Unary(),
      cp::FunctionDoc("The string of an interned id", "", {"ids"}, "InternOptions",
                      /*options_required=*/true));
  cp::ScalarKernel to_strings({cp::InputType(arrow::int32())}, arrow::utf8(), ExecLookup,
                              InitIntern);
  to_strings.null_handling = cp::NullHandling::COMPUTED_NO_PREALLOCATE;
  to_strings.mem_allocation = cp::MemAllocation::NO_PREALLOCATE;
  to_strings.can_write_into_slices = false;
  ARROW_RETURN_NOT_OK(lookup->AddKernel(std::move(to_strings)));
  return registry->AddFunction(std::move(lookup), /*allow_overwrite=*/true);
}

const cp::Expression* DictionaryMapBody(const cp::Expression::Call& call) {
  if (call.function_name != kDictionaryMapFunction || call.options == nullptr ||
      call.options->options_type() != DictionaryMapOptionsType::Get()) {
    return nullptr;
  }
  return &static_cast<const DictionaryMapOptions&>(*call.options).body;
}

std::shared_ptr<cp::FunctionOptions> MakeInternOptions() {
  return std::make_shared<InternOptions>();
}

cp::Expression WithDictionaryMaps(const cp::Expression& expression, const arrow::Schema& schema) {
  if (const auto* ref = expression.field_ref()) {
    const auto name = DictionaryColumn(*ref, schema);
    if (!name) return expression;
    const auto& type =
        static_cast<const arrow::DictionaryType&>(*schema.GetFieldByName(*name)->type());
    return cp::call("cast", {expression}, cp::CastOptions::Safe(type.value_type()));
  }
  const auto* call = expression.call();
  if (call == nullptr) return expression;
  std::optional<std::string> only;
  bool one_dictionary = true;
  for (const auto& ref : cp::FieldsInExpression(expression)) {
    const auto name = DictionaryColumn(ref, schema);
    if (!name || (only && *only != *name)) {
      one_dictionary = false;
      break;
    }
    only = name;
  }
  if (one_dictionary && only && DependsOnArgumentsAlone(expression)) {
    return cp::call(kDictionaryMapFunction, {cp::field_ref(*only)},
                    std::make_shared<DictionaryMapOptions>(expression));
  }
  std::vector<cp::Expression> args;
  for (const auto& a : call->arguments) args.push_back(WithDictionaryMaps(a, schema));
  return cp::call(call->function_name, std::move(args), call->options);
}

}  // namespace sluice::plan
