#include "plan/exact_sum.h"

#include <arrow/buffer.h>
#include <arrow/compute/function.h>
#include <arrow/compute/kernel.h>
#include <arrow/scalar.h>
#include <arrow/type.h>
#include <arrow/type_traits.h>
#include <arrow/util/bit_block_counter.h>
#include <arrow/util/bit_util.h>

#include <algorithm>
#include <cstring>
#include <limits>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include "common/bit_words.h"
#include "plan/int128.h"

namespace sluice::plan {

namespace {

namespace cp = arrow::compute;

using int128::Int128;

constexpr int32_t kMaxPrecision = 38;

// A decimal128's 16 bytes, as a value type of the loops below (the others are C integers:
// decimal64 is int64_t).
struct Wide {};

template <typename T>
constexpr int64_t kBytes = std::is_same_v<T, Wide> ? 16 : static_cast<int64_t>(sizeof(T));

// Whether any value of T fits in an int64, so that a few-groups batch may add in 64-bit lanes.
template <typename T>
constexpr bool kFitsInt64 = !std::is_same_v<T, Wide> && !std::is_same_v<T, uint64_t>;

template <typename T>
Int128 ValueAt(const uint8_t* values, int64_t i) {
  if constexpr (std::is_same_v<T, Wide>) {
    return int128::Load(values + i * 16);
  } else {
    T v;
    std::memcpy(&v, values + i * kBytes<T>, sizeof(T));
    return v;
  }
}

// Calls f(T{}) with the value type of `id`: false where the sum does not take `id`.
template <typename F>
bool VisitValueType(arrow::Type::type id, F&& f) {
  switch (id) {
    case arrow::Type::DECIMAL128:
      f(Wide{});
      return true;
    case arrow::Type::DECIMAL64:
    case arrow::Type::INT64:
      f(int64_t{});
      return true;
    case arrow::Type::INT32:
      f(int32_t{});
      return true;
    case arrow::Type::INT16:
      f(int16_t{});
      return true;
    case arrow::Type::INT8:
      f(int8_t{});
      return true;
    case arrow::Type::UINT64:
      f(uint64_t{});
      return true;
    case arrow::Type::UINT32:
      f(uint32_t{});
      return true;
    case arrow::Type::UINT16:
      f(uint16_t{});
      return true;
    case arrow::Type::UINT8:
      f(uint8_t{});
      return true;
    default:
      return false;
  }
}

const cp::ScalarAggregateOptions& SumOptions(const cp::FunctionOptions* options) {
  static const cp::ScalarAggregateOptions kDefaults = cp::ScalarAggregateOptions::Defaults();
  return options != nullptr ? static_cast<const cp::ScalarAggregateOptions&>(*options) : kDefaults;
}

arrow::Result<arrow::TypeHolder> ResolveSum(cp::KernelContext*,
                                            const std::vector<arrow::TypeHolder>& types) {
  const arrow::DataType& t = *types[0].type;
  if (arrow::is_decimal(t.id())) {
    return arrow::TypeHolder(
        arrow::decimal128(kMaxPrecision, static_cast<const arrow::DecimalType&>(t).scale()));
  }
  if (arrow::is_unsigned_integer(t.id())) return arrow::TypeHolder(arrow::uint64());
  return arrow::TypeHolder(arrow::int64());
}

// Whether `total` fits in a value of `type` (kExactSumFunction's result types).
bool Fits(Int128 total, const arrow::DataType& type) {
  switch (type.id()) {
    case arrow::Type::INT64:
      return total >= std::numeric_limits<int64_t>::min() &&
             total <= std::numeric_limits<int64_t>::max();
    case arrow::Type::UINT64:
      return total >= 0 && total <= std::numeric_limits<uint64_t>::max();
    default: {
      static const Int128 kLimit = int128::PowerOfTen(kMaxPrecision);
      return total < kLimit && total > -kLimit;
    }
  }
}

// One running sum per group (a scalar aggregate has one group).
struct SumState : cp::KernelState {
  cp::ScalarAggregateOptions options;
  std::string label = "sum";
  std::shared_ptr<arrow::DataType> out_type;
  std::vector<Int128> sums;
  std::vector<int64_t> counts;  // valid values seen
  std::vector<uint8_t> saw_null;
  bool overflow = false;

