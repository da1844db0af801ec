#include "common/status.h"

#include <string>

namespace sluice {

arrow::Status AddContext(const arrow::Status& status, std::string_view context) {
  if (status.ok()) return status;
  return status.WithMessage(std::string(context), ": ", status.message());
}

arrow::Status InternalError(std::string_view what, const char* file, int line) {
  return arrow::Status::UnknownError("internal: ", what, " (", file, ":", line, ")");
}

}  // namespace sluice
