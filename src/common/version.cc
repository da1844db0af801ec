#include "common/version.h"

#include <arrow/config.h>
#include <arrow/util/config.h>

#include <sstream>

#ifndef SLUICE_VERSION
#error "SLUICE_VERSION must be defined by the build"
#endif

namespace sluice {

const char* SluiceVersion() { return SLUICE_VERSION; }

std::string VersionText() {
  const arrow::BuildInfo& runtime = arrow::GetBuildInfo();
  std::ostringstream out;
  out << "sluice " << SLUICE_VERSION << "\n";
  out << "arrow " << runtime.version_string << " (runtime, so " << runtime.so_version << ", "
      << runtime.compiler_id << " " << runtime.compiler_version << ")\n";
  out << "arrow-headers " << ARROW_VERSION_STRING << " (build)\n";
#if defined(_GLIBCXX_USE_CXX11_ABI)
  out << "cxx-abi libstdc++ cxx11=" << _GLIBCXX_USE_CXX11_ABI << "\n";
#endif
  out << "transform-abi " << kTransformAbiVersion << "\n";
  out << "function-abi " << kFunctionAbiVersion;
  return out.str();
}

}  // namespace sluice
