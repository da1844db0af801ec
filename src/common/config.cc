#include "common/config.h"

#include <cstdlib>
#include <filesystem>

namespace sluice {

namespace {

// Returns the value of `name`, `fallback` if unset, and an error if set but empty.
arrow::Result<std::string> Read(const Config::Lookup& lookup, const char* name,
                                const std::string& fallback) {
  std::optional<std::string> value = lookup(name);
  if (!value.has_value()) return fallback;
  if (value->empty()) {
    return arrow::Status::Invalid("environment variable ", name,
                                  " is set but empty; unset it to use the default '", fallback,
                                  "'");
  }
  return *value;
}

}  // namespace

arrow::Result<Config> Config::FromEnvironment() {
  return FromLookup([](const char* name) -> std::optional<std::string> {
    const char* v = std::getenv(name);
    if (v == nullptr) return std::nullopt;
    return std::string(v);
  });
}

arrow::Result<Config> Config::FromLookup(const Lookup& lookup) {
  Config config;
  ARROW_ASSIGN_OR_RAISE(std::string home, Read(lookup, "SLUICE_HOME", "./.sluice"));
  std::error_code ec;
  std::filesystem::path abs = std::filesystem::absolute(home, ec);
  if (ec) {
    return arrow::Status::Invalid("SLUICE_HOME '", home,
                                  "' cannot be made absolute: ", ec.message());
  }
  config.home = abs.lexically_normal().string();
  if (config.home.size() > 1 && config.home.back() == '/') config.home.pop_back();
  ARROW_ASSIGN_OR_RAISE(config.store_url,
                        Read(lookup, "SLUICE_STORE", "file://" + config.home + "/store"));
  ARROW_ASSIGN_OR_RAISE(config.database_url, Read(lookup, "SLUICE_DATABASE_URL",
                                                  "sqlite://" + config.home + "/registry.db"));
  ARROW_ASSIGN_OR_RAISE(config.sql_roots, Read(lookup, "SLUICE_SQL_ROOTS", ""));
  return config;
}

}  // namespace sluice
