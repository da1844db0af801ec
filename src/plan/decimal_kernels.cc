#include "plan/decimal_kernels.h"

#include <arrow/array/array_decimal.h>
#include <arrow/buffer.h>
#include <arrow/compute/api_aggregate.h>
#include <arrow/compute/api_scalar.h>
#include <arrow/compute/cast.h>
#include <arrow/compute/function.h>
#include <arrow/compute/kernel.h>
#include <arrow/scalar.h>
#include <arrow/type.h>
#include <arrow/util/bit_block_counter.h>
#include <arrow/util/bit_util.h>
#include <arrow/util/bitmap_generate.h>
#include <arrow/util/bitmap_ops.h>
#include <arrow/util/decimal.h>

#include <algorithm>
#include <cstring>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "common/bit_words.h"

namespace sluice::plan {

namespace {

namespace cp = arrow::compute;

__extension__ typedef __int128 Int128;

constexpr int32_t kMaxPrecision = 38;

Int128 Load(const uint8_t* p) {
  Int128 v;
  std::memcpy(&v, p, sizeof(v));
  return v;
}

void Store(uint8_t* p, Int128 v) { std::memcpy(p, &v, sizeof(v)); }

// A decimal64's unscaled value, widened.
Int128 Load64(const uint8_t* p) {
  int64_t v;
  std::memcpy(&v, p, sizeof(v));
  return v;
}

// Whether `id` is a decimal these kernels read: decimal128, or decimal64 (the executor reads
// Parquet decimals of up to 18 digits as decimal64 where only these kernels see them:
// exec/narrow_decimals.h). Results are decimal128 either way.
bool IsDecimal(arrow::Type::type id) {
  return id == arrow::Type::DECIMAL128 || id == arrow::Type::DECIMAL64;
}

// The bytes of one value of a decimal type these kernels read.
int ValueWidth(const arrow::DataType& type) { return type.id() == arrow::Type::DECIMAL64 ? 8 : 16; }

// The value at `i` of a decimal array's values of `width` bytes each.
Int128 LoadAt(const uint8_t* values, int width, int64_t i) {
  return width == 8 ? Load64(values + i * 8) : Load(values + i * 16);
}

Int128 FromDecimal(const arrow::Decimal128& d) {
  return static_cast<Int128>((static_cast<unsigned __int128>(d.high_bits()) << 64) | d.low_bits());
}

arrow::Decimal128 ToDecimal(Int128 v) {
  const auto u = static_cast<unsigned __int128>(v);
  return arrow::Decimal128(static_cast<int64_t>(u >> 64), static_cast<uint64_t>(u));
}

// 10^digits, for digits in [0, 38]. A decimal128 of p digits is strictly smaller in magnitude
// than 10^p.
Int128 PowerOfTen(int32_t digits) {
  Int128 v = 1;
  for (int32_t i = 0; i < digits; ++i) v *= 10;
  return v;
}

// --- add, subtract, multiply ---

enum class Op { kAdd, kSubtract, kMultiply, kDivide };

const char* OpName(Op op) {
  return op == Op::kAdd        ? "add"
         : op == Op::kSubtract ? "subtract"
         : op == Op::kMultiply ? "multiply"
                               : "divide";
}

// The places a quotient's dividend is scaled up by: Arrow's implicit cast of the dividend of a
// decimal division, to scale max(4, s1 + p2 - s2 + 1) + s2. Always more than p2.
int32_t DividendShift(const arrow::DecimalType& l, const arrow::DecimalType& r) {
  return std::max(4, l.scale() + r.precision() - r.scale() + 1) + r.scale() - l.scale();
}

arrow::Result<std::shared_ptr<arrow::DataType>> ResultType(Op op, const arrow::DataType& a,
                                                           const arrow::DataType& b) {
  if (!IsDecimal(a.id()) || !IsDecimal(b.id())) {
    return arrow::Status::TypeError("internal: decimal kernel of ", a.ToString(), " and ",
                                    b.ToString());
  }
  const auto& l = static_cast<const arrow::DecimalType&>(a);
  const auto& r = static_cast<const arrow::DecimalType&>(b);
  int32_t precision, scale;
  if (op == Op::kMultiply) {
    precision = l.precision() + r.precision() + 1;
    scale = l.scale() + r.scale();
  } else if (op == Op::kDivide) {
    // Arrow's: the dividend scaled up, then a quotient of (its precision, its scale - s2).
    const int32_t shift = DividendShift(l, r);
    precision = l.precision() + shift;
    scale = l.scale() + shift - r.scale();
  } else {
    if (l.scale() != r.scale()) {
      return arrow::Status::TypeError("internal: decimal ", OpName(op), " of scales ", l.scale(),
                                      " and ", r.scale());
    }
    scale = l.scale();
    precision = std::max(l.precision() - scale, r.precision() - scale) + scale + 1;
  }
  if (precision > kMaxPrecision) {
    return arrow::Status::Invalid("decimal ", OpName(op), " of ", a.ToString(), " and ",
                                  b.ToString(), " needs ", precision,
                                  " digits, more than decimal128's 38");
  }
  return arrow::decimal128(precision, scale);
}

template <Op kOp>
arrow::Result<arrow::TypeHolder> ResolveArithmetic(cp::KernelContext*,
                                                   const std::vector<arrow::TypeHolder>& types) {
  ARROW_ASSIGN_OR_RAISE(auto type, ResultType(kOp, *types[0].type, *types[1].type));
  return arrow::TypeHolder(std::move(type));
}

bool FitsInt64(Int128 v) { return v == static_cast<int64_t>(v); }

template <Op kOp>
bool Apply(Int128 a, Int128 b, Int128* out) {
  if constexpr (kOp == Op::kAdd) return __builtin_add_overflow(a, b, out);
  if constexpr (kOp == Op::kSubtract) return __builtin_sub_overflow(a, b, out);
  // Decimals of up to 18 digits, as Parquet stores most, multiply with one 64-bit multiply that
  // cannot overflow 128 bits; a checked 128-bit multiply costs several.
  if (FitsInt64(a) && FitsInt64(b)) {
    *out = static_cast<Int128>(static_cast<int64_t>(a)) * static_cast<int64_t>(b);
    return false;
  }
  return __builtin_mul_overflow(a, b, out);
}

// One operand: an array's values, or a scalar's one value for every row.
struct Operand {
  const uint8_t* values = nullptr;  // null for a scalar
  int width = 16;                   // bytes per value: 16, or 8 for decimal64
  Int128 scalar = 0;
  const arrow::ArraySpan* array = nullptr;
  bool scalar_valid = true;

