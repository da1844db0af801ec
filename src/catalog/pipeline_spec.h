// Signed pipeline specs: what `transform publish` registers and `submit` verifies.
//
// A spec is the route-less pipeline manifest with the published pin injected, plus the
// transform it pins, stored as canonical CBOR (map keys sorted length-first, then bytewise, as
// RFC 8949's length-first ordering; minimal integer encodings), so the same spec always has the
// same bytes, the same BLAKE3 and, with Ed25519, the same signature.
#pragma once

#include <arrow/result.h>

#include <string>
#include <vector>

#include "catalog/registry.h"
#include "catalog/signing.h"

namespace sluice::catalog {

struct PipelineSpec {
  static constexpr char kFormat[] = "sluice.pipeline-spec/1";
  std::string name;
  std::string manifest_toml;
  std::string transform_name;
  std::string artifact_blake3;

  bool operator==(const PipelineSpec&) const = default;
};

std::vector<uint8_t> EncodePipelineSpec(const PipelineSpec& spec);
/// Decodes untrusted bytes; an unknown format or missing field is an Invalid error.
arrow::Result<PipelineSpec> DecodePipelineSpec(const std::vector<uint8_t>& cbor);

/// Encodes and signs a spec into the record the registry stores.
PipelineSpecRecord SignPipelineSpec(const PipelineSpec& spec, const SigningIdentity& identity);

/// Verifies a stored spec before use: its bytes hash to its id, its publisher is registered,
/// and the publisher's signature holds. Returns the decoded spec.
arrow::Result<PipelineSpec> VerifyPipelineSpec(const PipelineSpecRecord& record,
                                               Registry* registry);

}  // namespace sluice::catalog
