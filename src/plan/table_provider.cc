#include "plan/table_provider.h"

#include <arrow/api.h>
#include <arrow/c/bridge.h>

#include <nlohmann/json.hpp>

#include "common/hex.h"
#include "plan/library_functions.h"
#include "storage/schema_message.h"

namespace sluice::plan {

namespace {

using json = nlohmann::json;

// Bounds on what a provider may say, so that a broken one cannot flood the plan.
constexpr size_t kMaxPartitions = 1 << 20;
constexpr size_t kMaxPartitionBytes = 4096;

// The host side of one provider call: the store, and the error the provider or a callback
// recorded.
struct HostContext {
  const storage::ObjectStore* store = nullptr;
  std::string error;
};

void SetError(void* ctx, const char* message, size_t len) {
  if (message != nullptr) static_cast<HostContext*>(ctx)->error.assign(message, len);
}

int32_t List(void* ctx, const char* prefix, size_t len, void (*each)(void*, const char*, size_t),
             void* each_ctx) {
  auto* host = static_cast<HostContext*>(ctx);
  auto listed = host->store->List(std::string_view(prefix, len));
  if (!listed.ok()) {
    host->error = listed.status().ToString();
    return 1;
  }
  for (const auto& o : *listed) each(each_ctx, o.key.data(), o.key.size());
  return 0;
}

int32_t Read(void* ctx, const char* key, size_t len, void (*into)(void*, const uint8_t*, size_t),
             void* into_ctx) {
  auto* host = static_cast<HostContext*>(ctx);
  auto bytes = host->store->Get(std::string_view(key, len));
  if (!bytes.ok()) {
    host->error = bytes.status().ToString();
    return 1;
  }
  into(into_ctx, (*bytes)->data(), static_cast<size_t>((*bytes)->size()));
  return 0;
}

struct Host {
  HostContext context;
  sluice_table_host abi{
      SLUICE_FUNCTION_ABI_VERSION, sizeof(sluice_table_host), &context, SetError, List, Read};
  explicit Host(const storage::ObjectStore* store) { context.store = store; }
};

// The registered library and provider of a description.
struct Resolved {
  std::shared_ptr<artifact::FunctionLibrary> library;
  const sluice_table_provider_entry* entry = nullptr;
  std::string where;  // "table provider t (library q v, <digest>)"
};

arrow::Result<Resolved> Resolve(const std::string& digest_hex, const std::string& table) {
  Resolved r;
  r.library = RegisteredLibrary(digest_hex);
  if (r.library == nullptr) {
    return arrow::Status::Invalid("table provider ", table, " of library ", digest_hex,
                                  " is not available on this worker: the session spec does not "
                                  "list the library and this worker's session has not "
                                  "registered it");
  }
  r.entry = r.library->provider(table);
  const auto& id = r.library->identity();
  r.where = "table provider " + table + " (library " + id.qualified_name + " " + id.version + ", " +
            digest_hex + ")";
  if (r.entry == nullptr) return arrow::Status::Invalid(r.where, ": the library has no such table");
  return r;
}

arrow::Status Failed(const std::string& where, const Host& host, const char* step) {
  return arrow::Status::Invalid(where, ": ", step, " failed",
                                host.context.error.empty() ? "" : ": " + host.context.error);
}

// Names and types; nullability is a promise SQL does not rely on (every column may be NULL).
bool SameColumns(const arrow::Schema& a, const arrow::Schema& b) {
  if (a.num_fields() != b.num_fields()) return false;
  for (int i = 0; i < a.num_fields(); ++i) {
    if (a.field(i)->name() != b.field(i)->name() ||
        !a.field(i)->type()->Equals(*b.field(i)->type())) {
      return false;
    }
  }
  return true;
}

// Reads the partitions' streams one after another, checking every batch.
class ProviderReader : public arrow::RecordBatchReader {
 public:
  ProviderReader(Resolved provider, std::string options, std::vector<std::string> partitions,
                 std::vector<int32_t> columns, std::shared_ptr<arrow::Schema> schema,
                 std::shared_ptr<storage::ObjectStore> store)
      : provider_(std::move(provider)),
        options_(std::move(options)),
        partitions_(std::move(partitions)),
        columns_(std::move(columns)),
        schema_(std::move(schema)),
        store_(std::move(store)),
        host_(store_.get()) {}

