#include "plan/compute_init.h"

#include <arrow/compute/api.h>
#include <arrow/compute/initialize.h>
#include <arrow/util/bit_util.h>

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

arrow::Status RegisterSluiceFunctions() {
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
