// The C++ SDK for function library authors (include/sluice/function_abi.h). Header-only:
//
//   // A scalar function: one struct array of the arguments in, one array of as many rows out.
//   arrow::Result<std::shared_ptr<arrow::Array>> NetRevenue(const arrow::StructArray& args);
//
//   // An aggregate: a state struct per group, updated, merged and finalized.
//   struct WeightedAvg {
//     static arrow::Result<std::shared_ptr<arrow::Array>> Update(
//         const arrow::StructArray& state, const arrow::StructArray& args,
//         const uint32_t* group_ids, int64_t num_groups);
//     static arrow::Result<std::shared_ptr<arrow::Array>> Merge(
//         const arrow::StructArray& state, const arrow::StructArray& other,
//         const uint32_t* mapping, int64_t num_groups);
//     static arrow::Result<std::shared_ptr<arrow::Array>> Finalize(const arrow::StructArray&
//     state);
//   };
//
//   // A window function: one partition's rows in window order, and each row's peer group.
//   arrow::Result<std::shared_ptr<arrow::Array>> RevenueRank(const arrow::StructArray& args,
//                                                            const int64_t* peer_groups);
//
//   SLUICE_FUNCTION_IDENTITY(R"({"abi_version":1,"qualified_name":"my-functions", ...})")
//   SLUICE_FUNCTION_TABLE(sluice::sdk::Scalar<NetRevenue>("net_revenue"),
//                         sluice::sdk::Aggregate<WeightedAvg>("weighted_avg"),
//                         sluice::sdk::Window<RevenueRank>("revenue_rank"))
//
// The identity is written out as JSON because it is static data that `sluice function check`
// reads from the ELF file without loading the library; the host refuses a library whose table
// and identity disagree. The SDK imports and validates (ValidateFull) every array the host
// passes before the function sees it, checks the row count of what it returns, and turns a
// non-OK Status or any exception into set_error(), so no exception crosses the C ABI.
#pragma once

#include <arrow/api.h>
#include <arrow/c/bridge.h>
#include <sluice/function_abi.h>

#include <cstring>
#include <exception>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace sluice::sdk {

