// Versions that sluice reports and checks: its own, the Arrow it was built against and the one
// it runs with, and the ABI versions of the interfaces it offers to plugins.
#pragma once

#include <cstdint>
#include <string>

namespace sluice {

/// sluice's own version, from CMake's project() version.
const char* SluiceVersion();

/// Version of the batch transform C ABI (include/sluice/transform_abi.h) this host speaks.
inline constexpr uint32_t kTransformAbiVersion = 1;
/// Version of the function library C ABI (include/sluice/function_abi.h) this host speaks.
inline constexpr uint32_t kFunctionAbiVersion = 1;

/// The multi-line text printed by `sluice --version`: sluice, the Arrow library it runs with
/// (read from the loaded library at run time, not from headers), the Arrow headers it was
/// built with, the C++ standard library ABI, and the plugin ABI versions.
std::string VersionText();

}  // namespace sluice