  explicit Operand(const cp::ExecValue& v) {
    if (v.is_scalar()) {
      scalar_valid = v.scalar->is_valid;
      if (!scalar_valid) return;
      if (v.scalar->type->id() == arrow::Type::DECIMAL64) {
        scalar = static_cast<const arrow::Decimal64Scalar&>(*v.scalar).value.value();
      } else {
        scalar = FromDecimal(static_cast<const arrow::Decimal128Scalar&>(*v.scalar).value);
      }
    } else {
      array = &v.array;
      width = ValueWidth(*v.array.type);
      values = v.array.buffers[1].data + v.array.offset * width;
    }
  }
  Int128 At(int64_t i) const { return values != nullptr ? LoadAt(values, width, i) : scalar; }
  bool Valid(int64_t i) const { return array != nullptr ? array->IsValid(i) : scalar_valid; }
};

// Calls run(left, right) with a loader of each operand's value at a row: a scalar's, 16-byte
// values or 8-byte ones, each its own type, so that a loop over rows asks none of that per row.
template <typename Run>
void WithLoaders(const Operand& a, const Operand& b, Run&& run) {
  auto wide = [](const Operand& o) {
    return [p = o.values](int64_t i) { return Load(p + i * 16); };
  };
  auto narrow = [](const Operand& o) {
    return [p = o.values](int64_t i) { return Load64(p + i * 8); };
  };
  auto scalar = [](const Operand& o) { return [v = o.scalar](int64_t) { return v; }; };
  auto with_left = [&](auto left) {
    if (b.values == nullptr) {
      run(left, scalar(b));
    } else if (b.width == 8) {
      run(left, narrow(b));
    } else {
      run(left, wide(b));
    }
  };
  if (a.values == nullptr) {
    with_left(scalar(a));
  } else if (a.width == 8) {
    with_left(narrow(a));
  } else {
    with_left(wide(a));
  }
}

// a * 10^shift / b, truncated toward zero as Arrow's decimal division is; false (and 0) where b
// is zero or the scaled dividend passes 128 bits, which a value within its type's digits never
// does (one past them, from an untrusted file, may).
inline bool Quotient(Int128 a, Int128 factor, Int128 b, Int128* q) {
  Int128 scaled;
  if (b == 0 || __builtin_mul_overflow(a, factor, &scaled)) {
    *q = 0;
    return false;
  }
  *q = scaled / b;
  return true;
}

arrow::Status ExecDivide(cp::KernelContext*, const cp::ExecSpan& batch, cp::ExecResult* out) {
  const Operand a(batch[0]), b(batch[1]);
  const Int128 factor =
      PowerOfTen(DividendShift(static_cast<const arrow::DecimalType&>(*batch[0].type()),
                               static_cast<const arrow::DecimalType&>(*batch[1].type())));
  arrow::ArraySpan* result = out->array_span_mutable();
  uint8_t* dest = result->buffers[1].data + result->offset * 16;
  bool failed = false;
  for (int64_t i = 0; i < batch.length; ++i) {
    Int128 q;
    failed |= !Quotient(a.At(i), factor, b.At(i), &q);
    Store(dest + i * 16, q);
  }
  if (failed) {
    // A null slot's bytes are arbitrary: only a valid row's zero divisor or overflow is an error.
    for (int64_t i = 0; i < batch.length; ++i) {
      Int128 q;
      if (!a.Valid(i) || !b.Valid(i) || Quotient(a.At(i), factor, b.At(i), &q)) continue;
      if (b.At(i) == 0) return arrow::Status::Invalid("divide by zero");
      return arrow::Status::Invalid("overflow in decimal divide of ",
                                    ToDecimal(a.At(i)).ToIntegerString(), " and ",
                                    ToDecimal(b.At(i)).ToIntegerString(), " (unscaled)");
    }
  }
  return arrow::Status::OK();
}

template <Op kOp>
arrow::Status ExecArithmetic(cp::KernelContext*, const cp::ExecSpan& batch, cp::ExecResult* out) {
  const Operand a(batch[0]), b(batch[1]);
  arrow::ArraySpan* result = out->array_span_mutable();
  uint8_t* dest = result->buffers[1].data + result->offset * 16;
  const int64_t n = batch.length;
  bool overflow = false;
  // One loop per operand shape, so that no row asks whether an operand is a scalar.
  auto run = [&](auto left, auto right) {
    for (int64_t i = 0; i < n; ++i) {
      Int128 v;
      overflow |= Apply<kOp>(left(i), right(i), &v);
      Store(dest + i * 16, v);
    }
  };
  WithLoaders(a, b, run);
  if (overflow) {
    // A null slot's bytes are arbitrary: only a valid row's overflow is an error.
    for (int64_t i = 0; i < n; ++i) {
      Int128 v;
      if (a.Valid(i) && b.Valid(i) && Apply<kOp>(a.At(i), b.At(i), &v)) {
        return arrow::Status::Invalid("overflow in decimal ", OpName(kOp), " of ",
                                      ToDecimal(a.At(i)).ToIntegerString(), " and ",
                                      ToDecimal(b.At(i)).ToIntegerString(), " (unscaled)");
      }
    }
  }
  return arrow::Status::OK();
}

template <Op kOp>
arrow::Status AddArithmetic(cp::FunctionRegistry* registry, const char* name) {
  auto function = std::make_shared<cp::ScalarFunction>(
      name, cp::Arity::Binary(),
      cp::FunctionDoc(std::string("decimal128 ") + OpName(kOp),
                      "Arrow's checked decimal arithmetic on native 128-bit integers.",
                      {"x", "y"}));
  for (const auto left : {arrow::Type::DECIMAL128, arrow::Type::DECIMAL64}) {
    for (const auto right : {arrow::Type::DECIMAL128, arrow::Type::DECIMAL64}) {
      cp::ScalarKernel kernel({cp::InputType(left), cp::InputType(right)},
                              cp::OutputType(ResolveArithmetic<kOp>),
                              kOp == Op::kDivide ? cp::ArrayKernelExec(ExecDivide)
                                                 : cp::ArrayKernelExec(ExecArithmetic<kOp>));
      ARROW_RETURN_NOT_OK(function->AddKernel(std::move(kernel)));
    }
  }
  return registry->AddFunction(std::move(function));
}

// --- comparisons ---

enum class Cmp { kEqual, kNotEqual, kLess, kLessEqual, kGreater, kGreaterEqual };

template <Cmp kCmp>
bool Compare(Int128 a, Int128 b) {
  if constexpr (kCmp == Cmp::kEqual) return a == b;
  if constexpr (kCmp == Cmp::kNotEqual) return a != b;
  if constexpr (kCmp == Cmp::kLess) return a < b;
  if constexpr (kCmp == Cmp::kLessEqual) return a <= b;
  if constexpr (kCmp == Cmp::kGreater) return a > b;
  return a >= b;
}

// Operands of one scale (the rewrite widens the other first), so unscaled values compare.
template <Cmp kCmp>
arrow::Status ExecCompare(cp::KernelContext*, const cp::ExecSpan& batch, cp::ExecResult* out) {
  const Operand a(batch[0]), b(batch[1]);
  arrow::ArraySpan* result = out->array_span_mutable();
  WithLoaders(a, b, [&](auto left, auto right) {
    int64_t i = 0;
    arrow::internal::GenerateBitsUnrolled(result->buffers[1].data, result->offset, batch.length,
                                          [&] {
                                            const bool v = Compare<kCmp>(left(i), right(i));
                                            ++i;
                                            return v;
                                          });
  });
  return arrow::Status::OK();
}

template <Cmp kCmp>
arrow::Status AddCompare(cp::FunctionRegistry* registry, const char* name) {
  auto function = std::make_shared<cp::ScalarFunction>(
      name, cp::Arity::Binary(),
      cp::FunctionDoc("decimal128 comparison of one scale",
                      "Arrow's decimal comparison on native 128-bit integers.", {"x", "y"}));
  for (const auto left : {arrow::Type::DECIMAL128, arrow::Type::DECIMAL64}) {
    for (const auto right : {arrow::Type::DECIMAL128, arrow::Type::DECIMAL64}) {
      ARROW_RETURN_NOT_OK(function->AddKernel({cp::InputType(left), cp::InputType(right)},
                                              arrow::boolean(), ExecCompare<kCmp>));
    }
  }
  return registry->AddFunction(std::move(function));
}

// --- a cast to the same or a larger scale ---

// The digits an integer type holds: the precision of Arrow's implicit cast of it to decimal128.
int32_t IntegerDigits(arrow::Type::type id) {
  switch (id) {
    case arrow::Type::INT8:
    case arrow::Type::UINT8:
      return 3;
    case arrow::Type::INT16:
    case arrow::Type::UINT16:
      return 5;
    case arrow::Type::INT32:
    case arrow::Type::UINT32:
      return 10;
    case arrow::Type::INT64:
      return 19;
    default:
      return 20;  // uint64
  }
}

// The scale of a decimal128 or an integer type (0); nullopt for other types.
std::optional<int32_t> ScaleOf(const arrow::DataType& type) {
  if (IsDecimal(type.id())) return static_cast<const arrow::DecimalType&>(type).scale();
  if (arrow::is_integer(type.id())) return 0;
  return std::nullopt;
}

// Whether a decimal128 or an integer `from` widens to decimal128 `to` by at most 38 places (a
// negative scale could ask for more, which no 128-bit multiplier holds).
bool ScalesUp(const arrow::DataType& from, const arrow::DataType& to) {
  const auto scale = ScaleOf(from);
  if (!scale || to.id() != arrow::Type::DECIMAL128) return false;
  const int32_t shift = static_cast<const arrow::Decimal128Type&>(to).scale() - *scale;
  return shift >= 0 && shift <= kMaxPrecision;
}

struct FitState : cp::KernelState {
  std::shared_ptr<arrow::DataType> to;
};

arrow::Result<std::unique_ptr<cp::KernelState>> InitFit(cp::KernelContext*,
                                                        const cp::KernelInitArgs& args) {
  if (args.options == nullptr) {
    return arrow::Status::Invalid("internal: ", kDecimalFitFunction, " without cast options");
  }
  const auto& options = static_cast<const cp::CastOptions&>(*args.options);
  if (options.to_type.type == nullptr || args.inputs.size() != 1 ||
      !ScalesUp(*args.inputs[0], *options.to_type)) {
    return arrow::Status::TypeError("internal: ", kDecimalFitFunction, " of ",
                                    args.inputs.empty() ? "nothing" : args.inputs[0].ToString(),
                                    " to ", options.to_type.ToString());
  }
  auto state = std::make_unique<FitState>();
  state->to = options.to_type.GetSharedPtr();
  return state;
}

arrow::Result<arrow::TypeHolder> ResolveFit(cp::KernelContext* ctx,
                                            const std::vector<arrow::TypeHolder>&) {
  return arrow::TypeHolder(static_cast<const FitState*>(ctx->state())->to);
}

// `value` of type `from` (a decimal128 at its scale, or an integer) has too many digits for `to`.
arrow::Status FitError(Int128 value, const arrow::DataType& from, const arrow::DataType& to) {
  if (!IsDecimal(from.id())) {
    return arrow::Status::Invalid("value ", ToDecimal(value).ToString(0), " of type ",
                                  from.ToString(), " does not fit in ", to.ToString());
  }
  const auto& t = static_cast<const arrow::DecimalType&>(from);
  return arrow::Status::Invalid("decimal value ", ToDecimal(value).ToString(t.scale()),
                                " does not fit in ", to.ToString());
}

// Each value (`load(i)`, as a 128-bit integer) times 10^shift into a new buffer, where it must
// stay under `limit` (10^p of the target type); the validity bitmap is shared where the input
// starts at its buffers' start.
template <typename LoadAt>
arrow::Status ExecRescale(cp::KernelContext* ctx, const arrow::ArraySpan& a, LoadAt load,
                          int32_t shift, Int128 limit, const std::shared_ptr<arrow::DataType>& to,
                          cp::ExecResult* out) {
  const Int128 factor = PowerOfTen(shift);
  ARROW_ASSIGN_OR_RAISE(auto buffer, arrow::AllocateBuffer(a.length * 16, ctx->memory_pool()));
  uint8_t* into = buffer->mutable_data();
  const bool nulls = a.GetNullCount() != 0;
  bool out_of_range = false;
  for (int64_t i = 0; i < a.length; ++i) {
    Int128 r;
    const bool wrapped = __builtin_mul_overflow(load(i), factor, &r);
    out_of_range |= (wrapped || r >= limit || r <= -limit) && (!nulls || a.IsValid(i));
    Store(into + i * 16, r);
  }
  if (out_of_range) {
    for (int64_t i = 0; i < a.length; ++i) {
      const Int128 v = load(i);
      Int128 r;
      if ((__builtin_mul_overflow(v, factor, &r) || r >= limit || r <= -limit) && a.IsValid(i)) {
        return FitError(v, *a.type, *to);
      }
    }
  }
  std::shared_ptr<arrow::Buffer> validity;
  if (nulls) {
    if (a.offset == 0) {
      validity = a.GetBuffer(0);
    } else {
      ARROW_ASSIGN_OR_RAISE(
          validity,
          arrow::internal::CopyBitmap(ctx->memory_pool(), a.buffers[0].data, a.offset, a.length));
    }
  }
  out->value = arrow::ArrayData::Make(to, a.length, {std::move(validity), std::move(buffer)},
                                      nulls ? a.GetNullCount() : 0);
  return arrow::Status::OK();
}

// An integer array of type T as decimal128 `to`: each value times 10^(scale of `to`).
template <typename T>
arrow::Status ExecIntegerFit(cp::KernelContext* ctx, const arrow::ArraySpan& a, Int128 limit,
                             const std::shared_ptr<arrow::DataType>& to, cp::ExecResult* out) {
  const T* values = a.GetValues<T>(1);
  return ExecRescale(
      ctx, a, [values](int64_t i) { return static_cast<Int128>(values[i]); },
      static_cast<const arrow::Decimal128Type&>(*to).scale(), limit, to, out);
}

arrow::Status ExecFit(cp::KernelContext* ctx, const cp::ExecSpan& batch, cp::ExecResult* out) {
  const auto& to = static_cast<const FitState*>(ctx->state())->to;
  const int32_t to_precision = static_cast<const arrow::Decimal128Type&>(*to).precision();
  const Int128 limit = PowerOfTen(to_precision);
  if (!batch[0].is_array()) {
    // Arrow runs a unary kernel on a scalar as an array of one.
    return arrow::Status::Invalid("internal: ", kDecimalFitFunction, " of a scalar");
  }
  const arrow::ArraySpan& a = batch[0].array;
  switch (a.type->id()) {
    case arrow::Type::INT8:
      return ExecIntegerFit<int8_t>(ctx, a, limit, to, out);
    case arrow::Type::INT16:
      return ExecIntegerFit<int16_t>(ctx, a, limit, to, out);
    case arrow::Type::INT32:
      return ExecIntegerFit<int32_t>(ctx, a, limit, to, out);
    case arrow::Type::INT64:
      return ExecIntegerFit<int64_t>(ctx, a, limit, to, out);
    case arrow::Type::UINT8:
      return ExecIntegerFit<uint8_t>(ctx, a, limit, to, out);
    case arrow::Type::UINT16:
      return ExecIntegerFit<uint16_t>(ctx, a, limit, to, out);
    case arrow::Type::UINT32:
      return ExecIntegerFit<uint32_t>(ctx, a, limit, to, out);
    case arrow::Type::UINT64:
      return ExecIntegerFit<uint64_t>(ctx, a, limit, to, out);
    default:
      break;
  }
  const auto& from = static_cast<const arrow::DecimalType&>(*batch[0].type());
  const int32_t from_precision = from.precision();
  const int32_t shift = static_cast<const arrow::Decimal128Type&>(*to).scale() - from.scale();
  if (a.type->id() == arrow::Type::DECIMAL64) {
    // Widened into a new buffer, times 10^shift (which may be 1). As for a decimal128 below, a
    // cast that neither scales nor narrows trusts the declared digits and checks none (a file's
    // values past them then read as they do without the cast).
    const uint8_t* values = a.buffers[1].data + a.offset * 8;
    const bool checks = shift > 0 || to_precision < from_precision;
    return ExecRescale(
        ctx, a, [values](int64_t i) { return Load64(values + i * 8); }, shift,
        checks ? limit : PowerOfTen(kMaxPrecision), to, out);
  }
  if (shift > 0) {
    const uint8_t* values = a.buffers[1].data + a.offset * 16;
    return ExecRescale(
        ctx, a, [values](int64_t i) { return Load(values + i * 16); }, shift, limit, to, out);
  }
  if (to_precision < from_precision) {
    const uint8_t* values = a.buffers[1].data + a.offset * 16;
    const bool nulls = a.GetNullCount() != 0;
    bool out_of_range = false;
    for (int64_t i = 0; i < a.length; ++i) {
      const Int128 v = Load(values + i * 16);
      out_of_range |= (v >= limit || v <= -limit) && (!nulls || a.IsValid(i));
    }
    if (out_of_range) {
      for (int64_t i = 0; i < a.length; ++i) {
        const Int128 v = Load(values + i * 16);
        if ((v >= limit || v <= -limit) && a.IsValid(i)) return FitError(v, from, *to);
      }
    }
  }
  auto data = a.ToArrayData();
  data->type = to;
  out->value = std::move(data);
  return arrow::Status::OK();
}

arrow::Status AddFit(cp::FunctionRegistry* registry) {
  auto function = std::make_shared<cp::ScalarFunction>(
      kDecimalFitFunction, cp::Arity::Unary(),
      cp::FunctionDoc("decimal128 or integer cast to decimal128 of the same or a larger scale",
                      "Checks each value's digits; of one scale, shares the input's buffers.",
                      {"x"}, "CastOptions", /*options_required=*/true));
  for (const auto id :
       {arrow::Type::DECIMAL128, arrow::Type::DECIMAL64, arrow::Type::INT8, arrow::Type::INT16,
        arrow::Type::INT32, arrow::Type::INT64, arrow::Type::UINT8, arrow::Type::UINT16,
        arrow::Type::UINT32, arrow::Type::UINT64}) {
    cp::ScalarKernel kernel({cp::InputType(id)}, cp::OutputType(ResolveFit), ExecFit, InitFit);
    kernel.null_handling = cp::NullHandling::COMPUTED_NO_PREALLOCATE;
    kernel.mem_allocation = cp::MemAllocation::NO_PREALLOCATE;
    kernel.can_write_into_slices = false;
    ARROW_RETURN_NOT_OK(function->AddKernel(std::move(kernel)));
  }
  return registry->AddFunction(std::move(function));
}

// --- sum ---

const cp::ScalarAggregateOptions& SumOptions(const cp::FunctionOptions* options) {
  static const cp::ScalarAggregateOptions kDefaults = cp::ScalarAggregateOptions::Defaults();
  return options != nullptr ? static_cast<const cp::ScalarAggregateOptions&>(*options) : kDefaults;
}

arrow::Result<arrow::TypeHolder> ResolveSum(cp::KernelContext*,
                                            const std::vector<arrow::TypeHolder>& types) {
  const auto& t = static_cast<const arrow::DecimalType&>(*types[0].type);
  return arrow::TypeHolder(arrow::decimal128(kMaxPrecision, t.scale()));
}

// One running sum per group (a scalar aggregate has one group).
struct SumState : cp::KernelState {
  cp::ScalarAggregateOptions options;
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

