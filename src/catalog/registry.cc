#include "catalog/registry.h"

#include <chrono>
#include <cstdio>
#include <ctime>

#include "common/status.h"

namespace sluice::catalog {

namespace {

// Versioned migrations. {BLOB} becomes BLOB (SQLite) or BYTEA (PostgreSQL); everything else is
// SQL both accept. Never edit a released migration: add a new one.
struct Migration {
  int version;
  const char* sql;
};

constexpr Migration kMigrations[] = {
    {1, R"(
CREATE TABLE publishers (
  id TEXT PRIMARY KEY,
  name TEXT NOT NULL,
  public_key {BLOB} NOT NULL,
  created_at TEXT NOT NULL
);
CREATE TABLE transform_artifacts (
  artifact_blake3 TEXT PRIMARY KEY,
  qualified_name TEXT NOT NULL,
  version TEXT NOT NULL,
  input_schema TEXT NOT NULL,
  output_schema TEXT NOT NULL,
  size_bytes BIGINT NOT NULL,
  build_info TEXT NOT NULL,
  publisher_id TEXT NOT NULL REFERENCES publishers(id),
  created_at TEXT NOT NULL
);
CREATE TABLE pipeline_specs (
  spec_blake3 TEXT PRIMARY KEY,
  name TEXT NOT NULL,
  spec_cbor {BLOB} NOT NULL,
  signature {BLOB} NOT NULL,
  publisher_id TEXT NOT NULL REFERENCES publishers(id),
  created_at TEXT NOT NULL
);
CREATE INDEX pipeline_specs_by_name ON pipeline_specs(name, created_at);
CREATE TABLE runs (
  run_id TEXT PRIMARY KEY,
  user_id TEXT NOT NULL,
  manifest_blake3 TEXT NOT NULL,
  pins TEXT NOT NULL,
  status TEXT NOT NULL,
  rows_in BIGINT,
  rows_out BIGINT,
  duplicates_dropped BIGINT,
  stage_timings TEXT,
  error TEXT,
  started_at TEXT NOT NULL,
  finished_at TEXT
);
)"},
    // Specs are looked up by the artifact they pin when a job is submitted.
    {2, R"(
ALTER TABLE pipeline_specs ADD COLUMN artifact_blake3 TEXT;
CREATE INDEX pipeline_specs_by_artifact ON pipeline_specs(artifact_blake3);
)"},
    // SQL's external tables.
    {3, R"(
CREATE TABLE sql_tables (
  name TEXT PRIMARY KEY,
  format TEXT NOT NULL,
  location TEXT NOT NULL,
  created_at TEXT NOT NULL
);
)"},
    // A committed run's output is a SQL table by its run id.
    {4, R"(
ALTER TABLE runs ADD COLUMN sink_path TEXT;
)"},
    // Runs are claimed by one driver attempt at a time, which holds a lease it renews.
    {5, R"(
ALTER TABLE runs ADD COLUMN attempt_id TEXT;
ALTER TABLE runs ADD COLUMN driver_host TEXT;
ALTER TABLE runs ADD COLUMN driver_pid BIGINT;
ALTER TABLE runs ADD COLUMN driver_start TEXT;
ALTER TABLE runs ADD COLUMN heartbeat_at BIGINT;
)"},
    // Schemas travel with the artifact: the Arrow schemas its identity declares, as IPC schema
    // messages (NULL for `any`, or for a library that predates them).
    {6, R"(
ALTER TABLE transform_artifacts ADD COLUMN input_arrow_schema {BLOB};
ALTER TABLE transform_artifacts ADD COLUMN output_arrow_schema {BLOB};
)"},
    // Function libraries: published artifacts, and the names SQL calls them by.
    {7, R"(
CREATE TABLE function_libraries (
  artifact_blake3 TEXT PRIMARY KEY,
  qualified_name TEXT NOT NULL,
  version TEXT NOT NULL,
  identity TEXT NOT NULL,
  size_bytes BIGINT NOT NULL,
  publisher_id TEXT,
  signature {BLOB},
  created_at TEXT NOT NULL
);
CREATE TABLE sql_function_libraries (
  name TEXT PRIMARY KEY,
  artifact_blake3 TEXT NOT NULL,
  created_at TEXT NOT NULL
);
)"},
};

std::string ForDialect(std::string sql, std::string_view dialect) {
  const std::string blob = dialect == "postgresql" ? "BYTEA" : "BLOB";
  for (size_t pos = sql.find("{BLOB}"); pos != std::string::npos; pos = sql.find("{BLOB}", pos)) {
    sql.replace(pos, 6, blob);
  }
  return sql;
}

// Bytes that may be absent: NULL in the database, empty here.
Value OptionalBlob(const std::vector<uint8_t>& bytes) {
  if (bytes.empty()) return std::monostate{};
  return Blob{bytes};
}

std::vector<uint8_t> OptionalBytes(const Row& row, size_t i) {
  return i < row.size() && std::holds_alternative<Blob>(row[i]) ? std::get<Blob>(row[i]).bytes
                                                                : std::vector<uint8_t>();
}

std::string TextOrEmpty(const Row& row, size_t i) {
  return i < row.size() && std::holds_alternative<std::string>(row[i])
             ? std::get<std::string>(row[i])
             : std::string();
}

}  // namespace

std::string NowUtc() {
  const auto now = std::chrono::system_clock::now();
  const std::time_t t = std::chrono::system_clock::to_time_t(now);
  const auto micros =
      std::chrono::duration_cast<std::chrono::microseconds>(now.time_since_epoch()).count() %
      1000000;
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%04d-%02d-%02dT%02d:%02d:%02d.%06lldZ", tm.tm_year + 1900,
                tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
                static_cast<long long>(micros));
  return buf;
}

