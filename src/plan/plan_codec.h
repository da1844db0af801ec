// The one plan codec: a task's Fragment (plan/fragment.h) as self-contained bytes for worker
// processes, whether a job or a SQL query compiled it.
//
// Format: the magic line "SLUICE-PLAN/2\n" followed by CBOR: the task's identity, the session
// spec and the plan tree, a map per node. Schemas travel as Arrow IPC schema messages,
// expressions as CBOR trees (expression_codec.h), so a decoder needs nothing from the process
// that encoded. A decoder refuses any other magic or version instead of guessing.
//
// The bytes are untrusted: decoding checks every field, node kind, aggregate function, join
// type, object key and nesting depth, the shape of the tree (a job's operators form one chain
// from a scan; a shuffle or sink write only at the top), and binds every expression against its
// input's schema, so a fragment that decodes is one that can run. The object store is not in
// the plan: tables read the session's store, which the decoding process opens itself.
#pragma once

#include <arrow/result.h>

#include <cstdint>
#include <memory>
#include <vector>

#include "plan/fragment.h"
#include "storage/object_store.h"

namespace sluice::plan {

inline constexpr char kPlanMagic[] = "SLUICE-PLAN/2\n";

arrow::Result<std::vector<uint8_t>> EncodeFragment(const Fragment& fragment);

/// With a null `store`, scans read the store the fragment's session names, opened on first use
/// (none for a plan without table scans).
arrow::Result<Fragment> DecodeFragment(const uint8_t* data, size_t size,
                                       std::shared_ptr<storage::ObjectStore> store = nullptr);

}  // namespace sluice::plan
