#include "exec/project_node.h"

#include <arrow/acero/map_node.h>
#include <arrow/acero/query_context.h>
#include <arrow/array/util.h>
#include <arrow/compute/api.h>

#include <algorithm>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "common/status.h"
#include "exec/filter_node.h"
#include "exec/kept_rows.h"
#include "plan/expression_text.h"

namespace sluice::exec {

namespace {

namespace ac = arrow::acero;
namespace cp = arrow::compute;

constexpr char kProjectFactory[] = "sluice_project";

class ProjectOptions : public ac::ExecNodeOptions {
 public:
  ProjectOptions(std::vector<cp::Expression> expressions, std::vector<std::string> names,
                 std::vector<std::string> labels)
      : expressions(std::move(expressions)), names(std::move(names)), labels(std::move(labels)) {}
  std::vector<cp::Expression> expressions;
  std::vector<std::string> names;
  std::vector<std::string> labels;
};

class ProjectNode : public ac::MapNode {
 public:
  ProjectNode(ac::ExecPlan* plan, std::vector<ac::ExecNode*> inputs,
              std::shared_ptr<arrow::Schema> schema, std::vector<cp::Expression> bound,
              std::vector<std::string> contexts, int kept_rows)
      : MapNode(plan, std::move(inputs), std::move(schema)),
        bound_(std::move(bound)),
        contexts_(std::move(contexts)),
        kept_rows_(kept_rows) {}

  static arrow::Result<ac::ExecNode*> Make(ac::ExecPlan* plan, std::vector<ac::ExecNode*> inputs,
                                           const ac::ExecNodeOptions& options) {
    if (inputs.size() != 1) return arrow::Status::Invalid("internal: a project takes one input");
    const auto& project = static_cast<const ProjectOptions&>(options);
    if (project.names.size() != project.expressions.size() ||
        (!project.labels.empty() && project.labels.size() != project.expressions.size())) {
      return arrow::Status::Invalid("internal: a project's names or labels do not match");
    }
    const arrow::Schema& schema = *inputs[0]->output_schema();
    std::vector<cp::Expression> bound;
    std::vector<std::string> contexts;
    arrow::FieldVector fields;
    for (size_t i = 0; i < project.expressions.size(); ++i) {
      const std::string label = !project.labels.empty() && !project.labels[i].empty()
                                    ? project.labels[i]
                                    : OutputLabel(project.names[i], project.expressions[i]);
      ARROW_ASSIGN_OR_RAISE(auto expression, project.expressions[i].Bind(schema));
      fields.push_back(arrow::field(project.names[i], expression.type()->GetSharedPtr()));
      bound.push_back(std::move(expression));
      contexts.push_back(label);
    }
    // Rows a filter below marked rather than dropped stay marked (exec/kept_rows.h).
    const int kept_rows = KeptRowsIndex(schema);
    if (kept_rows >= 0) {
      if (std::find(project.names.begin(), project.names.end(), kKeptRowsColumn) !=
          project.names.end()) {
        return arrow::Status::Invalid("internal: a project names ", kKeptRowsColumn);
      }
      fields.push_back(schema.field(kept_rows));
    }
    return plan->EmplaceNode<ProjectNode>(plan, std::move(inputs), arrow::schema(std::move(fields)),
                                          std::move(bound), std::move(contexts), kept_rows);
  }

  const char* kind_name() const override { return "SluiceProjectNode"; }

 protected:
  // As Acero's project shows itself in EXPLAIN's physical plan.
  std::string ToStringExtra(int /*indent*/) const override {
    std::string out = "projection=[";
    for (size_t i = 0; i < bound_.size(); ++i) {
      if (i > 0) out += ", ";
      const std::string text = bound_[i].ToString();
      const std::string& name = output_schema()->field(static_cast<int>(i))->name();
      out += text == name ? text : text + " as " + name;
    }
    return out + "]";
  }