int Registry::LatestSchemaVersion() { return kMigrations[std::size(kMigrations) - 1].version; }

arrow::Result<std::unique_ptr<Registry>> Registry::Open(const std::string& url) {
  ARROW_ASSIGN_OR_RAISE(auto db, Database::Open(url));
  std::unique_ptr<Registry> registry(new Registry(std::move(db)));
  ARROW_RETURN_NOT_OK(registry->Migrate());
  return registry;
}

arrow::Result<int> Registry::SchemaVersion() {
  ARROW_ASSIGN_OR_RAISE(auto rows, db_->Query("SELECT MAX(version) FROM schema_migrations"));
  if (rows.empty() || std::holds_alternative<std::monostate>(rows[0][0])) return 0;
  return static_cast<int>(std::get<int64_t>(rows[0][0]));
}

arrow::Status Registry::Migrate() {
  ARROW_RETURN_NOT_OK(db_->ExecScript(
      "CREATE TABLE IF NOT EXISTS schema_migrations (version BIGINT PRIMARY KEY, applied_at "
      "TEXT NOT NULL)"));
  ARROW_ASSIGN_OR_RAISE(int current, SchemaVersion());
  if (current > LatestSchemaVersion()) {
    return arrow::Status::Invalid("registry ", db_->display_url(), " is at schema version ",
                                  current, ", newer than this sluice knows (",
                                  LatestSchemaVersion(), "); upgrade sluice");
  }
  for (const Migration& m : kMigrations) {
    if (m.version <= current) continue;
    ARROW_RETURN_NOT_OK(db_->Begin());
    arrow::Status st = db_->ExecScript(ForDialect(m.sql, db_->dialect()));
    if (st.ok()) {
      st = db_->Exec("INSERT INTO schema_migrations (version, applied_at) VALUES (?, ?)",
                     {static_cast<int64_t>(m.version), NowUtc()});
    }
    if (!st.ok()) {
      (void)db_->Rollback();
      // Another process may have migrated concurrently; that is fine if it got there.
      ARROW_ASSIGN_OR_RAISE(int now, SchemaVersion());
      if (now >= m.version) continue;
      return AddContext(st, "applying registry migration " + std::to_string(m.version));
    }
    ARROW_RETURN_NOT_OK(db_->Commit());
  }
  return arrow::Status::OK();
}