  // The value at `i` of values of kWidth bytes each (16, or 8 for decimal64).
  template <int kWidth>
  static Int128 Value(const uint8_t* values, int64_t i) {
    if constexpr (kWidth == 8) {
      return Load64(values + i * 8);
    } else {
      return Load(values + i * 16);
    }
  }

  template <int kWidth>
  void ConsumeFewGroups(const arrow::ArraySpan& a, int64_t length, const uint32_t* groups) {
    if (options.min_count <= 1) {
      ConsumeFewGroupsOf<kWidth, false>(a, length, groups);
    } else {
      ConsumeFewGroupsOf<kWidth, true>(a, length, groups);
    }
  }

  template <int kWidth, bool kCountRows>
  void ConsumeFewGroupsOf(const arrow::ArraySpan& a, int64_t length, const uint32_t* groups) {
    // 8-byte values add in 64 bits, a lane of which overflows only past 9.2e18; then the batch is
    // added again in 128 bits.
    if constexpr (kWidth == 8) {
      if (ConsumeFewGroupsIn<int64_t, kWidth, kCountRows>(a, length, groups)) return;
    }
    ConsumeFewGroupsIn<Int128, kWidth, kCountRows>(a, length, groups);
  }

  // ConsumeFewGroups with lanes of type Acc; false, having added nothing, where an int64 lane
  // overflowed. Without kCountRows, a group's count grows by 1 for a batch in which it saw a
  // valid value, which is all that Valid asks of it where min_count is at most 1.
  template <typename Acc, int kWidth, bool kCountRows>
  bool ConsumeFewGroupsIn(const arrow::ArraySpan& a, int64_t length, const uint32_t* groups) {
    static_assert(kFewGroups <= 32, "a group's bit in `seen` is 1u << g");
    const uint8_t* values = a.buffers[1].data + a.offset * kWidth;
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
      const Acc v = valid ? static_cast<Acc>(Value<kWidth>(values, i)) : 0;
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
      const Operand s(input);
      for (int64_t i = 0; i < length; ++i) {
        const uint32_t g = groups != nullptr ? groups[i] : 0;
        if (!s.scalar_valid) {
          saw_null[g] = 1;
        } else {
          Add(g, s.scalar, 1);
        }
      }
      return;
    }
    if (input.array.type->id() == arrow::Type::DECIMAL64) {
      ConsumeArray<8>(input.array, length, groups);
    } else {
      ConsumeArray<16>(input.array, length, groups);
    }
  }

