#include "exec/named_fragment.h"

#include <arrow/record_batch.h>
#include <arrow/util/future.h>

#include <utility>

#include "common/status.h"

namespace sluice::exec {

namespace {

namespace ds = arrow::dataset;

class NamedFragment : public ds::FileFragment {
 public:
  NamedFragment(std::shared_ptr<ds::FileFragment> inner, std::string context)
      : ds::FileFragment(inner->source(), inner->format(), inner->partition_expression(),
                         /*physical_schema=*/nullptr),
        inner_(std::move(inner)),
        context_(std::move(context)) {}

  arrow::Result<ds::RecordBatchGenerator> ScanBatchesAsync(
      const std::shared_ptr<ds::ScanOptions>& options) override {
    auto batches = inner_->ScanBatchesAsync(options);
    if (!batches.ok()) return AddContext(batches.status(), context_);
    return [next = *std::move(batches), context = context_]() {
      return next().Then(
          [](const std::shared_ptr<arrow::RecordBatch>& batch) { return batch; },
          [context](const arrow::Status& st) -> arrow::Result<std::shared_ptr<arrow::RecordBatch>> {
            return AddContext(st, context);
          });
    };
  }

  arrow::Future<std::optional<int64_t>> CountRows(
      arrow::compute::Expression predicate,
      const std::shared_ptr<ds::ScanOptions>& options) override {
    return inner_->CountRows(std::move(predicate), options);
  }

  std::string type_name() const override { return inner_->type_name(); }

 protected:
  arrow::Result<std::shared_ptr<arrow::Schema>> ReadPhysicalSchemaImpl() override {
    auto schema = inner_->ReadPhysicalSchema();
    if (!schema.ok()) return AddContext(schema.status(), context_);
    return schema;
  }

 private:
  std::shared_ptr<ds::FileFragment> inner_;
  std::string context_;
};

}  // namespace

std::shared_ptr<ds::FileFragment> NameReadErrors(std::shared_ptr<ds::FileFragment> fragment,
                                                 const std::string& table) {
  std::string context = "table '" + table + "', file '" + fragment->source().path() + "'";
  return std::make_shared<NamedFragment>(std::move(fragment), std::move(context));
}

}  // namespace sluice::exec