arrow::Status Registry::AddPublisher(const PublisherRecord& p) {
  return db_->Exec(
      "INSERT INTO publishers (id, name, public_key, created_at) VALUES (?, ?, ?, ?) "
      "ON CONFLICT (id) DO UPDATE SET name = excluded.name",
      {p.id, p.name, Blob{p.public_key}, p.created_at.empty() ? NowUtc() : p.created_at});
}

arrow::Result<std::optional<PublisherRecord>> Registry::GetPublisher(const std::string& id) {
  ARROW_ASSIGN_OR_RAISE(
      auto rows,
      db_->Query("SELECT id, name, public_key, created_at FROM publishers WHERE id = ?", {id}));
  if (rows.empty()) return std::nullopt;
  PublisherRecord p;
  ARROW_ASSIGN_OR_RAISE(p.id, TextAt(rows[0], 0));
  ARROW_ASSIGN_OR_RAISE(p.name, TextAt(rows[0], 1));
  ARROW_ASSIGN_OR_RAISE(p.public_key, BytesAt(rows[0], 2));
  ARROW_ASSIGN_OR_RAISE(p.created_at, TextAt(rows[0], 3));
  return p;
}

arrow::Result<std::optional<ArtifactRecord>> Registry::GetArtifact(const std::string& digest) {
  ARROW_ASSIGN_OR_RAISE(
      auto rows,
      db_->Query("SELECT artifact_blake3, qualified_name, version, input_schema, output_schema, "
                 "size_bytes, build_info, publisher_id, created_at, input_arrow_schema, "
                 "output_arrow_schema FROM transform_artifacts WHERE artifact_blake3 = ?",
                 {digest}));
  if (rows.empty()) return std::nullopt;
  const Row& r = rows[0];
  ArtifactRecord a;
  ARROW_ASSIGN_OR_RAISE(a.artifact_blake3, TextAt(r, 0));
  ARROW_ASSIGN_OR_RAISE(a.qualified_name, TextAt(r, 1));
  ARROW_ASSIGN_OR_RAISE(a.version, TextAt(r, 2));
  ARROW_ASSIGN_OR_RAISE(a.input_schema, TextAt(r, 3));
  ARROW_ASSIGN_OR_RAISE(a.output_schema, TextAt(r, 4));
  ARROW_ASSIGN_OR_RAISE(a.size_bytes, IntAt(r, 5));
  ARROW_ASSIGN_OR_RAISE(a.build_info, TextAt(r, 6));
  ARROW_ASSIGN_OR_RAISE(a.publisher_id, TextAt(r, 7));
  ARROW_ASSIGN_OR_RAISE(a.created_at, TextAt(r, 8));
  a.input_arrow_schema = OptionalBytes(r, 9);
  a.output_arrow_schema = OptionalBytes(r, 10);
  return a;
}

namespace {

arrow::Result<std::optional<PipelineSpecRecord>> SpecFromRows(const std::vector<Row>& rows) {
  if (rows.empty()) return std::nullopt;
  const Row& r = rows[0];
  PipelineSpecRecord s;
  ARROW_ASSIGN_OR_RAISE(s.spec_blake3, TextAt(r, 0));
  ARROW_ASSIGN_OR_RAISE(s.name, TextAt(r, 1));
  ARROW_ASSIGN_OR_RAISE(s.spec_cbor, BytesAt(r, 2));
  ARROW_ASSIGN_OR_RAISE(s.signature, BytesAt(r, 3));
  ARROW_ASSIGN_OR_RAISE(s.publisher_id, TextAt(r, 4));
  s.created_at = TextOrEmpty(r, 5);
  return s;
}

constexpr const char* kSpecColumns =
    "SELECT spec_blake3, name, spec_cbor, signature, publisher_id, created_at FROM pipeline_specs ";

}  // namespace

arrow::Result<std::optional<PipelineSpecRecord>> Registry::GetPipelineSpec(
    const std::string& spec_blake3) {
  ARROW_ASSIGN_OR_RAISE(
      auto rows, db_->Query(std::string(kSpecColumns) + "WHERE spec_blake3 = ?", {spec_blake3}));
  return SpecFromRows(rows);
}