  template <int kWidth>
  void ConsumeArray(const arrow::ArraySpan& a, int64_t length, const uint32_t* groups) {
    const uint8_t* values = a.buffers[1].data + a.offset * kWidth;
    if (a.GetNullCount() == 0) {
      if (groups == nullptr) {
        Int128 total = 0;
        for (int64_t i = 0; i < length; ++i) {
          overflow |= __builtin_add_overflow(total, Value<kWidth>(values, i), &total);
        }
        Add(0, total, length);
      } else if (FewGroups(length)) {
        ConsumeFewGroups<kWidth>(a, length, groups);
      } else {
        for (int64_t i = 0; i < length; ++i) Add(groups[i], Value<kWidth>(values, i), 1);
      }
      return;
    }
    if (options.skip_nulls && groups != nullptr && FewGroups(length)) {
      ConsumeFewGroups<kWidth>(a, length, groups);
      return;
    }
    if (options.skip_nulls && groups != nullptr) {
      // Without a branch on each row's validity: a NULL adds 0 and counts 0. (Rows that a filter
      // marked as dropped reach the sum as NULLs, one or two in a hundred: exec/kept_rows.h.)
      const uint8_t* validity = a.buffers[0].data;
      for (int64_t i = 0; i < length; ++i) {
        const bool valid = arrow::bit_util::GetBit(validity, a.offset + i);
        const Int128 v = Value<kWidth>(values, i);
        Add(groups[i], valid ? v : 0, valid ? 1 : 0);
      }
      return;
    }
    for (int64_t i = 0; i < length; ++i) {
      const uint32_t g = groups != nullptr ? groups[i] : 0;
      if (a.IsValid(i)) {
        Add(g, Value<kWidth>(values, i), 1);
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

  arrow::Status CheckOverflow() const {
    static const Int128 kLimit = PowerOfTen(kMaxPrecision);
    bool out_of_range = overflow;
    for (const Int128 s : sums) out_of_range |= s >= kLimit || s <= -kLimit;
    if (out_of_range) {
      return arrow::Status::Invalid("overflow in sum: the total does not fit in ",
                                    out_type->ToString());
    }
    return arrow::Status::OK();
  }

  bool Valid(size_t g) const {
    if (!options.skip_nulls && saw_null[g]) return false;
    return counts[g] >= static_cast<int64_t>(options.min_count);
  }
};

arrow::Result<std::unique_ptr<cp::KernelState>> InitSum(cp::KernelContext*,
                                                        const cp::KernelInitArgs& args) {
  auto state = std::make_unique<SumState>();
  state->options = SumOptions(args.options);
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
  } else {
    *out = std::make_shared<arrow::Decimal128Scalar>(ToDecimal(s->sums[0]), s->out_type);
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
  ARROW_ASSIGN_OR_RAISE(auto values, arrow::AllocateBuffer(n * 16, ctx->memory_pool()));
  ARROW_ASSIGN_OR_RAISE(auto validity, arrow::AllocateEmptyBitmap(n, ctx->memory_pool()));
  int64_t nulls = 0;
  for (int64_t g = 0; g < n; ++g) {
    const bool valid = s->Valid(static_cast<size_t>(g));
    Store(values->mutable_data() + g * 16, valid ? s->sums[static_cast<size_t>(g)] : 0);
    if (valid) {
      arrow::bit_util::SetBit(validity->mutable_data(), g);
    } else {
      ++nulls;
    }
  }
  *out = arrow::ArrayData::Make(s->out_type, n, {std::move(validity), std::move(values)}, nulls);
  return arrow::Status::OK();
}

arrow::Status AddSum(cp::FunctionRegistry* registry) {
  const cp::ScalarAggregateOptions* defaults = &SumOptions(nullptr);
  const cp::FunctionDoc doc("decimal128 sum",
                            "Arrow's decimal sum on native 128-bit integers, with overflow "
                            "checks.",
                            {"x"}, "ScalarAggregateOptions");
  auto scalar = std::make_shared<cp::ScalarAggregateFunction>(kDecimalSumFunction,
                                                              cp::Arity::Unary(), doc, defaults);
  auto hash = std::make_shared<cp::HashAggregateFunction>(
      std::string("hash_") + kDecimalSumFunction, cp::Arity::Binary(), doc, defaults);
  for (const auto id : {arrow::Type::DECIMAL128, arrow::Type::DECIMAL64}) {
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

// --- the executor's rewrite ---

std::optional<Op> ArithmeticOp(const std::string& name) {
  if (name == "add" || name == "add_checked") return Op::kAdd;
  if (name == "subtract" || name == "subtract_checked") return Op::kSubtract;
  if (name == "multiply" || name == "multiply_checked") return Op::kMultiply;
  if (name == "divide" || name == "divide_checked") return Op::kDivide;
  return std::nullopt;
}

// Arrow's comparison functions and ours, in Cmp's order.
constexpr const char* kArrowComparisons[] = {"equal",      "not_equal", "less",
                                             "less_equal", "greater",   "greater_equal"};
constexpr const char* kComparisons[] = {kDecimalEqualFunction,   kDecimalNotEqualFunction,
                                        kDecimalLessFunction,    kDecimalLessEqualFunction,
                                        kDecimalGreaterFunction, kDecimalGreaterEqualFunction};

std::optional<size_t> ComparisonIndex(const std::string& name) {
  for (size_t i = 0; i < std::size(kArrowComparisons); ++i) {
    if (name == kArrowComparisons[i]) return i;
  }
  return std::nullopt;
}

const char* FunctionFor(Op op) {
  return op == Op::kAdd        ? kDecimalAddFunction
         : op == Op::kSubtract ? kDecimalSubtractFunction
         : op == Op::kMultiply ? kDecimalMultiplyFunction
                               : kDecimalDivideFunction;
}

}  // namespace

arrow::Status RegisterDecimalKernels(cp::FunctionRegistry* registry) {
  ARROW_RETURN_NOT_OK(AddArithmetic<Op::kAdd>(registry, kDecimalAddFunction));
  ARROW_RETURN_NOT_OK(AddArithmetic<Op::kSubtract>(registry, kDecimalSubtractFunction));
  ARROW_RETURN_NOT_OK(AddArithmetic<Op::kMultiply>(registry, kDecimalMultiplyFunction));
  ARROW_RETURN_NOT_OK(AddArithmetic<Op::kDivide>(registry, kDecimalDivideFunction));
  ARROW_RETURN_NOT_OK(AddCompare<Cmp::kEqual>(registry, kDecimalEqualFunction));
  ARROW_RETURN_NOT_OK(AddCompare<Cmp::kNotEqual>(registry, kDecimalNotEqualFunction));
  ARROW_RETURN_NOT_OK(AddCompare<Cmp::kLess>(registry, kDecimalLessFunction));
  ARROW_RETURN_NOT_OK(AddCompare<Cmp::kLessEqual>(registry, kDecimalLessEqualFunction));
  ARROW_RETURN_NOT_OK(AddCompare<Cmp::kGreater>(registry, kDecimalGreaterFunction));
  ARROW_RETURN_NOT_OK(AddCompare<Cmp::kGreaterEqual>(registry, kDecimalGreaterEqualFunction));
  ARROW_RETURN_NOT_OK(AddFit(registry));
  return AddSum(registry);
}

cp::Expression WithDecimalKernels(const cp::Expression& expression, const arrow::Schema& schema) {
  const cp::Expression::Call* call = expression.call();
  if (call == nullptr) return expression;
  std::vector<cp::Expression> args;
  args.reserve(call->arguments.size());
  for (const auto& a : call->arguments) args.push_back(WithDecimalKernels(a, schema));
  std::string name = call->function_name;
  if (name == "cast" && args.size() == 1 && call->options != nullptr) {
    // A checked cast between decimal128s of one scale only checks digits; to a larger scale, or
    // from an integer (q14's quantity * list_price), it also multiplies by a power of ten.
    const auto& options = static_cast<const cp::CastOptions&>(*call->options);
    auto from = args[0].Bind(schema);
    if (!options.allow_decimal_truncate && options.to_type.type != nullptr && from.ok() &&
        ScalesUp(*from->type(), *options.to_type)) {
      return cp::call(kDecimalFitFunction, std::move(args), call->options);
    }
    return cp::call(std::move(name), std::move(args), call->options);
  }
  const auto op = ArithmeticOp(name);
  const auto comparison = ComparisonIndex(name);
  if ((!op && !comparison) || args.size() != 2) {
    return cp::call(std::move(name), std::move(args), call->options);
  }
  // Replaced only where the operands bind to decimal128s, or one to an integer (q14's
  // quantity * list_price), and the result type is the one Arrow's function gives.
  auto l = args[0].Bind(schema);
  auto r = args[1].Bind(schema);
  auto original = expression.Bind(schema);
  if (!l.ok() || !r.ok() || !original.ok()) {
    return cp::call(std::move(name), std::move(args), call->options);
  }
  std::shared_ptr<arrow::DataType> types[2] = {l->type()->GetSharedPtr(),
                                               r->type()->GetSharedPtr()};
  // Which operands are computed by kDecimalFitFunction: an integer, taken as Arrow's implicit
  // cast takes it (decimal128 of as many digits as its type holds, scale 0), and the operand
  // of the smaller scale widened below.
  bool fitted[2] = {false, false};
  for (int i = 0; i < 2; ++i) {
    if (!arrow::is_integer(types[i]->id())) continue;
    if (!IsDecimal(types[1 - i]->id())) break;
    types[i] = arrow::decimal128(IntegerDigits(types[i]->id()), 0);
    fitted[i] = true;
  }
  if (!IsDecimal(types[0]->id()) || !IsDecimal(types[1]->id())) {
    return cp::call(std::move(name), std::move(args), call->options);
  }
  const auto* lt = static_cast<const arrow::DecimalType*>(types[0].get());
  const auto* rt = static_cast<const arrow::DecimalType*>(types[1].get());
  if ((op == Op::kAdd || op == Op::kSubtract || comparison) && lt->scale() != rt->scale()) {
    // As Arrow does: the operand of the smaller scale is widened to the larger, with as many
    // more digits.
    const int low = lt->scale() < rt->scale() ? 0 : 1;
    const auto* from = low == 0 ? lt : rt;
    const int32_t shift = std::max(lt->scale(), rt->scale()) - from->scale();
    if (from->precision() + shift > kMaxPrecision) {
      return cp::call(std::move(name), std::move(args), call->options);
    }
    types[low] = arrow::decimal128(from->precision() + shift, from->scale() + shift);
    fitted[low] = true;
  }
  std::vector<cp::Expression> operands = args;
  for (int i = 0; i < 2; ++i) {
    if (fitted[i]) {
      operands[i] = cp::call(kDecimalFitFunction, {args[i]}, cp::CastOptions::Safe(types[i]));
    }
  }
  if (comparison) {
    return cp::call(kComparisons[*comparison], std::move(operands));
  }
  auto ours = ResultType(*op, *types[0], *types[1]);
  if (ours.ok() && (*ours)->Equals(*original->type())) {
    return cp::call(FunctionFor(*op), std::move(operands));
  }
  return cp::call(std::move(name), std::move(args), call->options);
}

}  // namespace sluice::plan
