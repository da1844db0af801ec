#include "exec/filter_node.h"

#include <arrow/acero/map_node.h>
#include <arrow/acero/options.h>
#include <arrow/acero/query_context.h>
#include <arrow/array.h>
#include <arrow/compute/api.h>
#include <arrow/type_traits.h>
#include <arrow/util/bit_block_counter.h>
#include <arrow/util/bit_util.h>
#include <arrow/util/bitmap_ops.h>

#include <algorithm>
#include <cstring>
#include <limits>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "common/bit_words.h"
#include "common/status.h"
#include "exec/kept_rows.h"
#include "plan/conjuncts.h"
#include "plan/decimal_kernels.h"
#include "plan/dictionary_kernels.h"
#include "plan/expression_text.h"
#include "plan/like_kernels.h"
#include "plan/set_kernels.h"

namespace sluice::exec {

namespace {

namespace ac = arrow::acero;
namespace cp = arrow::compute;

constexpr char kFilterFactory[] = "sluice_filter";

// Below this share of kept rows, gathering them by index beats a pass over the mask per column.
constexpr int64_t kTakeBelowOneIn = 8;

// Rows are selected by int32 index; a longer batch is filtered along its mask.
constexpr int64_t kMaxSelectable = std::numeric_limits<int32_t>::max();

// The rows where `mask` is true (set and not NULL), `kept` of them, as int32 indices; each row i
// becomes `rows[i]` when `rows` is given, which narrows an earlier selection. Arrow's
// indices_nonzero goes bit by bit, which cost Q12 7 % of its time.
arrow::Result<std::shared_ptr<arrow::Array>> TrueRows(const arrow::ArrayData& mask, int64_t kept,
                                                      const int32_t* rows,
                                                      arrow::MemoryPool* pool) {
  ARROW_ASSIGN_OR_RAISE(auto buffer, arrow::AllocateBuffer(kept * sizeof(int32_t), pool));
  auto* out = reinterpret_cast<int32_t*>(buffer->mutable_data());
  const uint8_t* values = mask.buffers[1]->data();
  const uint8_t* valid =
      mask.buffers[0] != nullptr && mask.GetNullCount() != 0 ? mask.buffers[0]->data() : nullptr;
  int64_t written = 0;
  for (int64_t position = 0; position < mask.length; position += 64) {
    const int64_t n = std::min<int64_t>(64, mask.length - position);
    uint64_t word = BitWord(values, mask.offset + position, n);
    if (valid != nullptr) word &= BitWord(valid, mask.offset + position, n);
    if (n < 64) word &= (uint64_t{1} << n) - 1;
    while (word != 0 && written < kept) {
      const int64_t row = position + __builtin_ctzll(word);
      out[written++] = rows != nullptr ? rows[row] : static_cast<int32_t>(row);
      word &= word - 1;
    }
  }
  if (written != kept) return arrow::Status::Invalid("internal: a filter mask's count changed");
  return arrow::MakeArray(
      arrow::ArrayData::Make(arrow::int32(), kept, {nullptr, std::move(buffer)}, 0));
}

// The rows of `width`-byte values whose bit is set in `mask` (from bit `mask_offset`), in order,
// into `out`, which has room for one value more than the kept ones. Arrow's filter copies each
// run of kept rows with a call; at the mixed selectivities of join residues (Q21 keeps about
// 6 rows in 10) runs are short, so a mixed word here copies every row and advances by its bit.
template <int kWidth>
void Compact(const uint8_t* in, const uint8_t* mask, int64_t mask_offset, int64_t length,
             uint8_t* out) {
  arrow::internal::BitBlockCounter blocks(mask, mask_offset, length);
  int64_t position = 0;
  uint8_t* to = out;
  while (position < length) {
    const arrow::internal::BitBlockCount block = blocks.NextWord();
    const uint8_t* from = in + position * kWidth;
    if (block.AllSet()) {
      std::memcpy(to, from, static_cast<size_t>(block.length) * kWidth);
      to += static_cast<int64_t>(block.length) * kWidth;
    } else if (!block.NoneSet()) {
      uint64_t bits = BitWord(mask, mask_offset + position, block.length);
      for (int64_t i = 0; i < block.length; ++i) {
        std::memcpy(to, from + i * kWidth, kWidth);
        to += kWidth * static_cast<int64_t>(bits & 1);
        bits >>= 1;
      }
    }
    position += block.length;
  }
}

// The bits of `bits` (from `bits_offset`) at the rows `mask` keeps, in order, into `out` (zeroed,
// from bit 0). A word that keeps every row is copied whole; another goes by its kept rows.
void CompactBitmap(const uint8_t* bits, int64_t bits_offset, const uint8_t* mask,
                   int64_t mask_offset, int64_t length, uint8_t* out) {
  int64_t written = 0;
  for (int64_t position = 0; position < length; position += 64) {
    const int64_t n = std::min<int64_t>(64, length - position);
    uint64_t keep = BitWord(mask, mask_offset + position, n);
    if (n < 64) keep &= (uint64_t{1} << n) - 1;
    if (keep == 0) continue;
    if (n == 64 && keep == ~uint64_t{0}) {
      arrow::internal::CopyBitmap(bits, bits_offset + position, 64, out, written);
      written += 64;
      continue;
    }
    const uint64_t word = BitWord(bits, bits_offset + position, n);
    for (; keep != 0; keep &= keep - 1) {
      if ((word >> __builtin_ctzll(keep)) & 1) arrow::bit_util::SetBit(out, written);
      ++written;
    }
  }
}

// `values` (a fixed-width column) at the rows `mask` keeps, `kept` of them, its NULLs with them;
// nullopt for a column of another kind, which Arrow's filter takes.
arrow::Result<std::optional<arrow::Datum>> CompactFixedWidth(const arrow::ArrayData& values,
                                                             const uint8_t* mask,
                                                             int64_t mask_offset, int64_t kept,
                                                             arrow::MemoryPool* pool) {
  const auto& type = *values.type;
  if (type.id() == arrow::Type::BOOL || type.id() == arrow::Type::DICTIONARY ||
      type.id() == arrow::Type::EXTENSION || !arrow::is_fixed_width(type.id()) ||
      values.buffers.size() != 2 || values.buffers[1] == nullptr) {
    return std::nullopt;
  }
  const int width = type.byte_width();
  using CompactFn = void (*)(const uint8_t*, const uint8_t*, int64_t, int64_t, uint8_t*);
  CompactFn compact = nullptr;
  switch (width) {
    case 1:
      compact = Compact<1>;
      break;
    case 2:
      compact = Compact<2>;
      break;
    case 4:
      compact = Compact<4>;
      break;
    case 8:
      compact = Compact<8>;
      break;
    case 16:
      compact = Compact<16>;
      break;
    default:
      return std::nullopt;
  }
  // One value more than kept: a mixed word writes each row before it knows whether to keep it.
  ARROW_ASSIGN_OR_RAISE(auto out, arrow::AllocateBuffer((kept + 1) * width, pool));
  compact(values.buffers[1]->data() + values.offset * width, mask, mask_offset, values.length,
          out->mutable_data());
  std::shared_ptr<arrow::Buffer> validity;
  int64_t nulls = 0;
  if (values.GetNullCount() != 0) {
    ARROW_ASSIGN_OR_RAISE(validity, arrow::AllocateEmptyBitmap(kept, pool));
    CompactBitmap(values.buffers[0]->data(), values.offset, mask, mask_offset, values.length,
                  validity->mutable_data());
    nulls = kept - arrow::internal::CountSetBits(validity->data(), 0, kept);
  }
  return arrow::Datum(
      arrow::ArrayData::Make(values.type, kept, {std::move(validity), std::move(out)}, nulls));
}

// One conjunct and the input columns it reads, which are all a selection has to gather for it.
struct Conjunct {
  cp::Expression bound;
  std::vector<bool> reads;  // by input column
  bool cheap = false;
  bool may_fail = true;
};

// Whether `e` may fail on some row: anything but comparisons, boolean logic, NULL, set and
// pattern tests. (A dictionary map runs its body once per dictionary, whichever rows are
// selected.)
bool MayFail(const cp::Expression& e) {
  if (e.literal() != nullptr || e.field_ref() != nullptr) return false;
  const cp::Expression::Call* call = e.call();
  if (call == nullptr) return true;
  // Of constants only (a literal's cast): the same whichever rows are selected.
  if (cp::FieldsInExpression(e).empty()) return false;
  static const std::set<std::string> kNeverFail = {"equal",
                                                   "not_equal",
                                                   "less",
                                                   "less_equal",
                                                   "greater",
                                                   "greater_equal",
                                                   "and",
                                                   "and_kleene",
                                                   "or",
                                                   "or_kleene",
                                                   "invert",
                                                   "and_not",
                                                   "and_not_kleene",
                                                   "xor",
                                                   "is_null",
                                                   "is_valid",
                                                   "true_unless_null",
                                                   "is_in",
                                                   "index_in",
                                                   "match_like",
                                                   "match_substring",
                                                   "starts_with",
                                                   "ends_with",
                                                   plan::kLikeFunction,
                                                   plan::kIntInFunction,
                                                   plan::kIntInOrNullFunction,
                                                   plan::kDecimalEqualFunction,
                                                   plan::kDecimalNotEqualFunction,
                                                   plan::kDecimalLessFunction,
                                                   plan::kDecimalLessEqualFunction,
                                                   plan::kDecimalGreaterFunction,
                                                   plan::kDecimalGreaterEqualFunction};
  if (call->function_name == plan::kDictionaryMapFunction) return false;
  if (kNeverFail.count(call->function_name) == 0) return true;
  return std::any_of(call->arguments.begin(), call->arguments.end(),
                     [](const cp::Expression& argument) { return MayFail(argument); });
}

// A comparison of primitive columns or literals (integers, floats, dates), which costs less per
// row on the whole batch than gathering its columns at selected rows would (Q12's dates).
bool IsCheap(const cp::Expression& conjunct) {
  const cp::Expression::Call* call = conjunct.call();
  if (call == nullptr) return false;
  static const std::vector<std::string> kComparisons = {"equal",      "not_equal", "less",
                                                        "less_equal", "greater",   "greater_equal"};
  if (std::find(kComparisons.begin(), kComparisons.end(), call->function_name) ==
      kComparisons.end()) {
    return false;
  }
  return std::all_of(call->arguments.begin(), call->arguments.end(), [](const auto& argument) {
    return (argument.field_ref() != nullptr || argument.literal() != nullptr) &&
           argument.type() != nullptr && arrow::is_primitive(argument.type()->id());
  });
}

// Once the conjuncts so far keep fewer than one row in this many, the rest run only on the
// rows they kept, gathered by index.
constexpr int64_t kSelectBelowOneIn = 4;

// A marking filter passes a batch whole where it keeps at least this share of its rows (three in
// four); below it, copying the kept rows costs less than carrying the others up to the aggregate.
constexpr int64_t kMarkKeptOutOf = 4;
constexpr int64_t kMarkKeptAtLeast = 3;

// The rows of `batch` at `indices`.
arrow::Result<cp::ExecBatch> TakeRows(const cp::ExecBatch& batch, const arrow::Datum& indices,
                                      cp::ExecContext* ctx);

// The rows of `batch` where `mask` is true (not NULL), `kept` of them.
arrow::Result<cp::ExecBatch> KeepRowsOf(cp::ExecBatch batch, const arrow::Datum& mask, int64_t kept,
                                        cp::ExecContext* ctx);

class FilterOptions : public ac::ExecNodeOptions {
 public:
  FilterOptions(cp::Expression predicate, std::shared_ptr<const plan::ColumnTexts> texts, bool mark,
                std::optional<std::vector<std::string>> outputs)
      : predicate(std::move(predicate)),
        texts(std::move(texts)),
        mark(mark),
        outputs(std::move(outputs)) {}
  cp::Expression predicate;
  std::shared_ptr<const plan::ColumnTexts> texts;
  bool mark;
  std::optional<std::vector<std::string>> outputs;  // std::nullopt: all
};

class FilterNode : public ac::MapNode {
 public:
  FilterNode(ac::ExecPlan* plan, std::vector<ac::ExecNode*> inputs,
             std::shared_ptr<arrow::Schema> schema, cp::Expression predicate,
             std::vector<Conjunct> conjuncts, std::shared_ptr<const plan::ColumnTexts> texts,
             bool mark, std::optional<std::vector<int>> outputs)
      : MapNode(plan, std::move(inputs), std::move(schema)),
        predicate_(std::move(predicate)),
        conjuncts_(std::move(conjuncts)),
        texts_(std::move(texts)),
        mark_(mark),
        outputs_(std::move(outputs)) {}