arrow::Result<std::optional<PipelineSpecRecord>> Registry::LatestPipelineSpec(
    const std::string& name) {
  ARROW_ASSIGN_OR_RAISE(
      auto rows, db_->Query(std::string(kSpecColumns) +
                                "WHERE name = ? ORDER BY created_at DESC, spec_blake3 LIMIT 1",
                            {name}));
  return SpecFromRows(rows);
}

arrow::Status Registry::RegisterPublication(const ArtifactRecord& a, const PipelineSpecRecord& s,
                                            const PublisherRecord* publisher) {
  const std::string now = NowUtc();
  ARROW_RETURN_NOT_OK(db_->Begin());
  arrow::Status st = publisher != nullptr ? AddPublisher(*publisher) : arrow::Status::OK();
  if (st.ok())
    st = db_->Exec(
        "INSERT INTO transform_artifacts (artifact_blake3, qualified_name, version, input_schema, "
        "output_schema, size_bytes, build_info, publisher_id, created_at, input_arrow_schema, "
        "output_arrow_schema) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) "
        "ON CONFLICT (artifact_blake3) DO NOTHING",
        {a.artifact_blake3, a.qualified_name, a.version, a.input_schema, a.output_schema,
         a.size_bytes, a.build_info, a.publisher_id, now, OptionalBlob(a.input_arrow_schema),
         OptionalBlob(a.output_arrow_schema)});
  if (st.ok()) {
    st = db_->Exec(
        "INSERT INTO pipeline_specs (spec_blake3, name, spec_cbor, signature, publisher_id, "
        "created_at, artifact_blake3) VALUES (?, ?, ?, ?, ?, ?, ?) "
        "ON CONFLICT (spec_blake3) DO NOTHING",
        {s.spec_blake3, s.name, Blob{s.spec_cbor}, Blob{s.signature}, s.publisher_id, now,
         a.artifact_blake3});
  }
  if (!st.ok()) {
    (void)db_->Rollback();
    return AddContext(st, "registering transform '" + a.qualified_name + "'");
  }
  return db_->Commit();
}

arrow::Result<std::vector<PipelineSpecRecord>> Registry::SpecsForArtifact(
    const std::string& digest) {
  ARROW_ASSIGN_OR_RAISE(
      auto rows, db_->Query(std::string(kSpecColumns) +
                                "WHERE artifact_blake3 = ? ORDER BY created_at DESC, spec_blake3",
                            {digest}));
  std::vector<PipelineSpecRecord> out;
  for (const Row& row : rows) {
    ARROW_ASSIGN_OR_RAISE(auto spec, SpecFromRows({row}));
    out.push_back(*spec);
  }
  return out;
}

