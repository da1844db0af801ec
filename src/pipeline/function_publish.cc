#include "pipeline/function_publish.h"

#include <arrow/api.h>
#include <arrow/compute/api.h>
#include <arrow/io/file.h>

#include <filesystem>

#include "artifact/blake3_digest.h"
#include "artifact/elf_file.h"
#include "artifact/verified_loader.h"
#include "catalog/registry.h"
#include "catalog/signing.h"
#include "common/status.h"
#include "pipeline/publish.h"
#include "pipeline/transform_project.h"
#include "plan/compute_init.h"
#include "plan/library_functions.h"
#include "storage/object_store.h"

namespace sluice::pipeline {

namespace {

namespace cp = arrow::compute;
namespace fs = std::filesystem;
using artifact::FunctionSignature;

#include "pipeline/function_scaffold.inc"

arrow::Result<std::shared_ptr<arrow::Buffer>> ReadFile(const std::string& path) {
  ARROW_ASSIGN_OR_RAISE(auto file, arrow::io::ReadableFile::Open(path));
  ARROW_ASSIGN_OR_RAISE(int64_t size, file->GetSize());
  return file->Read(size);
}

// `rows` generated values of `type`, every third one NULL.
arrow::Result<std::shared_ptr<arrow::Array>> Generated(const std::shared_ptr<arrow::DataType>& type,
                                                       int64_t rows) {
  ARROW_ASSIGN_OR_RAISE(auto builder, arrow::MakeBuilder(type));
  for (int64_t i = 0; i < rows; ++i) {
    if (i % 3 == 2) {
      ARROW_RETURN_NOT_OK(builder->AppendNull());
      continue;
    }
    std::shared_ptr<arrow::Scalar> value;
    if (arrow::is_base_binary_like(type->id())) {
      value = arrow::MakeScalar("row " + std::to_string(i));
    } else {
      value = arrow::MakeScalar(static_cast<int64_t>(i % 7));
    }
    ARROW_ASSIGN_OR_RAISE(value, value->CastTo(type));
    ARROW_RETURN_NOT_OK(builder->AppendScalar(*value));
  }
  return builder->Finish();
}

}  // namespace

arrow::Result<std::string> NewFunctionLibrary(const std::string& parent, const std::string& name) {
  if (!IsValidTransformName(name)) {
    return arrow::Status::Invalid("invalid function library name '", name,
                                  "': use lower-case letters, digits and single dashes, starting "
                                  "with a letter, at most 64 characters (e.g. my-functions)");
  }
  const fs::path dir = fs::path(parent) / name;
  if (fs::exists(dir)) {
    return arrow::Status::Invalid("'", dir.string(), "' already exists; refusing to overwrite it");
  }
  ARROW_RETURN_NOT_OK(WriteTemplate((dir / "CMakeLists.txt").string(), kFunctionCMakeLists, name));
  ARROW_RETURN_NOT_OK(WriteTemplate((dir / "src" / "functions.cpp").string(), kFunctionsCpp, name));
  return dir.string();
}

arrow::Result<std::string> FunctionLibraryFile(const std::string& path,
                                               const std::string& sluice_root) {
  std::error_code ec;
  if (!fs::is_directory(path, ec)) return path;
  ARROW_RETURN_NOT_OK(
      ConfigureAndBuild(path, sluice_root, "Release", "function library in '" + path + "'"));
  std::vector<std::string> built;
  for (const auto& entry : fs::directory_iterator(fs::path(path) / "build", ec)) {
    const std::string name = entry.path().filename().string();
    if (entry.is_regular_file() && name.rfind("lib", 0) == 0 && name.size() > 6 &&
        name.compare(name.size() - 3, 3, ".so") == 0) {
      built.push_back(entry.path().string());
    }
  }
  if (built.size() != 1) {
    return arrow::Status::Invalid("function library in '", path, "': its build folder holds ",
                                  built.size(), " lib*.so files; expected exactly one");
  }
  return built[0];
}

arrow::Result<artifact::FunctionIdentity> CheckFunctionLibrary(const std::string& path) {
  ARROW_ASSIGN_OR_RAISE(auto elf, artifact::ElfFile::Read(path, SLUICE_FUNCTION_IDENTITY_SECTION));
  std::vector<std::string> failures;
  if (!elf.is_shared_object) failures.push_back(path + ": not a shared library");
  for (const char* sym : {SLUICE_FUNCTION_ABI_VERSION_SYMBOL, SLUICE_FUNCTION_TABLE_SYMBOL,
                          SLUICE_FUNCTION_IDENTITY_SYMBOL}) {
    if (!elf.exported_symbols.count(sym)) {
      failures.push_back(path + ": does not export '" + sym + "'");
    }
  }
  artifact::FunctionIdentity identity;
  if (!elf.section.has_value()) {
    failures.push_back(path + ": no identity section '" + SLUICE_FUNCTION_IDENTITY_SECTION +
                       "' (declare it with the SDK's SLUICE_FUNCTION_IDENTITY)");
  } else {
    auto id = artifact::FunctionIdentity::Parse(*elf.section, path);
    if (id.ok()) {
      identity = *id;
      if (identity.abi_version != SLUICE_FUNCTION_ABI_VERSION) {
        failures.push_back(path + ": identity says function ABI version " +
                           std::to_string(identity.abi_version) + "; this host speaks " +
                           SLUICE_FUNCTION_ABI_VERSION_TEXT);
      }
    } else {
      failures.push_back(id.status().message());
    }
  }
  if (!failures.empty()) {
    std::string message =
        "function check found " + std::to_string(failures.size()) + " problem(s):";
    for (const auto& f : failures) message += "\n  - " + f;
    return arrow::Status::Invalid(message);
  }
  return identity;
}

std::string DescribeFunctions(const artifact::FunctionIdentity& identity) {
  std::string out;
  for (const auto& f : identity.functions) {
    std::string args;
    for (const auto& a : f.arguments) args += (args.empty() ? "" : ", ") + a->ToString();
    const char* kind = f.kind == FunctionSignature::Kind::kScalar      ? "scalar"
                       : f.kind == FunctionSignature::Kind::kAggregate ? "aggregate"
                                                                       : "window";
    out += "  " + std::string(kind) + " " + f.name + "(" + args + ") -> " + f.returns->ToString();
    if (f.state != nullptr) out += ", state " + f.state->ToString();
    out += "\n";
  }
  for (const auto& t : identity.tables) out += "  table provider " + t + "\n";
  return out;
}

arrow::Result<std::string> TestFunctionLibrary(const std::string& path) {
  ARROW_RETURN_NOT_OK(CheckFunctionLibrary(path).status());
  ARROW_RETURN_NOT_OK(plan::EnsureComputeInitialized());
  ARROW_ASSIGN_OR_RAISE(auto bytes, ReadFile(path));
  const artifact::Digest digest = artifact::Blake3(*bytes);
  // The library as it would be published: verified bytes in a sealed memfd.
  ARROW_ASSIGN_OR_RAISE(auto library,
                        artifact::LoadVerifiedFunctionLibrary({digest, std::move(bytes)}));
  ARROW_RETURN_NOT_OK(plan::RegisterFunctionLibrary(digest.ToHex(), library));
  std::string out;
  constexpr int64_t kRows = 1000;
  for (const auto& f : library->identity().functions) {
    const std::string name = plan::LibraryFunctionName(digest.ToHex(), f.name);
    std::vector<arrow::Datum> args;
    for (const auto& type : f.arguments) {
      ARROW_ASSIGN_OR_RAISE(auto a, Generated(type, kRows));
      args.emplace_back(a);
    }
    if (f.kind == FunctionSignature::Kind::kScalar) {
      ARROW_ASSIGN_OR_RAISE(auto result, cp::CallFunction(name, args));
      out += "ok: " + f.name + " on " + std::to_string(kRows) + " rows (" +
             std::to_string(result.make_array()->null_count()) + " NULL results)\n";
      continue;
    }
    if (f.kind == FunctionSignature::Kind::kWindow) {
      // One partition of all the rows, in peer groups of ten.
      arrow::ArrayVector columns;
      for (const auto& a : args) columns.push_back(a.make_array());
      std::vector<int64_t> peers;
      for (int64_t i = 0; i < kRows; ++i) peers.push_back(i / 10);
      ARROW_ASSIGN_OR_RAISE(auto result, plan::CallLibraryWindow(name, columns, peers));
      out += "ok: " + f.name + " over a partition of " + std::to_string(kRows) + " rows (" +
             std::to_string(result->null_count()) + " NULL results)\n";
      continue;
    }
    // Partial states of two halves, merged: what a split aggregate does across workers.
    arrow::ArrayVector children;
    std::vector<std::string> names;
    for (size_t i = 0; i < args.size(); ++i) {
      children.push_back(args[i].make_array());
      names.push_back("a" + std::to_string(i));
    }
    ARROW_ASSIGN_OR_RAISE(auto packed, arrow::StructArray::Make(children, names));
    ARROW_ASSIGN_OR_RAISE(auto whole, cp::CallFunction(name + plan::kPartialSuffix, {packed}));
    ARROW_ASSIGN_OR_RAISE(
        auto first, cp::CallFunction(name + plan::kPartialSuffix, {packed->Slice(0, kRows / 2)}));
    ARROW_ASSIGN_OR_RAISE(
        auto second, cp::CallFunction(name + plan::kPartialSuffix, {packed->Slice(kRows / 2)}));
    ARROW_ASSIGN_OR_RAISE(auto whole_states, arrow::MakeArrayFromScalar(*whole.scalar(), 1));
    ARROW_ASSIGN_OR_RAISE(auto halves,
                          arrow::Concatenate({*arrow::MakeArrayFromScalar(*first.scalar(), 1),
                                              *arrow::MakeArrayFromScalar(*second.scalar(), 1)}));
    ARROW_ASSIGN_OR_RAISE(auto one, cp::CallFunction(name + plan::kMergeSuffix, {whole_states}));
    ARROW_ASSIGN_OR_RAISE(auto split, cp::CallFunction(name + plan::kMergeSuffix, {halves}));
    out += "ok: " + f.name + " on " + std::to_string(kRows) + " rows: " + one.scalar()->ToString() +
           " whole, " + split.scalar()->ToString() + " from two merged partial states\n";
  }
  return out;
}

arrow::Result<FunctionPublishResult> PublishFunctionLibrary(const Config& config,
                                                            const std::string& path) {
  ARROW_ASSIGN_OR_RAISE(auto store, storage::ObjectStore::Open(config.store_url));
  ARROW_ASSIGN_OR_RAISE(auto registry, catalog::Registry::Open(config.database_url));
  ARROW_ASSIGN_OR_RAISE(auto identity, CheckFunctionLibrary(path));
  const std::string where = "publishing function library '" + identity.qualified_name + "'";
  ARROW_ASSIGN_OR_RAISE(auto bytes, ReadFile(path));
  const artifact::Digest digest = artifact::Blake3(*bytes);
  FunctionPublishResult result{identity.qualified_name, digest.ToHex(), false, ""};
  ARROW_ASSIGN_OR_RAISE(result.uploaded,
                        UploadArtifact(store.get(), artifact::FunctionLibraryObjectKey(digest),
                                       bytes, digest, where));
  ARROW_ASSIGN_OR_RAISE(auto elf, artifact::ElfFile::Read(path, SLUICE_FUNCTION_IDENTITY_SECTION));
  std::string identity_json = elf.section.value_or("");
  const std::string magic = SLUICE_FUNCTION_IDENTITY_MAGIC;
  if (identity_json.rfind(magic, 0) == 0) identity_json = identity_json.substr(magic.size());
  if (auto nul = identity_json.find('\0'); nul != std::string::npos) identity_json.resize(nul);
  catalog::FunctionLibraryRecord record{digest.ToHex(),
                                        identity.qualified_name,
                                        identity.version,
                                        identity_json,
                                        bytes->size(),
                                        "",
                                        "",
                                        {}};
  // Signed by the local identity when there is one (`sluice auth keygen`).
  if (auto signer = catalog::SigningIdentity::Load(config.home + "/keys"); signer.ok()) {
    record.publisher_id = signer->publisher_id();
    record.signature =
        signer->Sign(catalog::FunctionLibraryStatement(record.artifact_blake3, identity_json));
    result.publisher_id = record.publisher_id;
  }
  SLUICE_RETURN_NOT_OK_CTX(registry->PutFunctionLibrary(record), where);
  return result;
}

}  // namespace sluice::pipeline
