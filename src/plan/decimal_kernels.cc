#include "plan/decimal_kernels.h"

#include <arrow/array/array_decimal.h>
#include <arrow/buffer.h>
#include <arrow/compute/api_scalar.h>
#include <arrow/compute/cast.h>
#include <arrow/compute/function.h>
#include <arrow/compute/kernel.h>
#include <arrow/scalar.h>
#include <arrow/type.h>
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

#include "plan/int128.h"

namespace sluice::plan {

namespace {

namespace cp = arrow::compute;

using int128::FromDecimal;
using int128::Int128;
using int128::Load;
using int128::PowerOfTen;
using int128::Store;
using int128::ToDecimal;

constexpr int32_t kMaxPrecision = 38;

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
  return AddFit(registry);
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
