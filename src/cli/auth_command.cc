#include <unistd.h>

#include <iostream>
#include <memory>
#include <string>

#include "catalog/registry.h"
#include "catalog/signing.h"
#include "catalog/trust.h"
#include "cli/command.h"
#include "common/config.h"

namespace sluice::cli {

namespace {

std::string DefaultName() {
  const char* user = std::getenv("USER");
  char host[256] = {};
  gethostname(host, sizeof(host) - 1);
  return std::string(user != nullptr && *user ? user : "sluice") + "@" + host;
}

arrow::Status Keygen(bool force, const std::string& name) {
  ARROW_ASSIGN_OR_RAISE(Config config, Config::FromEnvironment());
  const std::string keys = config.home + "/keys";
  // Refuse before generating anything, and register before writing the key, so that a failure
  // never leaves a key that the registry does not know.
  if (!force && catalog::SigningIdentity::Load(keys).ok()) {
    return arrow::Status::Invalid("a signing identity already exists in ", keys,
                                  "; pass --force to replace it");
  }
  ARROW_ASSIGN_OR_RAISE(auto identity, catalog::SigningIdentity::Generate());
  ARROW_ASSIGN_OR_RAISE(auto registry, catalog::Registry::Open(config.database_url));
  const auto& pk = identity.public_key();
  ARROW_RETURN_NOT_OK(registry->AddPublisher(
      {identity.publisher_id(), name, std::vector<uint8_t>(pk.begin(), pk.end()), ""}));
  ARROW_RETURN_NOT_OK(identity.Save(keys, force));
  ARROW_RETURN_NOT_OK(catalog::TrustedPublishers::Add(keys, identity.publisher_id()));
  std::cout << "created signing identity " << identity.publisher_id() << " (" << name << ") in "
            << keys << "\n";
  return arrow::Status::OK();
}

arrow::Status Trust(const std::string& key) {
  ARROW_ASSIGN_OR_RAISE(Config config, Config::FromEnvironment());
  ARROW_ASSIGN_OR_RAISE(std::string id, catalog::TrustedPublishers::ParsePublisherId(key));
  ARROW_RETURN_NOT_OK(catalog::TrustedPublishers::Add(config.home + "/keys", id));
  std::cout << "trusted publisher " << id << "\n";
  return arrow::Status::OK();
}

arrow::Status ListTrusted() {
  ARROW_ASSIGN_OR_RAISE(Config config, Config::FromEnvironment());
  ARROW_ASSIGN_OR_RAISE(auto trusted, catalog::TrustedPublishers::Load(config.home + "/keys"));
  for (const auto& id : trusted.ids()) std::cout << id << "\n";
  return arrow::Status::OK();
}

}  // namespace

void AddAuthCommand(CLI::App& app, Action& action) {
  auto* auth = app.add_subcommand("auth", "Signing identities");
  auth->require_subcommand(1);
  auto force = std::make_shared<bool>(false);
  auto name = std::make_shared<std::string>(DefaultName());
  auto* keygen = auth->add_subcommand(
      "keygen", "Create the local Ed25519 signing identity and register it as a publisher");
  keygen->add_flag("--force", *force, "Replace an existing identity");
  keygen->add_option("--name", *name, "Publisher name")->capture_default_str();
  keygen->callback([&action, force, name] { action = [=] { return Keygen(*force, *name); }; });
  auto key = std::make_shared<std::string>();
  auto* trust = auth->add_subcommand(
      "trust", "Trust specs signed by this publisher key (ed25519:HEX or 64 hex characters)");
  trust->add_option("key", *key, "The publisher's public key")->required();
  trust->callback([&action, key] { action = [key] { return Trust(*key); }; });
  auto* trusted = auth->add_subcommand("trusted", "List the trusted publisher keys");
  trusted->callback([&action] { action = ListTrusted; });
}

}  // namespace sluice::cli
