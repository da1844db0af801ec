#include "exec/filter_node.h"

#include <arrow/acero/map_node.h>
#include <arrow/acero/options.h>
#include <arrow/acero/query_context.h>
#include <arrow/array.h>
#include <arrow/compute/api.h>

#include <mutex>
#include <optional>

namespace sluice::exec {

namespace {

namespace ac = arrow::acero;
namespace cp = arrow::compute;

constexpr char kFilterFactory[] = "sluice_filter";

// Below this share of kept rows, gathering them by index beats a pass over the mask per column.
constexpr int64_t kTakeBelowOneIn = 8;

class FilterOptions : public ac::ExecNodeOptions {
 public:
  explicit FilterOptions(cp::Expression predicate) : predicate(std::move(predicate)) {}
  cp::Expression predicate;
};

class FilterNode : public ac::MapNode {
 public:
  FilterNode(ac::ExecPlan* plan, std::vector<ac::ExecNode*> inputs, cp::Expression predicate)
      : MapNode(plan, inputs, inputs[0]->output_schema()), predicate_(std::move(predicate)) {}

  static arrow::Result<ac::ExecNode*> Make(ac::ExecPlan* plan, std::vector<ac::ExecNode*> inputs,
                                           const ac::ExecNodeOptions& options) {
    if (inputs.size() != 1) return arrow::Status::Invalid("internal: a filter takes one input");
    const auto& filter = static_cast<const FilterOptions&>(options);
    ARROW_ASSIGN_OR_RAISE(auto bound, filter.predicate.Bind(*inputs[0]->output_schema()));
    if (bound.type()->id() != arrow::Type::BOOL) {
      return arrow::Status::TypeError("a filter must be boolean, not ", bound.type()->ToString(),
                                      ": ", filter.predicate.ToString());
    }
    return plan->EmplaceNode<FilterNode>(plan, std::move(inputs), std::move(bound));
  }

  const char* kind_name() const override { return "SluiceFilterNode"; }

 protected:
  arrow::Result<cp::ExecBatch> ProcessBatch(cp::ExecBatch batch) override {
    cp::ExecContext* ctx = plan()->query_context()->exec_context();
    ARROW_ASSIGN_OR_RAISE(arrow::Datum mask, cp::ExecuteScalarExpression(predicate_, batch, ctx));
    if (mask.is_scalar()) {
      const auto& keep = mask.scalar_as<arrow::BooleanScalar>();
      if (keep.is_valid && keep.value) return batch;
      return batch.Slice(0, 0);
    }
    const arrow::BooleanArray bits(mask.array());
    const int64_t kept = bits.true_count();
    if (kept == batch.length) return batch;
    std::optional<arrow::Datum> indices;
    if (kept * kTakeBelowOneIn < batch.length) {
      ARROW_ASSIGN_OR_RAISE(indices, cp::CallFunction("indices_nonzero", {mask}, ctx));
    }
    std::vector<arrow::Datum> values;
    values.reserve(batch.values.size());
    for (const auto& v : batch.values) {
      if (v.is_scalar()) {
        values.push_back(v);
        continue;
      }
      ARROW_ASSIGN_OR_RAISE(arrow::Datum kept_rows,
                            indices ? cp::Take(v, *indices, cp::TakeOptions::NoBoundsCheck(), ctx)
                                    : cp::Filter(v, mask, cp::FilterOptions::Defaults(), ctx));
      values.push_back(std::move(kept_rows));
    }
    return cp::ExecBatch(std::move(values), kept);
  }

 private:
  cp::Expression predicate_;
};

arrow::Status RegisterFilter() {
  static std::once_flag once;
  static arrow::Status status;
  std::call_once(once, [] {
    status = ac::default_exec_factory_registry()->AddFactory(kFilterFactory, FilterNode::Make);
  });
  return status;
}

}  // namespace

arrow::Result<ac::Declaration> Filtered(ac::Declaration input, cp::Expression predicate) {
  ARROW_RETURN_NOT_OK(RegisterFilter());
  return ac::Declaration::Sequence(
      {std::move(input), {kFilterFactory, FilterOptions(std::move(predicate))}});
}

}  // namespace sluice::exec
