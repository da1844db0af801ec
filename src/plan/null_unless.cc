#include "plan/null_unless.h"

#include <arrow/api.h>
#include <arrow/compute/api.h>
#include <arrow/util/bitmap_ops.h>

#include <memory>
#include <vector>

namespace sluice::plan {

namespace {

namespace cp = arrow::compute;

// Whether a boolean scalar is a valid true.
bool IsTrue(const arrow::Scalar& s) {
  return s.is_valid && static_cast<const arrow::BooleanScalar&>(s).value;
}

// `values` with its validity narrowed to the rows where `condition` is a valid true; the values
// are its own buffers, shared.
arrow::Result<std::shared_ptr<arrow::ArrayData>> Masked(
    cp::KernelContext* ctx, const std::shared_ptr<arrow::ArrayData>& values,
    const arrow::ArraySpan& condition) {
  if (values->type->id() == arrow::Type::NA) return values;  // NULL everywhere already
  if (!arrow::internal::may_have_validity_bitmap(values->type->id())) {
    return arrow::Status::TypeError("internal: ", kNullUnlessFunction, " of ",
                                    values->type->ToString());
  }
  const int64_t length = values->length;
  const int64_t offset = values->offset;
  ARROW_ASSIGN_OR_RAISE(auto bitmap,
                        arrow::AllocateEmptyBitmap(offset + length, ctx->memory_pool()));
  uint8_t* bits = bitmap->mutable_data();
  // The condition's values, then its validity and the value's, each ANDed in place.
  arrow::internal::CopyBitmap(condition.buffers[1].data, condition.offset, length, bits, offset);
  if (condition.buffers[0].data != nullptr && condition.null_count != 0) {
    arrow::internal::BitmapAnd(bits, offset, condition.buffers[0].data, condition.offset, length,
                               offset, bits);
  }
  if (values->buffers[0] != nullptr && values->null_count != 0) {
    arrow::internal::BitmapAnd(bits, offset, values->buffers[0]->data(), offset, length, offset,
                               bits);
  }
  auto out = values->Copy();  // the same buffers and children, a validity of its own
  out->buffers[0] = std::move(bitmap);
  out->null_count = arrow::kUnknownNullCount;
  return out;
}

arrow::Status Exec(cp::KernelContext* ctx, const cp::ExecSpan& batch, cp::ExecResult* out) {
  const cp::ExecValue& value = batch[0];
  const cp::ExecValue& condition = batch[1];
  // The executor hands scalars over only beside arrays; the result is an array either way.
  std::shared_ptr<arrow::ArrayData> values;
  if (value.is_scalar()) {
    ARROW_ASSIGN_OR_RAISE(
        auto a, arrow::MakeArrayFromScalar(*value.scalar, batch.length, ctx->memory_pool()));
    values = a->data();
  } else {
    values = value.array.ToArrayData();
  }
  if (condition.is_scalar()) {  // all rows or none
    if (IsTrue(*condition.scalar)) {
      out->value = std::move(values);
    } else {
      ARROW_ASSIGN_OR_RAISE(auto nulls,
                            arrow::MakeArrayOfNull(values->type, batch.length, ctx->memory_pool()));
      out->value = nulls->data();
    }
    return arrow::Status::OK();
  }
  ARROW_ASSIGN_OR_RAISE(out->value, Masked(ctx, values, condition.array));
  return arrow::Status::OK();
}

}  // namespace

arrow::Status RegisterNullUnless(cp::FunctionRegistry* registry) {
  static const cp::FunctionDoc kDoc(
      "The value where the condition is true, NULL elsewhere",
      "NULL where the condition is false or NULL; the values themselves are not copied.",
      {"value", "condition"});
  auto function =
      std::make_shared<cp::ScalarFunction>(kNullUnlessFunction, cp::Arity::Binary(), kDoc);
  cp::ScalarKernel kernel(
      {cp::InputType::Any(), cp::InputType(arrow::boolean())},
      cp::OutputType([](cp::KernelContext*, const std::vector<arrow::TypeHolder>& types)
                         -> arrow::Result<arrow::TypeHolder> { return types.front(); }),
      Exec);
  kernel.null_handling = cp::NullHandling::COMPUTED_NO_PREALLOCATE;
  kernel.mem_allocation = cp::MemAllocation::NO_PREALLOCATE;
  kernel.can_write_into_slices = false;
  ARROW_RETURN_NOT_OK(function->AddKernel(std::move(kernel)));
  return registry->AddFunction(std::move(function), /*allow_overwrite=*/true);
}

}  // namespace sluice::plan
