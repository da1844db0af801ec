// JSONL objects parsed against any Arrow schema: the source format of a job whose first stage
// declares its input schema.
//
// One JSON object per line, blank lines ignored. Every field of a line must be in the schema
// (at any depth); a field the schema marks non-nullable must be present and not null, unless
// it sits under a null parent. Lines must be valid UTF-8. A fast path (jsonl_fast_parser.h)
// reads a good object; where it declines, Arrow's JSON reader parses the whole object at once;
// when that fails, or finds a problem it does not report itself, a strict pass
// bisects the object's lines with the same reader until it finds each bad line, so every error
// names the object and the line.
//
// Thread-safety: stateless; call from any thread.
#pragma once

#include <arrow/buffer.h>
#include <arrow/record_batch.h>
#include <arrow/result.h>
#include <arrow/type_fwd.h>

#include <cstdint>
#include <memory>
#include <string>

namespace sluice::storage {

struct ParsedJsonl {
  /// The good lines, in line order, with exactly `schema` (fields, flags and metadata).
  std::shared_ptr<arrow::RecordBatch> batch;
  int64_t records = 0;
  /// Lines dropped with skip_bad (always 0 without it).
  int64_t bad_records = 0;
};

/// Parses JSONL `bytes` against `schema`. `object` names the object in errors, which read
/// "object 'raw/a.jsonl' line 7: ...". Without skip_bad the first bad line fails the call; with
/// it, bad lines are counted and dropped.
arrow::Result<ParsedJsonl> ParseJsonl(const arrow::Buffer& bytes,
                                      const std::shared_ptr<arrow::Schema>& schema,
                                      const std::string& object, bool skip_bad);

/// ParseJsonl without its fast path: Arrow's reader alone, which tests compare the fast path with.
arrow::Result<ParsedJsonl> ParseJsonlWithArrowReader(const arrow::Buffer& bytes,
                                                     const std::shared_ptr<arrow::Schema>& schema,
                                                     const std::string& object, bool skip_bad);

}  // namespace sluice::storage
