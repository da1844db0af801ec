#include "exec/int_key_aggregate.h"

#include <arrow/acero/exec_plan.h>
#include <arrow/acero/options.h>
#include <arrow/acero/query_context.h>
#include <arrow/acero/util.h>
#include <arrow/api.h>
#include <arrow/compute/api.h>
#include <arrow/compute/kernel.h>
#include <arrow/compute/registry.h>
#include <arrow/util/bit_util.h>
#include <arrow/util/bitmap_ops.h>

#include <algorithm>
#include <atomic>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "exec/group_combine.h"
#include "exec/kept_rows.h"
#include "exec/key_groups.h"
#include "exec/run_both.h"

namespace sluice::exec {

namespace {

namespace ac = arrow::acero;
namespace cp = arrow::compute;

// One aggregate's kernel and where its arguments are in the input.
struct AggregateKernel {
  std::string function;
  const cp::HashAggregateKernel* kernel = nullptr;
  const cp::FunctionOptions* options = nullptr;
  std::shared_ptr<cp::FunctionOptions> owned;  // keeps `options` alive past the declaration
  std::vector<arrow::TypeHolder> in_types;     // arguments, then the group ids
  std::vector<int> arguments;                  // input column per argument
};

// The least groups of the smaller of two threads' tables for which they finish side by side.
constexpr uint32_t kSideBySideGroups = 16 * 1024;

// Up to this many groups that both of two tables hold, each table passes on in slices between
// them, where those slices average at least kMinSliceRows rows; otherwise it is filtered. Each
// batch costs the operators above it a fixed amount: slicing 50K groups around 900 shared ones
// (TPC-DS q01) made 1,839 batches of 27 rows each.
constexpr size_t kSharedSlices = 1024;
constexpr int64_t kMinSliceRows = 512;

// How far ahead of a lookup its slot is prefetched.
constexpr uint32_t kPrefetchRows = 64;

// Pairs of keys are prefetched once there are more groups than this (a table that no longer
// fits in the cache); fewer are answered by the recent pairs.
constexpr uint32_t kPrefetchGroups = 1 << 16;

// Two 32-bit keys side by side in one int64 key.
inline int64_t PackKeys(int32_t first, int32_t second) {
  return static_cast<int64_t>((static_cast<uint64_t>(static_cast<uint32_t>(first)) << 32) |
                              static_cast<uint32_t>(second));
}

// What one thread has aggregated.
struct ThreadState {
  KeyGroups groups;
  std::vector<std::unique_ptr<cp::KernelState>> states;
  int64_t rows = 0;      // consumed into `groups`
  bool passing = false;  // later batches pass through (kPartialIntKeyAggregateFactory)
};

class IntKeyAggregateNode : public ac::ExecNode {
 public:
  IntKeyAggregateNode(ac::ExecPlan* plan, std::vector<ac::ExecNode*> inputs,
                      std::shared_ptr<arrow::Schema> output_schema, std::vector<int> keys,
                      std::vector<AggregateKernel> kernels, int kept_rows, bool may_pass)
      : ExecNode(plan, std::move(inputs), {"input"}, std::move(output_schema)),
        keys_(std::move(keys)),
        kernels_(std::move(kernels)),
        kept_rows_(kept_rows),
        // Rows a filter marked as dropped would pass too: only without them.
        may_pass_(may_pass && kept_rows < 0),
        threads_(ac::ThreadIndexer::Capacity()) {
    combinable_ = true;
    for (size_t a = 0; a < kernels_.size(); ++a) {
      const auto& type = *output_schema_->field(static_cast<int>(keys_.size() + a))->type();
      combinable_ &= CombinableAggregate(kernels_[a].function, kernels_[a].options, type);
    }
  }

  const char* kind_name() const override { return "IntKeyAggregateNode"; }

 protected:
  std::string ToStringExtra(int) const override {
    std::string text = "keys=[";
    for (size_t k = 0; k < keys_.size(); ++k) {
      text += (k > 0 ? ", \"" : "\"") + inputs_[0]->output_schema()->field(keys_[k])->name() + "\"";
    }
    text += std::string("]") +
            (may_pass_ ? ", passes rows where grouping does not shrink them" : "") +
            ", aggregates=[";
    for (size_t a = 0; a < kernels_.size(); ++a) {
      text += (a > 0 ? ", " : "") + kernels_[a].function + "(";
      for (size_t i = 0; i < kernels_[a].arguments.size(); ++i) {
        text += (i > 0 ? ", " : "") +
                inputs_[0]->output_schema()->field(kernels_[a].arguments[i])->name();
      }
      text += ")";
    }
    return text + "]";
  }

