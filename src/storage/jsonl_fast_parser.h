// The fast path of ParseJsonl (storage/jsonl_parser.h): JSONL parsed by rapidjson's SAX reader
// (Debian's rapidjson-dev) straight into Arrow builders of the schema's types, in place and with
// SSE2 string scans. Arrow's JSON reader drives its own rapidjson through a stream that it scans a
// byte at a time, and builds each column twice (raw values, then the typed array); on the
// conversation pipeline at 1,000 objects (201 MB) it was 19 % of the job's CPU.
//
// It is all or nothing, and it never decides what is an error: on anything short of valid UTF-8
// lines that each hold exactly one JSON object, every field of it in the schema and of the kind
// Arrow's reader takes for the field's type, with no null where the schema allows none, it
// declines, and ParseJsonl reads the object with Arrow's reader, which finds and names the bad
// line as before. What it accepts it reads to exactly what Arrow's reader makes of it: numbers
// and timestamps are parsed from their text by Arrow's own parsers (tested side by side).
//
// (Not simdjson: the pyarrow wheel's libparquet exports its own, newer simdjson under the same
// names, and the dynamic linker binds ours to it.)
//
// Thread-safety: stateless; call from any thread.
#pragma once

#include <arrow/buffer.h>
#include <arrow/record_batch.h>
#include <arrow/type_fwd.h>

#include <memory>

namespace sluice::storage {

/// Whether the fast path reads columns of `schema`: booleans, integers, floats, doubles,
/// strings, large strings and timestamps, in structs and lists of them.
bool JsonlFastPathSupports(const arrow::Schema& schema);

/// The rows of JSONL `bytes` (blank lines ignored) with exactly `schema`, or null where the fast
/// path declines (above).
std::shared_ptr<arrow::RecordBatch> TryParseJsonlFast(const arrow::Buffer& bytes,
                                                      const std::shared_ptr<arrow::Schema>& schema);

}  // namespace sluice::storage
