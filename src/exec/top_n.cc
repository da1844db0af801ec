#include "exec/top_n.h"

#include <arrow/acero/options.h>
#include <arrow/compute/api.h>

#include <algorithm>
#include <cmath>
#include <mutex>

#include "exec/deferred_source.h"

namespace sluice::exec {

namespace {

namespace ac = arrow::acero;
namespace cp = arrow::compute;

// Sorting whenever this many rows are held keeps the sorts few for a small N: the input is
// sorted in runs of this size, not row by row.
constexpr int64_t kMinHeldRows = int64_t{1} << 17;

// Holds the best `rows` rows seen so far plus the batches since the last sort.
class TopNConsumer : public ac::SinkNodeConsumer {
 public:
  TopNConsumer(std::vector<cp::SortKey> keys, int64_t rows)
      : keys_(std::move(keys)), rows_(rows), limit_(std::max(2 * rows, kMinHeldRows)) {}

  arrow::Status Init(const std::shared_ptr<arrow::Schema>& schema, ac::BackpressureControl*,
                     ac::ExecPlan*) override {
    schema_ = schema;
    return arrow::Status::OK();
  }

  arrow::Status Consume(cp::ExecBatch batch) override {
    if (batch.length == 0 || rows_ == 0) return arrow::Status::OK();
    ARROW_ASSIGN_OR_RAISE(auto rows, batch.ToRecordBatch(schema_));
    std::shared_ptr<arrow::Scalar> bound;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      bound = bound_;
    }
    if (bound != nullptr) {
      ARROW_ASSIGN_OR_RAISE(rows, WithinBound(std::move(rows), bound));
      if (rows->num_rows() == 0) return arrow::Status::OK();
    }
    std::lock_guard<std::mutex> lock(mutex_);
    held_rows_ += rows->num_rows();
    held_.push_back(std::move(rows));
    sorted_ = false;
    return held_rows_ >= limit_ ? KeepBest() : arrow::Status::OK();
  }

  arrow::Future<> Finish() override {
    std::lock_guard<std::mutex> lock(mutex_);
    return KeepBest();
  }

  // After Finish: the rows in order.
  arrow::Result<std::shared_ptr<arrow::Table>> Rows() {
    std::lock_guard<std::mutex> lock(mutex_);
    return arrow::Table::FromRecordBatches(schema_, held_);
  }

 private:
  // The rows whose first key is not worse than `bound` (the first key of the N-th row held),
  // ties included: no other row can be among the first N. This keeps the sorts to the few rows
  // that could still win, so a top-N costs about a scan.
  arrow::Result<std::shared_ptr<arrow::RecordBatch>> WithinBound(
      std::shared_ptr<arrow::RecordBatch> rows, const std::shared_ptr<arrow::Scalar>& bound) {
    const cp::SortKey& key = keys_[0];
    ARROW_ASSIGN_OR_RAISE(auto column, key.target.GetOneOrNone(*rows));
    if (column == nullptr) return rows;
    auto compared = cp::CallFunction(
        key.order == cp::SortOrder::Ascending ? "less_equal" : "greater_equal", {column, bound});
    // A key the comparison kernels do not take (a dictionary, say) is simply not pruned.
    if (!compared.ok()) return rows;
    arrow::Datum keep = *compared;
    if (key.null_placement == cp::NullPlacement::AtStart) {
      // Nulls sort before every value: they are kept (a null comparison would drop them).
      ARROW_ASSIGN_OR_RAISE(keep, cp::CallFunction("coalesce", {keep, arrow::Datum(true)}));
    }
    ARROW_ASSIGN_OR_RAISE(arrow::Datum kept, cp::Filter(rows, keep));
    return kept.record_batch();
  }

  // Whether rows can be pruned against `bound`: not against a null or NaN (every value, or
  // every non-NaN value, would compare as worse), nor for a floating-point key whose NaNs sort
  // first (a NaN compares as false but sorts before the bound).
  bool CanPrune(const arrow::Scalar& bound) const {
    if (!bound.is_valid) return false;
    if (!arrow::is_floating(bound.type->id())) return true;
    if (keys_[0].null_placement == cp::NullPlacement::AtStart) return false;
    if (bound.type->id() == arrow::Type::DOUBLE) {
      return !std::isnan(static_cast<const arrow::DoubleScalar&>(bound).value);
    }
    if (bound.type->id() == arrow::Type::FLOAT) {
      return !std::isnan(static_cast<const arrow::FloatScalar&>(bound).value);
    }
    return false;
  }

  // Sorts what is held and keeps the first `rows_` rows, as one batch.
  arrow::Status KeepBest() {
    if (held_.empty() || sorted_) return arrow::Status::OK();
    ARROW_ASSIGN_OR_RAISE(auto table, arrow::Table::FromRecordBatches(schema_, held_));
    ARROW_ASSIGN_OR_RAISE(auto order, cp::SortIndices(table, cp::SortOptions(keys_)));
    ARROW_ASSIGN_OR_RAISE(arrow::Datum best,
                          cp::Take(table, order->Slice(0, std::min(rows_, order->length()))));
    ARROW_ASSIGN_OR_RAISE(auto batch, best.table()->CombineChunksToBatch());
    held_ = {std::move(batch)};
    held_rows_ = held_[0]->num_rows();
    sorted_ = true;
    if (held_rows_ == rows_) {
      ARROW_ASSIGN_OR_RAISE(auto column, keys_[0].target.GetOneOrNone(*held_[0]));
      if (column != nullptr) {
        ARROW_ASSIGN_OR_RAISE(auto bound, column->GetScalar(rows_ - 1));
        bound_ = CanPrune(*bound) ? std::move(bound) : nullptr;
      }
    }
    return arrow::Status::OK();
  }

  const std::vector<cp::SortKey> keys_;
  const int64_t rows_;
  const int64_t limit_;
  std::shared_ptr<arrow::Schema> schema_;
  std::mutex mutex_;
  std::vector<std::shared_ptr<arrow::RecordBatch>> held_;
  int64_t held_rows_ = 0;
  bool sorted_ = false;                   // held_ is one sorted batch of at most rows_ rows
  std::shared_ptr<arrow::Scalar> bound_;  // the N-th row's first key, once N rows are held
};

}  // namespace

ac::Declaration TopN(ac::Declaration input, std::shared_ptr<arrow::Schema> schema,
                     std::vector<cp::SortKey> keys, int64_t rows) {
  return DeferredSource(
      std::move(schema), [input = std::move(input), keys = std::move(keys), rows]() mutable {
        auto consumer = std::make_shared<TopNConsumer>(std::move(keys), rows);
        ac::Declaration plan = ac::Declaration::Sequence(
            {std::move(input), {"consuming_sink", ac::ConsumingSinkNodeOptions(consumer)}});
        return ac::DeclarationToStatusAsync(std::move(plan)).Then([consumer] {
          return consumer->Rows();
        });
      });
}

}  // namespace sluice::exec