  std::shared_ptr<arrow::Schema> schema() const override { return schema_; }

  arrow::Status ReadNext(std::shared_ptr<arrow::RecordBatch>* batch) override {
    while (true) {
      if (current_ == nullptr) {
        if (next_ >= partitions_.size()) {
          *batch = nullptr;
          return arrow::Status::OK();
        }
        ARROW_RETURN_NOT_OK(Open(partitions_[next_++]));
      }
      std::shared_ptr<arrow::RecordBatch> got;
      arrow::Status st = current_->ReadNext(&got);
      if (!st.ok()) return Bad("its stream failed (" + st.message() + ")");
      if (got == nullptr) {
        current_ = nullptr;
        continue;
      }
      if (!SameColumns(*got->schema(), *schema_)) {
        return Bad("returned a batch of " + got->schema()->ToString() + ", not the scan's " +
                   schema_->ToString());
      }
      arrow::Status valid = got->ValidateFull();
      if (!valid.ok()) return Bad("returned an invalid batch (" + valid.message() + ")");
      *batch = arrow::RecordBatch::Make(schema_, got->num_rows(), got->columns());
      return arrow::Status::OK();
    }
  }

 private:
  arrow::Status Bad(const std::string& what) const {
    return arrow::Status::Invalid(provider_.where, ": partition '", partition_, "': ", what);
  }

  arrow::Status Open(const std::string& partition) {
    partition_ = partition;
    struct ArrowArrayStream stream {};
    host_.context.error.clear();
    const int32_t rc = provider_.entry->scan(&host_.abi, options_.data(), options_.size(),
                                             partition.data(), partition.size(), columns_.data(),
                                             static_cast<int64_t>(columns_.size()), &stream);
    if (rc != SLUICE_FUNCTION_OK) {
      if (stream.release != nullptr) stream.release(&stream);
      return Bad("the scan failed" +
                 (host_.context.error.empty() ? "" : ": " + host_.context.error));
    }
    if (stream.release == nullptr) return Bad("the scan returned no stream");
    auto reader = arrow::ImportRecordBatchReader(&stream);  // released on every path
    if (!reader.ok())
      return Bad("the scan returned a bad stream (" + reader.status().message() + ")");
    current_ = *std::move(reader);
    return arrow::Status::OK();
  }