  void Resize(int64_t groups) {
    if (static_cast<size_t>(groups) <= sums.size()) return;
    sums.resize(static_cast<size_t>(groups), 0);
    counts.resize(static_cast<size_t>(groups), 0);
    saw_null.resize(static_cast<size_t>(groups), 0);
  }

  void Add(uint32_t g, Int128 v, int64_t count) {
    overflow |= __builtin_add_overflow(sums[g], v, &sums[g]);
    counts[g] += count;
  }

  // Few groups (TPC-H Q1 has 4): consecutive rows often add into one group, and each add then
  // waits for the store of the one before. Four copies of the sums, row i into copy i % 4, keep
  // four adds in flight. A NULL adds 0 and counts 0; validity is read a word at a time, so that
  // a word of valid rows (the usual one: a filter's dropped rows are NULLs here) asks nothing
  // per row. Where min_count is at most 1 (SQL's sum), only whether a group saw a valid value
  // matters: a bit per group in a register replaces the per-row count, whose store cost about
  // as much as the add's.
  static constexpr size_t kFewGroups = 32;
  static constexpr int64_t kMinStripedRows = 256;
  static constexpr int kLanes = 4;

  // Whether a grouped batch of `length` rows takes ConsumeFewGroups.
  bool FewGroups(int64_t length) const {
    return sums.size() <= kFewGroups && length >= kMinStripedRows;
  }

  template <typename T>
  void ConsumeFewGroups(const arrow::ArraySpan& a, int64_t length, const uint32_t* groups) {
    if (options.min_count <= 1) {
      ConsumeFewGroupsOf<T, false>(a, length, groups);
    } else {
      ConsumeFewGroupsOf<T, true>(a, length, groups);
    }
  }

  template <typename T, bool kCountRows>
  void ConsumeFewGroupsOf(const arrow::ArraySpan& a, int64_t length, const uint32_t* groups) {
    // Values that fit in 64 bits add in 64-bit lanes, one of which overflows only past 9.2e18;
    // then the batch is added again in 128 bits.
    if constexpr (kFitsInt64<T>) {
      if (ConsumeFewGroupsIn<int64_t, T, kCountRows>(a, length, groups)) return;
    }
    ConsumeFewGroupsIn<Int128, T, kCountRows>(a, length, groups);
  }

  // ConsumeFewGroups with lanes of type Acc; false, having added nothing, where an int64 lane
  // overflowed. Without kCountRows, a group's count grows by 1 for a batch in which it saw a
  // valid value, which is all that Valid asks of it where min_count is at most 1.
  template <typename Acc, typename T, bool kCountRows>
  bool ConsumeFewGroupsIn(const arrow::ArraySpan& a, int64_t length, const uint32_t* groups) {
    static_assert(kFewGroups <= 32, "a group's bit in `seen` is 1u << g");
    const uint8_t* values = a.buffers[1].data + a.offset * kBytes<T>;
    const uint8_t* validity = a.GetNullCount() > 0 ? a.buffers[0].data : nullptr;
    const size_t n = sums.size();
    Acc lane_sums[kLanes][kFewGroups];
    int64_t lane_counts[kLanes][kFewGroups];
    // Bit g of any lane: group g saw a valid value (without kCountRows). One word per lane keeps
    // the lanes independent.
    uint32_t seen[kLanes] = {0, 0, 0, 0};
    for (int lane = 0; lane < kLanes; ++lane) {
      std::fill_n(lane_sums[lane], n, Acc{0});
      if constexpr (kCountRows) std::fill_n(lane_counts[lane], n, int64_t{0});
    }
    bool lane_overflow = false;
    auto add = [&](int lane, int64_t i, bool valid) {
      const uint32_t g = groups[i];
      const Acc v = valid ? static_cast<Acc>(ValueAt<T>(values, i)) : 0;
      lane_overflow |= __builtin_add_overflow(lane_sums[lane][g], v, &lane_sums[lane][g]);
      if constexpr (kCountRows) {
        lane_counts[lane][g] += valid ? 1 : 0;
      } else {
        seen[lane] |= static_cast<uint32_t>(valid) << g;
      }
    };
    arrow::internal::OptionalBitBlockCounter blocks(validity, a.offset, length);
    for (int64_t begin = 0; begin < length;) {
      const arrow::internal::BitBlockCount block = blocks.NextBlock();
      const int64_t end = begin + block.length;
      int64_t i = begin;
      if (block.AllSet()) {
        for (; i + kLanes <= end; i += kLanes) {
          add(0, i, true);
          add(1, i + 1, true);
          add(2, i + 2, true);
          add(3, i + 3, true);
        }
        for (; i < end; ++i) add(0, i, true);
      } else if (!block.NoneSet()) {
        // Most blocks of a filtered batch hold a dropped row or two (1.5 % of Q1's rows make
        // three blocks in five mixed), so these rows take the four lanes as well.
        const uint64_t word = BitWord(validity, a.offset + begin, block.length);
        for (; i + kLanes <= end; i += kLanes) {
          const uint64_t bits = word >> (i - begin);
          add(0, i, bits & 1);
          add(1, i + 1, (bits >> 1) & 1);
          add(2, i + 2, (bits >> 2) & 1);
          add(3, i + 3, (bits >> 3) & 1);
        }
        for (; i < end; ++i) add(0, i, (word >> (i - begin)) & 1);
      }
      begin = end;
    }
    if constexpr (std::is_same_v<Acc, int64_t>) {
      if (lane_overflow) return false;
    }
    overflow |= lane_overflow;
    const uint32_t seen_any = seen[0] | seen[1] | seen[2] | seen[3];
    for (int lane = 0; lane < kLanes; ++lane) {
      for (size_t g = 0; g < n; ++g) {
        const int64_t count =
            kCountRows ? lane_counts[lane][g] : (lane == 0 ? (seen_any >> g) & 1 : 0);
        Add(static_cast<uint32_t>(g), lane_sums[lane][g], count);
      }
    }
    return true;
  }

