#include "exec/group_combine.h"

#include <arrow/api.h>
#include <arrow/util/bit_util.h>
#include <arrow/util/decimal.h>

#include "plan/exact_sum.h"

namespace sluice::exec {

namespace cp = arrow::compute;

namespace {

bool IsSum(const std::string& f) {
  return f == "hash_sum" || f == std::string("hash_") + plan::kExactSumFunction;
}

// NULL for a group without non-NULL values, as SQL wants and a NULL-skipping combine assumes.
bool SkipsNulls(const cp::FunctionOptions* options) {
  if (options == nullptr) return true;  // the default: skip_nulls, min_count 1
  const auto* o = dynamic_cast<const cp::ScalarAggregateOptions*>(options);
  return o != nullptr && o->skip_nulls && o->min_count <= 1;
}

// a + b, row by row, a NULL one counting for nothing (NULL where both are).
template <typename T, typename Add>
arrow::Result<arrow::Datum> SumRows(const arrow::ArrayData& a, const arrow::ArrayData& b,
                                    cp::ExecContext* ctx, Add add) {
  const int64_t n = a.length;
  ARROW_ASSIGN_OR_RAISE(auto values, arrow::AllocateBuffer(n * sizeof(T), ctx->memory_pool()));
  ARROW_ASSIGN_OR_RAISE(auto validity, arrow::AllocateBitmap(n, ctx->memory_pool()));
  const T* x = a.GetValues<T>(1);
  const T* y = b.GetValues<T>(1);
  T* out = reinterpret_cast<T*>(values->mutable_data());
  int64_t nulls = 0;
  for (int64_t i = 0; i < n; ++i) {
    const bool xv = a.IsValid(i), yv = b.IsValid(i);
    out[i] = xv && yv ? add(x[i], y[i]) : (xv ? x[i] : (yv ? y[i] : T{}));
    arrow::bit_util::SetBitTo(validity->mutable_data(), i, xv || yv);
    nulls += (xv || yv) ? 0 : 1;
  }
  return arrow::ArrayData::Make(
      a.type, n, {nulls > 0 ? std::move(validity) : nullptr, std::move(values)}, nulls);
}

// SumRows of integers (or decimal128's unscaled values), whose overflow is an error naming
// the sum `label`.
template <typename T>
arrow::Result<arrow::Datum> CheckedSumRows(const arrow::ArrayData& a, const arrow::ArrayData& b,
                                           cp::ExecContext* ctx, const std::string& label) {
  bool overflow = false;
  ARROW_ASSIGN_OR_RAISE(auto sum, SumRows<T>(a, b, ctx, [&overflow](T p, T q) {
                          T r;
                          overflow |= __builtin_add_overflow(p, q, &r);
                          return r;
                        }));
  if (overflow) return plan::SumOverflow(label, *a.type);
  return sum;
}

}  // namespace

bool CombinableAggregate(const std::string& function, const cp::FunctionOptions* options,
                         const arrow::DataType& output_type) {
  if (function == "hash_count" || function == "hash_count_all") return true;
  if (IsSum(function)) {
    // Decimals only from our sum, whose overflow rule CombineFinished repeats. (Arrow's
    // hash_sum of integers wraps; combined, they fail instead, as our sum does.)
    const auto id = output_type.id();
    return SkipsNulls(options) &&
           (id == arrow::Type::INT64 || id == arrow::Type::UINT64 || id == arrow::Type::DOUBLE ||
            (id == arrow::Type::DECIMAL128 && function != "hash_sum"));
  }
  if (function == "hash_min" || function == "hash_max") {
    // Types that less and greater order as the kernels do (floating point's NaN aside).
    const auto id = output_type.id();
    const bool ordered = arrow::is_integer(id) || id == arrow::Type::DATE32 ||
                         id == arrow::Type::DATE64 || id == arrow::Type::TIMESTAMP ||
                         id == arrow::Type::DECIMAL128 || id == arrow::Type::STRING ||
                         id == arrow::Type::BINARY || id == arrow::Type::LARGE_STRING ||
                         id == arrow::Type::LARGE_BINARY;
    return SkipsNulls(options) && ordered;
  }
  return false;
}

arrow::Result<arrow::Datum> CombineFinished(const std::string& function,
                                            const cp::FunctionOptions* options,
                                            const arrow::Datum& a, const arrow::Datum& b,
                                            cp::ExecContext* ctx) {
  if (!a.is_array() || !b.is_array() || a.length() != b.length() || !a.type()->Equals(*b.type())) {
    return arrow::Status::Invalid("internal: combining ", function, " of unlike arrays");
  }
  const arrow::ArrayData& x = *a.array();
  const arrow::ArrayData& y = *b.array();
  if (function == "hash_count" || function == "hash_count_all" || IsSum(function)) {
    // As our sum checks its total: an integer total must fit its type (counts never come near).
    const auto* exact = dynamic_cast<const plan::ExactSumOptions*>(options);
    const std::string label = exact != nullptr ? exact->label : std::string("sum");
    switch (a.type()->id()) {
      case arrow::Type::INT64:
        return CheckedSumRows<int64_t>(x, y, ctx, label);
      case arrow::Type::UINT64:
        return CheckedSumRows<uint64_t>(x, y, ctx, label);
      case arrow::Type::DOUBLE:
        return SumRows<double>(x, y, ctx, [](double p, double q) { return p + q; });
      case arrow::Type::DECIMAL128: {
        // Within the type's 38 digits.
        ARROW_ASSIGN_OR_RAISE(arrow::Datum sum, CheckedSumRows<__int128>(x, y, ctx, label));
        const __int128 e19 = static_cast<__int128>(10'000'000'000'000'000'000ull);
        const __int128 limit = e19 * e19;  // 10^38
        const arrow::ArrayData& out = *sum.array();
        const __int128* v = out.GetValues<__int128>(1);
        for (int64_t i = 0; i < out.length; ++i) {
          if (out.IsValid(i) && (v[i] >= limit || v[i] <= -limit)) {
            return plan::SumOverflow(label, *a.type());
          }
        }
        return sum;
      }
      default:
        break;
    }
    return arrow::Status::Invalid("internal: combining ", function, " of ", a.type()->ToString());
  }
  if (function == "hash_min" || function == "hash_max") {
    // b where a is NULL, or b is valid and beyond a the function's way; else a.
    ARROW_ASSIGN_OR_RAISE(
        arrow::Datum beyond,
        cp::CallFunction(function == "hash_min" ? "less" : "greater", {b, a}, ctx));
    ARROW_ASSIGN_OR_RAISE(arrow::Datum a_null, cp::CallFunction("is_null", {a}, ctx));
    ARROW_ASSIGN_OR_RAISE(arrow::Datum take_b,
                          cp::CallFunction("or_kleene", {a_null, beyond}, ctx));
    ARROW_ASSIGN_OR_RAISE(arrow::Datum b_valid, cp::CallFunction("is_valid", {b}, ctx));
    ARROW_ASSIGN_OR_RAISE(take_b, cp::CallFunction("and_kleene", {take_b, b_valid}, ctx));
    return cp::CallFunction("if_else", {take_b, b, a}, ctx);
  }
  return arrow::Status::Invalid("internal: combining ", function);
}

}  // namespace sluice::exec
