// Process configuration from the environment, with embedded defaults so that sluice runs on one
// laptop with nothing set.
//
//   SLUICE_HOME          default ./.sluice (made absolute)
//   SLUICE_STORE         default file://$SLUICE_HOME/store; or
//   s3://bucket/prefix?endpoint_override=... SLUICE_DATABASE_URL  default
//   sqlite://$SLUICE_HOME/registry.db; or postgresql://...
//   SLUICE_SQL_ROOTS     unset: queries may read any path or URL; else a comma-separated list of
//                        the directories and file:// or s3:// prefixes they may read (see
//                        src/sql/table_location.h)
//
// A variable that is set but empty is an error, never "unset": an empty value is almost always a
// broken deployment template, and silently falling back to a local default would write data to
// the wrong place.
#pragma once

#include <arrow/result.h>

#include <functional>
#include <optional>
#include <string>

namespace sluice {

struct Config {
  /// Absolute path of the sluice home directory.
  std::string home;
  /// Object store URL; parsed and validated by storage::ObjectStore::Open.
  std::string store_url;
  /// Registry database URL.
  std::string database_url;
  /// SLUICE_SQL_ROOTS as set; empty when unset.
  std::string sql_roots;

  /// Looks up a variable; nullopt means unset.
  using Lookup = std::function<std::optional<std::string>(const char* name)>;

  /// Reads the process environment.
  static arrow::Result<Config> FromEnvironment();
  /// Reads through `lookup`, so tests need not touch the real environment.
  static arrow::Result<Config> FromLookup(const Lookup& lookup);
};

}  // namespace sluice
