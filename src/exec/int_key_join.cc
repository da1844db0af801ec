#include "exec/int_key_join.h"

#include <arrow/acero/exec_plan.h>
#include <arrow/acero/options.h>
#include <arrow/acero/query_context.h>
#include <arrow/acero/util.h>
#include <arrow/api.h>
#include <arrow/array/concatenate.h>
#include <arrow/compute/api.h>
#include <arrow/util/bit_util.h>

#include <algorithm>
#include <limits>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "exec/huge_page_allocator.h"

namespace sluice::exec {

namespace {

namespace ac = arrow::acero;
namespace cp = arrow::compute;

// How far ahead of a lookup its slot is prefetched.
constexpr int64_t kPrefetchRows = 64;

// The most rows of one output batch (a probe batch whose keys repeat in the hashed side can
// give many times its rows).
constexpr int64_t kOutputBatchRows = 64 * 1024;

// A column of a batch as an array: Acero's batches may hold a scalar for a constant column.
arrow::Result<std::shared_ptr<arrow::Array>> ColumnArray(const cp::ExecBatch& batch, int column,
                                                         arrow::MemoryPool* pool) {
  const arrow::Datum& value = batch.values[column];
  if (value.is_array()) return value.make_array();
  return arrow::MakeArrayFromScalar(*value.scalar(), batch.length, pool);
}

// Keys to rows of the hashed side: open addressing over a power-of-two table of row numbers
// (0 is empty, otherwise row + 1) with the keys in row order; rows with the same key are
// chained (next_[row]: the next row with that key, + 1). Read-only once built, so that probes
// run on any number of threads.
class KeyRows {
 public:
  // `keys` of `valid` rows (null: all valid); rows with a NULL key are in no slot.
  void Build(std::vector<int64_t, HugePageAllocator<int64_t>> keys, const uint8_t* valid) {
    keys_ = std::move(keys);
    const size_t n = keys_.size();
    const size_t capacity = std::max<size_t>(16, arrow::bit_util::NextPower2(2 * n));
    slots_.assign(capacity, 0);
    next_.clear();  // made at the first repeated key
    mask_ = capacity - 1;
    shift_ = 64 - arrow::bit_util::Log2(capacity);
    for (size_t r = 0; r < n; ++r) {
      if (r + kPrefetchRows < n) __builtin_prefetch(&slots_[Slot(keys_[r + kPrefetchRows])], 1);
      if (valid != nullptr && !arrow::bit_util::GetBit(valid, static_cast<int64_t>(r))) continue;
      const int64_t key = keys_[r];
      size_t i = Slot(key);
      for (;;) {
        const uint32_t s = slots_[i];
        if (s == 0) {
          slots_[i] = static_cast<uint32_t>(r + 1);
          break;
        }
        if (keys_[s - 1] == key) {  // a repeated key: this row heads its chain
          if (next_.empty()) next_.assign(n, 0);
          next_[r] = s;
          slots_[i] = static_cast<uint32_t>(r + 1);
          break;
        }
        i = (i + 1) & mask_;
      }
    }
  }

  // The first row with `key` + 1, or 0; Next(row) the row after it in its chain.
  uint32_t Find(int64_t key) const { return FindFrom(Slot(key), key); }

  // As Find, from slot `i` on.
  uint32_t FindFrom(size_t i, int64_t key) const {
    for (;;) {
      const uint32_t s = slots_[i];
      if (s == 0 || keys_[s - 1] == key) return s;
      i = (i + 1) & mask_;
    }
  }
  uint32_t Next(uint32_t row) const { return next_.empty() ? 0 : next_[row]; }
  void Prefetch(int64_t key) const { __builtin_prefetch(&slots_[Slot(key)]); }

  // Whether some key is on several rows.
  bool repeats() const { return !next_.empty(); }

