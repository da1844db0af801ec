#include "sql/table_location.h"

#include <filesystem>
#include <system_error>

namespace sluice::sql {

namespace {

namespace fs = std::filesystem;

constexpr char kRootsSetting[] = "SLUICE_SQL_ROOTS";

bool StartsWith(const std::string& s, const char* prefix) { return s.rfind(prefix, 0) == 0; }

// An absolute local path with '.', '..' and symlinks resolved as far as the path exists, and no
// trailing slash.
arrow::Result<std::string> NormalLocalPath(const std::string& path, const std::string& shown) {
  if (path.empty() || path.front() != '/') {
    return arrow::Status::Invalid("location '", shown, "' is not an absolute path");
  }
  std::error_code ec;
  fs::path normal = fs::weakly_canonical(fs::path(path).lexically_normal(), ec);
  if (ec) return arrow::Status::Invalid("location '", shown, "': ", ec.message());
  std::string out = normal.lexically_normal().string();
  while (out.size() > 1 && out.back() == '/') out.pop_back();
  return out;
}

// "bucket/key" of an s3:// URL without its query, with '.' and '..' resolved; '..' may not
// climb above the bucket.
arrow::Result<std::string> NormalS3Path(const std::string& path, const std::string& shown) {
  std::string out = fs::path("/" + path).lexically_normal().string();
  while (out.size() > 1 && out.back() == '/') out.pop_back();
  if (out == "/" || StartsWith(out, "/..")) {
    return arrow::Status::Invalid("location '", shown, "' names no bucket");
  }
  return out.substr(1);
}

struct Parsed {
  bool s3 = false;
  std::string path;   // local: absolute path; s3: bucket/key
  std::string query;  // s3 only, without '?'
  std::string shown;  // for messages: never the query, which may hold credentials
};

arrow::Result<Parsed> Parse(const std::string& location) {
  Parsed p;
  if (StartsWith(location, "s3://")) {
    const size_t q = location.find('?');
    p.s3 = true;
    p.shown = location.substr(0, q);
    if (q != std::string::npos) p.query = location.substr(q + 1);
    ARROW_ASSIGN_OR_RAISE(p.path, NormalS3Path(p.shown.substr(5), p.shown));
    return p;
  }
  p.shown = location;
  if (StartsWith(location, "file://")) {
    ARROW_ASSIGN_OR_RAISE(p.path, NormalLocalPath(location.substr(7), location));
    return p;
  }
  if (!location.empty() && location.front() == '/') {
    ARROW_ASSIGN_OR_RAISE(p.path, NormalLocalPath(location, location));
    return p;
  }
  return arrow::Status::Invalid("location '", location,
                                "' is not an absolute path, a file:// or an s3:// URL");
}

// The form roots and locations are compared in.
std::string Canonical(const Parsed& p) { return p.s3 ? "s3://" + p.path : p.path; }

bool Under(const std::string& path, const std::string& root) {
  if (root == "/") return !path.empty() && path.front() == '/';
  return path == root || (StartsWith(path, root.c_str()) && path[root.size()] == '/');
}

}  // namespace

bool IsExternalLocation(const std::string& location) {
  return (!location.empty() && location.front() == '/') ||
         location.find("://") != std::string::npos;
}

arrow::Result<std::vector<std::string>> ParseSqlRoots(const std::string& value) {
  std::vector<std::string> roots;
  size_t start = 0;
  while (start <= value.size()) {
    size_t end = value.find(',', start);
    if (end == std::string::npos) end = value.size();
    std::string entry = value.substr(start, end - start);
    while (!entry.empty() && entry.front() == ' ') entry.erase(0, 1);
    while (!entry.empty() && entry.back() == ' ') entry.pop_back();
    if (!entry.empty()) {
      auto parsed = Parse(entry);
      if (!parsed.ok()) {
        return arrow::Status::Invalid(kRootsSetting, " entry '", entry,
                                      "' is not an absolute path, a file:// or an s3:// URL");
      }
      roots.push_back(Canonical(*parsed));
    }
    start = end + 1;
  }
  return roots;
}

arrow::Result<TableLocation> ResolveLocation(const std::string& location,
                                             std::shared_ptr<storage::ObjectStore> session_store,
                                             const std::string& session_store_url,
                                             const std::vector<std::string>& roots) {
  if (!IsExternalLocation(location)) return TableLocation{std::move(session_store), "", location};
  ARROW_ASSIGN_OR_RAISE(Parsed p, Parse(location));
  const std::string canonical = Canonical(p);
  if (!roots.empty() && !p.query.empty()) {
    // The query names the endpoint; roots compare bucket and path only, so an allowed bucket
    // on another endpoint (any host the server can reach) must not pass as the same root.
    return arrow::Status::Invalid("location '", p.shown, "' carries its own S3 settings (?...), ",
                                  "which ", kRootsSetting,
                                  " does not allow: it reads through SLUICE_STORE's endpoint");
  }
  if (!roots.empty()) {
    bool allowed = false;
    for (const auto& root : roots) allowed = allowed || Under(canonical, root);
    if (!allowed) {
      std::string list;
      for (const auto& root : roots) list += (list.empty() ? "" : ", ") + root;
      return arrow::Status::Invalid("location '", p.shown, "' (", canonical,
                                    ") is outside the roots that ", kRootsSetting,
                                    " allows: ", list);
    }
  }
  // The store is the location's parent, the key its last segment: a file or a prefix.
  const size_t slash = p.path.rfind('/');
  TableLocation out;
  if (p.s3) {
    if (slash == std::string::npos) {
      return arrow::Status::Invalid("location '", p.shown, "' names a bucket; add a prefix");
    }
    std::string query = p.query;
    const size_t store_query = session_store_url.find('?');
    if (query.empty() && StartsWith(session_store_url, "s3://") &&
        store_query != std::string::npos) {
      query = session_store_url.substr(store_query + 1);
    }
    out.store_url = "s3://" + p.path.substr(0, slash) + (query.empty() ? "" : "?" + query);
  } else {
    if (p.path == "/") {
      return arrow::Status::Invalid("location '", p.shown, "' names the root directory");
    }
    out.store_url = "file://" + (slash == 0 ? std::string("/") : p.path.substr(0, slash));
  }
  out.key = p.path.substr(slash + 1);
  ARROW_ASSIGN_OR_RAISE(out.store, storage::ObjectStore::Open(out.store_url));
  return out;
}

}  // namespace sluice::sql
