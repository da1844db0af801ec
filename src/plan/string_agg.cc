#include "plan/string_agg.h"

#include <arrow/api.h>
#include <arrow/compute/api.h>
#include <arrow/compute/kernel.h>

#include <algorithm>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace sluice::plan {

namespace cp = arrow::compute;

namespace {

// Each group's strings.
struct CollectState : cp::KernelState {
  std::vector<std::vector<std::string>> groups;

  void Resize(int64_t n) {
    if (static_cast<int64_t>(groups.size()) < n) groups.resize(static_cast<size_t>(n));
  }

  // The non-NULL strings of row `i` of `values` (a string, or a list of them) into `group`.
  static void Append(const arrow::ArraySpan& values, int64_t i, std::vector<std::string>* group) {
    if (!values.IsValid(i)) return;
    if (values.type->id() == arrow::Type::STRING) {
      const auto* offsets = values.GetValues<int32_t>(1);
      const auto* data = reinterpret_cast<const char*>(values.buffers[2].data);
      group->emplace_back(data + offsets[i], static_cast<size_t>(offsets[i + 1] - offsets[i]));
      return;
    }
    const auto* offsets = values.GetValues<int32_t>(1);
    const arrow::ArraySpan& child = values.child_data[0];
    for (int32_t j = offsets[i]; j < offsets[i + 1]; ++j) Append(child, j, group);
  }

  // Rows of `batch[0]` into their groups (`ids`, or group 0 for none).
  arrow::Status Consume(const cp::ExecValue& value, int64_t length, const uint32_t* ids) {
    if (value.is_scalar()) {
      ARROW_ASSIGN_OR_RAISE(auto array, arrow::MakeArrayFromScalar(*value.scalar, length));
      arrow::ArraySpan span(*array->data());
      for (int64_t i = 0; i < length; ++i) Append(span, i, &groups[ids ? ids[i] : 0]);
      return arrow::Status::OK();
    }
    for (int64_t i = 0; i < length; ++i) Append(value.array, i, &groups[ids ? ids[i] : 0]);
    return arrow::Status::OK();
  }

  // `other`'s groups appended to this one's at `mapping` (group i to mapping[i]; none: 0).
  void Merge(CollectState&& other, const uint32_t* mapping) {
    for (size_t g = 0; g < other.groups.size(); ++g) {
      auto& into = groups[mapping ? mapping[g] : 0];
      for (auto& s : other.groups[g]) into.push_back(std::move(s));
    }
  }

