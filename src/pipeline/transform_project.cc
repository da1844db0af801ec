#include "pipeline/transform_project.h"

#include <arrow/type.h>
#include <sluice/transform_abi.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <string_view>

#include "artifact/elf_file.h"
#include "artifact/transform_identity.h"
#include "common/subprocess.h"
#include "pipeline/manifest.h"

namespace sluice::pipeline {

namespace {

namespace fs = std::filesystem;

#include "pipeline/transform_scaffold.inc"

// Checks that a manifest references this transform in a function stage.
void CheckReference(const std::string& file, const std::vector<StageSpec>& stages,
                    const std::string& name, std::vector<std::string>* failures) {
  for (const auto& stage : stages) {
    if (stage.kind == StageSpec::Kind::kFunction && stage.qualified_name == name) return;
  }
  failures->push_back(file + ": stages: no function stage with qualified_name = \"" + name + "\"");
}

void AddStatusLines(const arrow::Status& st, std::vector<std::string>* failures) {
  std::string message = st.message();
  size_t start = 0;
  while (start <= message.size()) {
    size_t end = message.find('\n', start);
    if (end == std::string::npos) end = message.size();
    if (end > start) failures->push_back(message.substr(start, end - start));
    start = end + 1;
  }
}

}  // namespace

arrow::Status WriteTemplate(const std::string& path, std::string_view text,
                            const std::string& name) {
  std::string out(text);
  for (size_t pos = out.find("@NAME@"); pos != std::string::npos; pos = out.find("@NAME@", pos)) {
    out.replace(pos, 6, name);
    pos += name.size();
  }
  std::error_code ec;
  fs::create_directories(fs::path(path).parent_path(), ec);
  std::ofstream file(path, std::ios::binary);
  file << out;
  file.close();
  if (!file) return arrow::Status::IOError("cannot write '", path, "'");
  return arrow::Status::OK();
}

bool IsValidTransformName(const std::string& name) {
  static const std::regex kPattern("^[a-z][a-z0-9]*(-[a-z0-9]+)*$");
  return name.size() <= 64 && std::regex_match(name, kPattern);
}

std::string TransformLibraryPath(const std::string& dir, const std::string& name) {
  return (fs::path(dir) / "build" / ("lib" + name + ".so")).string();
}

arrow::Result<std::string> NewTransform(const std::string& parent, const std::string& name) {
  if (!IsValidTransformName(name)) {
    return arrow::Status::Invalid("invalid transform name '", name,
                                  "': use lower-case letters, digits and single dashes, starting "
                                  "with a letter, at most 64 characters (e.g. example-rows)");
  }
  const fs::path dir = fs::path(parent) / name;
  if (fs::exists(dir)) {
    return arrow::Status::Invalid("'", dir.string(), "' already exists; refusing to overwrite it");
  }
  ARROW_RETURN_NOT_OK(WriteTemplate((dir / "CMakeLists.txt").string(), kCMakeLists, name));
  ARROW_RETURN_NOT_OK(WriteTemplate((dir / "src" / "transform.cpp").string(), kTransformCpp, name));
  ARROW_RETURN_NOT_OK(
      WriteTemplate((dir / "tests" / "transform_test.cpp").string(), kTransformTest, name));
  ARROW_RETURN_NOT_OK(WriteTemplate((dir / "transform.toml").string(), kTransformToml, name));
  ARROW_RETURN_NOT_OK(WriteTemplate((dir / "pipeline.toml").string(), kPipelineToml, name));
  ARROW_RETURN_NOT_OK(WriteTemplate((dir / "job.toml").string(), kJobToml, name));
  return dir.string();
}

CheckReport CheckTransform(const std::string& dir_text, const std::string& library_override) {
  CheckReport report;
  auto& failures = report.failures;
  const fs::path dir(dir_text);
  if (!fs::is_directory(dir)) {
    failures.push_back(dir_text + ": not a directory");
    return report;
  }
  fs::path absolute = fs::absolute(dir).lexically_normal();
  if (absolute.filename().empty()) absolute = absolute.parent_path();  // "dir/" form
  const std::string dir_name = absolute.filename().string();
  const std::string meta_file = (dir / "transform.toml").string();

  // Metadata and the name.
  auto meta = ReadTransformMetadata(meta_file);
  if (!meta.ok()) {
    AddStatusLines(meta.status(), &failures);
    return report;  // nothing else can be compared without it
  }
  const std::string& name = meta->qualified_name;
  report.qualified_name = name;
  if (!IsValidTransformName(name)) {
    failures.push_back(meta_file + ": qualified_name: '" + name +
                       "' must be lower-case letters, digits and single dashes");
  }
  if (name != dir_name) {
    failures.push_back(meta_file + ": qualified_name: '" + name +
                       "' must equal the directory name '" + dir_name + "'");
  }

  // A shared-library target: the SDK's helper, or a plain CMake library (a transform written
  // in C against the ABI header alone, which declares its schemas itself).
  const fs::path cmake = dir / "CMakeLists.txt";
  auto cmake_text = ReadTextFile(cmake.string());
  if (!cmake_text.ok()) {
    failures.push_back(cmake.string() + ": missing");
  } else if (cmake_text->find("sluice_add_transform(" + name) == std::string::npos &&
             cmake_text->find("add_library(" + name + " SHARED") == std::string::npos) {
    failures.push_back(cmake.string() +
                       ": no shared-library target: expected sluice_add_transform(" + name +
                       " ...) or add_library(" + name + " SHARED ...)");
  }

  // The ABI header.
  bool includes_abi = false;
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(dir / "src", ec);
       !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    if (!it->is_regular_file()) continue;
    auto text = ReadTextFile(it->path().string());
    if (text.ok() && (text->find("#include <sluice/sdk/transform.hpp>") != std::string::npos ||
                      text->find("#include <sluice/transform_abi.h>") != std::string::npos)) {
      includes_abi = true;
    }
  }
  if (!includes_abi) {
    failures.push_back((dir / "src").string() +
                       ": no source includes <sluice/sdk/transform.hpp> or "
                       "<sluice/transform_abi.h>");
  }