  static arrow::Result<ac::ExecNode*> Make(ac::ExecPlan* plan, std::vector<ac::ExecNode*> inputs,
                                           const ac::ExecNodeOptions& options) {
    if (inputs.size() != 1) return arrow::Status::Invalid("internal: a filter takes one input");
    const auto& filter = static_cast<const FilterOptions&>(options);
    const arrow::Schema& schema = *inputs[0]->output_schema();
    ARROW_ASSIGN_OR_RAISE(auto bound, filter.predicate.Bind(schema));
    if (bound.type()->id() != arrow::Type::BOOL) {
      return arrow::Status::TypeError("a filter must be boolean, not ", bound.type()->ToString(),
                                      ": ", filter.predicate.ToString());
    }
    std::vector<cp::Expression> parts;
    plan::Conjuncts(bound, &parts);
    std::vector<Conjunct> conjuncts;
    if (parts.size() > 1) {
      for (auto& part : parts) {
        Conjunct conjunct{std::move(part), std::vector<bool>(schema.num_fields(), false)};
        conjunct.cheap = IsCheap(conjunct.bound);
        conjunct.may_fail = MayFail(conjunct.bound);
        for (const arrow::FieldRef& ref : cp::FieldsInExpression(conjunct.bound)) {
          ARROW_ASSIGN_OR_RAISE(arrow::FieldPath path, ref.FindOne(schema));
          conjunct.reads[path[0]] = true;
        }
        conjuncts.push_back(std::move(conjunct));
      }
      // Cheap conjuncts first, on whole batches, so that the costly ones see fewer rows.
      std::stable_partition(conjuncts.begin(), conjuncts.end(),
                            [](const Conjunct& conjunct) { return conjunct.cheap; });
    }
    std::shared_ptr<arrow::Schema> out = inputs[0]->output_schema();
    std::optional<std::vector<int>> outputs;
    if (filter.outputs) {
      outputs.emplace();
      arrow::FieldVector fields;
      for (const auto& name : *filter.outputs) {
        const int i = schema.GetFieldIndex(name);
        if (i < 0) return arrow::Status::Invalid("internal: filter output ", name, " missing");
        outputs->push_back(i);
        fields.push_back(schema.field(i));
      }
      out = arrow::schema(std::move(fields));
    }
    if (filter.mark) {
      if (KeptRowsIndex(*out) >= 0) {
        return arrow::Status::Invalid("internal: a marking filter over rows marked already");
      }
      ARROW_ASSIGN_OR_RAISE(
          out, out->AddField(out->num_fields(),
                             arrow::field(kKeptRowsColumn, arrow::boolean(), /*nullable=*/false)));
    }
    return plan->EmplaceNode<FilterNode>(plan, std::move(inputs), std::move(out), std::move(bound),
                                         std::move(conjuncts), filter.texts, filter.mark,
                                         std::move(outputs));
  }

