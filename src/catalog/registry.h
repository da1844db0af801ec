// The registry: publishers, transform artifacts, signed pipeline specs and runs, in SQLite (the
// embedded default, SLUICE_HOME/registry.db) or PostgreSQL (SLUICE_DATABASE_URL=postgresql://).
// Both backends share one schema and one set of versioned migrations.
//
// Not thread-safe: a Registry owns one connection.
#pragma once

#include <arrow/result.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "catalog/database.h"

namespace sluice::catalog {

struct PublisherRecord {
  std::string id;
  std::string name;
  std::vector<uint8_t> public_key;
  std::string created_at;
};

struct ArtifactRecord {
  std::string artifact_blake3;
  std::string qualified_name;
  std::string version;
  std::string input_schema;
  std::string output_schema;
  int64_t size_bytes = 0;
  /// JSON: compiler, build type, sluice version.
  std::string build_info;
  std::string publisher_id;
  std::string created_at;
  /// The Arrow schemas the artifact's identity declares, as IPC schema messages; empty for
  /// `any`, and for a library built before schemas travelled with artifacts.
  std::vector<uint8_t> input_arrow_schema;
  std::vector<uint8_t> output_arrow_schema;
};

struct PipelineSpecRecord {
  std::string spec_blake3;
  std::string name;
  std::vector<uint8_t> spec_cbor;
  std::vector<uint8_t> signature;
  std::string publisher_id;
  std::string created_at;
};

/// One submitted run. Pins and per-stage timings are JSON text.
struct RunRecord {
  std::string run_id;
  std::string user_id;
  std::string manifest_blake3;
  std::string pins;
  /// "running", "committed" or "failed".
  std::string status;
  int64_t rows_in = 0;
  int64_t rows_out = 0;
  int64_t duplicates_dropped = 0;
  std::string stage_timings;
  std::string error;
  std::string started_at;
  std::string finished_at;
  /// Where the run's output is committed (its sink path).
  std::string sink_path;
  /// The driver attempt that holds the run: unique per submit, part of every name it writes.
  std::string attempt_id;
  /// The driver's lease: who runs it (see catalog/run_lease.h) and when it last said so.
  std::string driver_host;
  int64_t driver_pid = 0;
  std::string driver_start;
  /// Seconds since the epoch.
  int64_t heartbeat_at = 0;
};

/// A table that SQL reaches by name (CREATE EXTERNAL TABLE).
struct SqlTableRecord {
  std::string name;
  std::string format;
  std::string location;
  std::string created_at;
};

/// A published function library (`sluice function publish`).
struct FunctionLibraryRecord {
  std::string artifact_blake3;
  std::string qualified_name;
  std::string version;
  /// The identity's JSON, as the library embeds it.
  std::string identity;
  int64_t size_bytes = 0;
  std::string publisher_id;
  std::string created_at;
  /// The publisher's Ed25519 signature of FunctionLibraryStatement(); empty when unsigned.
  std::vector<uint8_t> signature;
};

/// What a function library's publisher signs: its digest and identity JSON, so neither can be
/// swapped for another library's.
std::vector<uint8_t> FunctionLibraryStatement(const std::string& artifact_blake3,
                                              const std::string& identity);

/// The name SQL knows a function library by (CREATE FUNCTION LIBRARY name FROM PIN 'digest').
struct SqlFunctionLibraryRecord {
  std::string name;
  std::string artifact_blake3;
  std::string created_at;
};

class Registry {
 public:
  /// Opens the database at `url` and applies any migrations it lacks, in one transaction each.
  static arrow::Result<std::unique_ptr<Registry>> Open(const std::string& url);

  /// The newest migration this build knows, and the one the database is at.
  static int LatestSchemaVersion();
  arrow::Result<int> SchemaVersion();

  /// Registers a publisher. Registering the same id and key again is a no-op; the same id with
  /// a different key cannot happen (the id is the key), a different name is updated.
  arrow::Status AddPublisher(const PublisherRecord& publisher);
  arrow::Result<std::optional<PublisherRecord>> GetPublisher(const std::string& id);

  arrow::Result<std::optional<ArtifactRecord>> GetArtifact(const std::string& artifact_blake3);
  arrow::Result<std::optional<PipelineSpecRecord>> GetPipelineSpec(const std::string& spec_blake3);
  /// The most recently registered spec with this name.
  arrow::Result<std::optional<PipelineSpecRecord>> LatestPipelineSpec(const std::string& name);

  /// Registers a transform artifact and its pipeline spec in one transaction, with the
  /// publisher when one is given: either every row is there afterwards or none is. Rows that
  /// already exist (same digests) are kept as they are, so publishing unchanged bytes adds
  /// nothing.
  arrow::Status RegisterPublication(const ArtifactRecord& artifact, const PipelineSpecRecord& spec,
                                    const PublisherRecord* publisher = nullptr);

  /// Pipeline specs that pin this artifact, newest first.
  arrow::Result<std::vector<PipelineSpecRecord>> SpecsForArtifact(const std::string& digest);

  /// Inserts a run or replaces the record with the same run id, unconditionally (tests and
  /// repairs; drivers claim).
  arrow::Status UpsertRun(const RunRecord& run);
  /// Claims a run id for `run.attempt_id`, atomically across processes and machines sharing
  /// the registry. With `replaces_attempt` empty the run id must be new; otherwise the row must
  /// still hold that attempt (kNoAttempt: a row written before attempts existed). Returns false
  /// when another driver has the run id, and then has changed nothing.
  arrow::Result<bool> ClaimRun(const RunRecord& run, const std::string& replaces_attempt);
  static constexpr char kNoAttempt[] = "-";
  /// Updates a claimed run, only while `run.attempt_id` still holds it; false when it does not.
  arrow::Result<bool> UpdateClaimedRun(const RunRecord& run);
  /// Renews an attempt's lease.
  arrow::Status Heartbeat(const std::string& run_id, const std::string& attempt_id, int64_t now);
  arrow::Result<std::optional<RunRecord>> GetRun(const std::string& run_id);
  /// The newest runs first.
  arrow::Result<std::vector<RunRecord>> ListRuns(int64_t limit);

  /// Creates or replaces an external table definition.
  arrow::Status PutSqlTable(const SqlTableRecord& table);
  arrow::Result<std::optional<SqlTableRecord>> GetSqlTable(const std::string& name);
  arrow::Result<std::vector<SqlTableRecord>> ListSqlTables();

  /// Registers a published function library; one already registered is kept as it is.
  arrow::Status PutFunctionLibrary(const FunctionLibraryRecord& library);
  arrow::Result<std::optional<FunctionLibraryRecord>> GetFunctionLibrary(
      const std::string& artifact_blake3);
  /// Creates or replaces SQL's name for a function library.
  arrow::Status PutSqlFunctionLibrary(const SqlFunctionLibraryRecord& library);
  arrow::Result<std::vector<SqlFunctionLibraryRecord>> ListSqlFunctionLibraries();

  /// Row count of a registry table, for tests and `sluice doctor`-style checks.
  arrow::Result<int64_t> CountRows(const std::string& table);

  Database* database() { return db_.get(); }

 private:
  explicit Registry(std::unique_ptr<Database> db) : db_(std::move(db)) {}
  arrow::Status Migrate();

  std::unique_ptr<Database> db_;
};

/// Now, as RFC 3339 UTC text; the registry's timestamps.
std::string NowUtc();

}  // namespace sluice::catalog
