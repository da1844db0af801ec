#include "storage/sink_manifest.h"

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>

#include <blake3.h>

#include "common/hex.h"

namespace sluice::storage {

namespace {

using json = nlohmann::json;

// BLAKE3 of a buffer as hex. The storage layer sits below artifact/, so it calls the C library
// that artifact::Blake3 wraps.
std::string Blake3Hex(const arrow::Buffer& bytes) {
  blake3_hasher hasher;
  blake3_hasher_init(&hasher);
  blake3_hasher_update(&hasher, bytes.data(), static_cast<size_t>(bytes.size()));
  uint8_t out[BLAKE3_OUT_LEN];
  blake3_hasher_finalize(&hasher, out, sizeof(out));
  return HexEncode(out, sizeof(out));
}

// The folder part of a key ("" for a top-level key).
std::string Parent(const std::string& key) {
  const size_t slash = key.rfind('/');
  return slash == std::string::npos ? "" : key.substr(0, slash);
}

bool IsNamed(const std::string& key, const char* name) {
  return key == name || key.ends_with(std::string("/") + name);
}

using ManifestEntry = SinkManifest::File;

// Parses one manifest document, checking every field's type: manifests are untrusted bytes.
arrow::Result<SinkManifest> ParseManifest(const arrow::Buffer& bytes, const std::string& key) {
  json doc = json::parse(bytes.ToString(), nullptr, /*allow_exceptions=*/false);
  auto bad = [&](const std::string& what) {
    return arrow::Status::Invalid("sink manifest '", key, "': ", what);
  };
  if (doc.is_discarded() || !doc.is_object()) return bad("not a JSON object");
  auto format = doc.find("format");
  if (format == doc.end() || !format->is_string() || *format != kSinkManifestFormat) {
    return bad(std::string("field 'format' is not \"") + kSinkManifestFormat + "\"");
  }
  SinkManifest out;
  for (auto [field, target] :
       {std::pair{"run_id", &out.run_id}, std::pair{"attempt_id", &out.attempt_id},
        std::pair{"job_manifest_blake3", &out.job_manifest_blake3}}) {
    auto v = doc.find(field);
    if (v == doc.end()) continue;
    if (!v->is_string()) return bad(std::string("field '") + field + "' is not a string");
    *target = v->get<std::string>();
  }
  if (auto v = doc.find("rows"); v != doc.end()) {
    if (!v->is_number_integer()) return bad("field 'rows' is not an integer");
    out.rows = v->get<int64_t>();
  }
  auto files = doc.find("files");
  if (files == doc.end() || !files->is_array()) return bad("field 'files' is not an array");
  for (size_t i = 0; i < files->size(); ++i) {
    const json& f = (*files)[i];
    const std::string entry = "files[" + std::to_string(i) + "]";
    if (!f.is_object()) return bad(entry + " is not an object");
    auto k = f.find("key");
    if (k == f.end() || !k->is_string()) return bad(entry + ".key is missing or not a string");
    ManifestEntry e;
    e.key = k->get<std::string>();
    if (arrow::Status st = ObjectStore::ValidateKey(e.key); !st.ok()) {
      return bad(entry + ".key: " + st.message());
    }
    for (auto [field, target] : {std::pair{"rows", &e.rows}, std::pair{"bytes", &e.bytes}}) {
      auto v = f.find(field);
      if (v == f.end()) continue;
      if (!v->is_number_integer()) return bad(entry + "." + field + " is not an integer");
      *target = v->get<int64_t>();
    }
    if (auto h = f.find("blake3"); h != f.end()) {
      if (!h->is_string()) return bad(entry + ".blake3 is not a string");
      e.blake3 = h->get<std::string>();
      auto parsed = HexDecode(e.blake3, entry + ".blake3");
      if (!parsed.ok()) return bad(parsed.status().message());
      if (parsed->size() != BLAKE3_OUT_LEN) return bad(entry + ".blake3 is not 64 hex digits");
    }
    out.files.push_back(std::move(e));
  }
  return out;
}

arrow::Result<std::vector<ManifestEntry>> ReadManifest(ObjectStore* store, const std::string& key) {
  ARROW_ASSIGN_OR_RAISE(auto bytes, store->Get(key));
  ARROW_ASSIGN_OR_RAISE(auto manifest, ParseManifest(*bytes, key));
  return std::move(manifest.files);
}

// A marker's run id, for messages; a marker that cannot be read still marks the folder.
std::string MarkerRunId(ObjectStore* store, const std::string& key) {
  auto bytes = store->Get(key);
  if (!bytes.ok()) return "?";
  json doc = json::parse((*bytes)->ToString(), nullptr, false);
  if (!doc.is_object()) return "?";
  auto id = doc.find("run_id");
  return id != doc.end() && id->is_string() ? id->get<std::string>() : "?";
}

arrow::Status CheckEntry(ObjectStore* store, const std::string& manifest, const ManifestEntry& e,
                         const std::map<std::string, int64_t>& sizes,
                         const CommittedFilesOptions& options) {
  const std::string where = "committed file '" + e.key + "' (listed in '" + manifest + "')";
  auto size = sizes.find(e.key);
  if (size == sizes.end()) {
    ARROW_ASSIGN_OR_RAISE(bool exists, store->Exists(e.key));
    if (!exists) return arrow::Status::IOError(where, " is missing from ", store->display_url());
  } else if (e.bytes >= 0 && size->second != e.bytes) {
    return arrow::Status::IOError(where, " has ", size->second, " bytes; its manifest says ",
                                  e.bytes, ". It changed after the run committed");
  }
  if (options.verify_digests && !e.blake3.empty()) {
    ARROW_ASSIGN_OR_RAISE(auto bytes, store->Get(e.key));
    const std::string actual = Blake3Hex(*bytes);
    if (actual != e.blake3) {
      return arrow::Status::IOError(where, " hashes to ", actual, "; its manifest says ", e.blake3,
                                    ". It changed after the run committed");
    }
  }
  return arrow::Status::OK();
}

}  // namespace

std::string SinkMarkerKey(const std::string& sink_path) {
  return sink_path + "/" + kSinkMarkerName;
}

std::string SinkManifestKey(const std::string& sink_path) {
  return sink_path + "/" + kSinkManifestName;
}

arrow::Result<CommittedListing> ListCommitted(ObjectStore* store, const std::string& prefix,
                                              const std::string& extension,
                                              const CommittedFilesOptions& options) {
  ARROW_ASSIGN_OR_RAISE(auto listed, store->List(prefix));
  std::map<std::string, int64_t> sizes;
  std::vector<std::string> manifests, markers;
  for (const auto& o : listed) {
    sizes[o.key] = o.size;
    if (IsNamed(o.key, kSinkManifestName)) manifests.push_back(o.key);
    if (IsNamed(o.key, kSinkMarkerName)) markers.push_back(o.key);
  }
  CommittedListing out;
  for (const std::string& manifest : manifests) {
    ARROW_ASSIGN_OR_RAISE(auto entries, ReadManifest(store, manifest));
    for (const ManifestEntry& e : entries) {
      ARROW_RETURN_NOT_OK(CheckEntry(store, manifest, e, sizes, options));
      out.files.push_back(e.key);
    }
  }
  for (const std::string& marker : markers) {
    const std::string folder = Parent(marker);
    const std::string manifest = folder.empty() ? kSinkManifestName : SinkManifestKey(folder);
    if (!sizes.contains(manifest)) {
      out.uncommitted.push_back("'" + folder + "' (run '" + MarkerRunId(store, marker) + "')");
    }
  }
  if (manifests.empty() && markers.empty()) {
    for (const auto& o : listed) {
      if (o.key.ends_with(extension)) out.files.push_back(o.key);
    }
  }
  std::sort(out.files.begin(), out.files.end());
  return out;
}

arrow::Result<std::optional<SinkManifest>> ReadSinkManifest(ObjectStore* store,
                                                            const std::string& sink_path) {
  const std::string key = SinkManifestKey(sink_path);
  ARROW_ASSIGN_OR_RAISE(bool exists, store->Exists(key));
  if (!exists) return std::nullopt;
  ARROW_ASSIGN_OR_RAISE(auto bytes, store->Get(key));
  return ParseManifest(*bytes, key);
}

arrow::Result<std::vector<std::string>> CommittedFiles(ObjectStore* store,
                                                       const std::string& prefix,
                                                       const std::string& extension) {
  ARROW_ASSIGN_OR_RAISE(auto listing, ListCommitted(store, prefix, extension));
  return listing.files;
}

}  // namespace sluice::storage
