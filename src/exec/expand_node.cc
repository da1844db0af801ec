#include "exec/expand_node.h"

#include <arrow/acero/options.h>
#include <arrow/acero/query_context.h>
#include <arrow/compute/api.h>

#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "common/status.h"
#include "exec/kept_rows.h"
#include "exec/project_node.h"

namespace sluice::exec {

namespace {

namespace ac = arrow::acero;
namespace cp = arrow::compute;

constexpr char kExpandFactory[] = "sluice_expand";

class ExpandOptions : public ac::ExecNodeOptions {
 public:
  ExpandOptions(std::vector<std::vector<cp::Expression>> projections,
                std::vector<std::string> names)
      : projections(std::move(projections)), names(std::move(names)) {}
  std::vector<std::vector<cp::Expression>> projections;
  std::vector<std::string> names;
};

class ExpandNode : public ac::ExecNode {
 public:
  ExpandNode(ac::ExecPlan* plan, std::vector<ac::ExecNode*> inputs,
             std::shared_ptr<arrow::Schema> schema, std::vector<std::vector<cp::Expression>> bound,
             std::vector<std::vector<std::string>> labels)
      : ExecNode(plan, inputs, {"input"}, std::move(schema)),
        bound_(std::move(bound)),
        labels_(std::move(labels)) {}

  static arrow::Result<ac::ExecNode*> Make(ac::ExecPlan* plan, std::vector<ac::ExecNode*> inputs,
                                           const ac::ExecNodeOptions& options) {
    if (inputs.size() != 1) return arrow::Status::Invalid("internal: an expand takes one input");
    const auto& expand = static_cast<const ExpandOptions&>(options);
    const arrow::Schema& schema = *inputs[0]->output_schema();
    // A marking filter's rows (exec/kept_rows.h) are for an aggregate right above it alone.
    if (KeptRowsIndex(schema) >= 0) {
      return arrow::Status::Invalid("internal: an expand over marked rows");
    }
    if (expand.projections.empty()) {
      return arrow::Status::Invalid("internal: an expand without projections");
    }
    std::vector<std::vector<cp::Expression>> bound;
    std::vector<std::vector<std::string>> labels;
    arrow::FieldVector fields;
    for (const auto& projection : expand.projections) {
      if (projection.size() != expand.names.size()) {
        return arrow::Status::Invalid("internal: an expand's projection does not match its names");
      }
      bound.emplace_back();
      labels.emplace_back();
      for (size_t i = 0; i < projection.size(); ++i) {
        labels.back().push_back(OutputLabel(expand.names[i], projection[i]));
        ARROW_ASSIGN_OR_RAISE(auto expression, projection[i].Bind(schema));
        const auto& type = expression.type()->GetSharedPtr();
        if (bound.size() == 1) {
          fields.push_back(arrow::field(expand.names[i], type));
        } else if (!fields[i]->type()->Equals(*type)) {
          return arrow::Status::Invalid("internal: an expand's column ", expand.names[i], " is ",
                                        fields[i]->type()->ToString(), " and ", type->ToString());
        }
        bound.back().push_back(std::move(expression));
      }
    }
    return plan->EmplaceNode<ExpandNode>(plan, std::move(inputs), arrow::schema(std::move(fields)),
                                         std::move(bound), std::move(labels));
  }

  const char* kind_name() const override { return "SluiceExpandNode"; }
  const cp::Ordering& ordering() const override { return cp::Ordering::Unordered(); }
  arrow::Status StartProducing() override { return arrow::Status::OK(); }
  void PauseProducing(ac::ExecNode*, int32_t counter) override {
    inputs_[0]->PauseProducing(this, counter);
  }
  void ResumeProducing(ac::ExecNode*, int32_t counter) override {
    inputs_[0]->ResumeProducing(this, counter);
  }

  arrow::Status InputReceived(ac::ExecNode*, cp::ExecBatch batch) override {
    cp::ExecContext* ctx = plan()->query_context()->exec_context();
    for (size_t p = 0; p < bound_.size(); ++p) {
      const auto& projection = bound_[p];
      std::vector<arrow::Datum> values(projection.size());
      for (size_t i = 0; i < projection.size(); ++i) {
        auto value = cp::ExecuteScalarExpression(projection[i], batch, ctx);
        if (!value.ok()) return AddContext(value.status(), labels_[p][i]);
        ARROW_ASSIGN_OR_RAISE(
            values[i], NullScalarAsArray(*std::move(value), batch.length, ctx->memory_pool()));
      }
      ARROW_RETURN_NOT_OK(
          output_->InputReceived(this, cp::ExecBatch(std::move(values), batch.length)));
    }
    return arrow::Status::OK();
  }

  arrow::Status InputFinished(ac::ExecNode*, int total_batches) override {
    return output_->InputFinished(this, total_batches * static_cast<int>(bound_.size()));
  }

 protected:
  arrow::Status StopProducingImpl() override { return arrow::Status::OK(); }

  std::string ToStringExtra(int /*indent*/) const override {
    return "projections=" + std::to_string(bound_.size());
  }

 private:
  std::vector<std::vector<cp::Expression>> bound_;
  std::vector<std::vector<std::string>> labels_;  // per projection and column: its errors' prefix
};

arrow::Status RegisterExpand() {
  static std::once_flag once;
  static arrow::Status status;
  std::call_once(once, [] {
    status = ac::default_exec_factory_registry()->AddFactory(kExpandFactory, ExpandNode::Make);
  });
  return status;
}

}  // namespace

arrow::Result<ac::Declaration> Expanded(ac::Declaration input,
                                        std::vector<std::vector<cp::Expression>> projections,
                                        std::vector<std::string> names) {
  ARROW_RETURN_NOT_OK(RegisterExpand());
  return ac::Declaration::Sequence(
      {std::move(input),
       {kExpandFactory, ExpandOptions(std::move(projections), std::move(names))}});
}

}  // namespace sluice::exec