  arrow::Result<cp::ExecBatch> ProcessBatch(cp::ExecBatch batch) override {
    cp::ExecContext* ctx = plan()->query_context()->exec_context();
    auto values = Evaluate(batch, ctx);
    if (kept_rows_ < 0) {
      ARROW_RETURN_NOT_OK(values.status());
      return cp::ExecBatch{*std::move(values), batch.length};
    }
    const arrow::Datum kept = batch.values[static_cast<size_t>(kept_rows_)];
    if (!values.ok() && kept.is_array()) {
      // It may have failed on a row that the filter below dropped, which must not fail the
      // query: the rows it kept alone, evaluated again, fail only for one of theirs.
      batch.values.erase(batch.values.begin() + kept_rows_);
      ARROW_ASSIGN_OR_RAISE(batch, KeepRows(std::move(batch), kept, ctx));
      batch.values.insert(batch.values.begin() + kept_rows_, arrow::Datum(true));
      ARROW_ASSIGN_OR_RAISE(auto on_kept, Evaluate(batch, ctx));
      on_kept.push_back(arrow::Datum(true));
      return cp::ExecBatch{std::move(on_kept), batch.length};
    }
    ARROW_RETURN_NOT_OK(values.status());
    values->push_back(kept);
    return cp::ExecBatch{*std::move(values), batch.length};
  }

 private:
  // Each expression's column over `batch`; an error names the expression that failed.
  arrow::Result<std::vector<arrow::Datum>> Evaluate(const cp::ExecBatch& batch,
                                                    cp::ExecContext* ctx) const {
    std::vector<arrow::Datum> values(bound_.size());
    for (size_t i = 0; i < bound_.size(); ++i) {
      // As Acero's project: what the batch guarantees (a partition's values) may simplify it.
      ARROW_ASSIGN_OR_RAISE(cp::Expression simplified,
                            cp::SimplifyWithGuarantee(bound_[i], batch.guarantee));
      auto value = cp::ExecuteScalarExpression(simplified, batch, ctx);
      if (!value.ok()) return AddContext(value.status(), contexts_[i]);
      ARROW_ASSIGN_OR_RAISE(values[i],
                            NullScalarAsArray(*std::move(value), batch.length, ctx->memory_pool()));
    }
    return values;
  }

  std::vector<cp::Expression> bound_;
  std::vector<std::string> contexts_;  // what each expression's errors are prefixed with
  int kept_rows_;                      // the input's kKeptRowsColumn, or -1
};

arrow::Status RegisterProject() {
  static std::once_flag once;
  static arrow::Status status;
  std::call_once(once, [] {
    status = ac::default_exec_factory_registry()->AddFactory(kProjectFactory, ProjectNode::Make);
  });
  return status;
}

}  // namespace

arrow::Result<arrow::Datum> NullScalarAsArray(arrow::Datum value, int64_t length,
                                              arrow::MemoryPool* pool) {
  if (!value.is_scalar() || value.scalar()->is_valid) return value;
  ARROW_ASSIGN_OR_RAISE(auto nulls, arrow::MakeArrayOfNull(value.type(), length, pool));
  return arrow::Datum(std::move(nulls));
}

std::string OutputLabel(const std::string& name, const cp::Expression& expression,
                        const plan::ColumnTexts* texts) {
  const std::string column = plan::WithoutColumnId(name);
  const std::string text = "(" + plan::ExpressionText(expression, texts) + ")";
  if (column.rfind("__", 0) == 0) return "expression " + text;
  return "column \"" + column + "\" " + text;
}

arrow::Result<ac::Declaration> Projected(ac::Declaration input,
                                         std::vector<cp::Expression> expressions,
                                         std::vector<std::string> names,
                                         std::vector<std::string> labels) {
  ARROW_RETURN_NOT_OK(RegisterProject());
  return ac::Declaration::Sequence(
      {std::move(input),
       {kProjectFactory,
        ProjectOptions(std::move(expressions), std::move(names), std::move(labels))}});
}

}  // namespace sluice::exec