namespace {

Value OptionalText(const std::string& s) { return s.empty() ? Value{} : Value{s}; }

arrow::Result<RunRecord> ReadRunRow(const Row& r) {
  RunRecord run;
  ARROW_ASSIGN_OR_RAISE(run.run_id, TextAt(r, 0));
  ARROW_ASSIGN_OR_RAISE(run.user_id, TextAt(r, 1));
  ARROW_ASSIGN_OR_RAISE(run.manifest_blake3, TextAt(r, 2));
  ARROW_ASSIGN_OR_RAISE(run.pins, TextAt(r, 3));
  ARROW_ASSIGN_OR_RAISE(run.status, TextAt(r, 4));
  auto int_or_zero = [&](size_t i, int64_t* out) -> arrow::Status {
    ARROW_ASSIGN_OR_RAISE(auto v, OptionalIntAt(r, i));
    *out = v.value_or(0);
    return arrow::Status::OK();
  };
  ARROW_RETURN_NOT_OK(int_or_zero(5, &run.rows_in));
  ARROW_RETURN_NOT_OK(int_or_zero(6, &run.rows_out));
  ARROW_RETURN_NOT_OK(int_or_zero(7, &run.duplicates_dropped));
  run.stage_timings = TextOrEmpty(r, 8);
  run.error = TextOrEmpty(r, 9);
  run.started_at = TextOrEmpty(r, 10);
  run.finished_at = TextOrEmpty(r, 11);
  run.sink_path = TextOrEmpty(r, 12);
  run.attempt_id = TextOrEmpty(r, 13);
  run.driver_host = TextOrEmpty(r, 14);
  ARROW_RETURN_NOT_OK(int_or_zero(15, &run.driver_pid));
  run.driver_start = TextOrEmpty(r, 16);
  ARROW_RETURN_NOT_OK(int_or_zero(17, &run.heartbeat_at));
  return run;
}

// A run row, or an error naming the run and the registry.
arrow::Result<RunRecord> RunFromRow(const Row& r, const std::string& registry_url) {
  auto run = ReadRunRow(r);
  if (run.ok()) return run;
  const std::string id =
      !r.empty() && std::holds_alternative<std::string>(r[0]) ? std::get<std::string>(r[0]) : "?";
  return arrow::Status::Invalid("registry ", registry_url, ": run '", id,
                                "': ", run.status().message());
}

constexpr const char* kRunColumns =
    "SELECT run_id, user_id, manifest_blake3, pins, status, rows_in, rows_out, "
    "duplicates_dropped, stage_timings, error, started_at, finished_at, sink_path, attempt_id, "
    "driver_host, driver_pid, driver_start, heartbeat_at FROM runs ";

std::vector<Value> RunValues(const RunRecord& r) {
  return {r.run_id,
          r.user_id,
          r.manifest_blake3,
          r.pins,
          r.status,
          r.rows_in,
          r.rows_out,
          r.duplicates_dropped,
          OptionalText(r.stage_timings),
          OptionalText(r.error),
          r.started_at.empty() ? NowUtc() : r.started_at,
          OptionalText(r.finished_at),
          OptionalText(r.sink_path),
          OptionalText(r.attempt_id),
          OptionalText(r.driver_host),
          r.driver_pid,
          OptionalText(r.driver_start),
          r.heartbeat_at};
}

constexpr const char* kRunInsert =
    "INSERT INTO runs (run_id, user_id, manifest_blake3, pins, status, rows_in, rows_out, "
    "duplicates_dropped, stage_timings, error, started_at, finished_at, sink_path, attempt_id, "
    "driver_host, driver_pid, driver_start, heartbeat_at) "
    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ";

constexpr const char* kRunSetAll =
    "user_id = ?, manifest_blake3 = ?, pins = ?, status = ?, rows_in = ?, rows_out = ?, "
    "duplicates_dropped = ?, stage_timings = ?, error = ?, started_at = ?, finished_at = ?, "
    "sink_path = ?, attempt_id = ?, driver_host = ?, driver_pid = ?, driver_start = ?, "
    "heartbeat_at = ? ";

// The values of kRunSetAll (all but the run id), followed by `extra`.
std::vector<Value> RunSetValues(const RunRecord& r, std::vector<Value> extra) {
  std::vector<Value> values = RunValues(r);
  values.erase(values.begin());
  values.insert(values.end(), extra.begin(), extra.end());
  return values;
}

}  // namespace

arrow::Status Registry::UpsertRun(const RunRecord& r) {
  return db_->Exec(
      std::string(kRunInsert) +
          "ON CONFLICT (run_id) DO UPDATE SET "
          "user_id = excluded.user_id, manifest_blake3 = excluded.manifest_blake3, "
          "pins = excluded.pins, status = excluded.status, rows_in = excluded.rows_in, "
          "rows_out = excluded.rows_out, duplicates_dropped = excluded.duplicates_dropped, "
          "stage_timings = excluded.stage_timings, error = excluded.error, "
          "started_at = excluded.started_at, finished_at = excluded.finished_at, "
          "sink_path = excluded.sink_path, attempt_id = excluded.attempt_id, "
          "driver_host = excluded.driver_host, driver_pid = excluded.driver_pid, "
          "driver_start = excluded.driver_start, heartbeat_at = excluded.heartbeat_at",
      RunValues(r));
}