  const char* kind_name() const override { return "SluiceFilterNode"; }

 protected:
  std::string ToStringExtra(int /*indent*/) const override {
    return mark_ ? "marks kept rows" : "";
  }

  arrow::Result<cp::ExecBatch> ProcessBatch(cp::ExecBatch batch) override {
    if (!mark_) return Select(std::move(batch), nullptr);
    arrow::Datum marked;
    ARROW_ASSIGN_OR_RAISE(cp::ExecBatch out, Select(std::move(batch), &marked));
    out.values.push_back(marked.is_array() ? std::move(marked) : arrow::Datum(true));
    return out;
  }

 private:
  // The batch without the rows the predicate drops; or, where `marked` is given and most rows
  // pass, the batch whole with *marked set to the rows that pass.
  arrow::Result<cp::ExecBatch> Select(cp::ExecBatch batch, arrow::Datum* marked) {
    cp::ExecContext* ctx = plan()->query_context()->exec_context();
    if (conjuncts_.empty()) {
      ARROW_ASSIGN_OR_RAISE(arrow::Datum mask, Evaluate(predicate_, batch, ctx));
      return Keep(Outputs(std::move(batch)), mask, marked, ctx);
    }
    // Conjunct by conjunct: while the rows kept so far are many, each runs on the whole batch
    // and the masks are combined; once they are few, the rest run on those rows alone, so an
    // expensive conjunct after a selective one (Q19's ranges of decimals after its dictionary
    // tests) costs per kept row. A row passes only where every conjunct is true, so a conjunct
    // skipped for a dropped row changes no answer. One that may fail (a division, a cast) runs
    // only on the rows that the conjuncts before it kept, however many: `x <> 0 and 10 / x > 1`
    // never divides by zero, whatever the batch holds.
    arrow::Datum mask;
    std::shared_ptr<arrow::Array> selection;  // the kept rows, once the rest run on them alone
    for (size_t c = 0; c < conjuncts_.size(); ++c) {
      const Conjunct& conjunct = conjuncts_[c];
      if (selection == nullptr) {
        ARROW_ASSIGN_OR_RAISE(arrow::Datum part, Evaluate(conjunct.bound, batch, ctx));
        if (c == 0) {
          mask = std::move(part);
        } else {
          ARROW_ASSIGN_OR_RAISE(mask, cp::CallFunction("and_kleene", {mask, part}, ctx));
        }
        const int64_t kept = Kept(mask, batch.length);
        if (kept == 0) return Outputs(std::move(batch)).Slice(0, 0);
        if (mask.is_scalar()) continue;
        const Conjunct* next = c + 1 < conjuncts_.size() ? &conjuncts_[c + 1] : nullptr;
        if (next != nullptr && kept < batch.length && batch.length <= kMaxSelectable &&
            (next->may_fail || (!next->cheap && kept * kSelectBelowOneIn < batch.length))) {
          ARROW_ASSIGN_OR_RAISE(selection,
                                TrueRows(*mask.array(), kept, nullptr, ctx->memory_pool()));
        }
        continue;
      }
      // The conjunct's columns at the selected rows; it reads no other.
      std::vector<arrow::Datum> values;
      values.reserve(batch.values.size());
      for (size_t i = 0; i < batch.values.size(); ++i) {
        const arrow::Datum& v = batch.values[i];
        if (v.is_scalar()) {
          values.push_back(v);
        } else if (!conjunct.reads[i]) {
          values.push_back(arrow::MakeNullScalar(v.type()));
        } else {
          ARROW_ASSIGN_OR_RAISE(arrow::Datum taken,
                                cp::Take(v, selection, cp::TakeOptions::NoBoundsCheck(), ctx));
          values.push_back(std::move(taken));
        }
      }
      ARROW_ASSIGN_OR_RAISE(
          arrow::Datum part,
          Evaluate(conjunct.bound, cp::ExecBatch(std::move(values), selection->length()), ctx));
      const int64_t kept = Kept(part, selection->length());
      if (kept == 0) return Outputs(std::move(batch)).Slice(0, 0);
      if (part.is_scalar() || kept == selection->length()) continue;
      ARROW_ASSIGN_OR_RAISE(selection,
                            TrueRows(*part.array(), kept, selection->data()->GetValues<int32_t>(1),
                                     ctx->memory_pool()));
    }
    if (selection == nullptr) return Keep(Outputs(std::move(batch)), mask, marked, ctx);
    if (selection->length() * kTakeBelowOneIn < batch.length) {
      return TakeRows(Outputs(std::move(batch)), selection, ctx);
    }
    // Many rows kept (a conjunct that may fail ran on them): copied along a mask of them.
    ARROW_ASSIGN_OR_RAISE(auto bits, arrow::AllocateEmptyBitmap(batch.length, ctx->memory_pool()));
    const int32_t* rows = selection->data()->GetValues<int32_t>(1);
    for (int64_t i = 0; i < selection->length(); ++i) {
      arrow::bit_util::SetBit(bits->mutable_data(), rows[i]);
    }
    auto kept_bits =
        arrow::ArrayData::Make(arrow::boolean(), batch.length, {nullptr, std::move(bits)}, 0);
    return Keep(Outputs(std::move(batch)), std::move(kept_bits), marked, ctx);
  }

