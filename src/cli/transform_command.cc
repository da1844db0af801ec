#include <cstdlib>
#include <iostream>
#include <memory>
#include <string>

#include "cli/command.h"
#include "common/config.h"
#include "pipeline/publish.h"
#include "pipeline/transform_project.h"

#ifndef SLUICE_SOURCE_DIR
#error "SLUICE_SOURCE_DIR must name the sluice checkout"
#endif

namespace sluice::cli {

std::string SluiceRoot() {
  const char* env = std::getenv("SLUICE_ROOT");
  return env != nullptr && *env != '\0' ? std::string(env) : std::string(SLUICE_SOURCE_DIR);
}

namespace {

arrow::Status New(const std::string& name, const std::string& parent) {
  ARROW_ASSIGN_OR_RAISE(std::string dir, pipeline::NewTransform(parent, name));
  std::cout << "created " << dir << "\n"
            << "next: sluice transform test " << dir << " && sluice transform check " << dir
            << "\n";
  return arrow::Status::OK();
}

arrow::Status Check(const std::string& dir, const std::string& library) {
  pipeline::CheckReport report = pipeline::CheckTransform(dir, library);
  if (!report.ok()) {
    std::string message = "transform check found " + std::to_string(report.failures.size()) +
                          " problem(s) in " + dir + ":";
    for (const auto& f : report.failures) message += "\n  - " + f;
    return arrow::Status::Invalid(message);
  }
  std::cout << "ok: " << dir << " (transform " << report.qualified_name << ", library "
            << report.library << ")\n"
            << pipeline::DescribeSchemas(report.identity);
  return arrow::Status::OK();
}

arrow::Status Test(const std::string& dir) {
  ARROW_RETURN_NOT_OK(pipeline::TestTransform(dir, SluiceRoot()));
  std::cout << "ok: " << dir << " built and its inline tests passed\n";
  return arrow::Status::OK();
}

arrow::Status Publish(const std::string& dir) {
  ARROW_ASSIGN_OR_RAISE(Config config, Config::FromEnvironment());
  ARROW_ASSIGN_OR_RAISE(auto result, pipeline::PublishTransform(config, dir, SluiceRoot()));
  // Exactly one line on stdout, and only once every step has succeeded.
  std::cout << "registered transform=" << result.qualified_name
            << " artifact_blake3=" << result.artifact_blake3 << std::endl;
  return arrow::Status::OK();
}

}  // namespace

void AddTransformCommand(CLI::App& app, Action& action) {
  auto* transform = app.add_subcommand("transform", "Author batch transforms");
  transform->require_subcommand(1);

  auto name = std::make_shared<std::string>();
  auto parent = std::make_shared<std::string>("transforms");
  auto* create = transform->add_subcommand("new",
                                           "Scaffold transforms/NAME/: an identity stage "
                                           "with an inline ABI test");
  create->add_option("name", *name, "Transform name, e.g. example-rows")->required();
  create->add_option("--dir", *parent, "Parent directory (default: transforms)");
  create->callback([&action, name, parent] { action = [=] { return New(*name, *parent); }; });

  auto dir = std::make_shared<std::string>();
  auto library = std::make_shared<std::string>();
  auto* check = transform->add_subcommand(
      "check", "Check a transform directory structurally, without loading anything");
  check->add_option("dir", *dir, "Transform directory")->required();
  check->add_option("--library", *library,
                    "Built library to inspect (default DIR/build/libNAME.so)");
  check->callback([&action, dir, library] { action = [=] { return Check(*dir, *library); }; });

  auto* publish = transform->add_subcommand(
      "publish", "Build, upload by BLAKE3 and register a transform with a signed pipeline spec");
  publish->add_option("dir", *dir, "Transform directory")->required();
  publish->callback([&action, dir] { action = [=] { return Publish(*dir); }; });

  auto* test = transform->add_subcommand("test", "Build a transform and run its inline tests");
  test->add_option("dir", *dir, "Transform directory")->required();
  test->callback([&action, dir] { action = [=] { return Test(*dir); }; });
}

}  // namespace sluice::cli
