#include "pipeline/publish.h"

#include <arrow/config.h>
#include <arrow/io/file.h>

#include <filesystem>

#include "artifact/blake3_digest.h"
#include "artifact/verified_loader.h"
#include "catalog/pipeline_spec.h"
#include "catalog/registry.h"
#include "catalog/signing.h"
#include "common/status.h"
#include "common/version.h"
#include "pipeline/manifest.h"
#include "pipeline/transform_project.h"
#include "storage/object_store.h"

namespace sluice::pipeline {

namespace {

namespace fs = std::filesystem;

arrow::Result<std::shared_ptr<arrow::Buffer>> ReadLibrary(const std::string& path) {
  ARROW_ASSIGN_OR_RAISE(auto file, arrow::io::ReadableFile::Open(path));
  ARROW_ASSIGN_OR_RAISE(int64_t size, file->GetSize());
  return file->Read(size);
}

std::vector<uint8_t> ToBytes(const std::string& bytes) {
  return std::vector<uint8_t>(bytes.begin(), bytes.end());
}

std::string BuildInfo() {
  return std::string("{\"build_type\":\"Release\",\"sluice_version\":\"") + SluiceVersion() +
         "\",\"arrow_version\":\"" + ARROW_VERSION_STRING + "\",\"compiler\":\"gcc " + __VERSION__ +
         "\"}";
}

}  // namespace

arrow::Result<bool> UploadArtifact(storage::ObjectStore* store, const std::string& key,
                                   const std::shared_ptr<arrow::Buffer>& bytes,
                                   const artifact::Digest& digest, const std::string& where) {
  ARROW_ASSIGN_OR_RAISE(bool exists, store->Exists(key));
  if (exists) {
    ARROW_ASSIGN_OR_RAISE(auto stored, store->Get(key));
    if (artifact::Blake3(*stored) == digest) return false;
  }
  SLUICE_RETURN_NOT_OK_CTX(store->Put(key, bytes), where);
  return true;
}

arrow::Result<PublishResult> PublishTransform(const Config& config, const std::string& dir,
                                              const std::string& sluice_root) {
  // Everything that can be checked without building is checked first, so a missing key or an
  // unreachable store fails in a second, not after a build.
  ARROW_ASSIGN_OR_RAISE(auto identity, catalog::SigningIdentity::Load(config.home + "/keys"));
  ARROW_ASSIGN_OR_RAISE(auto store, storage::ObjectStore::Open(config.store_url));
  SLUICE_RETURN_NOT_OK_CTX(store->List("transforms/batch/").status(), "the store is unreachable");
  ARROW_ASSIGN_OR_RAISE(auto registry, catalog::Registry::Open(config.database_url));
  ARROW_ASSIGN_OR_RAISE(TransformMetadata meta,
                        ReadTransformMetadata((fs::path(dir) / "transform.toml").string()));
  const std::string where = "publishing transform '" + meta.qualified_name + "'";

  // 1. A release build, which must pass the structural check.
  ARROW_ASSIGN_OR_RAISE(std::string library, BuildTransform(dir, sluice_root, "Release"));
  CheckReport report = CheckTransform(dir, library);
  if (!report.ok()) {
    std::string message = where + ": transform check failed:";
    for (const auto& f : report.failures) message += "\n  - " + f;
    return arrow::Status::Invalid(message);
  }

  // 2. The digest.
  ARROW_ASSIGN_OR_RAISE(auto bytes, ReadLibrary(library));
  const artifact::Digest digest = artifact::Blake3(*bytes);
  PublishResult result{meta.qualified_name, digest.ToHex(), false};

  // 3. The upload, skipped when the store already holds these exact bytes.
  ARROW_ASSIGN_OR_RAISE(
      result.uploaded,
      UploadArtifact(store.get(), artifact::TransformObjectKey(digest), bytes, digest, where));

  // 4-6. Code metadata, the pin injected into the pipeline text in memory, the signed spec; all
  // registry rows in one transaction.
  const std::string pipeline_file = (fs::path(dir) / meta.pipeline).string();
  ARROW_ASSIGN_OR_RAISE(std::string pipeline_text, ReadTextFile(pipeline_file));
  ARROW_ASSIGN_OR_RAISE(std::string pinned, InjectPin(pipeline_text, pipeline_file,
                                                      meta.qualified_name, result.artifact_blake3));
  ARROW_ASSIGN_OR_RAISE(PipelineManifest manifest, ParsePipelineManifest(pinned, pipeline_file));
  catalog::PipelineSpec spec{manifest.name, pinned, meta.qualified_name, result.artifact_blake3};
  catalog::PipelineSpecRecord spec_record = catalog::SignPipelineSpec(spec, identity);
  catalog::ArtifactRecord artifact_record{result.artifact_blake3,
                                          meta.qualified_name,
                                          meta.version,
                                          meta.input_schema,
                                          meta.output_schema,
                                          bytes->size(),
                                          BuildInfo(),
                                          identity.publisher_id(),
                                          "",
                                          ToBytes(report.identity.input_schema_ipc),
                                          ToBytes(report.identity.output_schema_ipc)};
  const auto& pk = identity.public_key();
  catalog::PublisherRecord publisher{identity.publisher_id(), "local",
                                     std::vector<uint8_t>(pk.begin(), pk.end()), ""};
  // Keep a registered publisher's name; only a missing one is added here.
  ARROW_ASSIGN_OR_RAISE(auto known, registry->GetPublisher(publisher.id));
  SLUICE_RETURN_NOT_OK_CTX(registry->RegisterPublication(artifact_record, spec_record,
                                                         known.has_value() ? nullptr : &publisher),
                           where);
  return result;
}

}  // namespace sluice::pipeline
