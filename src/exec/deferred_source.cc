#include "exec/deferred_source.h"

#include <arrow/acero/options.h>
#include <arrow/compute/api.h>

#include <optional>
#include <vector>

namespace sluice::exec {

namespace {

namespace ac = arrow::acero;
namespace cp = arrow::compute;

// `table`'s columns cast to `schema`'s types (a scan's dictionaries to their values, as the plan
// types them), so that batches fit the schema the source node declares.
arrow::Result<std::shared_ptr<arrow::Table>> Conform(std::shared_ptr<arrow::Table> table,
                                                     const std::shared_ptr<arrow::Schema>& schema) {
  if (table->num_columns() != schema->num_fields()) {
    return arrow::Status::Invalid("internal: ", table->num_columns(),
                                  " columns where the plan has ", schema->num_fields());
  }
  arrow::ChunkedArrayVector columns;
  for (int i = 0; i < table->num_columns(); ++i) {
    auto column = table->column(i);
    if (!column->type()->Equals(*schema->field(i)->type())) {
      ARROW_ASSIGN_OR_RAISE(arrow::Datum cast, cp::Cast(column, schema->field(i)->type()));
      column = cast.chunked_array();
    }
    columns.push_back(std::move(column));
  }
  return arrow::Table::Make(schema, std::move(columns), table->num_rows());
}

}  // namespace

ac::Declaration DeferredSource(
    std::shared_ptr<arrow::Schema> schema,
    std::function<arrow::Future<std::shared_ptr<arrow::Table>>()> start) {
  struct State {
    std::function<arrow::Future<std::shared_ptr<arrow::Table>>()> start;
    arrow::Future<std::vector<cp::ExecBatch>> batches;
    size_t next = 0;
  };
  auto state = std::make_shared<State>();
  state->start = std::move(start);
  auto generator = [state, schema]() -> arrow::Future<std::optional<cp::ExecBatch>> {
    if (state->start) {
      auto rows = state->start();
      state->start = nullptr;
      state->batches = rows.Then([schema](const std::shared_ptr<arrow::Table>& table)
                                     -> arrow::Result<std::vector<cp::ExecBatch>> {
        ARROW_ASSIGN_OR_RAISE(auto done, Conform(table, schema));
        std::vector<cp::ExecBatch> out;
        arrow::TableBatchReader reader(*done);
        std::shared_ptr<arrow::RecordBatch> batch;
        while (true) {
          ARROW_RETURN_NOT_OK(reader.ReadNext(&batch));
          if (batch == nullptr) break;
          out.emplace_back(*batch);
        }
        return out;
      });
    }
    return state->batches.Then(
        [state](const std::vector<cp::ExecBatch>& batches) -> std::optional<cp::ExecBatch> {
          if (state->next >= batches.size()) return std::nullopt;
          return batches[state->next++];
        });
  };
  return ac::Declaration("source", ac::SourceNodeOptions(std::move(schema), std::move(generator)));
}

}  // namespace sluice::exec
