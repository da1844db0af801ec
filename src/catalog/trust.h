// Which publishers this machine trusts to sign the pipeline specs its jobs run.
//
// The registry says who published what; it does not say whom to believe, since anyone who can
// write to it can register a publisher. Trust is local: `SLUICE_HOME/keys/trusted_publishers`
// lists publisher ids ("ed25519:<hex>"), one per line. `sluice auth trust KEY` adds one;
// `sluice auth keygen` trusts the key it makes, and the local identity's own key is always
// trusted. A spec signed by any other key is refused before a task starts.
#pragma once

#include <arrow/result.h>

#include <set>
#include <string>

namespace sluice::catalog {

class TrustedPublishers {
 public:
  /// Reads keys_dir/trusted_publishers and keys_dir/signing.pub; missing files trust nobody.
  /// A malformed line is an error naming the file and line.
  static arrow::Result<TrustedPublishers> Load(const std::string& keys_dir);

  /// Parses a key as `auth trust` takes it: a publisher id or 64 hex characters.
  static arrow::Result<std::string> ParsePublisherId(const std::string& key);

  /// Adds a publisher id to keys_dir/trusted_publishers (atomically; a no-op if present).
  static arrow::Status Add(const std::string& keys_dir, const std::string& publisher_id);

  bool Contains(const std::string& publisher_id) const { return ids_.contains(publisher_id); }
  const std::set<std::string>& ids() const { return ids_; }

 private:
  std::set<std::string> ids_;
};

}  // namespace sluice::catalog
