#include "pipeline/manifest.h"

#include <toml++/toml.h>
#include <fstream>
#include <set>
#include <sstream>

#include "artifact/transform_identity.h"

namespace sluice::pipeline {

namespace {

// Collects every problem in one file, each with its position.
class Errors {
 public:
  explicit Errors(std::string file) : file_(std::move(file)) {}

  void Add(const toml::source_region& where, const std::string& message) {
    std::ostringstream out;
    out << file_ << ":" << where.begin.line << ":" << where.begin.column << ": " << message;
    lines_.push_back(out.str());
  }
  void AddNoPosition(const std::string& message) { lines_.push_back(file_ + ": " + message); }
  std::string Location(const toml::source_region& where) const {
    return file_ + ":" + std::to_string(where.begin.line) + ":" +
           std::to_string(where.begin.column);
  }

  arrow::Status ToStatus() const {
    if (lines_.empty()) return arrow::Status::OK();
    std::string joined;
    for (const auto& l : lines_) joined += (joined.empty() ? "" : "\n") + l;
    return arrow::Status::Invalid(joined);
  }

 private:
  std::string file_;
  std::vector<std::string> lines_;
};

const char* TypeName(const toml::node& node) {
  switch (node.type()) {
    case toml::node_type::string:
      return "a string";
    case toml::node_type::integer:
      return "an integer";
    case toml::node_type::floating_point:
      return "a float";
    case toml::node_type::boolean:
      return "a boolean";
    case toml::node_type::table:
      return "a table";
    case toml::node_type::array:
      return "an array";
    default:
      return "a date or time";
  }
}

// Reports keys of `table` not in `allowed`.
void CheckKeys(const toml::table& table, std::string_view where,
               const std::set<std::string_view>& allowed, Errors* errors) {
  for (const auto& [key, node] : table) {
    if (!allowed.count(key.str())) {
      std::string list;
      for (auto a : allowed) list += (list.empty() ? "" : ", ") + std::string(a);
      errors->Add(key.source(), "unknown key '" + std::string(key.str()) + "' in " +
                                    std::string(where) + " (allowed: " + list + ")");
    }
  }
}

// Reads an optional string; reports a wrong type.
std::optional<std::string> GetString(const toml::table& table, std::string_view key,
                                     std::string_view where, Errors* errors) {
  const toml::node* node = table.get(key);
  if (node == nullptr) return std::nullopt;
  if (!node->is_string()) {
    errors->Add(node->source(), std::string(where) + "." + std::string(key) +
                                    " must be a string, not " + TypeName(*node));
    return std::nullopt;
  }
  return node->value<std::string>();
}

std::string RequireString(const toml::table& table, std::string_view key, std::string_view where,
                          Errors* errors) {
  auto value = GetString(table, key, where, errors);
  if (!value.has_value()) {
    if (table.get(key) == nullptr) {
      errors->Add(table.source(),
                  std::string(where) + " is missing required key '" + std::string(key) + "'");
    }
    return "";
  }
  if (value->empty()) {
    errors->Add(table.get(key)->source(),
                std::string(where) + "." + std::string(key) + " must not be empty");
  }
  return *value;
}

void CheckOneOf(const toml::table& table, std::string_view key, const std::string& value,
                std::initializer_list<std::string_view> choices, std::string_view where,
                Errors* errors) {
  for (auto c : choices) {
    if (value == c) return;
  }
  std::string list;
  for (auto c : choices) list += (list.empty() ? "\"" : ", \"") + std::string(c) + "\"";
  const toml::node* node = table.get(key);
  errors->Add(node ? node->source() : table.source(), std::string(where) + "." + std::string(key) +
                                                          " is \"" + value +
                                                          "\"; expected one of " + list);
}

bool IsHexDigest(const std::string& s) {
  if (s.size() != 64) return false;
  for (char c : s) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

std::vector<StageSpec> ParseStages(const toml::node* node, std::string_view where,
                                   const ParseOptions& options, Errors* errors) {
  std::vector<StageSpec> stages;
  if (node == nullptr) return stages;
  const toml::array* array = node->as_array();
  if (array == nullptr) {
    errors->Add(node->source(), std::string(where) + " must be an array of tables ([[" +
                                    std::string(where) + "]])");
    return stages;
  }
  for (size_t i = 0; i < array->size(); ++i) {
    const std::string name = std::string(where) + "[" + std::to_string(i) + "]";
    const toml::table* table = (*array)[i].as_table();
    if (table == nullptr) {
      errors->Add((*array)[i].source(), name + " must be a table");
      continue;
    }
    StageSpec stage;
    stage.location = errors->Location(table->source());
    const std::string kind = RequireString(*table, "kind", name, errors);
    if (kind == "function") {
      stage.kind = StageSpec::Kind::kFunction;
      CheckKeys(*table, name, {"kind", "qualified_name", "pin_artifact_hash"}, errors);
      stage.qualified_name = RequireString(*table, "qualified_name", name, errors);
      if (!stage.qualified_name.empty() && !artifact::IsValidIdentifier(stage.qualified_name)) {
        errors->Add(table->get("qualified_name")->source(),
                    name + ".qualified_name '" + stage.qualified_name +
                        "' is not a valid name ([A-Za-z0-9._-])");
      }
      stage.pin_artifact_hash = RequireString(*table, "pin_artifact_hash", name, errors);
      const auto* pin = table->get("pin_artifact_hash");
      if (stage.pin_artifact_hash == kPlaceholderPin) {
        if (!options.allow_placeholder_pin) {
          errors->Add(pin->source(),
                      name + ".pin_artifact_hash is the placeholder " +
                          std::string(kPlaceholderPin) +
                          ": publish the transform (sluice transform publish DIR) and copy the "
                          "printed artifact_blake3 here");
        }
      } else if (!stage.pin_artifact_hash.empty() && !IsHexDigest(stage.pin_artifact_hash)) {
        errors->Add(pin->source(), name + ".pin_artifact_hash '" + stage.pin_artifact_hash +
                                       "' is not a BLAKE3 digest (64 lower-case hex characters)");
      }
    } else if (kind == "dedup") {
      stage.kind = StageSpec::Kind::kDedup;
      CheckKeys(*table, name, {"kind", "key"}, errors);
      stage.key = RequireString(*table, "key", name, errors);
    } else if (!kind.empty()) {
      CheckOneOf(*table, "kind", kind, {"function", "dedup"}, name, errors);
    }
    stages.push_back(std::move(stage));
  }
  return stages;
}

// Reads an optional integer setting within [min, max].
std::optional<int64_t> GetBoundedInteger(const toml::table& table, std::string_view key,
                                         std::string_view where, int64_t min, int64_t max,
                                         Errors* errors) {
  const toml::node* node = table.get(key);
  if (node == nullptr) return std::nullopt;
  const std::string name = std::string(where) + "." + std::string(key);
  if (!node->is_integer()) {
    errors->Add(node->source(), name + " must be an integer, not " + TypeName(*node));
    return std::nullopt;
  }
  const int64_t value = node->value<int64_t>().value_or(0);
  if (value < min || value > max) {
    errors->Add(node->source(), name + " is " + std::to_string(value) + "; it must be between " +
                                    std::to_string(min) + " and " + std::to_string(max));
    return std::nullopt;
  }
  return value;
}

const toml::table* RequireTable(const toml::table& parent, std::string_view key,
                                std::string_view where, Errors* errors) {
  const toml::node* node = parent.get(key);
  if (node == nullptr) {
    errors->AddNoPosition("missing table [" + std::string(where) + "]");
    return nullptr;
  }
  if (!node->is_table()) {
    errors->Add(node->source(), std::string(where) + " must be a table");
    return nullptr;
  }
  return node->as_table();
}

arrow::Result<toml::table> ParseToml(std::string_view text, const std::string& file) {
  try {
    return toml::parse(text, file);
  } catch (const toml::parse_error& e) {
    const auto& where = e.source().begin;
    return arrow::Status::Invalid(file, ":", where.line, ":", where.column, ": ",
                                  std::string(e.description()));
  }
}

}  // namespace

arrow::Result<JobManifest> ParseJobManifest(std::string_view text, const std::string& file,
                                            const ParseOptions& options) {
  ARROW_ASSIGN_OR_RAISE(toml::table root, ParseToml(text, file));
  Errors errors(file);
  JobManifest job;
  job.file = file;
  CheckKeys(root, "the job", {"dataflow"}, &errors);
  const toml::table* dataflow = RequireTable(root, "dataflow", "dataflow", &errors);
  if (dataflow != nullptr) {
    CheckKeys(*dataflow, "[dataflow]", {"source", "stages", "sink", "limits"}, &errors);
    if (const toml::table* source = RequireTable(*dataflow, "source", "dataflow.source", &errors)) {
      CheckKeys(*source, "[dataflow.source]", {"kind", "prefix", "limit", "on_error"}, &errors);
      job.source.kind = GetString(*source, "kind", "dataflow.source", &errors).value_or("jsonl");
      CheckOneOf(*source, "kind", job.source.kind, {"jsonl", "parquet", "ipc"}, "dataflow.source",
                 &errors);
      job.source.prefix = RequireString(*source, "prefix", "dataflow.source", &errors);
      if (const toml::node* limit = source->get("limit")) {
        if (!limit->is_integer()) {
          errors.Add(
              limit->source(),
              std::string("dataflow.source.limit must be an integer, not ") + TypeName(*limit));
        } else if (limit->value<int64_t>().value_or(0) < 1) {
          errors.Add(limit->source(), "dataflow.source.limit must be at least 1");
        } else {
          job.source.limit = limit->value<int64_t>();
        }
      }
      job.source.on_error =
          GetString(*source, "on_error", "dataflow.source", &errors).value_or("fail");
      CheckOneOf(*source, "on_error", job.source.on_error, {"fail", "skip"}, "dataflow.source",
                 &errors);
    }
    job.stages = ParseStages(dataflow->get("stages"), "dataflow.stages", options, &errors);
    if (job.stages.empty() && dataflow->get("stages") == nullptr) {
      errors.AddNoPosition("no [[dataflow.stages]]: a job needs at least one stage");
    }
    if (const toml::table* sink = RequireTable(*dataflow, "sink", "dataflow.sink", &errors)) {
      CheckKeys(*sink, "[dataflow.sink]", {"kind", "path"}, &errors);
      job.sink.kind = GetString(*sink, "kind", "dataflow.sink", &errors).value_or("parquet");
      CheckOneOf(*sink, "kind", job.sink.kind, {"parquet", "ipc"}, "dataflow.sink", &errors);
      job.sink.path = RequireString(*sink, "path", "dataflow.sink", &errors);
      if (!job.sink.path.empty() && job.sink.path.find("{run_id}") == std::string::npos) {
        errors.Add(sink->get("path")->source(),
                   "dataflow.sink.path '" + job.sink.path +
                       "' must contain {run_id}, so that runs never overwrite each other");
      }
    }
    if (const toml::node* node = dataflow->get("limits")) {
      if (const toml::table* limits = node->as_table()) {
        CheckKeys(*limits, "[dataflow.limits]", {"task_timeout_seconds", "task_memory_mb"},
                  &errors);
        job.limits.task_timeout_seconds = GetBoundedInteger(
            *limits, "task_timeout_seconds", "dataflow.limits", 1, kMaxTaskTimeoutSeconds, &errors);
        job.limits.task_memory_mb = GetBoundedInteger(*limits, "task_memory_mb", "dataflow.limits",
                                                      kMinTaskMemoryMb, kMaxTaskMemoryMb, &errors);
      } else {
        errors.Add(node->source(), "dataflow.limits must be a table");
      }
    }
  }
  ARROW_RETURN_NOT_OK(errors.ToStatus());
  return job;
}

arrow::Result<PipelineManifest> ParsePipelineManifest(std::string_view text,
                                                      const std::string& file,
                                                      const ParseOptions& options) {
  ARROW_ASSIGN_OR_RAISE(toml::table root, ParseToml(text, file));
  Errors errors(file);
  PipelineManifest manifest;
  manifest.file = file;
  CheckKeys(root, "the pipeline manifest", {"pipeline"}, &errors);
  if (const toml::table* pipeline = RequireTable(root, "pipeline", "pipeline", &errors)) {
    CheckKeys(*pipeline, "[pipeline]", {"name", "stages"}, &errors);
    manifest.name = RequireString(*pipeline, "name", "pipeline", &errors);
    manifest.stages = ParseStages(pipeline->get("stages"), "pipeline.stages", options, &errors);
    if (pipeline->get("stages") == nullptr) {
      errors.AddNoPosition("no [[pipeline.stages]]: a pipeline needs at least one stage");
    }
  }
  ARROW_RETURN_NOT_OK(errors.ToStatus());
  return manifest;
}

arrow::Result<TransformMetadata> ParseTransformMetadata(std::string_view text,
                                                        const std::string& file) {
  ARROW_ASSIGN_OR_RAISE(toml::table root, ParseToml(text, file));
  Errors errors(file);
  TransformMetadata meta;
  meta.file = file;
  CheckKeys(root, "transform metadata", {"transform"}, &errors);
  if (const toml::table* t = RequireTable(root, "transform", "transform", &errors)) {
    CheckKeys(*t, "[transform]",
              {"qualified_name", "version", "input_dataset", "output_dataset", "input_schema",
               "output_schema", "example_job", "pipeline"},
              &errors);
    struct Entry {
      const char* key;
      std::string* out;
      bool identifier;
    };
    for (Entry e :
         {Entry{"qualified_name", &meta.qualified_name, true},
          Entry{"version", &meta.version, true}, Entry{"input_dataset", &meta.input_dataset, false},
          Entry{"output_dataset", &meta.output_dataset, false},
          Entry{"input_schema", &meta.input_schema, true},
          Entry{"output_schema", &meta.output_schema, true},
          Entry{"example_job", &meta.example_job, false},
          Entry{"pipeline", &meta.pipeline, false}}) {
      *e.out = RequireString(*t, e.key, "transform", &errors);
      if (e.identifier && !e.out->empty() && !artifact::IsValidIdentifier(*e.out)) {
        errors.Add(t->get(e.key)->source(), std::string("transform.") + e.key + " '" + *e.out +
                                                "' is not a valid identifier ([A-Za-z0-9._-])");
      }
    }
  }
  ARROW_RETURN_NOT_OK(errors.ToStatus());
  return meta;
}

arrow::Result<TransformMetadata> ReadTransformMetadata(const std::string& path) {
  ARROW_ASSIGN_OR_RAISE(std::string text, ReadTextFile(path));
  return ParseTransformMetadata(text, path);
}

arrow::Result<std::string> InjectPin(std::string_view pipeline_text, const std::string& file,
                                     const std::string& qualified_name, const std::string& pin) {
  ParseOptions lenient;
  lenient.allow_placeholder_pin = true;
  ARROW_RETURN_NOT_OK(ParsePipelineManifest(pipeline_text, file, lenient).status());
  ARROW_ASSIGN_OR_RAISE(toml::table root, ParseToml(pipeline_text, file));
  const toml::array* stages = root["pipeline"]["stages"].as_array();
  int64_t line = -1;
  for (size_t i = 0; stages != nullptr && i < stages->size(); ++i) {
    const toml::table* stage = (*stages)[i].as_table();
    if (stage == nullptr || stage->get("kind") == nullptr) continue;
    if (stage->get("kind")->value<std::string>() != "function") continue;
    if (stage->get("qualified_name")->value<std::string>() != qualified_name) continue;
    line = stage->get("pin_artifact_hash")->source().begin.line;
  }
  if (line < 0) {
    return arrow::Status::Invalid(file, ": no function stage with qualified_name = \"",
                                  qualified_name, "\" to pin");
  }
  // Replace the quoted value on that line, keeping everything else byte for byte.
  std::string out(pipeline_text);
  size_t start = 0;
  for (int64_t l = 1; l < line && start != std::string::npos; ++l) {
    start = out.find('\n', start);
    if (start != std::string::npos) ++start;
  }
  const size_t end = out.find('\n', start);
  std::string text_line =
      out.substr(start, end == std::string::npos ? std::string::npos : end - start);
  const size_t eq = text_line.find('=');
  const size_t open_quote = text_line.find('"', eq == std::string::npos ? 0 : eq);
  const size_t close_quote =
      open_quote == std::string::npos ? std::string::npos : text_line.find('"', open_quote + 1);
  if (text_line.find("pin_artifact_hash") == std::string::npos || eq == std::string::npos ||
      close_quote == std::string::npos) {
    return arrow::Status::Invalid(file, ":", line,
                                  ": write pin_artifact_hash = \"...\" on one line with a basic "
                                  "string, so that publish can pin it");
  }
  text_line.replace(open_quote, close_quote - open_quote + 1, "\"" + pin + "\"");
  out.replace(start, end == std::string::npos ? std::string::npos : end - start, text_line);
  ARROW_RETURN_NOT_OK(ParsePipelineManifest(out, file).status());
  return out;
}

arrow::Result<std::string> ReadTextFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return arrow::Status::IOError("cannot read '", path, "': no such file");
  std::ostringstream out;
  out << in.rdbuf();
  if (in.bad()) return arrow::Status::IOError("cannot read '", path, "'");
  return out.str();
}

arrow::Result<JobManifest> ReadJobManifest(const std::string& path, const ParseOptions& options) {
  ARROW_ASSIGN_OR_RAISE(std::string text, ReadTextFile(path));
  return ParseJobManifest(text, path, options);
}

arrow::Result<PipelineManifest> ReadPipelineManifest(const std::string& path,
                                                     const ParseOptions& options) {
  ARROW_ASSIGN_OR_RAISE(std::string text, ReadTextFile(path));
  return ParsePipelineManifest(text, path, options);
}

}  // namespace sluice::pipeline
