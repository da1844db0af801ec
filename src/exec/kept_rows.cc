#include "exec/kept_rows.h"

#include <arrow/array/data.h>
#include <arrow/scalar.h>
#include <arrow/type.h>
#include <arrow/util/bitmap_ops.h>

namespace sluice::exec {

int KeptRowsIndex(const arrow::Schema& schema) { return schema.GetFieldIndex(kKeptRowsColumn); }

const arrow::ArrayData* KeptRowsMask(const arrow::compute::ExecBatch& batch, int index) {
  const arrow::Datum& kept = batch.values[static_cast<size_t>(index)];
  return kept.is_array() ? kept.array().get() : nullptr;
}

int64_t CountKeptRows(const arrow::compute::ExecBatch& batch, int index) {
  const arrow::ArrayData* mask = KeptRowsMask(batch, index);
  if (mask == nullptr) return batch.length;
  return arrow::internal::CountSetBits(mask->buffers[1]->data(), mask->offset, mask->length);
}

}  // namespace sluice::exec