  // `batch` with only the columns the node passes on, once the predicate has read it.
  cp::ExecBatch Outputs(cp::ExecBatch batch) const {
    if (!outputs_) return batch;
    std::vector<arrow::Datum> values;
    values.reserve(outputs_->size());
    for (const int i : *outputs_) values.push_back(std::move(batch.values[static_cast<size_t>(i)]));
    return cp::ExecBatch(std::move(values), batch.length);
  }

  // The rows that `mask` over `length` rows keeps: a scalar keeps all or none.
  static int64_t Kept(const arrow::Datum& mask, int64_t length) {
    if (mask.is_scalar()) {
      const auto& keep = mask.scalar_as<arrow::BooleanScalar>();
      return keep.is_valid && keep.value ? length : 0;
    }
    return arrow::BooleanArray(mask.array()).true_count();
  }

  // `condition` on `batch`; an error names the condition, since a filter may hold several.
  arrow::Result<arrow::Datum> Evaluate(const cp::Expression& condition, const cp::ExecBatch& batch,
                                       cp::ExecContext* ctx) const {
    auto value = cp::ExecuteScalarExpression(condition, batch, ctx);
    if (!value.ok()) {
      return AddContext(value.status(),
                        "condition (" + plan::ExpressionText(condition, texts_.get()) + ")");
    }
    return value;
  }