 public:
  arrow::Status StartProducing() override { return arrow::Status::OK(); }
  void PauseProducing(ac::ExecNode*, int32_t) override {}
  void ResumeProducing(ac::ExecNode*, int32_t) override {}

  arrow::Status InputReceived(ac::ExecNode*, cp::ExecBatch batch) override {
    const size_t index = thread_indexer_();
    if (index >= threads_.size()) {
      return arrow::Status::Invalid("internal: thread index ", index, " past ", threads_.size());
    }
    ARROW_ASSIGN_OR_RAISE(ThreadState * state, State(index));
    if (state->passing) {
      ARROW_RETURN_NOT_OK(PassThrough(batch));
    } else {
      ARROW_RETURN_NOT_OK(Consume(state, batch));
      state->rows += batch.length;
      state->passing = may_pass_ && state->rows >= kPassCheckRows &&
                       int64_t{state->groups.size()} * kPassMinRowsPerGroup > state->rows;
    }
    if (received_.Increment()) return Finish();
    return arrow::Status::OK();
  }

  arrow::Status InputFinished(ac::ExecNode*, int total_batches) override {
    if (received_.SetTotal(total_batches)) return Finish();
    return arrow::Status::OK();
  }

 protected:
  arrow::Status StopProducingImpl() override { return arrow::Status::OK(); }

 private:
  cp::ExecContext* exec_context() { return plan_->query_context()->exec_context(); }

  arrow::Result<ThreadState*> State(size_t index) {
    if (threads_[index] == nullptr) {
      auto state = std::make_unique<ThreadState>();
      if (kept_rows_ >= 0) state->groups.ReserveDropped();
      for (const auto& k : kernels_) {
        cp::KernelContext ctx(exec_context(), k.kernel);
        ARROW_ASSIGN_OR_RAISE(auto s, k.kernel->init(&ctx, {k.kernel, k.in_types, k.options}));
        state->states.push_back(std::move(s));
      }
      threads_[index] = std::move(state);
    }
    return threads_[index].get();
  }

  // Group ids of `keys`, an int32 or int64 column of `length` rows; where `kept` (a mask of its
  // rows) is given, a row it does not keep is in group 0, ReserveDropped's.
  template <typename T>
  static void GroupIds(const arrow::ArraySpan& keys, const arrow::ArrayData* kept,
                       KeyGroups* groups, uint32_t* ids) {
    const T* values = keys.GetValues<T>(1);
    const int64_t n = keys.length;
    if (kept != nullptr) {
      const uint8_t* bits = kept->buffers[1]->data();
      for (int64_t i = 0; i < n; ++i) {
        if (!arrow::bit_util::GetBit(bits, kept->offset + i)) {
          ids[i] = 0;
        } else {
          if (i + kPrefetchRows < n) groups->Prefetch(values[i + kPrefetchRows]);
          ids[i] = keys.IsValid(i) ? groups->Find(values[i]) : groups->FindWithNulls(1, 0);
        }
      }
      return;
    }
    if (keys.GetNullCount() == 0) {
      // A key equal to the row before's (sorted or clustered input: lineitem by order key)
      // reuses its id without a lookup.
      for (int64_t i = 0; i < n; ++i) {
        if (i + kPrefetchRows < n) groups->Prefetch(values[i + kPrefetchRows]);
        ids[i] = (i > 0 && values[i] == values[i - 1]) ? ids[i - 1] : groups->Find(values[i]);
      }
      return;
    }
    for (int64_t i = 0; i < n; ++i) {
      if (i + kPrefetchRows < n) groups->Prefetch(values[i + kPrefetchRows]);
      ids[i] = keys.IsValid(i) ? groups->Find(values[i]) : groups->FindWithNulls(1, 0);
    }
  }

