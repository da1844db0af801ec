#include "exec/canonical_floats.h"

#include <arrow/acero/map_node.h>
#include <arrow/acero/options.h>
#include <arrow/acero/query_context.h>
#include <arrow/array.h>
#include <arrow/array/data.h>
#include <arrow/array/util.h>
#include <arrow/buffer.h>
#include <arrow/compute/exec.h>
#include <arrow/type.h>
#include <arrow/util/bitmap_ops.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <mutex>
#include <utility>

namespace sluice::exec {

namespace {

namespace ac = arrow::acero;
namespace cp = arrow::compute;

constexpr char kFactory[] = "sluice_canonical_floats";

class CanonicalOptions : public ac::ExecNodeOptions {
 public:
  CanonicalOptions(std::vector<std::string> columns, std::vector<std::string> as)
      : columns(std::move(columns)), as(std::move(as)) {}
  std::vector<std::string> columns;
  std::vector<std::string> as;  // empty: in place
};

// Whether `v` is one that a key must not hold: -0.0, or a NaN of other bits than the canonical.
template <typename T>
bool NotCanonical(T v) {
  if (std::isnan(v)) {
    const T nan = std::numeric_limits<T>::quiet_NaN();
    return std::memcmp(&v, &nan, sizeof(T)) != 0;
  }
  return v == 0 && std::signbit(v);
}

template <typename T>
T Canonical(T v) {
  return std::isnan(v) ? std::numeric_limits<T>::quiet_NaN() : v + T{0};  // -0.0 + 0.0 is 0.0
}

// `data` with its values made canonical, or null where they all are. NULL slots are rewritten
// too: whatever they hold is no key.
template <typename T>
arrow::Result<std::shared_ptr<arrow::ArrayData>> Rewritten(const arrow::ArrayData& data,
                                                           arrow::MemoryPool* pool) {
  const T* values = data.GetValues<T>(1);
  int64_t first = 0;
  while (first < data.length && !NotCanonical(values[first])) ++first;
  if (first == data.length) return nullptr;
  ARROW_ASSIGN_OR_RAISE(auto buffer,
                        arrow::AllocateBuffer(data.length * static_cast<int64_t>(sizeof(T)), pool));
  T* out = reinterpret_cast<T*>(buffer->mutable_data());
  std::memcpy(out, values, static_cast<size_t>(first) * sizeof(T));
  for (int64_t i = first; i < data.length; ++i) out[i] = Canonical(values[i]);
  // The validity bitmap keeps its offset; the values start at 0.
  std::shared_ptr<arrow::Buffer> validity = data.buffers[0];
  if (validity != nullptr && data.offset % 8 != 0) {
    ARROW_ASSIGN_OR_RAISE(
        validity, arrow::internal::CopyBitmap(pool, validity->data(), data.offset, data.length));
  } else if (validity != nullptr) {
    validity = arrow::SliceBuffer(validity, data.offset / 8, (data.length + 7) / 8);
  }
  return arrow::ArrayData::Make(data.type, data.length, {std::move(validity), std::move(buffer)},
                                data.null_count);
}

// Rewritten of a float32 or float64 column.
arrow::Result<std::shared_ptr<arrow::ArrayData>> RewrittenFloats(const arrow::ArrayData& data,
                                                                 arrow::MemoryPool* pool) {
  return data.type->id() == arrow::Type::FLOAT ? Rewritten<float>(data, pool)
                                               : Rewritten<double>(data, pool);
}

class CanonicalFloatsNode : public ac::MapNode {
 public:
  CanonicalFloatsNode(ac::ExecPlan* plan, std::vector<ac::ExecNode*> inputs,
                      std::shared_ptr<arrow::Schema> schema, std::vector<int> columns, bool append)
      : MapNode(plan, std::move(inputs), std::move(schema)),
        columns_(std::move(columns)),
        append_(append) {}