  // For a table without repeated keys (repeats() false): the row each of `n` probe keys finds,
  // for those that find one (and are valid: `valid` from bit `valid_offset`, or null for all),
  // as (probe row, row) pairs in probe row order; returns how many. Whether a key finds a row
  // decides no branch (a branch on it is mispredicted where about half do), and a key equal to
  // the row before's (lineitem's order keys come in runs) is not looked up again. The probe is
  // bound by the misses on the slots and keys, so both are asked for well ahead.
  int64_t FindEach(const int64_t* keys, const uint8_t* valid, int64_t valid_offset, int64_t n,
                   int32_t* probe_rows, uint32_t* rows) const {
    if (keys_.empty()) return 0;
    constexpr int64_t kHalf = kPrefetchRows / 2;
    int64_t found = 0;
    uint32_t s = 0;
    for (int64_t i = 0; i < n; ++i) {
      if (i + kPrefetchRows < n) Prefetch(keys[i + kPrefetchRows]);
      if (i + kHalf < n) {  // its slot has come by now: ask for the key it points to
        const uint32_t ahead = slots_[Slot(keys[i + kHalf])];
        __builtin_prefetch(&keys_[ahead != 0 ? ahead - 1 : 0]);
      }
      const int64_t key = keys[i];
      if (i == 0 || key != keys[i - 1]) {  // a key equal to the row before's finds the same
        const size_t slot = Slot(key);
        s = slots_[slot];
        const int64_t held = keys_[s != 0 ? s - 1 : 0];
        if ((s != 0) & (held != key)) s = FindFrom((slot + 1) & mask_, key);  // a collision
      }
      const bool valid_row = valid == nullptr || arrow::bit_util::GetBit(valid, valid_offset + i);
      probe_rows[found] = static_cast<int32_t>(i);
      rows[found] = s - 1;
      found += static_cast<int64_t>((s != 0) & valid_row);
    }
    return found;
  }

 private:
  // As the integer-key aggregate's table: keys that differ only in their low 3 bits share a run
  // of 8 slots, the run chosen by a multiplicative hash of the rest, so that clustered keys (a
  // probe side in key order, as lineitem is by order key) cost one miss for several.
  size_t Slot(int64_t key) const {
    const uint64_t k = static_cast<uint64_t>(key);
    const uint64_t run = ((k >> 3) * 0x9E3779B97F4A7C15ull) >> (shift_ + 3);
    return static_cast<size_t>(((run << 3) | (k & 7)) & mask_);
  }

  std::vector<int64_t, HugePageAllocator<int64_t>> keys_;
  std::vector<uint32_t, HugePageAllocator<uint32_t>> slots_;
  std::vector<uint32_t> next_;
  size_t mask_ = 0;
  int shift_ = 64;
};

// Appends `keys` (an int32, date32 or int64 column) to `out` as int64.
void AppendKeys(const arrow::ArraySpan& keys,
                std::vector<int64_t, HugePageAllocator<int64_t>>* out) {
  if (keys.type->byte_width() == 8) {
    const int64_t* values = keys.GetValues<int64_t>(1);
    out->insert(out->end(), values, values + keys.length);
  } else {
    const int32_t* values = keys.GetValues<int32_t>(1);
    out->insert(out->end(), values, values + keys.length);
  }
}

class IntKeyJoinNode : public ac::ExecNode {
 public:
  IntKeyJoinNode(ac::ExecPlan* plan, std::vector<ac::ExecNode*> inputs,
                 std::shared_ptr<arrow::Schema> output_schema, int probe_key, int build_key,
                 std::vector<int> probe_output, std::vector<int> build_output)
      : ExecNode(plan, std::move(inputs), {"probe", "build"}, std::move(output_schema)),
        probe_key_(probe_key),
        build_key_(build_key),
        probe_output_(std::move(probe_output)),
        build_output_(std::move(build_output)) {}

  const char* kind_name() const override { return "IntKeyJoinNode"; }

 protected:
  std::string ToStringExtra(int) const override {
    return "probe_key=" + inputs_[0]->output_schema()->field(probe_key_)->name() +
           ", build_key=" + inputs_[1]->output_schema()->field(build_key_)->name();
  }

 public:
  arrow::Status StartProducing() override { return arrow::Status::OK(); }
  void PauseProducing(ac::ExecNode*, int32_t) override {}
  void ResumeProducing(ac::ExecNode*, int32_t) override {}

  arrow::Status InputReceived(ac::ExecNode* input, cp::ExecBatch batch) override {
    if (input == inputs_[1]) {
      {
        std::lock_guard<std::mutex> lock(mutex_);
        build_batches_.push_back(std::move(batch));
      }
      if (build_received_.Increment()) return Build();
      return arrow::Status::OK();
    }
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (!built_) {
        queued_.push_back(std::move(batch));
        return arrow::Status::OK();
      }
    }
    return ProbeOne(batch);
  }