  // Group ids of two 32-bit key columns of `length` rows, each pair packed into one key; rows
  // that `kept` does not keep, as GroupIds.
  static void PairGroupIds(const arrow::ArraySpan& first, const arrow::ArraySpan& second,
                           const arrow::ArrayData* kept, KeyGroups* groups, uint32_t* ids) {
    const int32_t* a = first.GetValues<int32_t>(1);
    const int32_t* b = second.GetValues<int32_t>(1);
    const int64_t n = first.length;
    const uint8_t* kept_bits = kept != nullptr ? kept->buffers[1]->data() : nullptr;
    const int64_t kept_offset = kept != nullptr ? kept->offset : 0;
    if (first.GetNullCount() == 0 && second.GetNullCount() == 0) {
      // Pairs of small keys (interned strings) are few and interleaved, so the last pair seen
      // at each of 16 places answers most rows without the table.
      constexpr int kRecent = 16;
      int64_t recent_key[kRecent];
      uint32_t recent_id[kRecent];
      bool seen[kRecent] = {};
      for (int64_t i = 0; i < n; ++i) {
        if (kept_bits != nullptr && !arrow::bit_util::GetBit(kept_bits, kept_offset + i)) {
          ids[i] = 0;
          continue;
        }
        // Many pairs (an item by date) make the table larger than the cache: ask ahead.
        if (i + kPrefetchRows < n && groups->size() > kPrefetchGroups) {
          groups->Prefetch(PackKeys(a[i + kPrefetchRows], b[i + kPrefetchRows]));
        }
        const int64_t key = PackKeys(a[i], b[i]);
        const int at = static_cast<int>((static_cast<uint64_t>(key) * 0x9E3779B97F4A7C15ull) >> 60);
        if (seen[at] && recent_key[at] == key) {
          ids[i] = recent_id[at];
          continue;
        }
        ids[i] = groups->Find(key);
        seen[at] = true;
        recent_key[at] = key;
        recent_id[at] = ids[i];
      }
      return;
    }
    for (int64_t i = 0; i < n; ++i) {
      if (kept_bits != nullptr && !arrow::bit_util::GetBit(kept_bits, kept_offset + i)) {
        ids[i] = 0;
        continue;
      }
      const bool a_valid = first.IsValid(i), b_valid = second.IsValid(i);
      const int64_t key = PackKeys(a_valid ? a[i] : 0, b_valid ? b[i] : 0);
      const uint8_t nulls = static_cast<uint8_t>((a_valid ? 0 : 1) | (b_valid ? 0 : 2));
      ids[i] = nulls == 0 ? groups->Find(key) : groups->FindWithNulls(nulls, key);
    }
  }

  arrow::Status Consume(ThreadState* state, const cp::ExecBatch& batch) {
    std::vector<std::shared_ptr<arrow::ArrayData>> keys;
    for (int column : keys_) {
      const arrow::Datum& key = batch.values[column];
      if (key.is_scalar()) {
        ARROW_ASSIGN_OR_RAISE(
            auto array,
            arrow::MakeArrayFromScalar(*key.scalar(), batch.length, exec_context()->memory_pool()));
        keys.push_back(array->data());
      } else {
        keys.push_back(key.array());
      }
    }
    ARROW_ASSIGN_OR_RAISE(auto ids, arrow::AllocateBuffer(batch.length * sizeof(uint32_t),
                                                          exec_context()->memory_pool()));
    auto* id = reinterpret_cast<uint32_t*>(ids->mutable_data());
    const arrow::ArraySpan key_span(*keys[0]);
    const arrow::ArrayData* kept = kept_rows_ >= 0 ? KeptRowsMask(batch, kept_rows_) : nullptr;
    if (keys.size() == 2) {
      PairGroupIds(key_span, arrow::ArraySpan(*keys[1]), kept, &state->groups, id);
    } else if (keys[0]->type->byte_width() == 8) {
      GroupIds<int64_t>(key_span, kept, &state->groups, id);
    } else {
      GroupIds<int32_t>(key_span, kept, &state->groups, id);
    }
    auto id_data =
        arrow::ArrayData::Make(arrow::uint32(), batch.length, {nullptr, std::move(ids)}, 0);
    // The dropped rows' arguments read as NULL: their group is never output, but a kernel could
    // still fail on their values (a decimal sum's overflow).
    std::map<int, std::shared_ptr<arrow::ArrayData>> masked;
    if (kept != nullptr) {
      for (const AggregateKernel& k : kernels_) {
        for (int column : k.arguments) {
          if (masked.count(column) != 0) continue;
          ARROW_ASSIGN_OR_RAISE(masked[column], Masked(batch.values[column], *kept, batch.length));
        }
      }
    }
    for (size_t a = 0; a < kernels_.size(); ++a) {
      const AggregateKernel& k = kernels_[a];
      const cp::ExecSpan span = KernelSpan(k, batch, kept != nullptr ? &masked : nullptr, *id_data);
      cp::KernelContext ctx(exec_context(), k.kernel);
      ctx.SetState(state->states[a].get());
      ARROW_RETURN_NOT_OK(k.kernel->resize(&ctx, state->groups.size()));
      ARROW_RETURN_NOT_OK(k.kernel->consume(&ctx, span));
    }
    return arrow::Status::OK();
  }

