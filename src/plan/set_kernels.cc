#include "plan/set_kernels.h"

#include <arrow/array/data.h>
#include <arrow/chunked_array.h>
#include <arrow/compute/api.h>
#include <arrow/compute/kernel.h>
#include <arrow/datum.h>
#include <arrow/type.h>
#include <arrow/util/bit_util.h>
#include <arrow/util/bitmap_ops.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include "common/bit_words.h"

namespace sluice::plan {

namespace {

namespace cp = arrow::compute;

// A bitmap of at most this many bits (1 MiB), and at most kBitsPerValue per value of the set
// unless it is at most kSmallBits: past that, a sparse set's bitmap would be mostly misses in
// the cache that the hash table avoids.
constexpr uint64_t kMaxBits = uint64_t{1} << 23;
constexpr uint64_t kBitsPerValue = 1024;
constexpr uint64_t kSmallBits = uint64_t{1} << 16;

// Calls `f(T)` on each value of `set` (an array or a chunked array).
template <typename T, typename F>
void ForEachValue(const arrow::Datum& set, F&& f) {
  auto visit = [&](const arrow::ArrayData& a) {
    const T* values = a.GetValues<T>(1);
    for (int64_t i = 0; i < a.length; ++i) f(values[i]);
  };
  if (set.is_array()) {
    visit(*set.array());
  } else if (set.is_chunked_array()) {
    for (const auto& chunk : set.chunked_array()->chunks()) visit(*chunk->data());
  }
}

// The set's least value and its range (largest - least + 1, as uint64, exact: computed in the
// type's own width), or a range of 0 where the set is empty.
struct Range {
  uint64_t min = 0;  // the least value's bits, as the type's unsigned twin widened
  uint64_t size = 0;
};

template <typename T>
Range RangeOf(const arrow::Datum& set) {
  using U = std::make_unsigned_t<T>;
  bool any = false;
  T lo = 0, hi = 0;
  ForEachValue<T>(set, [&](T v) {
    lo = any ? std::min(lo, v) : v;
    hi = any ? std::max(hi, v) : v;
    any = true;
  });
  if (!any) return {};
  const uint64_t span = static_cast<U>(static_cast<U>(hi) - static_cast<U>(lo));
  // A span of 2^64 - 1 has no size in uint64; it is far past kMaxBits anyway.
  return {static_cast<uint64_t>(static_cast<U>(lo)), span == UINT64_MAX ? UINT64_MAX : span + 1};
}

// Calls `f(T{})` with the C type of `type`'s values, or returns false where it has none here.
template <typename F>
bool WithCType(const arrow::DataType& type, F&& f) {
  switch (type.id()) {
    case arrow::Type::INT8:
      return f(int8_t{}), true;
    case arrow::Type::INT16:
      return f(int16_t{}), true;
    case arrow::Type::INT32:
    case arrow::Type::DATE32:
      return f(int32_t{}), true;
    case arrow::Type::INT64:
      return f(int64_t{}), true;
    case arrow::Type::UINT8:
      return f(uint8_t{}), true;
    case arrow::Type::UINT16:
      return f(uint16_t{}), true;
    case arrow::Type::UINT32:
      return f(uint32_t{}), true;
    case arrow::Type::UINT64:
      return f(uint64_t{}), true;
    default:
      return false;
  }
}

int64_t NullCount(const arrow::Datum& set) {
  if (set.is_array()) return set.array()->GetNullCount();
  if (set.is_chunked_array()) return set.chunked_array()->null_count();
  return -1;
}

// The set's Range where IntSetIsDense, or a range of 0.
Range DenseRange(const arrow::Datum& value_set, const arrow::DataType& type) {
  if (!value_set.is_arraylike() || !value_set.type()->Equals(type) || NullCount(value_set) != 0 ||
      value_set.length() == 0) {
    return {};
  }
  Range range;
  if (!WithCType(type, [&](auto zero) { range = RangeOf<decltype(zero)>(value_set); })) return {};
  const uint64_t per_value = kBitsPerValue * static_cast<uint64_t>(value_set.length());
  if (range.size > kMaxBits || range.size > std::max(kSmallBits, per_value)) return {};
  return range;
}

// The kernels' state: the set bound once per call.
struct IntSetState : cp::KernelState {
  explicit IntSetState(IntBitSet set) : set(std::move(set)) {}
  IntBitSet set;
};

arrow::Result<std::unique_ptr<cp::KernelState>> InitIntSet(cp::KernelContext*,
                                                           const cp::KernelInitArgs& args) {
  if (args.options == nullptr) {
    return arrow::Status::Invalid("internal: ", kIntInFunction, " needs SetLookupOptions");
  }
  const auto& options = static_cast<const cp::SetLookupOptions&>(*args.options);
  const arrow::DataType& type = *args.inputs[0].type;
  std::optional<IntBitSet> set = IntBitSet::Make(options.value_set, type);
  if (!set) {
    return arrow::Status::Invalid("internal: ", kIntInFunction, " cannot take a value set of ",
                                  options.value_set.length(), " ",
                                  options.value_set.type()->ToString(), " for ", type.ToString());
  }
  return std::make_unique<IntSetState>(std::move(*set));
}

arrow::Status ExecIntIn(cp::KernelContext* ctx, const cp::ExecSpan& batch, cp::ExecResult* out) {
  const IntBitSet& set = static_cast<const IntSetState*>(ctx->state())->set;
  arrow::ArraySpan* result = out->array_span_mutable();
  if (batch[0].is_scalar()) {
    arrow::bit_util::SetBitsTo(result->buffers[1].data, result->offset, result->length,
                               set.Test(*batch[0].scalar));
    return arrow::Status::OK();
  }
  set.Test(batch[0].array, result->buffers[1].data, result->offset);
  return arrow::Status::OK();
}

}  // namespace

bool IntBitSet::Holds(const arrow::DataType& type) {
  return WithCType(type, [](auto) {});
}

std::optional<IntBitSet> IntBitSet::Make(const arrow::Datum& value_set,
                                         const arrow::DataType& type) {
  const Range range = DenseRange(value_set, type);
  if (range.size == 0) return std::nullopt;
  IntBitSet set;
  set.type_ = type.GetSharedPtr();
  set.min_ = range.min;
  set.size_ = range.size;
  set.words_.assign(range.size / 64 + 1, 0);
  WithCType(type, [&](auto zero) {
    using T = decltype(zero);
    using U = std::make_unsigned_t<T>;
    const U min = static_cast<U>(range.min);
    ForEachValue<T>(value_set, [&](T v) {
      const uint64_t offset = static_cast<U>(static_cast<U>(v) - min);
      set.words_[offset >> 6] |= uint64_t{1} << (offset & 63);
    });
  });
  return set;
}

void IntBitSet::Test(const arrow::ArraySpan& in, uint8_t* out, int64_t out_offset) const {
  // Copies of the members: the loop's stores to `out` could otherwise alias them.
  const uint64_t* words = words_.data();
  const uint64_t size = size_;
  const auto has = [words, size](uint64_t offset) -> uint32_t {
    const uint64_t bit = offset < size ? offset : size;
    return static_cast<uint32_t>(words[bit >> 6] >> (bit & 63)) & 1;
  };
  const int64_t length = in.length;
  WithCType(*type_, [&](auto zero) {
    using T = decltype(zero);
    using U = std::make_unsigned_t<T>;
    // The difference in the type's own width: a value below the least wraps to one past the
    // range.
    const U min = static_cast<U>(min_);
    const T* values = in.GetValues<T>(1);
    const auto offset = [&](int64_t row) {
      return static_cast<U>(static_cast<U>(values[row]) - min);
    };
    int64_t row = 0;
    if (out_offset % 8 == 0) {  // a byte of answers at a time
      uint8_t* bytes = out + out_offset / 8;
      for (; row + 8 <= length; row += 8) {
        uint32_t byte = 0;
        for (int j = 0; j < 8; ++j) byte |= has(offset(row + j)) << j;
        *bytes++ = static_cast<uint8_t>(byte);
      }
    }
    for (; row < length; ++row) arrow::bit_util::SetBitTo(out, out_offset + row, has(offset(row)));
  });
  if (in.GetNullCount() != 0) {  // a NULL row is in no set
    arrow::internal::BitmapAnd(out, out_offset, in.buffers[0].data, in.offset, length, out_offset,
                               out);
  }
}

void IntBitSet::Refine(const arrow::ArraySpan& in, uint8_t* mask) const {
  const int64_t length = in.length;
  WithCType(*type_, [&](auto zero) {
    using T = decltype(zero);
    using U = std::make_unsigned_t<T>;
    const U min = static_cast<U>(min_);
    const T* values = in.GetValues<T>(1);
    for (int64_t start = 0; start < length; start += 64) {
      const int64_t n = std::min<int64_t>(64, length - start);
      uint64_t word = BitWord(mask, start, n);
      if (n < 64) word &= (uint64_t{1} << n) - 1;
      uint64_t kept = word;
      for (; word != 0; word &= word - 1) {
        const int j = __builtin_ctzll(word);
        if (!Has(static_cast<U>(static_cast<U>(values[start + j]) - min))) {
          kept &= ~(uint64_t{1} << j);
        }
      }
      std::memcpy(mask + start / 8, &kept, static_cast<size_t>((n + 7) / 8));
    }
  });
  if (in.GetNullCount() != 0) {
    arrow::internal::BitmapAnd(mask, 0, in.buffers[0].data, in.offset, length, 0, mask);
  }
}

bool IntBitSet::Test(const arrow::Scalar& scalar) const {
  if (!scalar.is_valid) return false;
  bool answer = false;
  WithCType(*type_, [&](auto zero) {
    using T = decltype(zero);
    using U = std::make_unsigned_t<T>;
    const T v = *reinterpret_cast<const T*>(
        static_cast<const arrow::internal::PrimitiveScalarBase&>(scalar).data());
    answer = Has(static_cast<U>(static_cast<U>(v) - static_cast<U>(min_)));
  });
  return answer;
}

bool IntSetIsDense(const arrow::Datum& value_set, const arrow::DataType& type) {
  return DenseRange(value_set, type).size != 0;
}

arrow::Status RegisterSetKernels(cp::FunctionRegistry* registry) {
  const std::vector<std::shared_ptr<arrow::DataType>> types = {
      arrow::int8(),   arrow::int16(),  arrow::int32(),  arrow::int64(), arrow::uint8(),
      arrow::uint16(), arrow::uint32(), arrow::uint64(), arrow::date32()};
  for (const auto& [name, nulls] :
       {std::pair{kIntInFunction, cp::NullHandling::OUTPUT_NOT_NULL},
        std::pair{kIntInOrNullFunction, cp::NullHandling::INTERSECTION}}) {
    const cp::FunctionDoc doc("is_in of a dense set of integers",
                              "As is_in, from a bitmap over the set's range.", {"values"},
                              "SetLookupOptions", /*options_required=*/true);
    auto function = std::make_shared<cp::ScalarFunction>(name, cp::Arity::Unary(), doc);
    for (const auto& type : types) {
      cp::ScalarKernel kernel({cp::InputType(type->id())}, arrow::boolean(), ExecIntIn, InitIntSet);
      kernel.null_handling = nulls;
      kernel.mem_allocation = cp::MemAllocation::PREALLOCATE;
      ARROW_RETURN_NOT_OK(function->AddKernel(std::move(kernel)));
    }
    ARROW_RETURN_NOT_OK(registry->AddFunction(std::move(function), /*allow_overwrite=*/true));
  }
  return arrow::Status::OK();
}

cp::Expression WithSetKernels(const cp::Expression& expression, const arrow::Schema& schema) {
  const cp::Expression::Call* call = expression.call();
  if (call == nullptr) return expression;
  std::vector<cp::Expression> args;
  args.reserve(call->arguments.size());
  for (const auto& a : call->arguments) args.push_back(WithSetKernels(a, schema));
  std::string name = call->function_name;
  if (name == "is_in" && call->options != nullptr && args.size() == 1) {
    std::shared_ptr<arrow::DataType> type =
        args[0].type() != nullptr ? args[0].type()->GetSharedPtr() : nullptr;
    if (type == nullptr && args[0].field_ref() != nullptr) {
      auto field = args[0].field_ref()->GetOneOrNone(schema);
      if (field.ok() && *field != nullptr) type = (*field)->type();
    }
    const auto& options = static_cast<const cp::SetLookupOptions&>(*call->options);
    if (type != nullptr && IntSetIsDense(options.value_set, *type)) {
      const auto behavior = options.GetNullMatchingBehavior();
      name = behavior == cp::SetLookupOptions::MATCH || behavior == cp::SetLookupOptions::SKIP
                 ? kIntInFunction
                 : kIntInOrNullFunction;
    }
  }
  return cp::call(std::move(name), std::move(args), call->options);
}

}  // namespace sluice::plan
