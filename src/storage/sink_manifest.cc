#include "storage/sink_manifest.h"

#include <algorithm>
#include <nlohmann/json.hpp>

namespace sluice::storage {

arrow::Result<std::vector<std::string>> CommittedFiles(ObjectStore* store,
                                                       const std::string& prefix,
                                                       const std::string& extension) {
  using json = nlohmann::json;
  ARROW_ASSIGN_OR_RAISE(auto listed, store->List(prefix));
  std::vector<std::string> files;
  bool any_manifest = false;
  for (const auto& o : listed) {
    if (!o.key.ends_with("/_manifest.json") && o.key != "_manifest.json") continue;
    any_manifest = true;
    ARROW_ASSIGN_OR_RAISE(auto bytes, store->Get(o.key));
    json doc = json::parse(bytes->ToString(), nullptr, false);
    if (doc.is_discarded() || !doc.is_object() || doc.value("format", "") != kSinkManifestFormat ||
        !doc.contains("files") || !doc["files"].is_array()) {
      return arrow::Status::Invalid("sink manifest '", o.key, "' is not a ", kSinkManifestFormat,
                                    " document");
    }
    for (const auto& f : doc["files"]) {
      if (!f.is_object() || !f.contains("key") || !f["key"].is_string()) {
        return arrow::Status::Invalid("sink manifest '", o.key, "' has a malformed file entry");
      }
      files.push_back(f["key"].get<std::string>());
    }
  }
  if (!any_manifest) {
    for (const auto& o : listed) {
      if (o.key.ends_with(extension)) files.push_back(o.key);
    }
  }
  std::sort(files.begin(), files.end());
  return files;
}

}  // namespace sluice::storage
