// The schema records this host knows by type id, with what the runner needs of each: the Arrow
// schema, and a JSONL parser that turns one object into a record batch with errors that name the
// object, the line and the field.
//
// A transform declares its input and output schemas by id; the runner parses a source against
// the first transform's input schema and checks every output against the declared one.
#pragma once

#include <arrow/buffer.h>
#include <arrow/record_batch.h>
#include <arrow/result.h>

#include <memory>
#include <string>
#include <vector>

namespace sluice::exec {

struct ParsedObject {
  std::shared_ptr<arrow::RecordBatch> batch;
  int64_t records = 0;
  int64_t bad_records = 0;
};

struct SchemaEntry {
  std::string type_id;
  std::shared_ptr<arrow::Schema> schema;
  /// Parses JSONL bytes. With skip_bad, bad lines are counted instead of failing. `object` names
  /// the object in errors.
  arrow::Result<ParsedObject> (*parse_jsonl)(const arrow::Buffer& bytes, const std::string& object,
                                             bool skip_bad);
};

/// The entry for a type id, or an error listing the ids this sluice knows.
arrow::Result<const SchemaEntry*> FindSchema(const std::string& type_id);

}  // namespace sluice::exec