arrow::Result<bool> Registry::ClaimRun(const RunRecord& run, const std::string& replaces_attempt) {
  if (run.attempt_id.empty()) {
    return arrow::Status::Invalid("internal: a run claim needs an attempt id");
  }
  if (replaces_attempt.empty()) {
    // The primary key decides between concurrent first claims; the loser inserts nothing.
    ARROW_RETURN_NOT_OK(
        db_->Exec(std::string(kRunInsert) + "ON CONFLICT (run_id) DO NOTHING", RunValues(run)));
  } else {
    // Only the attempt that was read may be replaced: of two drivers that both saw it, the
    // database lets one update the row, and the other's WHERE no longer matches.
    ARROW_RETURN_NOT_OK(db_->Exec(
        std::string("UPDATE runs SET ") + kRunSetAll +
            "WHERE run_id = ? AND COALESCE(attempt_id, '') = ?",
        RunSetValues(run, {run.run_id, replaces_attempt == kNoAttempt ? "" : replaces_attempt})));
  }
  ARROW_ASSIGN_OR_RAISE(auto now, GetRun(run.run_id));
  return now.has_value() && now->attempt_id == run.attempt_id;
}

arrow::Result<bool> Registry::UpdateClaimedRun(const RunRecord& run) {
  ARROW_RETURN_NOT_OK(db_->Exec(
      std::string("UPDATE runs SET ") + kRunSetAll + "WHERE run_id = ? AND attempt_id = ?",
      RunSetValues(run, {run.run_id, run.attempt_id})));
  ARROW_ASSIGN_OR_RAISE(auto now, GetRun(run.run_id));
  return now.has_value() && now->attempt_id == run.attempt_id;
}

arrow::Status Registry::Heartbeat(const std::string& run_id, const std::string& attempt_id,
                                  int64_t now) {
  return db_->Exec("UPDATE runs SET heartbeat_at = ? WHERE run_id = ? AND attempt_id = ?",
                   {now, run_id, attempt_id});
}

arrow::Result<std::optional<RunRecord>> Registry::GetRun(const std::string& run_id) {
  ARROW_ASSIGN_OR_RAISE(auto rows,
                        db_->Query(std::string(kRunColumns) + "WHERE run_id = ?", {run_id}));
  if (rows.empty()) return std::nullopt;
  return RunFromRow(rows[0], db_->display_url());
}

arrow::Result<std::vector<RunRecord>> Registry::ListRuns(int64_t limit) {
  ARROW_ASSIGN_OR_RAISE(
      auto rows,
      db_->Query(std::string(kRunColumns) + "ORDER BY started_at DESC, run_id LIMIT ?", {limit}));
  std::vector<RunRecord> out;
  for (const Row& row : rows) {
    ARROW_ASSIGN_OR_RAISE(auto run, RunFromRow(row, db_->display_url()));
    out.push_back(std::move(run));
  }
  return out;
}

arrow::Status Registry::PutSqlTable(const SqlTableRecord& t) {
  return db_->Exec(
      "INSERT INTO sql_tables (name, format, location, created_at) VALUES (?, ?, ?, ?) "
      "ON CONFLICT (name) DO UPDATE SET format = excluded.format, location = excluded.location, "
      "created_at = excluded.created_at",
      {t.name, t.format, t.location, NowUtc()});
}

arrow::Result<std::optional<SqlTableRecord>> Registry::GetSqlTable(const std::string& name) {
  ARROW_ASSIGN_OR_RAISE(
      auto rows,
      db_->Query("SELECT name, format, location, created_at FROM sql_tables WHERE name = ?",
                 {name}));
  if (rows.empty()) return std::nullopt;
  SqlTableRecord t;
  ARROW_ASSIGN_OR_RAISE(t.name, TextAt(rows[0], 0));
  ARROW_ASSIGN_OR_RAISE(t.format, TextAt(rows[0], 1));
  ARROW_ASSIGN_OR_RAISE(t.location, TextAt(rows[0], 2));
  ARROW_ASSIGN_OR_RAISE(t.created_at, TextAt(rows[0], 3));
  return t;
}

arrow::Result<std::vector<SqlTableRecord>> Registry::ListSqlTables() {
  ARROW_ASSIGN_OR_RAISE(auto rows, db_->Query("SELECT name FROM sql_tables ORDER BY name"));
  std::vector<SqlTableRecord> out;
  for (const Row& row : rows) {
    ARROW_ASSIGN_OR_RAISE(std::string name, TextAt(row, 0));
    ARROW_ASSIGN_OR_RAISE(auto t, GetSqlTable(name));
    if (t.has_value()) out.push_back(*t);
  }
  return out;
}

