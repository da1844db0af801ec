// Backend constructors for Database::Open.
#pragma once

#include "catalog/database.h"

namespace sluice::catalog::internal {

arrow::Result<std::unique_ptr<Database>> OpenSqlite(const std::string& path,
                                                    const std::string& display_url);
arrow::Result<std::unique_ptr<Database>> OpenPostgres(const std::string& conninfo,
                                                      const std::string& display_url);

}  // namespace sluice::catalog::internal
