#include "catalog/pipeline_spec.h"

#include <algorithm>
#include <nlohmann/json.hpp>

#include "artifact/blake3_digest.h"
#include "common/cbor_shape.h"

namespace sluice::catalog {

namespace {

// A spec nests three levels deep (document, transform, nothing more); room to grow.
constexpr int kMaxSpecDepth = 16;

// Rebuilds a value with every map's keys in canonical order; ordered_json keeps that order when
// it writes CBOR.
nlohmann::ordered_json Canonical(const nlohmann::json& value) {
  if (value.is_object()) {
    std::vector<std::string> keys;
    for (auto it = value.begin(); it != value.end(); ++it) keys.push_back(it.key());
    std::sort(keys.begin(), keys.end(), [](const std::string& a, const std::string& b) {
      return a.size() != b.size() ? a.size() < b.size() : a < b;
    });
    nlohmann::ordered_json out = nlohmann::ordered_json::object();
    for (const auto& k : keys) out[k] = Canonical(value.at(k));
    return out;
  }
  if (value.is_array()) {
    nlohmann::ordered_json out = nlohmann::ordered_json::array();
    for (const auto& item : value) out.push_back(Canonical(item));
    return out;
  }
  return nlohmann::ordered_json::parse(value.dump());
}

}  // namespace

std::vector<uint8_t> EncodePipelineSpec(const PipelineSpec& spec) {
  nlohmann::json doc = {
      {"format", PipelineSpec::kFormat},
      {"name", spec.name},
      {"manifest_toml", spec.manifest_toml},
      {"transform",
       {{"qualified_name", spec.transform_name}, {"artifact_blake3", spec.artifact_blake3}}}};
  return nlohmann::ordered_json::to_cbor(Canonical(doc));
}

arrow::Result<PipelineSpec> DecodePipelineSpec(const std::vector<uint8_t>& cbor) {
  // Registry bytes are untrusted: a deeply nested document must not reach the recursive decoder.
  ARROW_RETURN_NOT_OK(CheckCborShape(cbor.data(), cbor.size(), kMaxSpecDepth, "pipeline spec"));
  nlohmann::json doc = nlohmann::json::from_cbor(cbor, /*strict=*/true, /*allow_exceptions=*/false);
  if (doc.is_discarded() || !doc.is_object()) {
    return arrow::Status::Invalid("pipeline spec is not a CBOR map");
  }
  auto text = [&](const nlohmann::json& obj, const char* key) -> arrow::Result<std::string> {
    auto it = obj.find(key);
    if (it == obj.end() || !it->is_string()) {
      return arrow::Status::Invalid("pipeline spec field '", key, "' is missing or not text");
    }
    return it->get<std::string>();
  };
  ARROW_ASSIGN_OR_RAISE(std::string format, text(doc, "format"));
  if (format != PipelineSpec::kFormat) {
    return arrow::Status::Invalid("pipeline spec format '", format, "' is not ",
                                  PipelineSpec::kFormat);
  }
  PipelineSpec spec;
  ARROW_ASSIGN_OR_RAISE(spec.name, text(doc, "name"));
  ARROW_ASSIGN_OR_RAISE(spec.manifest_toml, text(doc, "manifest_toml"));
  auto transform = doc.find("transform");
  if (transform == doc.end() || !transform->is_object()) {
    return arrow::Status::Invalid("pipeline spec field 'transform' is missing");
  }
  ARROW_ASSIGN_OR_RAISE(spec.transform_name, text(*transform, "qualified_name"));
  ARROW_ASSIGN_OR_RAISE(spec.artifact_blake3, text(*transform, "artifact_blake3"));
  return spec;
}

PipelineSpecRecord SignPipelineSpec(const PipelineSpec& spec, const SigningIdentity& identity) {
  PipelineSpecRecord record;
  record.name = spec.name;
  record.spec_cbor = EncodePipelineSpec(spec);
  record.spec_blake3 = artifact::Blake3(record.spec_cbor.data(), record.spec_cbor.size()).ToHex();
  record.signature = identity.Sign(record.spec_cbor);
  record.publisher_id = identity.publisher_id();
  return record;
}

arrow::Result<PipelineSpec> VerifyPipelineSpec(const PipelineSpecRecord& record,
                                               Registry* registry) {
  const std::string where = "pipeline spec '" + record.name + "' (" + record.spec_blake3 + ")";
  const std::string actual =
      artifact::Blake3(record.spec_cbor.data(), record.spec_cbor.size()).ToHex();
  if (actual != record.spec_blake3) {
    return arrow::Status::Invalid(where, " was altered: its bytes hash to ", actual);
  }
  ARROW_ASSIGN_OR_RAISE(auto publisher, registry->GetPublisher(record.publisher_id));
  if (!publisher.has_value()) {
    return arrow::Status::Invalid(where, " is signed by unknown publisher '", record.publisher_id,
                                  "'");
  }
  if (PublisherIdOf(publisher->public_key) != record.publisher_id ||
      !VerifySignature(publisher->public_key, record.spec_cbor, record.signature)) {
    return arrow::Status::Invalid(where, ": signature does not verify for publisher '",
                                  record.publisher_id, "'");
  }
  auto spec = DecodePipelineSpec(record.spec_cbor);
  if (!spec.ok()) return arrow::Status::Invalid(where, ": ", spec.status().message());
  return spec;
}

}  // namespace sluice::catalog