  // The arguments of `k` from `batch` (from `masked` where given), then the group ids `ids`.
  static cp::ExecSpan KernelSpan(const AggregateKernel& k, const cp::ExecBatch& batch,
                                 const std::map<int, std::shared_ptr<arrow::ArrayData>>* masked,
                                 const arrow::ArrayData& ids) {
    std::vector<cp::ExecValue> values;
    for (int column : k.arguments) {
      const arrow::Datum& v = batch.values[column];
      cp::ExecValue value;
      if (masked != nullptr) {
        value.SetArray(*masked->at(column));
      } else if (v.is_scalar()) {
        value.SetScalar(v.scalar().get());
      } else {
        value.SetArray(*v.array());
      }
      values.push_back(std::move(value));
    }
    cp::ExecValue ids_value;
    ids_value.SetArray(ids);
    values.push_back(std::move(ids_value));
    return cp::ExecSpan(std::move(values), batch.length);
  }

  // `batch` as output rows, each its own group: its keys, and each aggregate of its one row,
  // by the same kernels over group ids 0, 1, 2, ... (so of the same types).
  arrow::Status PassThrough(const cp::ExecBatch& batch) {
    arrow::MemoryPool* pool = exec_context()->memory_pool();
    const int64_t n = batch.length;
    std::vector<arrow::Datum> columns;
    for (int column : keys_) {
      const arrow::Datum& key = batch.values[column];
      if (key.is_scalar()) {
        ARROW_ASSIGN_OR_RAISE(auto array, arrow::MakeArrayFromScalar(*key.scalar(), n, pool));
        columns.emplace_back(std::move(array));
      } else {
        columns.push_back(key);
      }
    }
    ARROW_ASSIGN_OR_RAISE(auto ids, arrow::AllocateBuffer(n * sizeof(uint32_t), pool));
    auto* id = reinterpret_cast<uint32_t*>(ids->mutable_data());
    for (int64_t i = 0; i < n; ++i) id[i] = static_cast<uint32_t>(i);
    auto id_data = arrow::ArrayData::Make(arrow::uint32(), n, {nullptr, std::move(ids)}, 0);
    for (const AggregateKernel& k : kernels_) {
      cp::KernelContext ctx(exec_context(), k.kernel);
      ARROW_ASSIGN_OR_RAISE(auto state, k.kernel->init(&ctx, {k.kernel, k.in_types, k.options}));
      ctx.SetState(state.get());
      ARROW_RETURN_NOT_OK(k.kernel->resize(&ctx, n));
      ARROW_RETURN_NOT_OK(k.kernel->consume(&ctx, KernelSpan(k, batch, nullptr, *id_data)));
      arrow::Datum out;
      ARROW_RETURN_NOT_OK(k.kernel->finalize(&ctx, &out));
      columns.push_back(std::move(out));
    }
    passed_.fetch_add(1);
    return output_->InputReceived(this, cp::ExecBatch(std::move(columns), n));
  }

  // `value` as an array of `length` rows that is NULL wherever `kept` does not keep the row.
  arrow::Result<std::shared_ptr<arrow::ArrayData>> Masked(const arrow::Datum& value,
                                                          const arrow::ArrayData& kept,
                                                          int64_t length) {
    arrow::MemoryPool* pool = exec_context()->memory_pool();
    std::shared_ptr<arrow::ArrayData> array;
    if (value.is_scalar()) {
      ARROW_ASSIGN_OR_RAISE(auto made, arrow::MakeArrayFromScalar(*value.scalar(), length, pool));
      array = made->data();
    } else {
      array = value.array();
    }
    // Types without a validity bitmap (NULL, unions, run-end encoded) are no aggregate's input.
    if (!arrow::internal::may_have_validity_bitmap(array->type->id()) || array->buffers.empty()) {
      return array;
    }
    const uint8_t* kept_bits = kept.buffers[1]->data();
    const uint8_t* validity = array->buffers[0] == nullptr || array->GetNullCount() == 0
                                  ? nullptr
                                  : array->buffers[0]->data();
    // The bitmap at the array's own offset, so that its values are not copied.
    ARROW_ASSIGN_OR_RAISE(
        auto bits, arrow::internal::BitmapAnd(
                       pool, kept_bits, kept.offset, validity != nullptr ? validity : kept_bits,
                       validity != nullptr ? array->offset : kept.offset, length, array->offset));
    auto out = array->Copy();
    out->buffers[0] = std::move(bits);
    out->null_count = arrow::kUnknownNullCount;
    return out;
  }