namespace internal {

// The library's identity (SLUICE_FUNCTION_IDENTITY defines it).
extern "C" const char sluice_function_identity[];

// What the identity declares for one function, as Arrow types: the SDK checks every array the
// host passes against it, so a function body never sees a type it was not written for.
struct Declared {
  arrow::FieldVector arguments;
  std::shared_ptr<arrow::DataType> state;  // aggregates
};

inline void ReleaseNothing(struct ArrowSchema* schema) { schema->release = nullptr; }

inline arrow::Result<std::shared_ptr<arrow::DataType>> FormatType(const std::string& format) {
  struct ArrowSchema c {};
  c.format = format.c_str();
  c.name = "";
  c.flags = ARROW_FLAG_NULLABLE;
  c.release = ReleaseNothing;
  return arrow::ImportType(&c);
}

inline arrow::Result<Declared> Declare(const char* name) {
  const std::string magic = SLUICE_FUNCTION_IDENTITY_MAGIC;
  auto doc = nlohmann::json::parse(sluice_function_identity + magic.size(), nullptr, false);
  if (doc.is_discarded() || !doc.contains("functions")) {
    return arrow::Status::Invalid("the library's identity is not valid JSON");
  }
  for (const auto& f : doc.at("functions")) {
    if (f.value("name", "") != name) continue;
    Declared d;
    int i = 0;
    for (const auto& a : f.at("arguments")) {
      ARROW_ASSIGN_OR_RAISE(auto type, FormatType(a.get<std::string>()));
      // Appended, not "a" + ...: GCC 12 warns falsely (-Wrestrict) on that operator+ at -O2.
      std::string field_name = "a";
      field_name += std::to_string(i++);
      d.arguments.push_back(arrow::field(field_name, type));
    }
    if (f.contains("state")) {
      arrow::FieldVector fields;
      for (const auto& s : f.at("state")) {
        ARROW_ASSIGN_OR_RAISE(auto type, FormatType(s.at(1).get<std::string>()));
        fields.push_back(arrow::field(s.at(0).get<std::string>(), type));
      }
      d.state = arrow::struct_(fields);
    }
    return d;
  }
  return arrow::Status::Invalid("function ", name, " is not in the library's identity");
}

// The name each entry was given in SLUICE_FUNCTION_TABLE, per implementation.
template <auto kFunction>
const char*& NameOf() {
  static const char* name = nullptr;
  return name;
}
template <typename A>
const char*& AggregateNameOf() {
  static const char* name = nullptr;
  return name;
}

inline arrow::Result<Declared> DeclaredFor(const char* name) {
  if (name == nullptr) return arrow::Status::Invalid("internal: a function without a name");
  return Declare(name);
}

// The arguments' struct type must be exactly the declared one.
inline arrow::Status CheckType(const arrow::Array& array, const arrow::DataType& want,
                               const char* what) {
  if (!array.type()->Equals(want)) {
    return arrow::Status::TypeError(what, " are ", array.type()->ToString(), ", not the declared ",
                                    want.ToString());
  }
  return arrow::Status::OK();
}

// Host: sluice_function_host or sluice_table_host, which both have ctx and set_error.
template <typename Host>
int32_t Fail(const Host* host, const std::string& message) {
  host->set_error(host->ctx, message.data(), message.size());
  return SLUICE_FUNCTION_ERROR;
}

// Runs `body`, turning a Status or an exception into the ABI's error return.
template <typename Host, typename Body>
int32_t Guard(const Host* host, Body&& body) noexcept {
  try {
    arrow::Status st = body();
    if (!st.ok()) return Fail(host, st.message());
    return SLUICE_FUNCTION_OK;
  } catch (const std::exception& e) {
    return Fail(host, std::string("exception: ") + e.what());
  } catch (...) {
    return Fail(host, "unknown exception");
  }
}

// Imports a struct array the host moved to us; Arrow releases it on every path.
inline arrow::Result<std::shared_ptr<arrow::StructArray>> ImportStruct(struct ArrowArray* array,
                                                                       struct ArrowSchema* schema,
                                                                       const char* what) {
  auto imported = arrow::ImportArray(array, schema);
  if (!imported.ok()) {
    return arrow::Status::Invalid(what, ": ", imported.status().message());
  }
  if ((*imported)->type_id() != arrow::Type::STRUCT) {
    return arrow::Status::TypeError(what, " is ", (*imported)->type()->ToString(),
                                    ", not a struct");
  }
  ARROW_RETURN_NOT_OK((*imported)->ValidateFull());
  return std::static_pointer_cast<arrow::StructArray>(*imported);
}

inline arrow::Status Return(const arrow::Result<std::shared_ptr<arrow::Array>>& result,
                            int64_t rows, struct ArrowSchema* out_schema, struct ArrowArray* out) {
  if (!result.ok()) return result.status();
  const auto& array = *result;
  if (array == nullptr) return arrow::Status::Invalid("the function returned no array");
  if (array->length() != rows) {
    return arrow::Status::Invalid("the function returned ", array->length(), " rows, not ", rows);
  }
  return arrow::ExportArray(*array, out, out_schema);
}

template <auto kFunction>
int32_t ScalarCall(const sluice_function_host* host, struct ArrowSchema* args_schema,
                   struct ArrowArray* args, int64_t num_rows, struct ArrowSchema* out_schema,
                   struct ArrowArray* out) {
  return Guard(host, [&]() -> arrow::Status {
    auto in = ImportStruct(args, args_schema, "arguments");
    ARROW_RETURN_NOT_OK(in.status());
    static const arrow::Result<Declared> declared = DeclaredFor(NameOf<kFunction>());
    ARROW_ASSIGN_OR_RAISE(Declared d, declared);
    ARROW_RETURN_NOT_OK(CheckType(**in, *arrow::struct_(d.arguments), "the arguments"));
    if ((*in)->length() != num_rows) {
      return arrow::Status::Invalid("the arguments have ", (*in)->length(), " rows, not ",
                                    num_rows);
    }
    return Return(kFunction(**in), num_rows, out_schema, out);
  });
}

template <auto kFunction>
int32_t WindowCall(const sluice_function_host* host, struct ArrowSchema* args_schema,
                   struct ArrowArray* args, const int64_t* peer_groups, int64_t num_rows,
                   struct ArrowSchema* out_schema, struct ArrowArray* out) {
  return Guard(host, [&]() -> arrow::Status {
    auto in = ImportStruct(args, args_schema, "arguments");
    ARROW_RETURN_NOT_OK(in.status());
    static const arrow::Result<Declared> declared = DeclaredFor(NameOf<kFunction>());
    ARROW_ASSIGN_OR_RAISE(Declared d, declared);
    ARROW_RETURN_NOT_OK(CheckType(**in, *arrow::struct_(d.arguments), "the arguments"));
    if ((*in)->length() != num_rows || (num_rows > 0 && peer_groups == nullptr)) {
      return arrow::Status::Invalid("the arguments have ", (*in)->length(), " rows, not ", num_rows,
                                    " with their peer groups");
    }
    return Return(kFunction(**in, peer_groups), num_rows, out_schema, out);
  });
}

// Checks the state and input of an aggregate call against the declaration.
template <typename A>
arrow::Status CheckAggregate(const arrow::StructArray& state, const arrow::StructArray& input,
                             bool input_is_state, const uint32_t* groups, int64_t num_groups) {
  static const arrow::Result<Declared> declared = DeclaredFor(AggregateNameOf<A>());
  ARROW_ASSIGN_OR_RAISE(Declared d, declared);
  ARROW_RETURN_NOT_OK(CheckType(state, *d.state, "the state"));
  ARROW_RETURN_NOT_OK(CheckType(input, input_is_state ? *d.state : *arrow::struct_(d.arguments),
                                input_is_state ? "the other states" : "the arguments"));
  if (state.length() > num_groups || num_groups < 0 || num_groups > (int64_t{1} << 32)) {
    return arrow::Status::Invalid("the state has ", state.length(), " rows for ", num_groups,
                                  " groups");
  }
  if (input.length() > 0 && groups == nullptr) {
    return arrow::Status::Invalid("no group ids for ", input.length(), " rows");
  }
  for (int64_t i = 0; i < input.length(); ++i) {
    if (groups[i] >= num_groups) {
      return arrow::Status::Invalid("group id ", groups[i], " of row ", i, " is not below ",
                                    num_groups);
    }
  }
  return arrow::Status::OK();
}

template <typename A>
int32_t UpdateCall(const sluice_function_host* host, struct ArrowSchema* state_schema,
                   struct ArrowArray* state, struct ArrowSchema* args_schema,
                   struct ArrowArray* args, const uint32_t* group_ids, int64_t num_groups,
                   struct ArrowSchema* out_schema, struct ArrowArray* out) {
  return Guard(host, [&]() -> arrow::Status {
    auto s = ImportStruct(state, state_schema, "state");
    auto in = ImportStruct(args, args_schema, "arguments");  // both imported: both released
    ARROW_RETURN_NOT_OK(s.status());
    ARROW_RETURN_NOT_OK(in.status());
    ARROW_RETURN_NOT_OK(CheckAggregate<A>(**s, **in, false, group_ids, num_groups));
    return Return(A::Update(**s, **in, group_ids, num_groups), num_groups, out_schema, out);
  });
}

template <typename A>
int32_t MergeCall(const sluice_function_host* host, struct ArrowSchema* state_schema,
                  struct ArrowArray* state, struct ArrowSchema* other_schema,
                  struct ArrowArray* other, const uint32_t* mapping, int64_t num_groups,
                  struct ArrowSchema* out_schema, struct ArrowArray* out) {
  return Guard(host, [&]() -> arrow::Status {
    auto s = ImportStruct(state, state_schema, "state");
    auto o = ImportStruct(other, other_schema, "other state");
    ARROW_RETURN_NOT_OK(s.status());
    ARROW_RETURN_NOT_OK(o.status());
    ARROW_RETURN_NOT_OK(CheckAggregate<A>(**s, **o, true, mapping, num_groups));
    return Return(A::Merge(**s, **o, mapping, num_groups), num_groups, out_schema, out);
  });
}

template <typename A>
int32_t FinalizeCall(const sluice_function_host* host, struct ArrowSchema* state_schema,
                     struct ArrowArray* state, struct ArrowSchema* out_schema,
                     struct ArrowArray* out) {
  return Guard(host, [&]() -> arrow::Status {
    ARROW_ASSIGN_OR_RAISE(auto s, ImportStruct(state, state_schema, "state"));
    static const arrow::Result<Declared> declared = DeclaredFor(AggregateNameOf<A>());
    ARROW_ASSIGN_OR_RAISE(Declared d, declared);
    ARROW_RETURN_NOT_OK(CheckType(*s, *d.state, "the state"));
    return Return(A::Finalize(*s), s->length(), out_schema, out);
  });
}

}  // namespace internal

