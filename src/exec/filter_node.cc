#include "exec/filter_node.h"

#include <arrow/acero/map_node.h>
#include <arrow/acero/options.h>
#include <arrow/acero/query_context.h>
#include <arrow/array.h>
#include <arrow/compute/api.h>
#include <arrow/util/bit_block_counter.h>
#include <arrow/util/bit_util.h>
#include <arrow/util/bitmap_ops.h>

#include <algorithm>
#include <cstring>
#include <mutex>
#include <optional>

namespace sluice::exec {

namespace {

namespace ac = arrow::acero;
namespace cp = arrow::compute;

constexpr char kFilterFactory[] = "sluice_filter";

// Below this share of kept rows, gathering them by index beats a pass over the mask per column.
constexpr int64_t kTakeBelowOneIn = 8;

// `length` (at most 64) bits of `bitmap` from bit `offset`, the first in the lowest bit; reads
// only the bytes that hold them.
uint64_t Bits(const uint8_t* bitmap, int64_t offset, int64_t length) {
  const uint8_t* bytes = bitmap + offset / 8;
  const int shift = static_cast<int>(offset % 8);
  const int64_t count = (shift + length + 7) / 8;  // at most 9
  uint64_t word = 0;
  std::memcpy(&word, bytes, static_cast<size_t>(std::min<int64_t>(count, 8)));
  word >>= shift;
  if (count > 8) word |= static_cast<uint64_t>(bytes[8]) << (64 - shift);
  return word;
}

// The rows of `width`-byte values whose bit is set in `mask` (from bit `mask_offset`), in order,
// into `out`, which has room for one value more than the kept ones. Arrow's filter copies each
// run of kept rows with a call; at the mixed selectivities of join residues (Q21 keeps about
// 6 rows in 10) runs are short, so a mixed word here copies every row and advances by its bit.
template <int kWidth>
void Compact(const uint8_t* in, const uint8_t* mask, int64_t mask_offset, int64_t length,
             uint8_t* out) {
  arrow::internal::BitBlockCounter blocks(mask, mask_offset, length);
  int64_t position = 0;
  uint8_t* to = out;
  while (position < length) {
    const arrow::internal::BitBlockCount block = blocks.NextWord();
    const uint8_t* from = in + position * kWidth;
    if (block.AllSet()) {
      std::memcpy(to, from, static_cast<size_t>(block.length) * kWidth);
      to += static_cast<int64_t>(block.length) * kWidth;
    } else if (!block.NoneSet()) {
      uint64_t bits = Bits(mask, mask_offset + position, block.length);
      for (int64_t i = 0; i < block.length; ++i) {
        std::memcpy(to, from + i * kWidth, kWidth);
        to += kWidth * static_cast<int64_t>(bits & 1);
        bits >>= 1;
      }
    }
    position += block.length;
  }
}

// `values` (a fixed-width column without NULLs) at the rows `mask` keeps, `kept` of them; nullopt
// for a column of another kind, which Arrow's filter takes.
arrow::Result<std::optional<arrow::Datum>> CompactFixedWidth(const arrow::ArrayData& values,
                                                             const uint8_t* mask,
                                                             int64_t mask_offset, int64_t kept,
                                                             arrow::MemoryPool* pool) {
  const auto& type = *values.type;
  if (values.GetNullCount() != 0 || type.id() == arrow::Type::BOOL ||
      type.id() == arrow::Type::DICTIONARY || type.id() == arrow::Type::EXTENSION ||
      !arrow::is_fixed_width(type.id()) || values.buffers.size() != 2 ||
      values.buffers[1] == nullptr) {
    return std::nullopt;
  }
  const int width = type.byte_width();
  using CompactFn = void (*)(const uint8_t*, const uint8_t*, int64_t, int64_t, uint8_t*);
  CompactFn compact = nullptr;
  switch (width) {
    case 1:
      compact = Compact<1>;
      break;
    case 2:
      compact = Compact<2>;
      break;
    case 4:
      compact = Compact<4>;
      break;
    case 8:
      compact = Compact<8>;
      break;
    case 16:
      compact = Compact<16>;
      break;
    default:
      return std::nullopt;
  }
  // One value more than kept: a mixed word writes each row before it knows whether to keep it.
  ARROW_ASSIGN_OR_RAISE(auto out, arrow::AllocateBuffer((kept + 1) * width, pool));
  compact(values.buffers[1]->data() + values.offset * width, mask, mask_offset, values.length,
          out->mutable_data());
  return arrow::Datum(
      arrow::ArrayData::Make(values.type, kept, {nullptr, std::move(out)}, /*null_count=*/0));
}

class FilterOptions : public ac::ExecNodeOptions {
 public:
  explicit FilterOptions(cp::Expression predicate) : predicate(std::move(predicate)) {}
  cp::Expression predicate;
};

class FilterNode : public ac::MapNode {
 public:
  FilterNode(ac::ExecPlan* plan, std::vector<ac::ExecNode*> inputs, cp::Expression predicate)
      : MapNode(plan, inputs, inputs[0]->output_schema()), predicate_(std::move(predicate)) {}