  // `from`'s groups into `into`'s, key by key, and its kernels' states into `into`'s.
  arrow::Status MergeInto(ThreadState* into, ThreadState* from) {
    const uint32_t n = from->groups.size();
    ARROW_ASSIGN_OR_RAISE(
        auto mapping, arrow::AllocateBuffer(n * sizeof(uint32_t), exec_context()->memory_pool()));
    auto* to = reinterpret_cast<uint32_t*>(mapping->mutable_data());
    for (uint32_t g = 0; g < n; ++g) {
      if (g + kPrefetchRows < n) into->groups.Prefetch(from->groups.key(g + kPrefetchRows));
      const uint8_t nulls = from->groups.nulls(g);
      if (from->groups.dropped(g)) {
        to[g] = 0;  // both hold the dropped rows' group as group 0
        continue;
      }
      to[g] = nulls == 0 ? into->groups.Find(from->groups.key(g))
                         : into->groups.FindWithNulls(nulls, from->groups.key(g));
    }
    auto mapping_data =
        arrow::ArrayData::Make(arrow::uint32(), n, {nullptr, std::move(mapping)}, 0);
    for (size_t a = 0; a < kernels_.size(); ++a) {
      cp::KernelContext ctx(exec_context(), kernels_[a].kernel);
      ctx.SetState(into->states[a].get());
      ARROW_RETURN_NOT_OK(kernels_[a].kernel->resize(&ctx, into->groups.size()));
      ARROW_RETURN_NOT_OK(
          kernels_[a].kernel->merge(&ctx, std::move(*from->states[a]), *mapping_data));
    }
    return arrow::Status::OK();
  }

  // `state`'s groups as output columns: the keys, each in its own type (the group's key, or its
  // half of a pair), then each aggregate's finished value.
  arrow::Result<std::vector<arrow::Datum>> Finished(ThreadState* state) {
    const uint32_t n = state->groups.size();
    std::vector<arrow::Datum> columns;
    for (size_t k = 0; k < keys_.size(); ++k) {
      const auto& key_type = output_schema_->field(static_cast<int>(k))->type();
      const int width = key_type->byte_width();
      ARROW_ASSIGN_OR_RAISE(
          auto values, arrow::AllocateBuffer(int64_t{n} * width, exec_context()->memory_pool()));
      std::shared_ptr<arrow::Buffer> validity;
      int64_t nulls = 0;
      const uint8_t null_bit = static_cast<uint8_t>(1u << k);
      const int shift = keys_.size() == 2 && k == 0 ? 32 : 0;
      for (uint32_t g = 0; g < n; ++g) {
        const int64_t key = state->groups.key(g);
        if (width == 8) {
          reinterpret_cast<int64_t*>(values->mutable_data())[g] = key;
        } else {
          reinterpret_cast<int32_t*>(values->mutable_data())[g] =
              static_cast<int32_t>(static_cast<uint32_t>(static_cast<uint64_t>(key) >> shift));
        }
        if ((state->groups.nulls(g) & null_bit) != 0) {
          if (validity == nullptr) {
            ARROW_ASSIGN_OR_RAISE(validity,
                                  arrow::AllocateBitmap(n, exec_context()->memory_pool()));
            arrow::bit_util::SetBitsTo(validity->mutable_data(), 0, n, true);
          }
          arrow::bit_util::ClearBit(validity->mutable_data(), g);
          ++nulls;
        }
      }
      columns.emplace_back(
          arrow::ArrayData::Make(key_type, n, {validity, std::move(values)}, nulls));
    }
    for (size_t a = 0; a < kernels_.size(); ++a) {
      cp::KernelContext ctx(exec_context(), kernels_[a].kernel);
      ctx.SetState(state->states[a].get());
      ARROW_RETURN_NOT_OK(kernels_[a].kernel->resize(&ctx, n));
      arrow::Datum out;
      ARROW_RETURN_NOT_OK(kernels_[a].kernel->finalize(&ctx, &out));
      columns.push_back(std::move(out));
    }
    return columns;
  }

