// The SQL plan codec: a bound query plan as self-contained bytes, so that a worker process can
// run any piece of it (the next step cuts plans between partial and final aggregates and ships
// the pieces). Format: the magic line "SLUICE-SQL-PLAN/1\n" followed by CBOR; expressions are
// CBOR trees of calls, field names and literals (one-value IPC streams), schemas IPC schema
// messages.
//
// The bytes are untrusted: decoding checks every field, node kind, aggregate function, join
// type, object key and nesting depth, and then binds every expression against its input's
// schema, so a plan that decodes is a plan that can run. The object store is not in the bytes:
// the decoding process reads its own configured store.
#pragma once

#include <arrow/result.h>

#include <cstdint>
#include <memory>
#include <vector>

#include "sql/binder.h"
#include "storage/object_store.h"

namespace sluice::sql {

inline constexpr char kQueryPlanMagic[] = "SLUICE-SQL-PLAN/1\n";

arrow::Result<std::vector<uint8_t>> EncodeQueryPlan(const BoundQuery& query);
/// The same for a subtree of a plan (a distributed query's stage) with its output names.
arrow::Result<std::vector<uint8_t>> EncodeQueryPlan(const PlanNode& plan,
                                                    const std::vector<std::string>& names);
arrow::Result<BoundQuery> DecodeQueryPlan(const uint8_t* data, size_t size,
                                          std::shared_ptr<storage::ObjectStore> store);

}  // namespace sluice::sql
