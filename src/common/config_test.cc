#include "common/config.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <map>

namespace sluice {
namespace {

Config::Lookup From(std::map<std::string, std::string> vars) {
  return [vars](const char* name) -> std::optional<std::string> {
    auto it = vars.find(name);
    if (it == vars.end()) return std::nullopt;
    return it->second;
  };
}

TEST(Config, EmbeddedDefaults) {
  auto config = Config::FromLookup(From({}));
  ASSERT_TRUE(config.ok()) << config.status().ToString();
  const std::string home = (std::filesystem::current_path() / ".sluice").string();
  EXPECT_EQ(config->home, home);
  EXPECT_EQ(config->store_url, "file://" + home + "/store");
  EXPECT_EQ(config->database_url, "sqlite://" + home + "/registry.db");
}

TEST(Config, HomeDrivesTheDefaults) {
  auto config = Config::FromLookup(From({{"SLUICE_HOME", "/data/sl/"}}));
  ASSERT_TRUE(config.ok()) << config.status().ToString();
  EXPECT_EQ(config->home, "/data/sl");
  EXPECT_EQ(config->store_url, "file:///data/sl/store");
}

TEST(Config, ExplicitValuesWin) {
  auto config =
      Config::FromLookup(From({{"SLUICE_STORE", "s3://b/p?endpoint_override=127.0.0.1:9000"},
                               {"SLUICE_DATABASE_URL", "postgresql://u@127.0.0.1:5432/db"}}));
  ASSERT_TRUE(config.ok()) << config.status().ToString();
  EXPECT_EQ(config->store_url, "s3://b/p?endpoint_override=127.0.0.1:9000");
  EXPECT_EQ(config->database_url, "postgresql://u@127.0.0.1:5432/db");
}

TEST(Config, SetButEmptyIsAnErrorNotUnset) {
  for (const char* name : {"SLUICE_HOME", "SLUICE_STORE", "SLUICE_DATABASE_URL"}) {
    auto config = Config::FromLookup(From({{name, ""}}));
    ASSERT_FALSE(config.ok()) << name;
    EXPECT_TRUE(config.status().IsInvalid());
    EXPECT_NE(config.status().message().find(name), std::string::npos) << config.status().message();
    EXPECT_NE(config.status().message().find("set but empty"), std::string::npos);
  }
}

}  // namespace
}  // namespace sluice