  // Two threads' tables finished side by side (group_combine.h): `b`'s keys looked up in `a`'s
  // (read only, half each), both tables finished at once, and only the groups both hold
  // combined; the rest of each passes as it is.
  arrow::Result<std::vector<cp::ExecBatch>> FinishTwo(ThreadState* a, ThreadState* b) {
    auto* executor = exec_context()->executor();
    const uint32_t nb = b->groups.size();
    std::vector<uint32_t> in_a(nb);
    auto lookup = [&](uint32_t from, uint32_t to) {
      for (uint32_t g = from; g < to; ++g) {
        if (g + kPrefetchRows < to) a->groups.Prefetch(b->groups.key(g + kPrefetchRows));
        const uint8_t nulls = b->groups.nulls(g);
        in_a[g] = nulls == 0 ? a->groups.Lookup(b->groups.key(g))
                             : a->groups.LookupWithNulls(nulls, b->groups.key(g));
      }
      return arrow::Status::OK();
    };
    ARROW_RETURN_NOT_OK(RunBoth(
        executor, [&] { return lookup(0, nb / 2); }, [&] { return lookup(nb / 2, nb); }));
    // Both tables' dropped rows' group is group 0: shared, so the first row of the shared part.
    const bool dropped = kept_rows_ >= 0;
    if (dropped) in_a[0] = 0;
    std::vector<arrow::Datum> a_columns, b_columns;
    ARROW_RETURN_NOT_OK(RunBoth(
        executor, [&] { return Finished(a).Value(&a_columns); },
        [&] { return Finished(b).Value(&b_columns); }));
    arrow::UInt32Builder a_shared, b_shared;
    for (uint32_t g = 0; g < nb; ++g) {
      if (in_a[g] == KeyGroups::kNone) continue;
      ARROW_RETURN_NOT_OK(a_shared.Append(in_a[g]));
      ARROW_RETURN_NOT_OK(b_shared.Append(g));
    }
    if (a_shared.length() == 0) {
      return std::vector<cp::ExecBatch>{cp::ExecBatch(std::move(a_columns), a->groups.size()),
                                        cp::ExecBatch(std::move(b_columns), nb)};
    }
    // The shared groups combined, and each side without them: in slices between them where
    // they are few (no copy), filtered where they are many.
    ARROW_ASSIGN_OR_RAISE(auto a_ids, a_shared.Finish());
    ARROW_ASSIGN_OR_RAISE(auto b_ids, b_shared.Finish());
    std::vector<arrow::Datum> shared;
    for (size_t c = 0; c < a_columns.size(); ++c) {
      ARROW_ASSIGN_OR_RAISE(
          auto from_a, cp::Take(a_columns[c], a_ids, cp::TakeOptions::Defaults(), exec_context()));
      if (c < keys_.size()) {
        shared.push_back(std::move(from_a));
        continue;
      }
      ARROW_ASSIGN_OR_RAISE(
          auto from_b, cp::Take(b_columns[c], b_ids, cp::TakeOptions::Defaults(), exec_context()));
      ARROW_ASSIGN_OR_RAISE(auto combined, CombineFinished(kernels_[c - keys_.size()].function,
                                                           kernels_[c - keys_.size()].options,
                                                           from_a, from_b, exec_context()));
      shared.push_back(std::move(combined));
    }
    std::vector<cp::ExecBatch> out;
    out.emplace_back(std::move(shared), a_ids->length());
    if (dropped) out.back() = out.back().Slice(1, a_ids->length() - 1);
    auto without = [&](std::vector<arrow::Datum> columns, int64_t rows,
                       const arrow::Array& ids) -> arrow::Status {
      const uint32_t* id = static_cast<const arrow::UInt32Array&>(ids).raw_values();
      std::vector<uint32_t> sorted(id, id + ids.length());
      std::sort(sorted.begin(), sorted.end());
      if (sorted.size() <= kSharedSlices &&
          rows >= kMinSliceRows * static_cast<int64_t>(sorted.size() + 1)) {
        const cp::ExecBatch all(std::move(columns), rows);
        int64_t from = 0;
        for (const uint32_t g : sorted) {
          if (g > from) out.push_back(all.Slice(from, g - from));
          from = g + 1;
        }
        if (rows > from) out.push_back(all.Slice(from, rows - from));
        return arrow::Status::OK();
      }
      ARROW_ASSIGN_OR_RAISE(auto keep, arrow::AllocateBitmap(rows, exec_context()->memory_pool()));
      arrow::bit_util::SetBitsTo(keep->mutable_data(), 0, rows, true);
      for (const uint32_t g : sorted) arrow::bit_util::ClearBit(keep->mutable_data(), g);
      auto mask = std::make_shared<arrow::BooleanArray>(rows, std::move(keep));
      std::vector<arrow::Datum> kept;
      for (const auto& c : columns) {
        ARROW_ASSIGN_OR_RAISE(auto k,
                              cp::Filter(c, mask, cp::FilterOptions::Defaults(), exec_context()));
        kept.push_back(std::move(k));
      }
      out.emplace_back(std::move(kept), rows - static_cast<int64_t>(sorted.size()));
      return arrow::Status::OK();
    };
    ARROW_RETURN_NOT_OK(without(std::move(a_columns), a->groups.size(), *a_ids));
    ARROW_RETURN_NOT_OK(without(std::move(b_columns), nb, *b_ids));
    return out;
  }