  static arrow::Result<ac::ExecNode*> Make(ac::ExecPlan* plan, std::vector<ac::ExecNode*> inputs,
                                           const ac::ExecNodeOptions& options) {
    if (inputs.size() != 1) {
      return arrow::Status::Invalid("internal: the float key node takes one input");
    }
    const auto& canonical = static_cast<const CanonicalOptions&>(options);
    const arrow::Schema& schema = *inputs[0]->output_schema();
    const bool append = !canonical.as.empty();
    if (append && canonical.as.size() != canonical.columns.size()) {
      return arrow::Status::Invalid("internal: a float key node names ", canonical.as.size(),
                                    " columns for ", canonical.columns.size());
    }
    arrow::FieldVector fields = schema.fields();
    std::vector<int> columns;
    for (size_t i = 0; i < canonical.columns.size(); ++i) {
      const int index = schema.GetFieldIndex(canonical.columns[i]);
      const bool is_float = index >= 0 && IsFloatKey(*schema.field(index)->type());
      if (!append) {
        if (is_float) columns.push_back(index);
        continue;
      }
      // An appended column must be there whatever its type: the join names it as its key.
      if (index < 0) {
        return arrow::Status::Invalid("internal: no column ", canonical.columns[i],
                                      " for a float key");
      }
      fields.push_back(schema.field(index)->WithName(canonical.as[i]));
      columns.push_back(is_float ? index : -1 - index);
    }
    return plan->EmplaceNode<CanonicalFloatsNode>(
        plan, std::move(inputs), arrow::schema(std::move(fields)), std::move(columns), append);
  }

  const char* kind_name() const override { return "CanonicalFloatsNode"; }

 protected:
  arrow::Result<cp::ExecBatch> ProcessBatch(cp::ExecBatch batch) override {
    arrow::MemoryPool* pool = plan()->query_context()->memory_pool();
    for (const int c : columns_) {
      // A copy of a column that is no float (-1 - its index) is the column as it is.
      arrow::Datum value = batch.values[c >= 0 ? c : -1 - c];
      if (c >= 0) {
        ARROW_ASSIGN_OR_RAISE(value, CanonicalDatum(std::move(value), pool));
      }
      if (append_) {
        batch.values.push_back(std::move(value));
      } else {
        batch.values[c] = std::move(value);
      }
    }
    return batch;
  }

 private:
  static arrow::Result<arrow::Datum> CanonicalDatum(arrow::Datum value, arrow::MemoryPool* pool) {
    if (value.is_scalar()) {
      ARROW_ASSIGN_OR_RAISE(auto array, arrow::MakeArrayFromScalar(*value.scalar(), 1, pool));
      ARROW_ASSIGN_OR_RAISE(auto rewritten, RewrittenFloats(*array->data(), pool));
      if (rewritten == nullptr) return value;
      ARROW_ASSIGN_OR_RAISE(auto scalar, arrow::MakeArray(rewritten)->GetScalar(0));
      return arrow::Datum(std::move(scalar));
    }
    ARROW_ASSIGN_OR_RAISE(auto rewritten, RewrittenFloats(*value.array(), pool));
    if (rewritten == nullptr) return value;
    return arrow::Datum(std::move(rewritten));
  }

  // The columns by index: in place, those rewritten; appended, one per copy in order, where
  // -1 - the index is a column copied as it is.
  std::vector<int> columns_;
  const bool append_;
};

arrow::Status Register() {
  static std::once_flag once;
  static arrow::Status status;
  std::call_once(once, [] {
    status = ac::default_exec_factory_registry()->AddFactory(kFactory, CanonicalFloatsNode::Make);
  });
  return status;
}

}  // namespace

bool IsFloatKey(const arrow::DataType& type) {
  return type.id() == arrow::Type::FLOAT || type.id() == arrow::Type::DOUBLE;
}

arrow::Result<std::shared_ptr<arrow::Array>> CanonicalFloatArray(
    std::shared_ptr<arrow::Array> array, arrow::MemoryPool* pool) {
  ARROW_ASSIGN_OR_RAISE(auto rewritten, RewrittenFloats(*array->data(), pool));
  if (rewritten == nullptr) return array;
  return arrow::MakeArray(std::move(rewritten));
}

arrow::Result<ac::Declaration> CanonicalFloats(ac::Declaration input,
                                               std::vector<std::string> columns,
                                               std::vector<std::string> as) {
  if (columns.empty()) return input;
  ARROW_RETURN_NOT_OK(Register());
  return ac::Declaration::Sequence(
      {std::move(input), {kFactory, CanonicalOptions(std::move(columns), std::move(as))}});
}

}  // namespace sluice::exec