/// A table entry for a scalar function.
template <auto kFunction>
sluice_function_entry Scalar(const char* name) {
  internal::NameOf<kFunction>() = name;
  return {
      name,   SLUICE_FUNCTION_SCALAR, &internal::ScalarCall<kFunction>, nullptr, nullptr, nullptr,
      nullptr};
}

/// A table entry for a window function.
template <auto kFunction>
sluice_function_entry Window(const char* name) {
  internal::NameOf<kFunction>() = name;
  return {name,    SLUICE_FUNCTION_WINDOW,          nullptr, nullptr, nullptr,
          nullptr, &internal::WindowCall<kFunction>};
}

/// A table entry for an aggregate: A has static Update, Merge and Finalize.
template <typename A>
sluice_function_entry Aggregate(const char* name) {
  internal::AggregateNameOf<A>() = name;
  return {name,
          SLUICE_FUNCTION_AGGREGATE,
          nullptr,
          &internal::UpdateCall<A>,
          &internal::MergeCall<A>,
          &internal::FinalizeCall<A>,
          nullptr};
}

/// The session's object store as a table provider sees it: read-only, valid during one call.
class Store {
 public:
  explicit Store(const sluice_table_host* host) : host_(host) {}

  /// The keys under `prefix`, sorted.
  arrow::Result<std::vector<std::string>> List(const std::string& prefix) const {
    std::vector<std::string> keys;
    auto each = [](void* ctx, const char* key, size_t len) {
      static_cast<std::vector<std::string>*>(ctx)->emplace_back(key, len);
    };
    if (host_->list(host_->ctx, prefix.data(), prefix.size(), each, &keys) != 0) {
      return arrow::Status::IOError("listing '", prefix, "' failed");
    }
    return keys;
  }

