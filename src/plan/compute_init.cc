#include "plan/compute_init.h"

#include <arrow/compute/api.h>
#include <arrow/compute/initialize.h>
#include <arrow/util/bit_util.h>

#include <algorithm>
#include <mutex>

namespace sluice::plan {

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

// Days since 1970-01-01 to and from (year, month, day): Howard Hinnant's civil algorithms.
int64_t DaysFromCivil(int64_t y, int64_t m, int64_t d) {
  y -= m <= 2;
  const int64_t era = (y >= 0 ? y : y - 399) / 400;
  const int64_t yoe = y - era * 400;
  const int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  const int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + doe - 719468;
}

void CivilFromDays(int64_t z, int64_t* y, int64_t* m, int64_t* d) {
  z += 719468;
  const int64_t era = (z >= 0 ? z : z - 146096) / 146097;
  const int64_t doe = z - era * 146097;
  const int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  const int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  const int64_t mp = (5 * doy + 2) / 153;
  *d = doy - (153 * mp + 2) / 5 + 1;
  *m = mp < 10 ? mp + 3 : mp - 9;
  *y = yoe + era * 400 + (*m <= 2);
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
    int64_t y, m, d;
    CivilFromDays(date_at(i), &y, &m, &d);
    const int64_t n = months_at(i);
    if (n > 12 * 100000 || n < -12 * 100000) {
      return arrow::Status::Invalid("date out of range: ", n, " months");
    }
    const int64_t total = y * 12 + (m - 1) + n;
    const int64_t ny = total >= 0 ? total / 12 : (total - 11) / 12;
    const int64_t nm = total - ny * 12 + 1;
    static const int64_t kDays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    const bool leap = (ny % 4 == 0 && ny % 100 != 0) || ny % 400 == 0;
    const int64_t last = kDays[nm - 1] + (nm == 2 && leap ? 1 : 0);
    days[i] = static_cast<int32_t>(DaysFromCivil(ny, nm, std::min(d, last)));
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
