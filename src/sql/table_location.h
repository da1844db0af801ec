// Where an external table's files are. A LOCATION is a key of the session's store (relative, as
// "derived/run-1", and the form committed runs use), an absolute local path, a file:// URL, or an
// s3://bucket/prefix URL, as DataFusion's CREATE EXTERNAL TABLE takes. An s3:// URL without a
// query takes the session store's query (endpoint_override, scheme, region, credentials) when
// that store is on S3 too; one with a query uses its own.
//
// SLUICE_SQL_ROOTS, a comma-separated list of absolute directories and file:// or s3:// URL
// prefixes, limits the paths and URLs a query may read, for shared deployments; unset allows any.
// Keys of the session's store are always readable. Locations are normalized first ('.', '..',
// repeated slashes; local symlinks are resolved), so no location escapes its root.
#pragma once

#include <arrow/result.h>

#include <memory>
#include <string>
#include <vector>

#include "storage/object_store.h"

namespace sluice::sql {

struct TableLocation {
  std::shared_ptr<storage::ObjectStore> store;
  /// The store's URL; empty when `store` is the session's own.
  std::string store_url;
  /// The file or prefix inside `store`.
  std::string key;
};

/// The normalized roots of a SLUICE_SQL_ROOTS value. An entry that is not an absolute path,
/// file:// or s3:// URL is an Invalid error naming it and the setting.
arrow::Result<std::vector<std::string>> ParseSqlRoots(const std::string& value);

/// Whether `location` names a path or URL rather than a key of the session's store.
bool IsExternalLocation(const std::string& location);

/// Resolves `location` against the session's store (opened from `session_store_url`). A location
/// outside every root in `roots` (when there are any) is an Invalid error naming the location and
/// SLUICE_SQL_ROOTS.
arrow::Result<TableLocation> ResolveLocation(const std::string& location,
                                             std::shared_ptr<storage::ObjectStore> session_store,
                                             const std::string& session_store_url,
                                             const std::vector<std::string>& roots);

}  // namespace sluice::sql
