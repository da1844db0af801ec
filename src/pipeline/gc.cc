#include "pipeline/gc.h"

#include <cstring>
#include <limits>
#include <set>

#include "catalog/registry.h"
#include "catalog/run_lease.h"
#include "dist/driver_tag.h"
#include "pipeline/run_files.h"
#include "storage/object_store.h"
#include "storage/sink_manifest.h"

namespace sluice::pipeline {

arrow::Result<GcResult> CollectGarbage(const Config& config) {
  ARROW_ASSIGN_OR_RAISE(auto store, storage::ObjectStore::Open(config.store_url));
  ARROW_ASSIGN_OR_RAISE(auto registry, catalog::Registry::Open(config.database_url));
  // The shuffle folders are listed before the runs: an attempt claims its run before it writes
  // a shuffle file, so every folder listed here belongs to a run the next listing shows.
  ARROW_ASSIGN_OR_RAISE(auto shuffle, store->List(kShuffleRoot));
  ARROW_ASSIGN_OR_RAISE(auto runs, registry->ListRuns(std::numeric_limits<int32_t>::max()));
  GcResult result;
  const int64_t now = catalog::NowSeconds();
  std::set<std::string> live;  // shuffle folders of attempts still running
  for (const auto& run : runs) {
    if (run.attempt_id.empty()) continue;
    const std::string folder = ShuffleFolder(run.run_id, run.attempt_id);
    if (run.status == "running" && !catalog::IsAbandoned(run, now)) {
      live.insert(folder);
      continue;
    }
    if (run.status == "running" && !run.sink_path.empty()) {
      // A driver that died after writing its manifest but before recording the commit: the
      // manifest is the truth, and its parts are the output.
      ARROW_ASSIGN_OR_RAISE(auto manifest, storage::ReadSinkManifest(store.get(), run.sink_path));
      if (manifest.has_value() && manifest->attempt_id == run.attempt_id) {
        catalog::RunRecord committed = run;
        committed.status = "committed";
        committed.finished_at = catalog::NowUtc();
        ARROW_RETURN_NOT_OK(registry->UpdateClaimedRun(committed).status());
        continue;
      }
    }
    if ((run.status == "failed" || run.status == "running") && !run.sink_path.empty()) {
      ARROW_ASSIGN_OR_RAISE(int64_t parts,
                            RemoveAttemptParts(store.get(), run.sink_path, run.attempt_id));
      result.part_objects += parts;
    }
  }
  // Shuffle folders: everything under _sluice/shuffle/ that no live attempt owns.
  std::set<std::string> folders;
  for (const auto& o : shuffle) {
    const size_t slash = o.key.find('/', std::strlen(kShuffleRoot));
    if (slash != std::string::npos) folders.insert(o.key.substr(0, slash));
  }
  for (const auto& folder : folders) {
    if (live.contains(folder)) continue;
    const std::string name = folder.substr(std::strlen(kShuffleRoot));
    if (name.starts_with("q-")) {
      // A query's folder: "q-<driver tag>-<random>". Only a driver known to be gone lets go of
      // it; a live one removes its own, and another host's cannot be judged from here.
      const size_t dash = name.rfind('-');
      if (dash <= 2 ||
          dist::OwnerOf(std::string_view(name).substr(2, dash - 2)) != dist::TagOwner::kGone) {
        continue;
      }
    }
    ARROW_ASSIGN_OR_RAISE(int64_t n, RemoveOwnedPrefix(store.get(), folder + "/"));
    result.shuffle_objects += n;
  }
  // Temp files anywhere in the store whose writer is gone.
  ARROW_ASSIGN_OR_RAISE(result.temp_files, store->RemoveTemps("", "", /*only_abandoned=*/true));
  return result;
}

}  // namespace sluice::pipeline