  Resolved provider_;
  std::string options_;
  std::vector<std::string> partitions_;
  std::vector<int32_t> columns_;
  std::shared_ptr<arrow::Schema> schema_;
  std::shared_ptr<storage::ObjectStore> store_;
  Host host_;
  size_t next_ = 0;
  std::string partition_;
  std::shared_ptr<arrow::RecordBatchReader> current_;
};

}  // namespace

arrow::Result<std::shared_ptr<TableSource>> OpenProviderTable(
    std::shared_ptr<storage::ObjectStore> store, const std::string& name,
    const std::string& digest_hex, const std::string& table, const std::string& options) {
  ARROW_ASSIGN_OR_RAISE(Resolved p, Resolve(digest_hex, table));
  Host host(store.get());
  struct ArrowSchema c_schema {};
  if (p.entry->schema(&host.abi, options.data(), options.size(), &c_schema) != SLUICE_FUNCTION_OK) {
    if (c_schema.release != nullptr) c_schema.release(&c_schema);
    return Failed(p.where, host, "schema");
  }
  if (c_schema.release == nullptr) return arrow::Status::Invalid(p.where, ": schema returned none");
  auto schema = arrow::ImportSchema(&c_schema);
  if (!schema.ok()) {
    return arrow::Status::Invalid(p.where, ": schema returned a malformed schema (",
                                  schema.status().message(), ")");
  }
  if ((*schema)->num_fields() == 0) {
    return arrow::Status::Invalid(p.where, ": schema has no columns");
  }
  std::vector<std::string> partitions;
  bool overflow = false;
  auto each = [](void* ctx, const char* text, size_t len) {
    auto* state = static_cast<std::pair<std::vector<std::string>*, bool*>*>(ctx);
    if (state->first->size() >= kMaxPartitions || len > kMaxPartitionBytes || text == nullptr) {
      *state->second = true;
      return;
    }
    state->first->emplace_back(text, len);
  };
  std::pair<std::vector<std::string>*, bool*> state{&partitions, &overflow};
  host.context.error.clear();
  if (p.entry->partitions(&host.abi, options.data(), options.size(), each, &state) !=
      SLUICE_FUNCTION_OK) {
    return Failed(p.where, host, "partitions");
  }
  if (overflow) {
    return arrow::Status::Invalid(p.where, ": more than ", kMaxPartitions,
                                  " partitions, or one longer than ", kMaxPartitionBytes, " bytes");
  }
  if (!std::is_sorted(partitions.begin(), partitions.end()) ||
      std::adjacent_find(partitions.begin(), partitions.end()) != partitions.end()) {
    return arrow::Status::Invalid(p.where, ": its partitions are not sorted and distinct");
  }
  if (partitions.empty()) {
    return arrow::Status::Invalid(p.where, ": no partitions for options '", options, "'");
  }
  auto t = std::make_shared<TableSource>();
  t->name = name;
  t->location = options;
  t->format = kProviderFormat;
  t->store = std::move(store);
  t->files = std::move(partitions);
  t->file_bytes.assign(t->files.size(), 0);
  t->schema = t->file_schema = *schema;
  ARROW_ASSIGN_OR_RAISE(t->provider, ProviderDescription(digest_hex, table, options, **schema));
  return t;
}

arrow::Result<std::string> ProviderDescription(const std::string& digest_hex,
                                               const std::string& table, const std::string& options,
                                               const arrow::Schema& schema) {
  ARROW_ASSIGN_OR_RAISE(std::string ipc, storage::SerializeSchemaMessage(schema));
  json doc = {{"library", digest_hex},
              {"table", table},
              {"options", options},
              {"schema", HexEncode(reinterpret_cast<const uint8_t*>(ipc.data()), ipc.size())}};
  return std::string(kProviderMagic) + doc.dump();
}

arrow::Result<ProviderTable> ParseProviderDescription(std::string_view bytes,
                                                      const std::string& where) {
  const std::string_view magic = kProviderMagic;
  if (bytes.substr(0, magic.size()) != magic) {
    return arrow::Status::Invalid(where, ": not a table provider description (expected '",
                                  magic.substr(0, magic.size() - 1), "')");
  }
  json doc = json::parse(bytes.substr(magic.size()), nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded() || !doc.is_object()) {
    return arrow::Status::Invalid(where, ": the table provider description is not JSON");
  }
  ProviderTable out;
  for (auto [key, field] : {std::pair<const char*, std::string*>{"library", &out.digest_hex},
                            {"table", &out.table},
                            {"options", &out.options}}) {
    auto it = doc.find(key);
    if (it == doc.end() || !it->is_string()) {
      return arrow::Status::Invalid(where, ": the description lacks '", key, "'");
    }
    *field = it->get<std::string>();
  }
  auto schema = doc.find("schema");
  if (schema == doc.end() || !schema->is_string()) {
    return arrow::Status::Invalid(where, ": the description lacks 'schema'");
  }
  ARROW_ASSIGN_OR_RAISE(auto ipc, HexDecode(schema->get<std::string>(), where + ": schema"));
  ARROW_ASSIGN_OR_RAISE(out.schema,
                        storage::ReadSchemaMessage(
                            std::string_view(reinterpret_cast<const char*>(ipc.data()), ipc.size()),
                            where + ": schema"));
  ARROW_RETURN_NOT_OK(Resolve(out.digest_hex, out.table).status());
  return out;
}

arrow::Result<std::shared_ptr<arrow::RecordBatchReader>> ScanProvider(
    const TableSource& table, const std::vector<std::string>& columns) {
  ARROW_ASSIGN_OR_RAISE(ProviderTable d,
                        ParseProviderDescription(table.provider, "table '" + table.name + "'"));
  ARROW_ASSIGN_OR_RAISE(Resolved p, Resolve(d.digest_hex, d.table));
  std::vector<int32_t> indexes;
  arrow::FieldVector fields;
  for (const auto& c : columns) {
    const int i = d.schema->GetFieldIndex(c);
    if (i < 0) return arrow::Status::Invalid(p.where, ": no column '", c, "'");
    indexes.push_back(i);
    fields.push_back(d.schema->field(i));
  }
  return std::make_shared<ProviderReader>(std::move(p), d.options, table.files, std::move(indexes),
                                          arrow::schema(fields), table.store);
}

}  // namespace sluice::plan