  // The built library: exported symbols and the embedded identity, read with libelf.
  report.library =
      library_override.empty() ? TransformLibraryPath(dir_text, name) : library_override;
  if (!fs::exists(report.library)) {
    failures.push_back(report.library + ": not built; run `sluice transform test " + dir_text +
                       "` first");
  } else {
    auto elf = artifact::ElfFile::Read(report.library, SLUICE_TRANSFORM_IDENTITY_SECTION);
    if (!elf.ok()) {
      failures.push_back(elf.status().message());
    } else {
      if (!elf->is_shared_object) failures.push_back(report.library + ": not a shared library");
      for (const char* sym : {SLUICE_TRANSFORM_ABI_VERSION_SYMBOL, SLUICE_TRANSFORM_BATCH_SYMBOL,
                              SLUICE_TRANSFORM_IDENTITY_SYMBOL}) {
        if (!elf->exported_symbols.count(sym)) {
          failures.push_back(report.library + ": does not export '" + sym + "'");
        }
      }
      if (!elf->section.has_value()) {
        failures.push_back(report.library + ": no identity section '" +
                           SLUICE_TRANSFORM_IDENTITY_SECTION +
                           "' (define the transform with the SDK's SLUICE_TRANSFORM macro)");
      } else {
        auto id = artifact::TransformIdentity::Parse(*elf->section, report.library);
        if (!id.ok()) {
          failures.push_back(id.status().message());
        } else {
          report.identity = *id;
          if (id->abi_version != SLUICE_TRANSFORM_ABI_VERSION) {
            failures.push_back(
                report.library + ": abi_version: " + std::to_string(id->abi_version) +
                ", but this sluice speaks " + std::to_string(SLUICE_TRANSFORM_ABI_VERSION));
          }
          struct Pair {
            const char* field;
            const std::string& in_toml;
            const std::string& in_library;
          };
          for (Pair p : {Pair{"qualified_name", meta->qualified_name, id->qualified_name},
                         Pair{"version", meta->version, id->version},
                         Pair{"input_schema", meta->input_schema, id->input_schema},
                         Pair{"output_schema", meta->output_schema, id->output_schema}}) {
            if (p.in_toml != p.in_library) {
              failures.push_back(meta_file + ": " + p.field + ": '" + p.in_toml +
                                 "', but the built library says '" + p.in_library +
                                 "' (rebuild it, or correct the metadata)");
            }
          }
        }
      }
    }
  }