  // Every thread's groups, then the result. Two tables large enough finish side by side where
  // every aggregate combines (FinishTwo); otherwise, and beyond two, the others merge into the
  // largest key by key on this thread.
  arrow::Status Finish() {
    std::vector<ThreadState*> live;
    for (auto& t : threads_) {
      if (t != nullptr) live.push_back(t.get());
    }
    std::stable_sort(live.begin(), live.end(), [](const ThreadState* x, const ThreadState* y) {
      return x->groups.size() > y->groups.size();
    });
    if (live.empty()) {
      ARROW_ASSIGN_OR_RAISE(ThreadState * empty, State(0));
      live.push_back(empty);
    }
    // A table merged into another goes at once, before the result is made.
    auto release = [&](const ThreadState* merged) {
      for (auto& t : threads_) {
        if (t.get() == merged) t.reset();
      }
    };
    while (live.size() > 2) {
      ARROW_RETURN_NOT_OK(MergeInto(live[0], live.back()));
      release(live.back());
      live.pop_back();
    }
    std::vector<cp::ExecBatch> parts;
    if (live.size() == 2 && combinable_ && live[1]->groups.size() >= kSideBySideGroups) {
      ARROW_ASSIGN_OR_RAISE(parts, FinishTwo(live[0], live[1]));
    } else {
      if (live.size() == 2) {
        ARROW_RETURN_NOT_OK(MergeInto(live[0], live[1]));
        release(live[1]);
      }
      const uint32_t n = live[0]->groups.size();
      ARROW_ASSIGN_OR_RAISE(auto columns, Finished(live[0]));
      parts.emplace_back(std::move(columns), n);
      if (kept_rows_ >= 0) parts.back() = parts.back().Slice(1, n - 1);  // the dropped rows' group
    }
    threads_.clear();
    constexpr int64_t kBatchRows = 32 * 1024;
    int batches = 0;
    for (const auto& part : parts) {
      for (int64_t start = 0; start < part.length; start += kBatchRows) {
        ARROW_RETURN_NOT_OK(output_->InputReceived(
            this, part.Slice(start, std::min<int64_t>(kBatchRows, part.length - start))));
        ++batches;
      }
    }
    return output_->InputFinished(this, batches + passed_.load());
  }

