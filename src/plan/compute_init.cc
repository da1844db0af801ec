#include "plan/compute_init.h"

#include <arrow/compute/api.h>
#include <arrow/compute/initialize.h>
#include <arrow/util/bit_util.h>

#include <algorithm>
#include <mutex>

#include "plan/decimal_kernels.h"
#include "plan/dictionary_kernels.h"
#include "plan/exact_sum.h"
#include "plan/like_kernels.h"
#include "plan/null_unless.h"
#include "plan/set_kernels.h"
#include "plan/string_agg.h"
#include "sluice/schemas/codec.hpp"

namespace sluice::plan {

int64_t DaysPlusMonths(int64_t days, int64_t months) {
  int64_t y;
  unsigned m, d;
  schemas::internal::CivilFromDays(days, &y, &m, &d);
  const int64_t total = y * 12 + (m - 1) + months;
  const int64_t ny = total >= 0 ? total / 12 : (total - 11) / 12;
  const auto nm = static_cast<unsigned>(total - ny * 12 + 1);
  static const unsigned kDays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  const bool leap = (ny % 4 == 0 && ny % 100 != 0) || ny % 400 == 0;
  const unsigned last = kDays[nm - 1] + (nm == 2 && leap ? 1 : 0);
  return schemas::internal::DaysFromCivil(ny, nm, std::min(d, last));
}

namespace {

namespace cp = arrow::compute;

// at_most_one_row(count, where): true, or the error PostgreSQL raises for a scalar subquery
// that returned `count` > 1 rows, naming `where` (the subquery's position in the query).
arrow::Status AtMostOneRow(cp::KernelContext*, const cp::ExecSpan& batch, cp::ExecResult* out) {
  const auto& count = batch[0];
  const auto& where = batch[1];
  std::string position;
  if (where.is_scalar()) {
    const auto& s = static_cast<const arrow::StringScalar&>(*where.scalar);
    if (s.is_valid) position = s.value->ToString();
  } else if (where.array.length > 0 && where.array.IsValid(0)) {
    const auto* offsets = where.array.GetValues<int32_t>(1);
    const char* data = reinterpret_cast<const char*>(where.array.buffers[2].data);
    position.assign(data + offsets[0], static_cast<size_t>(offsets[1] - offsets[0]));
  }
  auto fail = [&](int64_t n) {
    return arrow::Status::Invalid("more than one row (", n,
                                  ") returned by a subquery used as an expression",
                                  position.empty() ? "" : " (" + position + ")");
  };
  if (count.is_scalar()) {
    const auto& s = static_cast<const arrow::Int64Scalar&>(*count.scalar);
    if (s.is_valid && s.value > 1) return fail(s.value);
  } else {
    const arrow::ArraySpan& a = count.array;
    const int64_t* values = a.GetValues<int64_t>(1);
    for (int64_t i = 0; i < a.length; ++i) {
      if (a.IsValid(i) && values[i] > 1) return fail(values[i]);
    }
  }
  arrow::ArraySpan* result = out->array_span_mutable();
  arrow::bit_util::SetBitsTo(result->buffers[1].data, result->offset, result->length, true);
  return arrow::Status::OK();
}

// add_months(date, n): PostgreSQL's date + interval 'n months': the same day n months on, or the
// month's last day where it has fewer days.
arrow::Status AddMonths(cp::KernelContext*, const cp::ExecSpan& batch, cp::ExecResult* out) {
  arrow::ArraySpan* result = out->array_span_mutable();
  int32_t* days = result->GetValues<int32_t>(1);
  auto date_at = [&](int64_t i) {
    return batch[0].is_scalar() ? static_cast<const arrow::Date32Scalar&>(*batch[0].scalar).value
                                : batch[0].array.GetValues<int32_t>(1)[i];
  };
  auto months_at = [&](int64_t i) {
    return batch[1].is_scalar() ? static_cast<const arrow::Int64Scalar&>(*batch[1].scalar).value
                                : batch[1].array.GetValues<int64_t>(1)[i];
  };
  for (int64_t i = 0; i < result->length; ++i) {
    const int64_t n = months_at(i);
    if (n > 12 * 100000 || n < -12 * 100000) {
      return arrow::Status::Invalid("date out of range: ", n, " months");
    }
    days[i] = static_cast<int32_t>(DaysPlusMonths(date_at(i), n));
  }
  return arrow::Status::OK();
}

arrow::Status RegisterSluiceFunctions() {
  auto add_months = std::make_shared<cp::ScalarFunction>(
      std::string(kAddMonthsFunction), cp::Arity::Binary(),
      cp::FunctionDoc("date + n months", "The same day n months on, or that month's last day.",
                      {"date", "months"}));
  ARROW_RETURN_NOT_OK(add_months->AddKernel(
      {cp::InputType(arrow::date32()), cp::InputType(arrow::int64())}, arrow::date32(), AddMonths));
  ARROW_RETURN_NOT_OK(cp::GetFunctionRegistry()->AddFunction(std::move(add_months)));
  ARROW_RETURN_NOT_OK(RegisterDecimalKernels(cp::GetFunctionRegistry()));
  ARROW_RETURN_NOT_OK(RegisterExactSum(cp::GetFunctionRegistry()));
  ARROW_RETURN_NOT_OK(RegisterStringAgg(cp::GetFunctionRegistry()));
  ARROW_RETURN_NOT_OK(RegisterDictionaryKernels(cp::GetFunctionRegistry()));
  ARROW_RETURN_NOT_OK(RegisterLikeKernels(cp::GetFunctionRegistry()));
  ARROW_RETURN_NOT_OK(RegisterNullUnless(cp::GetFunctionRegistry()));
  ARROW_RETURN_NOT_OK(RegisterSetKernels(cp::GetFunctionRegistry()));
  auto function = std::make_shared<cp::ScalarFunction>(
      std::string(kAtMostOneRowFunction), cp::Arity::Binary(),
      cp::FunctionDoc("Fails where a scalar subquery returned more than one row",
                      "Returns true, or fails naming the subquery when count > 1.",
                      {"count", "where"}));
  ARROW_RETURN_NOT_OK(
      function->AddKernel({cp::InputType(arrow::int64()), cp::InputType(arrow::utf8())},
                          arrow::boolean(), AtMostOneRow));
  return cp::GetFunctionRegistry()->AddFunction(std::move(function));
}

}  // namespace

arrow::Status EnsureComputeInitialized() {
  static std::once_flag once;
  static arrow::Status status;
  std::call_once(once, [] {
    status = arrow::compute::Initialize();
    if (status.ok()) status = RegisterSluiceFunctions();
  });
  return status;
}

}  // namespace sluice::plan