  /// The whole object `key`.
  arrow::Result<std::shared_ptr<arrow::Buffer>> Read(const std::string& key) const {
    std::shared_ptr<arrow::Buffer> out;
    auto into = [](void* ctx, const uint8_t* bytes, size_t len) {
      auto copy = arrow::AllocateBuffer(static_cast<int64_t>(len));
      if (!copy.ok()) return;
      if (len > 0) std::memcpy((*copy)->mutable_data(), bytes, len);
      *static_cast<std::shared_ptr<arrow::Buffer>*>(ctx) =
          std::shared_ptr<arrow::Buffer>(std::move(*copy));
    };
    if (host_->read(host_->ctx, key.data(), key.size(), into, &out) != 0 || out == nullptr) {
      return arrow::Status::IOError("reading '", key, "' failed");
    }
    return out;
  }

 private:
  const sluice_table_host* host_;
};

namespace internal {

template <typename P>
int32_t SchemaCall(const sluice_table_host* host, const char* options, size_t len,
                   struct ArrowSchema* out) {
  return Guard(host, [&]() -> arrow::Status {
    ARROW_ASSIGN_OR_RAISE(auto schema, P::Schema(Store(host), std::string(options, len)));
    return arrow::ExportSchema(*schema, out);
  });
}

template <typename P>
int32_t PartitionsCall(const sluice_table_host* host, const char* options, size_t len,
                       void (*each)(void*, const char*, size_t), void* each_ctx) {
  return Guard(host, [&]() -> arrow::Status {
    ARROW_ASSIGN_OR_RAISE(auto partitions, P::Partitions(Store(host), std::string(options, len)));
    for (const auto& p : partitions) each(each_ctx, p.data(), p.size());
    return arrow::Status::OK();
  });
}

template <typename P>
int32_t ScanCall(const sluice_table_host* host, const char* options, size_t len,
                 const char* partition, size_t partition_len, const int32_t* columns,
                 int64_t num_columns, struct ArrowArrayStream* out) {
  return Guard(host, [&]() -> arrow::Status {
    std::vector<int> projection(columns, columns + num_columns);
    ARROW_ASSIGN_OR_RAISE(auto reader, P::Scan(Store(host), std::string(options, len),
                                               std::string(partition, partition_len), projection));
    return arrow::ExportRecordBatchReader(reader, out);
  });
}

}  // namespace internal