  const std::vector<int> keys_;  // one key column, or two 32-bit ones
  const std::vector<AggregateKernel> kernels_;
  const int kept_rows_;         // the input's kKeptRowsColumn (exec/kept_rows.h), or -1
  const bool may_pass_;         // kPartialIntKeyAggregateFactory's node
  std::atomic<int> passed_{0};  // batches passed through
  bool combinable_ = false;     // every aggregate's finished values combine (group_combine.h)
  std::vector<std::unique_ptr<ThreadState>> threads_;
  ac::ThreadIndexer thread_indexer_;
  ac::AtomicCounter received_;
};

// Our node for `options`, or Arrow's where our grouper does not apply; `may_pass`: for
// kPartialIntKeyAggregateFactory.
arrow::Result<ac::ExecNode*> MakeAggregate(ac::ExecPlan* plan, std::vector<ac::ExecNode*> inputs,
                                           const ac::ExecNodeOptions& node_options, bool may_pass) {
  const auto& options = static_cast<const ac::AggregateNodeOptions&>(node_options);
  if (inputs.size() != 1) {
    return arrow::Status::Invalid("internal: ", kIntKeyAggregateFactory, " takes one input");
  }
  const auto& schema = inputs[0]->output_schema();
  const int kept_rows = KeptRowsIndex(*schema);
  auto fallback = [&]() -> arrow::Result<ac::ExecNode*> {
    if (kept_rows < 0) return ac::MakeExecNode("aggregate", plan, inputs, options);
    // Arrow's aggregate knows nothing of marked rows: they are dropped first.
    ARROW_ASSIGN_OR_RAISE(auto* filter,
                          ac::MakeExecNode("filter", plan, inputs,
                                           ac::FilterNodeOptions(cp::field_ref(kKeptRowsColumn))));
    return ac::MakeExecNode("aggregate", plan, {filter}, options);
  };
  if (options.keys.empty() || options.keys.size() > 2 || !options.segment_keys.empty()) {
    return fallback();
  }
  std::vector<int> keys;
  std::vector<arrow::Type::type> key_types;
  for (const auto& ref : options.keys) {
    auto key = ref.FindOne(*schema);
    if (!key.ok() || key->indices().size() != 1) return fallback();
    keys.push_back(key->indices()[0]);
    key_types.push_back(schema->field(keys.back())->type()->id());
  }
  if (!GroupsKeysOfTypes(key_types)) return fallback();
  auto* registry = plan->query_context()->exec_context()->func_registry();
  std::vector<AggregateKernel> kernels;
  for (const auto& aggregate : options.aggregates) {
    auto function = registry->GetFunction(aggregate.function);
    if (!function.ok() || (*function)->kind() != cp::Function::HASH_AGGREGATE) return fallback();
    AggregateKernel k;
    k.function = aggregate.function;
    for (const auto& target : aggregate.target) {
      auto found = target.FindOne(*schema);
      if (!found.ok() || found->indices().size() != 1) return fallback();
      k.arguments.push_back(found->indices()[0]);
      k.in_types.emplace_back(schema->field(found->indices()[0])->type());
    }
    k.in_types.emplace_back(arrow::uint32());
    auto kernel = (*function)->DispatchExact(k.in_types);
    if (!kernel.ok()) return fallback();
    k.kernel = static_cast<const cp::HashAggregateKernel*>(*kernel);
    k.owned = aggregate.options;
    k.options = k.owned != nullptr ? k.owned.get() : (*function)->default_options();
    kernels.push_back(std::move(k));
  }
  // As Arrow's node names and types its output: the keys' fields, then each aggregate's name
  // with the type its kernel resolves (some resolve from their initialized state).
  arrow::FieldVector fields;
  for (int key : keys) fields.push_back(schema->field(key));
  for (size_t a = 0; a < kernels.size(); ++a) {
    const AggregateKernel& k = kernels[a];
    cp::KernelContext ctx(plan->query_context()->exec_context(), k.kernel);
    ARROW_ASSIGN_OR_RAISE(auto state, k.kernel->init(&ctx, {k.kernel, k.in_types, k.options}));
    ctx.SetState(state.get());
    ARROW_ASSIGN_OR_RAISE(auto type, k.kernel->signature->out_type().Resolve(&ctx, k.in_types));
    fields.push_back(arrow::field(options.aggregates[a].name, type.GetSharedPtr()));
  }
  auto output_schema = arrow::schema(std::move(fields));
  return plan->EmplaceNode<IntKeyAggregateNode>(plan, std::move(inputs), std::move(output_schema),
                                                std::move(keys), std::move(kernels), kept_rows,
                                                may_pass);
}

arrow::Result<ac::ExecNode*> MakeIntKeyAggregate(ac::ExecPlan* plan,
                                                 std::vector<ac::ExecNode*> inputs,
                                                 const ac::ExecNodeOptions& options) {
  return MakeAggregate(plan, std::move(inputs), options, /*may_pass=*/false);
}

arrow::Result<ac::ExecNode*> MakePartialIntKeyAggregate(ac::ExecPlan* plan,
                                                        std::vector<ac::ExecNode*> inputs,
                                                        const ac::ExecNodeOptions& options) {
  return MakeAggregate(plan, std::move(inputs), options, /*may_pass=*/true);
}

}  // namespace

bool GroupsKeysOfTypes(const std::vector<arrow::Type::type>& key_types) {
  // A key that packs beside another into one int64 (an interned string's id is an int32).
  const auto half = [](arrow::Type::type id) {
    return id == arrow::Type::INT32 || id == arrow::Type::DATE32;
  };
  if (key_types.size() == 1) return half(key_types[0]) || key_types[0] == arrow::Type::INT64;
  return key_types.size() == 2 && half(key_types[0]) && half(key_types[1]);
}

arrow::Status RegisterIntKeyAggregate() {
  static std::once_flag once;
  static arrow::Status status;
  std::call_once(once, [] {
    auto* registry = ac::default_exec_factory_registry();
    status = registry->AddFactory(kIntKeyAggregateFactory, MakeIntKeyAggregate);
    if (status.ok()) {
      status = registry->AddFactory(kPartialIntKeyAggregateFactory, MakePartialIntKeyAggregate);
    }
  });
  return status;
}

}  // namespace sluice::exec
