// A free TCP port on 127.0.0.1, for servers that tests start (moto, PostgreSQL). The port is
// free when this returns; a server started right after almost always gets it.
#pragma once

#include <arrow/result.h>

namespace sluice {

arrow::Result<int> FreeLoopbackPort();

}  // namespace sluice
