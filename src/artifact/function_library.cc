#include "artifact/function_library.h"

#include <arrow/api.h>
#include <arrow/c/bridge.h>
#include <dlfcn.h>

#include <cstring>
#include <nlohmann/json.hpp>
#include <set>

#include "artifact/transform_identity.h"

namespace sluice::artifact {

namespace {

using json = nlohmann::json;

// An ArrowSchema that owns nothing: the format points at the caller's string.
void ReleaseNothing(struct ArrowSchema* schema) { schema->release = nullptr; }

arrow::Result<std::string> TextField(const json& doc, const char* key, const std::string& where) {
  auto it = doc.find(key);
  if (it == doc.end() || !it->is_string()) {
    return arrow::Status::Invalid(where, ": identity field '", key, "' is missing or not a string");
  }
  return it->get<std::string>();
}

// SQL folds unquoted names to lower case, so only a lower-case name can be called.
bool IsCallableName(const std::string& name) {
  bool ok = !name.empty() && name.size() <= 63 && name[0] >= 'a' && name[0] <= 'z';
  for (char c : name) ok = ok && ((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_');
  return ok;
}

arrow::Result<FunctionSignature> ParseSignature(const json& f, const std::string& where) {
  if (!f.is_object()) return arrow::Status::Invalid(where, ": a function entry is not an object");
  FunctionSignature sig;
  ARROW_ASSIGN_OR_RAISE(sig.name, TextField(f, "name", where));
  // SQL folds unquoted names to lower case, so only a lower-case name can be called.
  bool callable =
      !sig.name.empty() && sig.name.size() <= 63 && sig.name[0] >= 'a' && sig.name[0] <= 'z';
  for (char c : sig.name) {
    callable = callable && ((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_');
  }
  if (!callable) {
    return arrow::Status::Invalid(where, ": function name '", sig.name,
                                  "' must be lower case letters, digits and '_', starting with a "
                                  "letter");
  }
  const std::string at = where + ": function " + sig.name;
  ARROW_ASSIGN_OR_RAISE(std::string kind, TextField(f, "kind", at));
  if (kind == "scalar") {
    sig.kind = FunctionSignature::Kind::kScalar;
  } else if (kind == "aggregate") {
    sig.kind = FunctionSignature::Kind::kAggregate;
  } else if (kind == "window") {
    sig.kind = FunctionSignature::Kind::kWindow;
  } else {
    return arrow::Status::Invalid(at, ": unknown kind '", kind, "'");
  }
  auto args = f.find("arguments");
  if (args == f.end() || !args->is_array() || args->size() > 32) {
    return arrow::Status::Invalid(at, ": 'arguments' must be a list of at most 32 formats");
  }
  for (const auto& a : *args) {
    if (!a.is_string()) return arrow::Status::Invalid(at, ": an argument format is not a string");
    ARROW_ASSIGN_OR_RAISE(auto type, TypeFromFormat(a.get<std::string>(), at));
    sig.arguments.push_back(std::move(type));
  }
  ARROW_ASSIGN_OR_RAISE(std::string returns, TextField(f, "returns", at));
  ARROW_ASSIGN_OR_RAISE(sig.returns, TypeFromFormat(returns, at + " (returns)"));
  if (sig.kind == FunctionSignature::Kind::kAggregate) {
    if (sig.arguments.empty()) return arrow::Status::Invalid(at, ": an aggregate needs arguments");
    auto state = f.find("state");
    if (state == f.end() || !state->is_array() || state->empty() || state->size() > 64) {
      return arrow::Status::Invalid(at, ": an aggregate needs 'state', a list of [name, format]");
    }
    arrow::FieldVector fields;
    std::set<std::string> names;
    for (const auto& s : *state) {
      if (!s.is_array() || s.size() != 2 || !s[0].is_string() || !s[1].is_string()) {
        return arrow::Status::Invalid(at, ": a state field is not [name, format]");
      }
      const std::string name = s[0].get<std::string>();
      if (name.empty() || !names.insert(name).second) {
        return arrow::Status::Invalid(at, ": state field '", name, "' is empty or repeated");
      }
      ARROW_ASSIGN_OR_RAISE(auto type,
                            TypeFromFormat(s[1].get<std::string>(), at + " (state " + name + ")"));
      fields.push_back(arrow::field(name, std::move(type)));
    }
    sig.state = arrow::struct_(fields);
  } else if (f.contains("state")) {
    return arrow::Status::Invalid(at, ": only an aggregate has a state");
  }
  return sig;
}

}  // namespace

arrow::Result<std::shared_ptr<arrow::DataType>> TypeFromFormat(const std::string& format,
                                                               std::string_view where) {
  // Nested types need children, which a bare format string cannot give.
  if (format.empty() || format[0] == '+' || format.size() > 64) {
    return arrow::Status::Invalid(where, ": type '", format,
                                  "' is not a C Data Interface format of a primitive type");
  }
  struct ArrowSchema c {};
  c.format = format.c_str();
  c.name = "";
  c.flags = ARROW_FLAG_NULLABLE;
  c.release = ReleaseNothing;
  auto type = arrow::ImportType(&c);
  if (!type.ok()) {
    return arrow::Status::Invalid(where, ": type '", format, "' is not a format Arrow knows (",
                                  type.status().message(), ")");
  }
  return type;
}

arrow::Result<FunctionIdentity> FunctionIdentity::Parse(std::string_view bytes,
                                                        std::string_view where_view) {
  const std::string where(where_view);
  constexpr std::string_view kMagic = SLUICE_FUNCTION_IDENTITY_MAGIC;
  if (bytes.substr(0, kMagic.size()) != kMagic) {
    return arrow::Status::Invalid(where, ": identity does not start with '",
                                  kMagic.substr(0, kMagic.size() - 1), "'");
  }
  std::string_view text = bytes.substr(kMagic.size());
  if (const size_t nul = text.find('\0'); nul != std::string_view::npos) text = text.substr(0, nul);
  json doc = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded() || !doc.is_object()) {
    return arrow::Status::Invalid(where, ": identity is not a JSON object");
  }
  FunctionIdentity id;
  auto abi = doc.find("abi_version");
  if (abi == doc.end() || !abi->is_number_unsigned()) {
    return arrow::Status::Invalid(where,
                                  ": identity field 'abi_version' is missing or not an "
                                  "unsigned integer");
  }
  id.abi_version = abi->get<uint32_t>();
  ARROW_ASSIGN_OR_RAISE(id.qualified_name, TextField(doc, "qualified_name", where));
  ARROW_ASSIGN_OR_RAISE(id.version, TextField(doc, "version", where));
  for (const std::string* v : {&id.qualified_name, &id.version}) {
    if (!IsValidIdentifier(*v)) {
      return arrow::Status::Invalid(where, ": identity name or version '", *v,
                                    "' is not [A-Za-z0-9._-]");
    }
  }
  auto tables = doc.find("tables");
  if (tables != doc.end()) {
    if (!tables->is_array() || tables->size() > 256) {
      return arrow::Status::Invalid(where,
                                    ": identity field 'tables' must list at most 256 "
                                    "tables");
    }
    std::set<std::string> seen;
    for (const auto& t : *tables) {
      if (!t.is_object()) return arrow::Status::Invalid(where, ": a table entry is not an object");
      ARROW_ASSIGN_OR_RAISE(std::string name, TextField(t, "name", where));
      if (!IsCallableName(name)) {
        return arrow::Status::Invalid(where, ": table name '", name,
                                      "' must be lower case letters, digits and '_', starting "
                                      "with a letter");
      }
      if (!seen.insert(name).second) {
        return arrow::Status::Invalid(where, ": table ", name, " is declared twice");
      }
      id.tables.push_back(name);
    }
  }
  auto functions = doc.find("functions");
  const size_t least = id.tables.empty() ? 1 : 0;
  if (functions == doc.end() || !functions->is_array() || functions->size() < least ||
      functions->size() > 1024) {
    return arrow::Status::Invalid(where, ": identity field 'functions' must list ", least,
                                  " to 1024 functions");
  }
  std::set<std::string> names;
  for (const auto& f : *functions) {
    ARROW_ASSIGN_OR_RAISE(auto sig, ParseSignature(f, where));
    if (!names.insert(sig.name).second) {
      return arrow::Status::Invalid(where, ": function ", sig.name, " is declared twice");
    }
    id.functions.push_back(std::move(sig));
  }
  return id;
}

const FunctionSignature* FunctionIdentity::Find(const std::string& name) const {
  for (const auto& f : functions) {
    if (f.name == name) return &f;
  }
  return nullptr;
}

arrow::Result<std::shared_ptr<FunctionLibrary>> FunctionLibrary::Open(const std::string& path,
                                                                      const std::string& where) {
  dlerror();
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* err = dlerror();
    return arrow::Status::IOError(where, ": cannot load: ", err ? err : "unknown dlopen error");
  }
  std::shared_ptr<FunctionLibrary> lib(new FunctionLibrary());
  lib->handle_ = handle;
  auto* version = static_cast<const uint32_t*>(dlsym(handle, SLUICE_FUNCTION_ABI_VERSION_SYMBOL));
  if (version == nullptr) {
    return arrow::Status::Invalid(where, ": does not export '", SLUICE_FUNCTION_ABI_VERSION_SYMBOL,
                                  "'; is it a function library?");
  }
  if (*version != SLUICE_FUNCTION_ABI_VERSION) {
    return arrow::Status::Invalid(where, ": speaks function ABI version ", *version,
                                  "; this host speaks version ", SLUICE_FUNCTION_ABI_VERSION);
  }
  auto* identity = static_cast<const char*>(dlsym(handle, SLUICE_FUNCTION_IDENTITY_SYMBOL));
  if (identity == nullptr) {
    return arrow::Status::Invalid(where, ": does not export its identity '",
                                  SLUICE_FUNCTION_IDENTITY_SYMBOL, "'");
  }
  // NUL-terminated static data; the cap keeps a broken library from making us read forever.
  ARROW_ASSIGN_OR_RAISE(
      lib->identity_,
      FunctionIdentity::Parse(std::string_view(identity, strnlen(identity, 256 * 1024)), where));
  if (lib->identity_.abi_version != *version) {
    return arrow::Status::Invalid(where, ": identity says ABI version ", lib->identity_.abi_version,
                                  " but the library exports ", *version);
  }
  auto table_fn =
      reinterpret_cast<sluice_function_table_fn>(dlsym(handle, SLUICE_FUNCTION_TABLE_SYMBOL));
  if (table_fn == nullptr) {
    return arrow::Status::Invalid(where, ": does not export '", SLUICE_FUNCTION_TABLE_SYMBOL, "'");
  }
  const sluice_function_table* table = table_fn();
  if (table == nullptr || table->abi_version != SLUICE_FUNCTION_ABI_VERSION ||
      table->entry_size < sizeof(sluice_function_entry) || table->functions == nullptr) {
    return arrow::Status::Invalid(where, ": its function table is missing or malformed");
  }
  const auto& functions = lib->identity_.functions;
  if (table->num_functions != static_cast<int64_t>(functions.size())) {
    return arrow::Status::Invalid(where, ": its table has ", table->num_functions,
                                  " functions but its identity declares ", functions.size());
  }
  for (size_t i = 0; i < functions.size(); ++i) {
    const sluice_function_entry& e = table->functions[i];
    const FunctionSignature& sig = functions[i];
    const std::string at = where + ": function " + sig.name;
    if (e.name == nullptr || strncmp(e.name, sig.name.c_str(), sig.name.size() + 1) != 0) {
      return arrow::Status::Invalid(at, ": table entry ", i, " has another name");
    }
    using Kind = FunctionSignature::Kind;
    const uint32_t kind = sig.kind == Kind::kScalar      ? SLUICE_FUNCTION_SCALAR
                          : sig.kind == Kind::kAggregate ? SLUICE_FUNCTION_AGGREGATE
                                                         : SLUICE_FUNCTION_WINDOW;
    if (e.kind != kind) {
      return arrow::Status::Invalid(at, ": the table and the identity disagree on its kind");
    }
    const bool complete = sig.kind == Kind::kScalar ? e.scalar != nullptr
                          : sig.kind == Kind::kWindow
                              ? e.window != nullptr
                              : e.update != nullptr && e.merge != nullptr && e.finalize != nullptr;
    if (!complete) return arrow::Status::Invalid(at, ": its table entry lacks a function pointer");
  }
  lib->table_ = table;
  const auto& tables = lib->identity_.tables;
  auto providers_fn =
      reinterpret_cast<sluice_table_providers_fn>(dlsym(handle, SLUICE_TABLE_PROVIDERS_SYMBOL));
  if (tables.empty()) return lib;
  if (providers_fn == nullptr) {
    return arrow::Status::Invalid(where, ": its identity declares tables but it does not export '",
                                  SLUICE_TABLE_PROVIDERS_SYMBOL, "'");
  }
  const sluice_table_provider_table* providers = providers_fn();
  if (providers == nullptr || providers->abi_version != SLUICE_FUNCTION_ABI_VERSION ||
      providers->entry_size < sizeof(sluice_table_provider_entry) ||
      providers->providers == nullptr ||
      providers->num_providers != static_cast<int64_t>(tables.size())) {
    return arrow::Status::Invalid(where,
                                  ": its table provider table is missing, malformed, or "
                                  "disagrees with its identity");
  }
  for (size_t i = 0; i < tables.size(); ++i) {
    const sluice_table_provider_entry& e = providers->providers[i];
    if (e.name == nullptr || strncmp(e.name, tables[i].c_str(), tables[i].size() + 1) != 0 ||
        e.schema == nullptr || e.partitions == nullptr || e.scan == nullptr) {
      return arrow::Status::Invalid(where, ": table ", tables[i],
                                    ": its provider entry has another name or lacks a function");
    }
  }
  lib->providers_ = providers;
  return lib;
}

const sluice_table_provider_entry* FunctionLibrary::provider(const std::string& name) const {
  for (size_t i = 0; i < identity_.tables.size(); ++i) {
    if (identity_.tables[i] == name) return &providers_->providers[i];
  }
  return nullptr;
}

FunctionLibrary::~FunctionLibrary() {
  if (handle_ != nullptr) dlclose(handle_);
}

}  // namespace sluice::artifact