  // The rows of `batch` where `mask` is true; or, where `marked` is given and the mask keeps
  // most rows, `batch` whole and the mask in *marked, its NULLs made false.
  static arrow::Result<cp::ExecBatch> Keep(cp::ExecBatch batch, const arrow::Datum& mask,
                                           arrow::Datum* marked, cp::ExecContext* ctx) {
    const int64_t kept = Kept(mask, batch.length);
    if (marked != nullptr && kept < batch.length && !mask.is_scalar() &&
        kept * kMarkKeptOutOf >= batch.length * kMarkKeptAtLeast) {
      const arrow::ArrayData& bits = *mask.array();
      if (bits.GetNullCount() == 0) {
        *marked = mask;
      } else {
        ARROW_ASSIGN_OR_RAISE(
            auto and_valid,
            arrow::internal::BitmapAnd(ctx->memory_pool(), bits.buffers[1]->data(), bits.offset,
                                       bits.buffers[0]->data(), bits.offset, bits.length, 0));
        *marked = arrow::ArrayData::Make(arrow::boolean(), bits.length,
                                         {nullptr, std::move(and_valid)}, 0);
      }
      return batch;
    }
    return KeepRowsOf(std::move(batch), mask, kept, ctx);
  }

  cp::Expression predicate_;
  std::vector<Conjunct> conjuncts_;  // empty for a predicate that is not a conjunction
  std::shared_ptr<const plan::ColumnTexts> texts_;  // what errors' text reads
  bool mark_;  // marks the rows that pass where most do (exec/kept_rows.h)
  std::optional<std::vector<int>> outputs_;  // the input columns passed on; std::nullopt: all
};

// `batch` with `fn` applied to each array column (scalars stay), `length` rows long.
template <typename Fn>
arrow::Result<cp::ExecBatch> EachColumn(const cp::ExecBatch& batch, int64_t length, Fn&& fn) {
  std::vector<arrow::Datum> values;
  values.reserve(batch.values.size());
  for (const auto& v : batch.values) {
    if (v.is_scalar()) {
      values.push_back(v);
      continue;
    }
    ARROW_ASSIGN_OR_RAISE(arrow::Datum out, fn(v));
    values.push_back(std::move(out));
  }
  return cp::ExecBatch(std::move(values), length);
}

arrow::Result<cp::ExecBatch> TakeRows(const cp::ExecBatch& batch, const arrow::Datum& indices,
                                      cp::ExecContext* ctx) {
  return EachColumn(batch, indices.length(), [&](const arrow::Datum& v) {
    return cp::Take(v, indices, cp::TakeOptions::NoBoundsCheck(), ctx);
  });
}

arrow::Result<cp::ExecBatch> KeepRowsOf(cp::ExecBatch batch, const arrow::Datum& mask, int64_t kept,
                                        cp::ExecContext* ctx) {
  if (kept == batch.length) return batch;
  if (kept == 0) return batch.Slice(0, 0);
  const arrow::BooleanArray bits(mask.array());
  if (kept * kTakeBelowOneIn < batch.length && batch.length <= kMaxSelectable) {
    ARROW_ASSIGN_OR_RAISE(auto indices, TrueRows(*mask.array(), kept, nullptr, ctx->memory_pool()));
    return TakeRows(batch, indices, ctx);
  }
  std::shared_ptr<arrow::Buffer> and_valid;  // the mask's bits where it is not NULL
  const uint8_t* keep_bits = nullptr;
  int64_t keep_offset = 0;
  if (bits.null_count() == 0) {
    keep_bits = bits.values()->data();
    keep_offset = bits.offset();
  } else {
    ARROW_ASSIGN_OR_RAISE(and_valid, arrow::internal::BitmapAnd(
                                         ctx->memory_pool(), bits.values()->data(), bits.offset(),
                                         bits.null_bitmap_data(), bits.offset(), bits.length(), 0));
    keep_bits = and_valid->data();
  }
  return EachColumn(batch, kept, [&](const arrow::Datum& v) -> arrow::Result<arrow::Datum> {
    ARROW_ASSIGN_OR_RAISE(auto compacted, CompactFixedWidth(*v.array(), keep_bits, keep_offset,
                                                            kept, ctx->memory_pool()));
    if (compacted) return std::move(*compacted);
    return cp::Filter(v, mask, cp::FilterOptions::Defaults(), ctx);
  });
}

arrow::Status RegisterFilter() {
  static std::once_flag once;
  static arrow::Status status;
  std::call_once(once, [] {
    status = ac::default_exec_factory_registry()->AddFactory(kFilterFactory, FilterNode::Make);
  });
  return status;
}

}  // namespace

arrow::Result<ac::Declaration> Filtered(ac::Declaration input, cp::Expression predicate,
                                        std::shared_ptr<const plan::ColumnTexts> texts,
                                        bool mark_kept_rows,
                                        std::optional<std::vector<std::string>> outputs) {
  ARROW_RETURN_NOT_OK(RegisterFilter());
  return ac::Declaration::Sequence(
      {std::move(input),
       {kFilterFactory, FilterOptions(std::move(predicate), std::move(texts), mark_kept_rows,
                                      std::move(outputs))}});
}

arrow::Result<cp::ExecBatch> KeepRows(cp::ExecBatch batch, const arrow::Datum& mask,
                                      cp::ExecContext* ctx) {
  const int64_t kept = arrow::BooleanArray(mask.array()).true_count();
  return KeepRowsOf(std::move(batch), mask, kept, ctx);
}

}  // namespace sluice::exec