  arrow::Status InputFinished(ac::ExecNode* input, int total_batches) override {
    if (input == inputs_[1]) {
      if (build_received_.SetTotal(total_batches)) return Build();
      return arrow::Status::OK();
    }
    if (probed_.SetTotal(total_batches)) return output_->InputFinished(this, output_batches_);
    return arrow::Status::OK();
  }

 protected:
  arrow::Status StopProducingImpl() override { return arrow::Status::OK(); }

 private:
  arrow::MemoryPool* pool() { return plan_->query_context()->memory_pool(); }

  // Builds the table from the hashed side's batches, then probes the batches that came before.
  arrow::Status Build() {
    std::vector<cp::ExecBatch> batches;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      batches.swap(build_batches_);
    }
    int64_t rows = 0;
    for (const auto& b : batches) rows += b.length;
    if (rows >= std::numeric_limits<uint32_t>::max()) {
      return arrow::Status::CapacityError("a join's hashed side has ", rows,
                                          " rows; at most 4294967294 are supported");
    }
    std::vector<int64_t, HugePageAllocator<int64_t>> keys;
    keys.reserve(static_cast<size_t>(rows));
    std::shared_ptr<arrow::Buffer> valid;  // where some key is NULL
    std::vector<arrow::ArrayVector> chunks(build_output_.size());
    for (const auto& b : batches) {
      ARROW_ASSIGN_OR_RAISE(auto key, ColumnArray(b, build_key_, pool()));
      if (key->null_count() > 0 && valid == nullptr) {
        ARROW_ASSIGN_OR_RAISE(valid, arrow::AllocateBitmap(rows, pool()));
        arrow::bit_util::SetBitsTo(valid->mutable_data(), 0, rows, true);
      }
      if (key->null_count() > 0) {
        arrow::internal::CopyBitmap(key->null_bitmap_data(), key->offset(), key->length(),
                                    valid->mutable_data(), static_cast<int64_t>(keys.size()));
      }
      AppendKeys(arrow::ArraySpan(*key->data()), &keys);
      for (size_t c = 0; c < build_output_.size(); ++c) {
        ARROW_ASSIGN_OR_RAISE(auto column, ColumnArray(b, build_output_[c], pool()));
        chunks[c].push_back(std::move(column));
      }
    }
    batches.clear();
    // Each output column as one array, so that a probe takes from it by row number. One column
    // at a time: its chunks are dropped as soon as it is whole.
    columns_.resize(build_output_.size());
    for (size_t c = 0; c < build_output_.size(); ++c) {
      const auto& type = inputs_[1]->output_schema()->field(build_output_[c])->type();
      if (chunks[c].empty()) {
        ARROW_ASSIGN_OR_RAISE(columns_[c], arrow::MakeEmptyArray(type, pool()));
      } else if (chunks[c].size() == 1) {
        columns_[c] = std::move(chunks[c][0]);
      } else {
        ARROW_ASSIGN_OR_RAISE(columns_[c], arrow::Concatenate(chunks[c], pool()));
      }
      arrow::ArrayVector().swap(chunks[c]);
    }
    table_.Build(std::move(keys), valid == nullptr ? nullptr : valid->data());
    std::vector<cp::ExecBatch> queued;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      built_ = true;
      queued.swap(queued_);
    }
    for (const auto& b : queued) ARROW_RETURN_NOT_OK(ProbeOne(b));
    return arrow::Status::OK();
  }

  // Joins one probe batch and counts it as probed.
  arrow::Status ProbeOne(const cp::ExecBatch& batch) {
    ARROW_RETURN_NOT_OK(Probe(batch));
    if (probed_.Increment()) return output_->InputFinished(this, output_batches_);
    return arrow::Status::OK();
  }

  arrow::Status Probe(const cp::ExecBatch& batch) {
    if (batch.length == 0) return arrow::Status::OK();
    ARROW_ASSIGN_OR_RAISE(auto key_array, ColumnArray(batch, probe_key_, pool()));
    const arrow::ArraySpan key(*key_array->data());
    const int64_t n = batch.length;
    // An int64 key is read where it is; a 32-bit one is widened first.
    std::vector<int64_t> widened;
    const int64_t* keys = nullptr;
    if (key.type->byte_width() == 8) {
      keys = key.GetValues<int64_t>(1);
    } else {
      const int32_t* v = key.GetValues<int32_t>(1);
      widened.assign(v, v + n);
      keys = widened.data();
    }
    const uint8_t* valid = key.GetNullCount() > 0 ? key.buffers[0].data : nullptr;
    // Matches: probe row and hashed row, in probe row order.
    ARROW_ASSIGN_OR_RAISE(auto probe_rows, arrow::AllocateResizableBuffer(n * 4, pool()));
    ARROW_ASSIGN_OR_RAISE(auto build_rows, arrow::AllocateResizableBuffer(n * 4, pool()));
    int64_t matches = 0, capacity = n;
    bool one_each = true;  // each probe row, in order, found exactly one row
    auto* probe_out = reinterpret_cast<int32_t*>(probe_rows->mutable_data());
    auto* build_out = reinterpret_cast<uint32_t*>(build_rows->mutable_data());
    if (!table_.repeats()) {
      matches = table_.FindEach(keys, valid, key.offset, n, probe_out, build_out);
      one_each = matches == n;
    }
    for (int64_t i = 0; i < n && table_.repeats(); ++i) {
      if (i + kPrefetchRows < n) table_.Prefetch(keys[i + kPrefetchRows]);
      if (valid != nullptr && !arrow::bit_util::GetBit(valid, key.offset + i)) {
        one_each = false;
        continue;
      }
      uint32_t row = table_.Find(keys[i]);
      if (row == 0) {
        one_each = false;
        continue;
      }
      int64_t found = 0;
      for (; row != 0; row = table_.Next(row - 1), ++found) {
        if (matches == capacity) {
          capacity *= 2;
          ARROW_RETURN_NOT_OK(probe_rows->Resize(capacity * 4));
          ARROW_RETURN_NOT_OK(build_rows->Resize(capacity * 4));
          probe_out = reinterpret_cast<int32_t*>(probe_rows->mutable_data());
          build_out = reinterpret_cast<uint32_t*>(build_rows->mutable_data());
        }
        probe_out[matches] = static_cast<int32_t>(i);
        build_out[matches] = row - 1;
        ++matches;
      }
      one_each &= found == 1;
    }
    if (matches == 0) return arrow::Status::OK();
    ARROW_RETURN_NOT_OK(probe_rows->Resize(matches * 4));
    ARROW_RETURN_NOT_OK(build_rows->Resize(matches * 4));
    auto probe_indices = std::make_shared<arrow::Int32Array>(matches, std::move(probe_rows));
    auto build_indices = std::make_shared<arrow::UInt32Array>(matches, std::move(build_rows));
    cp::ExecContext ctx(pool(), plan_->query_context()->exec_context()->executor());
    std::vector<arrow::Datum> values;
    values.reserve(probe_output_.size() + build_output_.size());
    for (int c : probe_output_) {
      if (one_each) {
        values.push_back(batch.values[c]);
        continue;
      }
      const arrow::Datum& column = batch.values[c];
      if (column.is_scalar()) {
        values.push_back(column);  // the same value in every row
        continue;
      }
      ARROW_ASSIGN_OR_RAISE(arrow::Datum taken, cp::Take(column, probe_indices,
                                                         cp::TakeOptions::NoBoundsCheck(), &ctx));
      values.push_back(std::move(taken));
    }
    for (const auto& column : columns_) {
      ARROW_ASSIGN_OR_RAISE(arrow::Datum taken, cp::Take(column, build_indices,
                                                         cp::TakeOptions::NoBoundsCheck(), &ctx));
      values.push_back(std::move(taken));
    }
    cp::ExecBatch out(std::move(values), matches);
    for (int64_t start = 0; start < matches; start += kOutputBatchRows) {
      output_batches_.fetch_add(1);
      ARROW_RETURN_NOT_OK(output_->InputReceived(
          this, out.Slice(start, std::min(kOutputBatchRows, matches - start))));
    }
    return arrow::Status::OK();
  }

  const int probe_key_, build_key_;
  const std::vector<int> probe_output_, build_output_;

  std::mutex mutex_;
  std::vector<cp::ExecBatch> build_batches_;  // until the table is built
  std::vector<cp::ExecBatch> queued_;         // probe batches that came before it was
  bool built_ = false;
  ac::AtomicCounter build_received_;
  ac::AtomicCounter probed_;
  std::atomic<int> output_batches_{0};

  KeyRows table_;
  arrow::ArrayVector columns_;  // the hashed side's output columns, whole
};