  // The pipeline reference and the job references.
  ParseOptions lenient;
  lenient.allow_placeholder_pin = true;
  const std::string pipeline_file = (dir / meta->pipeline).string();
  auto pipeline = ReadPipelineManifest(pipeline_file, lenient);
  if (!pipeline.ok()) {
    if (pipeline.status().IsIOError()) {
      failures.push_back(meta_file + ": pipeline: " + pipeline.status().message());
    } else {
      AddStatusLines(pipeline.status(), &failures);  // each line has file:line:column
    }
  } else {
    CheckReference(pipeline_file, pipeline->stages, name, &failures);
  }
  std::vector<std::string> jobs = {(dir / meta->example_job).lexically_normal().string()};
  const std::string local_job = (dir / "job.toml").lexically_normal().string();
  if (fs::exists(local_job) && local_job != jobs[0]) jobs.push_back(local_job);
  for (const std::string& job_file : jobs) {
    auto job = ReadJobManifest(job_file, lenient);
    if (!job.ok()) {
      if (job.status().IsIOError()) {
        failures.push_back(meta_file + ": " + (job_file == jobs[0] ? "example_job: " : "job: ") +
                           job.status().message());
      } else {
        AddStatusLines(job.status(), &failures);
      }
    } else {
      CheckReference(job_file, job->stages, name, &failures);
    }
  }
  return report;
}

std::string DescribeSchemas(const artifact::TransformIdentity& identity) {
  std::string out;
  auto describe = [&](const char* side, const std::string& id,
                      const std::shared_ptr<arrow::Schema>& schema) {
    out += std::string(side) + " schema: " + id;
    if (id == artifact::kAnySchemaId) {
      out += std::string(" (") +
             (side == std::string("input") ? "accepts whatever the previous stage writes"
                                           : "fixed by the first stream emitted") +
             ")\n";
    } else if (schema == nullptr) {
      out += " (the identity carries no Arrow schema: rebuild with this sluice's SDK)\n";
    } else {
      out += "\n";
      for (const auto& field : schema->fields()) out += "  " + field->ToString() + "\n";
    }
  };
  describe("input", identity.input_schema, identity.input_arrow_schema);
  describe("output", identity.output_schema, identity.output_arrow_schema);
  return out;
}

arrow::Status ConfigureAndBuild(const std::string& dir, const std::string& sluice_root,
                                const std::string& build_type, const std::string& what) {
  const std::string build_dir = (fs::path(dir) / "build").string();
  ProcessOptions quiet;
  quiet.stdout_to_stderr = true;
  ARROW_ASSIGN_OR_RAISE(
      int rc, RunProcess({"cmake", "-S", dir, "-B", build_dir, "-G", "Ninja",
                          "-DSLUICE_ROOT=" + sluice_root, "-DCMAKE_BUILD_TYPE=" + build_type,
                          "--log-level=WARNING"},
                         quiet));
  if (rc != 0) {
    return arrow::Status::Invalid(what, ": cmake configure failed (exit ", rc,
                                  "); see the output above");
  }
  ARROW_ASSIGN_OR_RAISE(rc, RunProcess({"cmake", "--build", build_dir}, quiet));
  if (rc != 0) {
    return arrow::Status::Invalid(what, ": build failed (exit ", rc,
                                  "); see the compiler output above");
  }
  return arrow::Status::OK();
}

arrow::Result<std::string> BuildTransform(const std::string& dir, const std::string& sluice_root,
                                          const std::string& build_type) {
  ARROW_ASSIGN_OR_RAISE(TransformMetadata meta,
                        ReadTransformMetadata((fs::path(dir) / "transform.toml").string()));
  ARROW_RETURN_NOT_OK(
      ConfigureAndBuild(dir, sluice_root, build_type, "transform '" + meta.qualified_name + "'"));
  const std::string library = TransformLibraryPath(dir, meta.qualified_name);
  if (!fs::exists(library)) {
    return arrow::Status::Invalid("transform '", meta.qualified_name,
                                  "': the build did not produce ", library,
                                  "; is the target named after the transform?");
  }
  return library;
}

arrow::Status TestTransform(const std::string& dir, const std::string& sluice_root) {
  ARROW_ASSIGN_OR_RAISE(std::string library, BuildTransform(dir, sluice_root, "Release"));
  ProcessOptions quiet;
  quiet.stdout_to_stderr = true;
  ARROW_ASSIGN_OR_RAISE(int rc,
                        RunProcess({"ctest", "--test-dir", (fs::path(dir) / "build").string(),
                                    "--output-on-failure", "--no-tests=error"},
                                   quiet));
  if (rc != 0) {
    return arrow::Status::Invalid("transform in '", dir, "': inline tests failed (ctest exit ", rc,
                                  ")");
  }
  return arrow::Status::OK();
}

}  // namespace sluice::pipeline
