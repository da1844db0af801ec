#include "pipeline/run_files.h"

#include <cstdio>
#include <regex>

namespace sluice::pipeline {

std::string PartKey(const std::string& sink_path, int partition, const std::string& attempt_id,
                    const std::string& ext) {
  char name[32];
  std::snprintf(name, sizeof(name), "part-%05d-", partition);
  return sink_path + "/" + name + attempt_id + ext;
}

std::string ShuffleFolder(const std::string& run_id, const std::string& attempt_id) {
  return kShuffleRoot + run_id + "-" + attempt_id;
}

arrow::Result<int64_t> RemoveAttemptParts(storage::ObjectStore* store, const std::string& sink_path,
                                          const std::string& attempt_id) {
  if (attempt_id.empty()) return 0;
  static const std::regex kPart("part-[0-9]{5}-([0-9a-f]+)\\.(parquet|arrow)");
  ARROW_ASSIGN_OR_RAISE(auto listed, store->List(sink_path + "/"));
  int64_t removed = 0;
  for (const auto& o : listed) {
    const std::string name = o.key.substr(sink_path.size() + 1);
    std::smatch m;
    if (std::regex_match(name, m, kPart) && m[1] == attempt_id) {
      ARROW_RETURN_NOT_OK(store->Delete(o.key));
      ++removed;
    }
  }
  ARROW_ASSIGN_OR_RAISE(int64_t temps, store->RemoveTemps(sink_path + "/", "-" + attempt_id + "."));
  return removed + temps;
}

arrow::Result<int64_t> RemoveOwnedPrefix(storage::ObjectStore* store, const std::string& prefix) {
  ARROW_ASSIGN_OR_RAISE(auto listed, store->List(prefix));
  int64_t removed = 0;
  for (const auto& o : listed) {
    ARROW_RETURN_NOT_OK(store->Delete(o.key));
    ++removed;
  }
  ARROW_ASSIGN_OR_RAISE(int64_t temps, store->RemoveTemps(prefix, ""));
  return removed + temps;
}

}  // namespace sluice::pipeline