bool IntegerKey(const arrow::DataType& type) {
  return type.id() == arrow::Type::INT32 || type.id() == arrow::Type::INT64 ||
         type.id() == arrow::Type::DATE32;
}

arrow::Result<int> FieldIndex(const arrow::FieldRef& ref, const arrow::Schema& schema) {
  ARROW_ASSIGN_OR_RAISE(auto path, ref.FindOne(schema));
  if (path.indices().size() != 1) return arrow::Status::Invalid("nested field ", ref.ToString());
  return path.indices()[0];
}

arrow::Result<ac::ExecNode*> MakeIntKeyJoin(ac::ExecPlan* plan, std::vector<ac::ExecNode*> inputs,
                                            const ac::ExecNodeOptions& node_options) {
  const auto& options = static_cast<const ac::HashJoinNodeOptions&>(node_options);
  if (inputs.size() != 2) {
    return arrow::Status::Invalid("internal: ", kIntKeyJoinFactory, " takes two inputs");
  }
  auto fallback = [&]() { return ac::MakeExecNode("hashjoin", plan, inputs, options); };
  if (options.join_type != ac::JoinType::INNER || options.left_keys.size() != 1 ||
      options.right_keys.size() != 1 || options.key_cmp.size() != 1 ||
      options.key_cmp[0] != ac::JoinKeyCmp::EQ || !options.filter.Equals(cp::literal(true))) {
    return fallback();
  }
  const arrow::Schema& probe = *inputs[0]->output_schema();
  const arrow::Schema& build = *inputs[1]->output_schema();
  auto probe_key = FieldIndex(options.left_keys[0], probe);
  auto build_key = FieldIndex(options.right_keys[0], build);
  if (!probe_key.ok() || !build_key.ok()) return fallback();
  const auto& key_type = *probe.field(*probe_key)->type();
  if (!IntegerKey(key_type) || !key_type.Equals(*build.field(*build_key)->type())) {
    return fallback();
  }
  std::vector<int> probe_output, build_output;
  if (options.output_all) {
    for (int i = 0; i < probe.num_fields(); ++i) probe_output.push_back(i);
    for (int i = 0; i < build.num_fields(); ++i) build_output.push_back(i);
  } else {
    for (const auto& ref : options.left_output) {
      auto i = FieldIndex(ref, probe);
      if (!i.ok()) return fallback();
      probe_output.push_back(*i);
    }
    for (const auto& ref : options.right_output) {
      auto i = FieldIndex(ref, build);
      if (!i.ok()) return fallback();
      build_output.push_back(*i);
    }
  }
  // A dictionary column's batches may each have their own dictionary, which one array cannot
  // hold: those joins stay Acero's.
  for (int i : build_output) {
    if (build.field(i)->type()->id() == arrow::Type::DICTIONARY) return fallback();
  }
  // Acero renames colliding names with the options' suffixes: that case stays Acero's.
  arrow::FieldVector fields;
  std::set<std::string> names;
  for (int i : probe_output) fields.push_back(probe.field(i));
  for (int i : build_output) fields.push_back(build.field(i));
  for (const auto& f : fields) {
    if (!names.insert(f->name()).second) return fallback();
  }
  return plan->EmplaceNode<IntKeyJoinNode>(plan, std::move(inputs),
                                           arrow::schema(std::move(fields)), *probe_key, *build_key,
                                           std::move(probe_output), std::move(build_output));
}

}  // namespace

arrow::Status RegisterIntKeyJoin() {
  static std::once_flag once;
  static arrow::Status status;
  std::call_once(once, [] {
    status = ac::default_exec_factory_registry()->AddFactory(kIntKeyJoinFactory, MakeIntKeyJoin);
  });
  return status;
}

}  // namespace sluice::exec
