#include <iostream>
#include <memory>

#include "cli/command.h"
#include "common/config.h"
#include "examples/conversation_data.h"

namespace sluice::cli {

void AddExampleDataCommand(CLI::App& app, Action& action) {
  auto* data = app.add_subcommand("example-data", "Write example input data into the store");
  data->require_subcommand(1);
  auto options = std::make_shared<examples::ConversationDataOptions>();
  auto* conv = data->add_subcommand(
      "conversations", "Gateway request logs (ConversationMessageGateway JSONL objects)");
  conv->add_option("--objects", options->objects, "Number of objects")->capture_default_str();
  conv->add_option("--requests-per-object", options->requests_per_object,
                   "Requests (JSONL lines) per object")
      ->capture_default_str();
  conv->add_option("--prefix", options->prefix, "Key prefix")->capture_default_str();
  conv->add_option("--seed", options->seed, "Generator seed; same seed, same bytes")
      ->capture_default_str();
  conv->callback([&action, options] {
    action = [options]() -> arrow::Status {
      ARROW_ASSIGN_OR_RAISE(Config config, Config::FromEnvironment());
      ARROW_ASSIGN_OR_RAISE(auto store, storage::ObjectStore::Open(config.store_url));
      ARROW_ASSIGN_OR_RAISE(auto summary, examples::WriteConversationData(store.get(), *options));
      std::cout << "wrote " << summary.objects << " objects under " << options->prefix << " in "
                << store->display_url() << ": " << summary.requests << " requests, "
                << summary.conversations << " conversations, " << summary.messages << " messages ("
                << summary.distinct_messages << " distinct), " << summary.bytes << " bytes\n";
      return arrow::Status::OK();
    };
  });
}

}  // namespace sluice::cli
