// The plan codec: Fragments as self-contained bytes for worker processes.
//
// Format: the magic line "SLUICE-PLAN/1\n" followed by CBOR. Schemas travel as Arrow IPC schema
// messages, so a decoder needs nothing from the process that encoded. A decoder refuses any
// other magic or version instead of guessing, and treats the bytes as untrusted: every field is
// checked before use.
#pragma once

#include <arrow/result.h>

#include <cstdint>
#include <vector>

#include "plan/fragment.h"

namespace sluice::plan {

inline constexpr char kPlanMagic[] = "SLUICE-PLAN/1\n";

arrow::Result<std::vector<uint8_t>> EncodeFragment(const Fragment& fragment);
arrow::Result<Fragment> DecodeFragment(const uint8_t* data, size_t size);

/// The shape every fragment has: one source first (a scan, or a SQL stage alone), and a sink or
/// exchange only last. DecodeFragment checks it, so a worker never runs an operator without
/// its input.
arrow::Status CheckOperatorOrder(const std::vector<Operator>& ops);

}  // namespace sluice::plan