  // values[i] into groups[i], or into group 0 where `groups` is null.
  void Consume(const cp::ExecValue& input, int64_t length, const uint32_t* groups) {
    if (input.is_scalar()) {
      const arrow::Scalar& s = *input.scalar;
      Int128 value = 0;
      if (s.is_valid) {
        const auto* bytes = static_cast<const uint8_t*>(
            static_cast<const arrow::internal::PrimitiveScalarBase&>(s).data());
        VisitValueType(s.type->id(), [&](auto t) { value = ValueAt<decltype(t)>(bytes, 0); });
      }
      for (int64_t i = 0; i < length; ++i) {
        const uint32_t g = groups != nullptr ? groups[i] : 0;
        if (!s.is_valid) {
          saw_null[g] = 1;
        } else {
          Add(g, value, 1);
        }
      }
      return;
    }
    VisitValueType(input.array.type->id(),
                   [&](auto t) { ConsumeArray<decltype(t)>(input.array, length, groups); });
  }

  template <typename T>
  void ConsumeArray(const arrow::ArraySpan& a, int64_t length, const uint32_t* groups) {
    const uint8_t* values = a.buffers[1].data + a.offset * kBytes<T>;
    if (a.GetNullCount() == 0) {
      if (groups == nullptr) {
        Int128 total = 0;
        for (int64_t i = 0; i < length; ++i) {
          overflow |= __builtin_add_overflow(total, ValueAt<T>(values, i), &total);
        }
        Add(0, total, length);
      } else if (FewGroups(length)) {
        ConsumeFewGroups<T>(a, length, groups);
      } else {
        for (int64_t i = 0; i < length; ++i) Add(groups[i], ValueAt<T>(values, i), 1);
      }
      return;
    }
    if (options.skip_nulls && groups != nullptr && FewGroups(length)) {
      ConsumeFewGroups<T>(a, length, groups);
      return;
    }
    if (options.skip_nulls && groups != nullptr) {
      // Without a branch on each row's validity: a NULL adds 0 and counts 0. (Rows that a filter
      // marked as dropped reach the sum as NULLs, one or two in a hundred: exec/kept_rows.h.)
      const uint8_t* validity = a.buffers[0].data;
      for (int64_t i = 0; i < length; ++i) {
        const bool valid = arrow::bit_util::GetBit(validity, a.offset + i);
        const Int128 v = ValueAt<T>(values, i);
        Add(groups[i], valid ? v : 0, valid ? 1 : 0);
      }
      return;
    }
    for (int64_t i = 0; i < length; ++i) {
      const uint32_t g = groups != nullptr ? groups[i] : 0;
      if (a.IsValid(i)) {
        Add(g, ValueAt<T>(values, i), 1);
      } else {
        saw_null[g] = 1;
      }
    }
  }