  static arrow::Result<ac::ExecNode*> Make(ac::ExecPlan* plan, std::vector<ac::ExecNode*> inputs,
                                           const ac::ExecNodeOptions& options) {
    if (inputs.size() != 1) return arrow::Status::Invalid("internal: a filter takes one input");
    const auto& filter = static_cast<const FilterOptions&>(options);
    ARROW_ASSIGN_OR_RAISE(auto bound, filter.predicate.Bind(*inputs[0]->output_schema()));
    if (bound.type()->id() != arrow::Type::BOOL) {
      return arrow::Status::TypeError("a filter must be boolean, not ", bound.type()->ToString(),
                                      ": ", filter.predicate.ToString());
    }
    return plan->EmplaceNode<FilterNode>(plan, std::move(inputs), std::move(bound));
  }

  const char* kind_name() const override { return "SluiceFilterNode"; }

 protected:
  arrow::Result<cp::ExecBatch> ProcessBatch(cp::ExecBatch batch) override {
    cp::ExecContext* ctx = plan()->query_context()->exec_context();
    ARROW_ASSIGN_OR_RAISE(arrow::Datum mask, cp::ExecuteScalarExpression(predicate_, batch, ctx));
    if (mask.is_scalar()) {
      const auto& keep = mask.scalar_as<arrow::BooleanScalar>();
      if (keep.is_valid && keep.value) return batch;
      return batch.Slice(0, 0);
    }
    const arrow::BooleanArray bits(mask.array());
    const int64_t kept = bits.true_count();
    if (kept == batch.length) return batch;
    std::optional<arrow::Datum> indices;
    std::shared_ptr<arrow::Buffer> and_valid;  // the mask's bits where it is not NULL
    const uint8_t* keep_bits = nullptr;
    int64_t keep_offset = 0;
    if (kept * kTakeBelowOneIn < batch.length) {
      ARROW_ASSIGN_OR_RAISE(indices, cp::CallFunction("indices_nonzero", {mask}, ctx));
    } else if (bits.null_count() == 0) {
      keep_bits = bits.values()->data();
      keep_offset = bits.offset();
    } else {
      ARROW_ASSIGN_OR_RAISE(
          and_valid,
          arrow::internal::BitmapAnd(ctx->memory_pool(), bits.values()->data(), bits.offset(),
                                     bits.null_bitmap_data(), bits.offset(), bits.length(), 0));
      keep_bits = and_valid->data();
    }
    std::vector<arrow::Datum> values;
    values.reserve(batch.values.size());
    for (const auto& v : batch.values) {
      if (v.is_scalar()) {
        values.push_back(v);
        continue;
      }
      if (keep_bits != nullptr) {
        ARROW_ASSIGN_OR_RAISE(auto compacted, CompactFixedWidth(*v.array(), keep_bits, keep_offset,
                                                                kept, ctx->memory_pool()));
        if (compacted) {
          values.push_back(std::move(*compacted));
          continue;
        }
      }
      ARROW_ASSIGN_OR_RAISE(arrow::Datum kept_rows,
                            indices ? cp::Take(v, *indices, cp::TakeOptions::NoBoundsCheck(), ctx)
                                    : cp::Filter(v, mask, cp::FilterOptions::Defaults(), ctx));
      values.push_back(std::move(kept_rows));
    }
    return cp::ExecBatch(std::move(values), kept);
  }

 private:
  cp::Expression predicate_;
};

arrow::Status RegisterFilter() {
  static std::once_flag once;
  static arrow::Status status;
  std::call_once(once, [] {
    status = ac::default_exec_factory_registry()->AddFactory(kFilterFactory, FilterNode::Make);
  });
  return status;
}

}  // namespace

arrow::Result<ac::Declaration> Filtered(ac::Declaration input, cp::Expression predicate) {
  ARROW_RETURN_NOT_OK(RegisterFilter());
  return ac::Declaration::Sequence(
      {std::move(input), {kFilterFactory, FilterOptions(std::move(predicate))}});
}

}  // namespace sluice::exec