/// A table provider entry: P has static Schema(store, options), Partitions(store, options) and
/// Scan(store, options, partition, columns). A Scan runs while the host reads its stream, so
/// it reads what it needs from the store before it returns.
template <typename P>
constexpr sluice_table_provider_entry TableProvider(const char* name) {
  return {name, &internal::SchemaCall<P>, &internal::PartitionsCall<P>, &internal::ScanCall<P>};
}

}  // namespace sluice::sdk

/// The table providers, in the identity's "tables" order.
#define SLUICE_TABLE_PROVIDERS(...)                                                             \
  namespace {                                                                                   \
  const sluice_table_provider_entry kSluiceTableProviders[] = {__VA_ARGS__};                    \
  const sluice_table_provider_table kSluiceTableProviderTable = {                               \
      SLUICE_FUNCTION_ABI_VERSION, sizeof(sluice_table_provider_entry),                         \
      sizeof(kSluiceTableProviders) / sizeof(kSluiceTableProviders[0]), kSluiceTableProviders}; \
  }                                                                                             \
  extern "C" __attribute__((visibility("default"))) const sluice_table_provider_table*          \
  sluice_table_providers() {                                                                    \
    return &kSluiceTableProviderTable;                                                          \
  }

/// The identity: SLUICE_FUNCTION_IDENTITY_MAGIC followed by `json`, in its own section.
#define SLUICE_FUNCTION_IDENTITY(json)                                                           \
  extern "C"                                                                                     \
      __attribute__((visibility("default"), used, section(SLUICE_FUNCTION_IDENTITY_SECTION)))    \
      const char sluice_function_identity[] = SLUICE_FUNCTION_IDENTITY_MAGIC json;               \
  extern "C" __attribute__((visibility("default"))) const uint32_t sluice_function_abi_version = \
      SLUICE_FUNCTION_ABI_VERSION;

/// The function table, in the identity's order.
#define SLUICE_FUNCTION_TABLE(...)                                                                 \
  namespace {                                                                                      \
  const sluice_function_entry kSluiceFunctionEntries[] = {__VA_ARGS__};                            \
  const sluice_function_table kSluiceFunctionTable = {                                             \
      SLUICE_FUNCTION_ABI_VERSION, sizeof(sluice_function_entry),                                  \
      sizeof(kSluiceFunctionEntries) / sizeof(kSluiceFunctionEntries[0]), kSluiceFunctionEntries}; \
  }                                                                                                \
  extern "C" __attribute__((visibility("default"))) const sluice_function_table*                   \
  sluice_functions() {                                                                             \
    return &kSluiceFunctionTable;                                                                  \
  }
