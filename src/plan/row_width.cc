#include "plan/row_width.h"

#include <arrow/type.h>

#include <algorithm>

namespace sluice::plan {

double GuessRowBytes(const arrow::FieldVector& fields) {
  double bytes = 0;
  for (const auto& f : fields) {
    const int width = f->type()->byte_width();
    if (f->type()->id() == arrow::Type::BOOL) {
      bytes += 1;
    } else {
      bytes += width > 0 ? width : kVariableWidthBytes;
    }
  }
  return std::max(bytes, 1.0);
}

}  // namespace sluice::plan