  // One list per group, NULL for an empty one.
  arrow::Result<std::shared_ptr<arrow::Array>> Finish(arrow::MemoryPool* pool) const {
    arrow::ListBuilder lists(pool, std::make_shared<arrow::StringBuilder>(pool));
    auto* strings = static_cast<arrow::StringBuilder*>(lists.value_builder());
    for (const auto& group : groups) {
      if (group.empty()) {
        ARROW_RETURN_NOT_OK(lists.AppendNull());
        continue;
      }
      ARROW_RETURN_NOT_OK(lists.Append());
      for (const auto& s : group) ARROW_RETURN_NOT_OK(strings->Append(s));
    }
    return lists.Finish();
  }
};

arrow::Result<std::unique_ptr<cp::KernelState>> InitCollect(cp::KernelContext*,
                                                            const cp::KernelInitArgs&) {
  return std::make_unique<CollectState>();
}

CollectState* State(cp::KernelContext* ctx) { return static_cast<CollectState*>(ctx->state()); }

arrow::Status ScalarConsume(cp::KernelContext* ctx, const cp::ExecSpan& batch) {
  State(ctx)->Resize(1);
  return State(ctx)->Consume(batch[0], batch.length, nullptr);
}

arrow::Status ScalarMerge(cp::KernelContext*, cp::KernelState&& other, cp::KernelState* dst) {
  auto* into = static_cast<CollectState*>(dst);
  auto& from = static_cast<CollectState&>(other);
  into->Resize(1);
  from.Resize(1);
  into->Merge(std::move(from), nullptr);
  return arrow::Status::OK();
}

arrow::Status ScalarFinalize(cp::KernelContext* ctx, arrow::Datum* out) {
  State(ctx)->Resize(1);
  ARROW_ASSIGN_OR_RAISE(auto list, State(ctx)->Finish(ctx->memory_pool()));
  ARROW_ASSIGN_OR_RAISE(auto scalar, list->GetScalar(0));
  *out = std::move(scalar);
  return arrow::Status::OK();
}

arrow::Status HashResize(cp::KernelContext* ctx, int64_t groups) {
  State(ctx)->Resize(groups);
  return arrow::Status::OK();
}

arrow::Status HashConsume(cp::KernelContext* ctx, const cp::ExecSpan& batch) {
  return State(ctx)->Consume(batch[0], batch.length, batch[1].array.GetValues<uint32_t>(1));
}

arrow::Status HashMerge(cp::KernelContext* ctx, cp::KernelState&& other,
                        const arrow::ArrayData& mapping) {
  const uint32_t* ids = mapping.GetValues<uint32_t>(1);
  for (int64_t i = 0; i < mapping.length; ++i) State(ctx)->Resize(int64_t{ids[i]} + 1);
  State(ctx)->Merge(static_cast<CollectState&&>(other), ids);
  return arrow::Status::OK();
}

arrow::Status HashFinalize(cp::KernelContext* ctx, arrow::Datum* out) {
  ARROW_ASSIGN_OR_RAISE(auto list, State(ctx)->Finish(ctx->memory_pool()));
  *out = list->data();
  return arrow::Status::OK();
}

// Row i of a string argument given as an array or a scalar; nothing where NULL.
std::optional<std::string_view> StringAt(const cp::ExecValue& v, int64_t i) {
  if (v.is_scalar()) {
    const auto& s = static_cast<const arrow::StringScalar&>(*v.scalar);
    if (!s.is_valid) return std::nullopt;
    return std::string_view(reinterpret_cast<const char*>(s.value->data()),
                            static_cast<size_t>(s.value->size()));
  }
  if (!v.array.IsValid(i)) return std::nullopt;
  const auto* offsets = v.array.GetValues<int32_t>(1);
  return std::string_view(reinterpret_cast<const char*>(v.array.buffers[2].data) + offsets[i],
                          static_cast<size_t>(offsets[i + 1] - offsets[i]));
}

arrow::Status ExecJoin(cp::KernelContext* ctx, const cp::ExecSpan& batch, cp::ExecResult* out) {
  const cp::ExecValue& lists = batch[0];
  // The order is a literal, which a one-row batch may give as an array.
  auto order_at = [&](int64_t i) -> int64_t {
    if (batch[2].is_scalar()) {
      const auto& s = static_cast<const arrow::Int64Scalar&>(*batch[2].scalar);
      return s.is_valid ? s.value : 0;
    }
    return batch[2].array.IsValid(i) ? batch[2].array.GetValues<int64_t>(1)[i] : 0;
  };
  std::shared_ptr<arrow::Array> list_array;
  if (lists.is_scalar()) {
    ARROW_ASSIGN_OR_RAISE(
        list_array, arrow::MakeArrayFromScalar(*lists.scalar, batch.length, ctx->memory_pool()));
  } else {
    list_array = lists.array.ToArray();
  }
  const auto& list = static_cast<const arrow::ListArray&>(*list_array);
  const auto& values = static_cast<const arrow::StringArray&>(*list.values());
  arrow::StringBuilder builder(ctx->memory_pool());
  std::vector<std::string_view> items;
  std::string joined;
  for (int64_t i = 0; i < batch.length; ++i) {
    const auto delimiter = StringAt(batch[1], i);
    if (list.IsNull(i) || !delimiter) {
      ARROW_RETURN_NOT_OK(builder.AppendNull());
      continue;
    }
    items.clear();
    for (int32_t j = list.value_offset(i); j < list.value_offset(i) + list.value_length(i); ++j) {
      if (values.IsValid(j)) items.push_back(values.GetView(j));
    }
    const int64_t order = order_at(i);
    if (order == 1) std::stable_sort(items.begin(), items.end());
    if (order == 2) std::stable_sort(items.begin(), items.end(), std::greater<>());
    joined.clear();
    for (size_t k = 0; k < items.size(); ++k) {
      if (k > 0) joined += *delimiter;
      joined += items[k];
    }
    ARROW_RETURN_NOT_OK(builder.Append(joined));
  }
  ARROW_ASSIGN_OR_RAISE(auto result, builder.Finish());
  out->value = result->data();
  return arrow::Status::OK();
}

}  // namespace

arrow::Status RegisterStringAgg(cp::FunctionRegistry* registry) {
  const cp::FunctionDoc doc("string_agg's strings", "A group's non-NULL strings as a list.", {"x"});
  const auto list = arrow::list(arrow::utf8());
  auto scalar =
      std::make_shared<cp::ScalarAggregateFunction>(kStringAggFunction, cp::Arity::Unary(), doc);
  auto hash = std::make_shared<cp::HashAggregateFunction>(std::string("hash_") + kStringAggFunction,
                                                          cp::Arity::Binary(), doc);
  for (const auto& in : {arrow::utf8(), list}) {
    ARROW_RETURN_NOT_OK(scalar->AddKernel(
        cp::ScalarAggregateKernel({cp::InputType(in)}, cp::OutputType(list), InitCollect,
                                  ScalarConsume, ScalarMerge, ScalarFinalize, /*ordered=*/false)));
    ARROW_RETURN_NOT_OK(hash->AddKernel(cp::HashAggregateKernel(
        {cp::InputType(in), cp::InputType(arrow::uint32())}, cp::OutputType(list), InitCollect,
        HashConsume, HashResize, HashMerge, HashFinalize, /*ordered=*/false)));
  }
  ARROW_RETURN_NOT_OK(registry->AddFunction(std::move(scalar)));
  ARROW_RETURN_NOT_OK(registry->AddFunction(std::move(hash)));
  auto join = std::make_shared<cp::ScalarFunction>(
      kStringJoinFunction, cp::Arity::Ternary(),
      cp::FunctionDoc("string_agg's result", "A list's strings joined, sorted as asked.",
                      {"list", "delimiter", "order"}));
  cp::ScalarKernel kernel(
      {cp::InputType(list), cp::InputType(arrow::utf8()), cp::InputType(arrow::int64())},
      cp::OutputType(arrow::utf8()), ExecJoin);
  kernel.null_handling = cp::NullHandling::COMPUTED_NO_PREALLOCATE;
  kernel.mem_allocation = cp::MemAllocation::NO_PREALLOCATE;
  ARROW_RETURN_NOT_OK(join->AddKernel(std::move(kernel)));
  return registry->AddFunction(std::move(join));
}

}  // namespace sluice::plan