std::vector<uint8_t> FunctionLibraryStatement(const std::string& artifact_blake3,
                                              const std::string& identity) {
  const std::string text = "sluice-function-library/1\n" + artifact_blake3 + "\n" + identity;
  return std::vector<uint8_t>(text.begin(), text.end());
}

arrow::Status Registry::PutFunctionLibrary(const FunctionLibraryRecord& l) {
  return db_->Exec(
      "INSERT INTO function_libraries (artifact_blake3, qualified_name, version, identity, "
      "size_bytes, publisher_id, signature, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?) "
      "ON CONFLICT (artifact_blake3) DO UPDATE SET publisher_id = excluded.publisher_id, "
      "signature = excluded.signature",
      {l.artifact_blake3, l.qualified_name, l.version, l.identity, l.size_bytes,
       l.publisher_id.empty() ? Value(std::monostate{}) : Value(l.publisher_id),
       OptionalBlob(l.signature), NowUtc()});
}

arrow::Result<std::optional<FunctionLibraryRecord>> Registry::GetFunctionLibrary(
    const std::string& artifact_blake3) {
  ARROW_ASSIGN_OR_RAISE(
      auto rows,
      db_->Query("SELECT artifact_blake3, qualified_name, version, identity, size_bytes, "
                 "publisher_id, created_at, signature FROM function_libraries "
                 "WHERE artifact_blake3 = ?",
                 {artifact_blake3}));
  if (rows.empty()) return std::nullopt;
  FunctionLibraryRecord l;
  ARROW_ASSIGN_OR_RAISE(l.artifact_blake3, TextAt(rows[0], 0));
  ARROW_ASSIGN_OR_RAISE(l.qualified_name, TextAt(rows[0], 1));
  ARROW_ASSIGN_OR_RAISE(l.version, TextAt(rows[0], 2));
  ARROW_ASSIGN_OR_RAISE(l.identity, TextAt(rows[0], 3));
  ARROW_ASSIGN_OR_RAISE(l.size_bytes, IntAt(rows[0], 4));
  l.publisher_id = TextOrEmpty(rows[0], 5);
  ARROW_ASSIGN_OR_RAISE(l.created_at, TextAt(rows[0], 6));
  l.signature = OptionalBytes(rows[0], 7);
  return l;
}

arrow::Status Registry::PutSqlFunctionLibrary(const SqlFunctionLibraryRecord& l) {
  return db_->Exec(
      "INSERT INTO sql_function_libraries (name, artifact_blake3, created_at) VALUES (?, ?, ?) "
      "ON CONFLICT (name) DO UPDATE SET artifact_blake3 = excluded.artifact_blake3, "
      "created_at = excluded.created_at",
      {l.name, l.artifact_blake3, NowUtc()});
}

arrow::Result<std::vector<SqlFunctionLibraryRecord>> Registry::ListSqlFunctionLibraries() {
  ARROW_ASSIGN_OR_RAISE(auto rows, db_->Query("SELECT name, artifact_blake3, created_at FROM "
                                              "sql_function_libraries ORDER BY name"));
  std::vector<SqlFunctionLibraryRecord> out;
  for (const Row& row : rows) {
    SqlFunctionLibraryRecord l;
    ARROW_ASSIGN_OR_RAISE(l.name, TextAt(row, 0));
    ARROW_ASSIGN_OR_RAISE(l.artifact_blake3, TextAt(row, 1));
    ARROW_ASSIGN_OR_RAISE(l.created_at, TextAt(row, 2));
    out.push_back(std::move(l));
  }
  return out;
}

arrow::Result<int64_t> Registry::CountRows(const std::string& table) {
  SLUICE_INTERNAL_CHECK(table == "publishers" || table == "transform_artifacts" ||
                        table == "pipeline_specs" || table == "runs" || table == "sql_tables" ||
                        table == "function_libraries" || table == "sql_function_libraries");
  ARROW_ASSIGN_OR_RAISE(auto rows, db_->Query("SELECT COUNT(*) FROM " + table));
  return IntAt(rows.at(0), 0);
}

}  // namespace sluice::catalog
