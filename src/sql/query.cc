#include "sql/query.h"

#include <arrow/acero/exec_plan.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <map>
#include <optional>

#include "artifact/blake3_digest.h"
#include "catalog/registry.h"
#include "catalog/run_lease.h"
#include "catalog/signing.h"
#include "common/hex.h"
#include "common/status.h"
#include "exec/plan_executor.h"
#include "plan/compute_init.h"
#include "plan/library_functions.h"
#include "plan/stage_shape.h"
#include "plan/table_provider.h"
#include "sql/binder.h"
#include "sql/determined_keys.h"
#include "sql/distributed_query.h"
#include "sql/join_key_ranges.h"
#include "sql/optimizer/optimizer.h"
#include "sql/run_with_stack.h"
#include "sql/semi_join_reduction.h"
#include "sql/sql_parser.h"
#include "sql/stage_planner.h"
#include "sql/table_location.h"
#include "sql/top_n_bound.h"
#include "storage/object_store.h"

namespace sluice::sql {

namespace {

// The registry's format of a function library's table: "provider:<library>.<table>".
constexpr char kProviderPrefix[] = "provider:";

// The binder, the plan and Arrow's expressions recurse per level of the query's nesting, which
// the parser bounds (kMaxQueryNesting); the deepest accepted query needs under 1 MiB of stack
// (sql_parser_test), and sanitizer builds several times that, so a query runs on 64 MiB.
constexpr size_t kQueryStackBytes = size_t{64} << 20;

// A SELECT cut into stages that worker processes run; EXPLAIN shows the stages, EXPLAIN ANALYZE
// each stage's tasks.
arrow::Result<QueryResult> RunDistributedSelect(const BoundQuery& bound, const StagePlan& stages,
                                                const SelectStatement& select,
                                                const DistributedOptions& options) {
  QueryResult result;
  if (select.explain && !select.analyze) {
    result.message = ExplainStages(*bound.plan, stages);
    return result;
  }
  if (!select.analyze) {
    ARROW_ASSIGN_OR_RAISE(result.table, RunDistributed(bound, stages, options));
    return result;
  }
  std::string analyze;
  const auto start = std::chrono::steady_clock::now();
  ARROW_ASSIGN_OR_RAISE(auto table, RunDistributed(bound, stages, options, &analyze));
  const double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  char total[96];
  std::snprintf(total, sizeof(total), "analyze: %lld rows in %.1f ms\n",
                static_cast<long long>(table->num_rows()), ms);
  result.message = ExplainStages(*bound.plan, stages) +
                   "tasks (rows, bytes, time, shuffle bytes written and read):\n" + analyze + total;
  return result;
}

arrow::Result<QueryResult> RunQueryOnThisThread(const Config& config, const std::string& sql,
                                                const RunOptions& options) {
  ARROW_RETURN_NOT_OK(plan::EnsureComputeInitialized());
  ARROW_ASSIGN_OR_RAISE(Statement statement, ParseStatement(sql));
  ARROW_ASSIGN_OR_RAISE(auto registry, catalog::Registry::Open(config.database_url));
  ARROW_ASSIGN_OR_RAISE(std::shared_ptr<storage::ObjectStore> store,
                        storage::ObjectStore::Open(config.store_url));
  ARROW_ASSIGN_OR_RAISE(std::vector<std::string> roots, ParseSqlRoots(config.sql_roots));
  // A table at a key of the session's store, or at a path or URL of its own.
  const std::string cache_dir = config.home + "/cache";
  // A function library's table: "provider:<library>.<table>" with its options as the location.
  auto OpenProvider =
      [&](const std::string& name, const std::string& options,
          const std::string& format) -> arrow::Result<std::shared_ptr<TableSource>> {
    const std::string spec = format.substr(std::strlen(kProviderPrefix));
    const size_t dot = spec.find('.');
    const std::string library = spec.substr(0, dot), table = spec.substr(dot + 1);
    ARROW_ASSIGN_OR_RAISE(auto libraries, registry->ListSqlFunctionLibraries());
    for (const auto& l : libraries) {
      if (l.name != library) continue;
      auto loaded = plan::EnsureFunctionLibrary(store, cache_dir, l.artifact_blake3);
      if (!loaded.ok()) return AddContext(loaded.status(), "function library " + l.name);
      return plan::OpenProviderTable(store, name, l.artifact_blake3, table, options);
    }
    return arrow::Status::Invalid("table \"", name, "\": function library ", library,
                                  " does not exist; create it with CREATE FUNCTION LIBRARY");
  };
  auto open = [&](const std::string& name, const std::string& location,
                  const std::string& format) -> arrow::Result<std::shared_ptr<TableSource>> {
    if (format.rfind(kProviderPrefix, 0) == 0) return OpenProvider(name, location, format);
    ARROW_ASSIGN_OR_RAISE(TableLocation where,
                          ResolveLocation(location, store, config.store_url, roots));
    ARROW_ASSIGN_OR_RAISE(auto table, OpenTable(where.store, name, where.key, format));
    table->location = location;
    table->store_url = where.store_url;
    return table;
  };
  QueryResult result;
  if (auto* create = std::get_if<CreateExternalTable>(&statement)) {
    const std::string format =
        create->provider.empty() ? create->format : std::string(kProviderPrefix) + create->provider;
    // Reading the schema now refuses a location with no readable files up front.
    ARROW_ASSIGN_OR_RAISE(auto table, open(create->name, create->location, format));
    ARROW_RETURN_NOT_OK(registry->PutSqlTable({create->name, format, create->location, ""}));
    result.message = "CREATE EXTERNAL TABLE " + create->name + " (" +
                     std::to_string(table->files.size()) +
                     (create->provider.empty() ? " files, " : " partitions, ") +
                     std::to_string(table->schema->num_fields()) + " columns)";
    return result;
  }
  if (auto* create = std::get_if<CreateFunctionLibrary>(&statement)) {
    // Loading it now verifies the bytes and the identity, so a bad pin fails here, not in a
    // later query.
    const std::string where = "CREATE FUNCTION LIBRARY " + create->name;
    auto digest = artifact::Digest::FromHex(create->digest, "pin");
    if (!digest.ok()) return AddContext(digest.status(), where);
    // A published library's signature must verify, before any of its code is loaded; the
    // signer is reported.
    std::string signed_by;
    ARROW_ASSIGN_OR_RAISE(auto published, registry->GetFunctionLibrary(digest->ToHex()));
    if (published.has_value() && !published->signature.empty()) {
      const std::string prefix = "ed25519:";
      auto key = published->publisher_id.rfind(prefix, 0) == 0
                     ? HexDecode(published->publisher_id.substr(prefix.size()), "publisher id")
                     : arrow::Result<std::vector<uint8_t>>(arrow::Status::Invalid("no key"));
      if (!key.ok() ||
          !catalog::VerifySignature(
              *key,
              catalog::FunctionLibraryStatement(published->artifact_blake3, published->identity),
              published->signature)) {
        return arrow::Status::Invalid(where, ": the registry's signature of library ",
                                      digest->ToHex(), " by ", published->publisher_id,
                                      " does not verify; refusing it");
      }
      signed_by = "; signed by " + published->publisher_id;
    }
    auto library = plan::EnsureFunctionLibrary(store, cache_dir, digest->ToHex());
    if (!library.ok()) return AddContext(library.status(), where);
    ARROW_RETURN_NOT_OK(registry->PutSqlFunctionLibrary({create->name, digest->ToHex(), ""}));
    const auto& id = (*library)->identity();
    std::string names;
    for (const auto& f : id.functions) names += (names.empty() ? "" : ", ") + f.name;
    result.message = "CREATE FUNCTION LIBRARY " + create->name + " (" + id.qualified_name + " " +
                     id.version + ": " + names + signed_by + ")";
    return result;
  }
  const auto& select = std::get<SelectStatement>(statement);
  // The session's function libraries, each loaded (verified) and registered on first use.
  std::optional<std::vector<catalog::SqlFunctionLibraryRecord>> libraries;
  std::map<std::string, std::shared_ptr<artifact::FunctionLibrary>> loaded;
  FunctionResolver functions =
      [&](const std::string& name) -> arrow::Result<std::optional<LibraryFunction>> {
    if (!libraries.has_value()) {
      ARROW_ASSIGN_OR_RAISE(libraries, registry->ListSqlFunctionLibraries());
    }
    std::optional<LibraryFunction> found;
    for (const auto& l : *libraries) {
      auto& library = loaded[l.artifact_blake3];
      if (library == nullptr) {
        auto ensured = plan::EnsureFunctionLibrary(store, cache_dir, l.artifact_blake3);
        if (!ensured.ok()) return AddContext(ensured.status(), "function library " + l.name);
        library = *ensured;
      }
      const auto* sig = library->identity().Find(name);
      if (sig == nullptr) continue;
      if (found.has_value()) {
        return arrow::Status::Invalid("function ", name, " is in function libraries ",
                                      found->library_name, " and ", l.name,
                                      "; drop one of them or rename the function");
      }
      found = LibraryFunction{l.artifact_blake3, l.name, *sig};
    }
    return found;
  };
  TableResolver resolve =
      [&](const std::string& name) -> arrow::Result<std::shared_ptr<TableSource>> {
    ARROW_ASSIGN_OR_RAISE(auto record, registry->GetSqlTable(name));
    if (record.has_value()) {
      return open(record->name, record->location, record->format);
    }
    // A committed run's output is a table by its run id, e.g. FROM "conversation-extract-check".
    ARROW_ASSIGN_OR_RAISE(auto run, registry->GetRun(name));
    if (run.has_value() && run->status == "committed" && !run->sink_path.empty()) {
      return open(name, run->sink_path, "auto");
    }
    if (run.has_value()) {
      return arrow::Status::Invalid(
          "run \"", name, "\" is ", catalog::EffectiveStatus(*run, catalog::NowSeconds()),
          run->status == "committed" ? " but was recorded before sluice kept sink paths; submit it "
                                       "again under a new run id to query it"
                                     : ", not committed; only committed runs are tables");
    }
    return arrow::Status::Invalid("relation \"", name,
                                  "\" does not exist; declare it with CREATE EXTERNAL TABLE");
  };
  // Binding, then the optimizer's passes (BindSelect in two steps, to name the passes in
  // EXPLAIN).
  ARROW_ASSIGN_OR_RAISE(BoundQuery bound,
                        BindLogical(select.select, select.sql, resolve, functions));
  std::vector<std::string> passes;
  const bool in_process = options.workers == 0 && options.executor == "local";
  ARROW_RETURN_NOT_OK(
      Optimize(bound.plan.get(), in_process ? InProcessPasses() : DefaultPasses(), &passes));
  // Provider tables' libraries join the session spec, as called functions' do (after the
  // passes: the bound plan keeps its FROM items in join sets).
  for (const PlanNode* scan : plan::ScansOf(*bound.plan)) {
    if (scan->table->format != plan::kProviderFormat) continue;
    ARROW_ASSIGN_OR_RAISE(auto described,
                          plan::ParseProviderDescription(scan->table->provider, scan->table->name));
    if (std::find(bound.libraries.begin(), bound.libraries.end(), described.digest_hex) ==
        bound.libraries.end()) {
      bound.libraries.push_back(described.digest_hex);
    }
  }
  int workers = options.workers;
  std::shared_ptr<dist::RayExecutor> ray;
  if (options.executor == "ray") {
    dist::RayOptions ray_options = dist::RayOptionsFromEnvironment();
    ARROW_ASSIGN_OR_RAISE(ray, dist::RayExecutor::Start(std::move(ray_options)));
    if (workers == 0) workers = ray->cluster_cpus();
  } else if (options.executor != "local") {
    return arrow::Status::Invalid("--executor '", options.executor, "': use local or ray");
  }
  if (workers > 0) {
    StageOptions stage_options;
    stage_options.workers = workers;
    if (options.broadcast_limit_bytes >= 0) {
      stage_options.broadcast_limit_bytes = options.broadcast_limit_bytes;
    }
    StagePlan stages = PlanStages(*bound.plan, stage_options);
    if (stages.cut()) {
      DistributedOptions distributed;
      distributed.workers = workers;
      distributed.ray = ray;
      distributed.store = store;
      distributed.store_url = config.store_url;
      distributed.cache_dir = cache_dir;
      distributed.libraries = bound.libraries;
      return RunDistributedSelect(bound, stages, select, distributed);
    }
    std::fprintf(stderr, "sluice: running in-process: %s\n", stages.not_cut_reason.c_str());
    ray.reset();  // nothing runs on Ray: leave it before the query does its work
  }
  // A top-N over one Parquet table reads its sort key first (not for EXPLAIN alone: it runs).
  if (!select.explain || select.analyze) ARROW_RETURN_NOT_OK(BoundTopNScan(bound.plan.get()));
  // A probe scan clustered on a join key reads only the row groups of the dimension's key range
  // (a first pass too).
  if (!select.explain || select.analyze) {
    // Group keys that a unique key determines go (reading that key's column first).
    ARROW_RETURN_NOT_OK(DropDeterminedGroupKeys(bound.plan.get()));
    ARROW_RETURN_NOT_OK(BoundJoinKeyRanges(bound.plan.get()));
    // A semi join's few outer rows run first and filter its inner side.
    ARROW_RETURN_NOT_OK(ReduceSemiJoinInputs(bound.plan.get()));
  }
  if (select.explain) {
    ARROW_ASSIGN_OR_RAISE(auto decl, exec::ToDeclaration(*bound.plan));
    if (!select.analyze) {
      std::string ran;
      for (const auto& pass : passes) ran += (ran.empty() ? "" : ", ") + pass;
      result.message = "logical plan (after optimizer passes: " + ran + "):\n" +
                       bound.plan->Explain(1) + "physical plan (Acero):\n" +
                       arrow::acero::DeclarationToString(decl).ValueOr("?") + "\n";
      return result;
    }
    // Runs the query with a probe above every operator; the result itself is dropped.
    exec::OperatorProbes probes;
    const auto start = std::chrono::steady_clock::now();
    ARROW_ASSIGN_OR_RAISE(auto table, exec::Execute(*bound.plan, bound.names, &probes));
    const double ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    result.message =
        "logical plan, with each operator's output (rows, batches, and when its "
        "first and last batch left it):\n" +
        bound.plan->Explain(1, [&](const PlanNode& node) -> std::string {
          auto it = probes.find(&node);
          return it == probes.end() ? "" : "[" + it->second->ToString() + "]";
        });
    char total[96];
    std::snprintf(total, sizeof(total), "analyze: %lld rows in %.1f ms\n",
                  static_cast<long long>(table->num_rows()), ms);
    result.message += total;
    return result;
  }
  if (!options.stream) {
    ARROW_ASSIGN_OR_RAISE(result.table, exec::Execute(*bound.plan, bound.names));
    return result;
  }
  // The rows stream to the caller; the plan they are computed from lives as long as they do.
  result.stream_plan = std::shared_ptr<const PlanNode>(std::move(bound.plan));
  ARROW_ASSIGN_OR_RAISE(result.stream, exec::ExecuteStream(*result.stream_plan, bound.names));
  return result;
}

}  // namespace

arrow::Result<QueryResult> RunQuery(const Config& config, const std::string& sql,
                                    const RunOptions& options) {
  arrow::Result<QueryResult> out = arrow::Status::UnknownError("internal: the query did not run");
  ARROW_RETURN_NOT_OK(
      RunWithStack(kQueryStackBytes, [&] { out = RunQueryOnThisThread(config, sql, options); }));
  return out;
}

}  // namespace sluice::sql
