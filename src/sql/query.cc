#include "sql/query.h"

#include <arrow/acero/exec_plan.h>

#include <chrono>

#include "catalog/registry.h"
#include "exec/compute_init.h"
#include "sql/binder.h"
#include "sql/executor.h"
#include "sql/sql_parser.h"
#include "storage/object_store.h"

namespace sluice::sql {

arrow::Result<QueryResult> RunQuery(const Config& config, const std::string& sql) {
  ARROW_RETURN_NOT_OK(exec::EnsureComputeInitialized());
  ARROW_ASSIGN_OR_RAISE(Statement statement, ParseStatement(sql));
  ARROW_ASSIGN_OR_RAISE(auto registry, catalog::Registry::Open(config.database_url));
  ARROW_ASSIGN_OR_RAISE(std::shared_ptr<storage::ObjectStore> store,
                        storage::ObjectStore::Open(config.store_url));
  QueryResult result;
  if (auto* create = std::get_if<CreateExternalTable>(&statement)) {
    if (create->format != "parquet") {
      return arrow::Status::NotImplemented("not supported: external tables STORED AS ",
                                           create->format, " (PARQUET works)");
    }
    // Reading the schema now refuses a location with no readable Parquet files up front.
    ARROW_ASSIGN_OR_RAISE(auto table, OpenParquetTable(store, create->name, create->location));
    ARROW_RETURN_NOT_OK(
        registry->PutSqlTable({create->name, create->format, create->location, ""}));
    result.message = "CREATE EXTERNAL TABLE " + create->name + " (" +
                     std::to_string(table->files.size()) + " files, " +
                     std::to_string(table->schema->num_fields()) + " columns)";
    return result;
  }
  const auto& select = std::get<SelectStatement>(statement);
  TableResolver resolve =
      [&](const std::string& name) -> arrow::Result<std::shared_ptr<TableSource>> {
    ARROW_ASSIGN_OR_RAISE(auto record, registry->GetSqlTable(name));
    if (record.has_value()) return OpenParquetTable(store, record->name, record->location);
    // A committed run's output is a table by its run id, e.g. FROM "conversation-extract-check".
    ARROW_ASSIGN_OR_RAISE(auto run, registry->GetRun(name));
    if (run.has_value() && run->status == "committed" && !run->sink_path.empty()) {
      return OpenParquetTable(store, name, run->sink_path);
    }
    return arrow::Status::Invalid("relation \"", name,
                                  "\" does not exist; declare it with CREATE EXTERNAL TABLE");
  };
  ARROW_ASSIGN_OR_RAISE(BoundQuery bound, BindSelect(select.select, sql, resolve));
  if (select.explain) {
    ARROW_ASSIGN_OR_RAISE(auto decl, ToDeclaration(*bound.plan));
    result.message = "logical plan:\n" + bound.plan->Explain(1) + "physical plan (Acero):\n" +
                     arrow::acero::DeclarationToString(decl).ValueOr("?") + "\n";
    if (select.analyze) {
      const auto start = std::chrono::steady_clock::now();
      ARROW_ASSIGN_OR_RAISE(auto table, Execute(*bound.plan, bound.names));
      const double ms =
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
              .count();
      result.message += "analyze: " + std::to_string(table->num_rows()) + " rows in " +
                        std::to_string(ms) + " ms\n";
    }
    return result;
  }
  ARROW_ASSIGN_OR_RAISE(result.table, Execute(*bound.plan, bound.names));
  return result;
}

}  // namespace sluice::sql
