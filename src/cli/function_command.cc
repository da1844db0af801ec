// `sluice function new|check|test|publish`: function libraries (see
// pipeline/function_publish.h and include/sluice/function_abi.h).
#include <iostream>
#include <memory>
#include <string>

#include "cli/command.h"
#include "common/config.h"
#include "pipeline/function_publish.h"

namespace sluice::cli {

namespace {

arrow::Status New(const std::string& name, const std::string& parent) {
  ARROW_ASSIGN_OR_RAISE(std::string dir, pipeline::NewFunctionLibrary(parent, name));
  std::cout << "created " << dir << "\n"
            << "next: sluice function test " << dir << " && sluice function publish " << dir
            << "\n";
  return arrow::Status::OK();
}

arrow::Status Check(const std::string& given) {
  ARROW_ASSIGN_OR_RAISE(std::string path, pipeline::FunctionLibraryFile(given, SluiceRoot()));
  ARROW_ASSIGN_OR_RAISE(auto identity, pipeline::CheckFunctionLibrary(path));
  std::cout << "ok: " << path << " (function library " << identity.qualified_name << " "
            << identity.version << ")\n"
            << pipeline::DescribeFunctions(identity);
  return arrow::Status::OK();
}

arrow::Status Test(const std::string& given) {
  ARROW_ASSIGN_OR_RAISE(std::string path, pipeline::FunctionLibraryFile(given, SluiceRoot()));
  ARROW_ASSIGN_OR_RAISE(std::string report, pipeline::TestFunctionLibrary(path));
  std::cout << report;
  return arrow::Status::OK();
}

arrow::Status Publish(const std::string& given, const std::string& sql_name) {
  ARROW_ASSIGN_OR_RAISE(Config config, Config::FromEnvironment());
  ARROW_ASSIGN_OR_RAISE(std::string path, pipeline::FunctionLibraryFile(given, SluiceRoot()));
  ARROW_ASSIGN_OR_RAISE(auto result, pipeline::PublishFunctionLibrary(config, path));
  // One line, and only once every step has succeeded; then how to use it.
  std::cout << "registered function_library=" << result.qualified_name
            << " artifact_blake3=" << result.artifact_blake3 << std::endl;
  std::cerr << (result.publisher_id.empty()
                    ? std::string("unsigned: no signing identity here (sluice auth keygen)")
                    : "signed by " + result.publisher_id)
            << "\n";
  std::cerr << "next: sluice query \"CREATE FUNCTION LIBRARY " << sql_name << " FROM PIN '"
            << result.artifact_blake3 << "'\"\n";
  return arrow::Status::OK();
}

}  // namespace

void AddFunctionCommand(CLI::App& app, Action& action) {
  auto* function = app.add_subcommand("function", "Author function libraries for SQL");
  function->require_subcommand(1);
  auto path = std::make_shared<std::string>();
  const char* what = "A built lib*.so, or a function library directory (built first)";

  auto name = std::make_shared<std::string>();
  auto parent = std::make_shared<std::string>("functions");
  auto* create = function->add_subcommand(
      "new", "Scaffold DIR/NAME/: a function library with one scalar function");
  create->add_option("name", *name, "Library name, e.g. my-functions")->required();
  create->add_option("--dir", *parent, "Parent directory (default: functions)");
  create->callback([&action, name, parent] { action = [=] { return New(*name, *parent); }; });

  auto* check = function->add_subcommand(
      "check", "Check a built function library structurally, without loading it");
  check->add_option("library", *path, what)->required();
  check->callback([&action, path] { action = [=] { return Check(*path); }; });

  auto* test = function->add_subcommand(
      "test", "Load a function library and call each function on generated rows");
  test->add_option("library", *path, what)->required();
  test->callback([&action, path] { action = [=] { return Test(*path); }; });

  auto sql_name = std::make_shared<std::string>("functions");
  auto* publish =
      function->add_subcommand("publish", "Upload a function library by BLAKE3 and register it");
  publish->add_option("library", *path, what)->required();
  publish->add_option("--sql-name", *sql_name,
                      "The name the printed CREATE FUNCTION LIBRARY uses (default: functions)");
  publish->callback(
      [&action, path, sql_name] { action = [=] { return Publish(*path, *sql_name); }; });
}

}  // namespace sluice::cli