  void Merge(const SumState& other, const uint32_t* mapping) {
    for (size_t i = 0; i < other.sums.size(); ++i) {
      const uint32_t g = mapping != nullptr ? mapping[i] : 0;
      Add(g, other.sums[i], other.counts[i]);
      saw_null[g] |= other.saw_null[i];
    }
    overflow |= other.overflow;
  }

  // Only a total that is output must fit: a group whose sum is NULL (min_count) shows none.
  arrow::Status CheckOverflow() const {
    bool out_of_range = overflow;
    for (size_t g = 0; g < sums.size() && !out_of_range; ++g) {
      out_of_range = Valid(g) && !Fits(sums[g], *out_type);
    }
    return out_of_range ? SumOverflow(label, *out_type) : arrow::Status::OK();
  }

  bool Valid(size_t g) const {
    if (!options.skip_nulls && saw_null[g]) return false;
    return counts[g] >= static_cast<int64_t>(options.min_count);
  }

  // Group g's total (Valid, and checked to fit) into `out` as a value of out_type.
  void StoreTotal(size_t g, uint8_t* out) const {
    if (out_type->id() == arrow::Type::DECIMAL128) {
      int128::Store(out, sums[g]);
    } else {
      const auto v = static_cast<uint64_t>(sums[g]);  // int64's two's complement, or uint64
      std::memcpy(out, &v, sizeof(v));
    }
  }
};

arrow::Result<std::unique_ptr<cp::KernelState>> InitSum(cp::KernelContext*,
                                                        const cp::KernelInitArgs& args) {
  auto state = std::make_unique<SumState>();
  state->options = SumOptions(args.options);
  if (const auto* ours = dynamic_cast<const ExactSumOptions*>(args.options)) {
    state->label = ours->label;
  }
  ARROW_ASSIGN_OR_RAISE(auto resolved, ResolveSum(nullptr, args.inputs));
  state->out_type = resolved.GetSharedPtr();
  return state;
}

arrow::Status ScalarSumConsume(cp::KernelContext* ctx, const cp::ExecSpan& batch) {
  auto* s = static_cast<SumState*>(ctx->state());
  s->Resize(1);
  s->Consume(batch[0], batch.length, nullptr);
  return arrow::Status::OK();
}

arrow::Status ScalarSumMerge(cp::KernelContext*, cp::KernelState&& other, cp::KernelState* dst) {
  auto* into = static_cast<SumState*>(dst);
  auto& from = static_cast<SumState&>(other);
  into->Resize(1);
  from.Resize(1);
  into->Merge(from, nullptr);
  return arrow::Status::OK();
}

arrow::Status ScalarSumFinalize(cp::KernelContext* ctx, arrow::Datum* out) {
  auto* s = static_cast<SumState*>(ctx->state());
  s->Resize(1);
  ARROW_RETURN_NOT_OK(s->CheckOverflow());
  if (!s->Valid(0)) {
    *out = arrow::MakeNullScalar(s->out_type);
    return arrow::Status::OK();
  }
  switch (s->out_type->id()) {
    case arrow::Type::INT64:
      *out = std::make_shared<arrow::Int64Scalar>(static_cast<int64_t>(s->sums[0]));
      break;
    case arrow::Type::UINT64:
      *out = std::make_shared<arrow::UInt64Scalar>(static_cast<uint64_t>(s->sums[0]));
      break;
    default:
      *out = std::make_shared<arrow::Decimal128Scalar>(int128::ToDecimal(s->sums[0]), s->out_type);
  }
  return arrow::Status::OK();
}

arrow::Status HashSumResize(cp::KernelContext* ctx, int64_t groups) {
  static_cast<SumState*>(ctx->state())->Resize(groups);
  return arrow::Status::OK();
}

arrow::Status HashSumConsume(cp::KernelContext* ctx, const cp::ExecSpan& batch) {
  auto* s = static_cast<SumState*>(ctx->state());
  const uint32_t* groups = batch[1].array.GetValues<uint32_t>(1);
  s->Consume(batch[0], batch.length, groups);
  return arrow::Status::OK();
}

arrow::Status HashSumMerge(cp::KernelContext* ctx, cp::KernelState&& other,
                           const arrow::ArrayData& mapping) {
  auto* s = static_cast<SumState*>(ctx->state());
  const uint32_t* groups = mapping.GetValues<uint32_t>(1);
  for (int64_t i = 0; i < mapping.length; ++i) s->Resize(int64_t{groups[i]} + 1);
  s->Merge(static_cast<SumState&>(other), groups);
  return arrow::Status::OK();
}

arrow::Status HashSumFinalize(cp::KernelContext* ctx, arrow::Datum* out) {
  auto* s = static_cast<SumState*>(ctx->state());
  ARROW_RETURN_NOT_OK(s->CheckOverflow());
  const auto n = static_cast<int64_t>(s->sums.size());
  const int64_t width = s->out_type->byte_width();
  ARROW_ASSIGN_OR_RAISE(auto values, arrow::AllocateBuffer(n * width, ctx->memory_pool()));
  ARROW_ASSIGN_OR_RAISE(auto validity, arrow::AllocateEmptyBitmap(n, ctx->memory_pool()));
  std::memset(values->mutable_data(), 0, static_cast<size_t>(n * width));
  int64_t nulls = 0;
  for (int64_t g = 0; g < n; ++g) {
    if (s->Valid(static_cast<size_t>(g))) {
      s->StoreTotal(static_cast<size_t>(g), values->mutable_data() + g * width);
      arrow::bit_util::SetBit(validity->mutable_data(), g);
    } else {
      ++nulls;
    }
  }
  *out = arrow::ArrayData::Make(s->out_type, n, {std::move(validity), std::move(values)}, nulls);
  return arrow::Status::OK();
}

}  // namespace

bool SumsExactly(const arrow::DataType& type) {
  return VisitValueType(type.id(), [](auto) {});
}

arrow::Status SumOverflow(const std::string& label, const arrow::DataType& type) {
  const bool integer = arrow::is_integer(type.id());
  return arrow::Status::Invalid(
      "overflow in ", label, ": the total does not fit in ", type.ToString(),
      integer ? "; sum a CAST(... AS DECIMAL(38, 0)) of its argument for up to 38 digits" : "");
}

arrow::Status RegisterExactSum(cp::FunctionRegistry* registry) {
  const cp::ScalarAggregateOptions* defaults = &SumOptions(nullptr);
  const cp::FunctionDoc doc("exact sum of integers or decimals",
                            "A 128-bit total per group; an error where it does not fit the "
                            "result type.",
                            {"x"}, "ScalarAggregateOptions");
  auto scalar = std::make_shared<cp::ScalarAggregateFunction>(kExactSumFunction, cp::Arity::Unary(),
                                                              doc, defaults);
  auto hash = std::make_shared<cp::HashAggregateFunction>(std::string("hash_") + kExactSumFunction,
                                                          cp::Arity::Binary(), doc, defaults);
  for (const auto id :
       {arrow::Type::DECIMAL128, arrow::Type::DECIMAL64, arrow::Type::INT8, arrow::Type::INT16,
        arrow::Type::INT32, arrow::Type::INT64, arrow::Type::UINT8, arrow::Type::UINT16,
        arrow::Type::UINT32, arrow::Type::UINT64}) {
    ARROW_RETURN_NOT_OK(scalar->AddKernel(cp::ScalarAggregateKernel(
        {cp::InputType(id)}, cp::OutputType(ResolveSum), InitSum, ScalarSumConsume, ScalarSumMerge,
        ScalarSumFinalize, /*ordered=*/false)));
    ARROW_RETURN_NOT_OK(hash->AddKernel(cp::HashAggregateKernel(
        {cp::InputType(id), cp::InputType(arrow::uint32())}, cp::OutputType(ResolveSum), InitSum,
        HashSumConsume, HashSumResize, HashSumMerge, HashSumFinalize, /*ordered=*/false)));
  }
  ARROW_RETURN_NOT_OK(registry->AddFunction(std::move(scalar)));
  return registry->AddFunction(std::move(hash));
}

}  // namespace sluice::plan
