// LIKE patterns made of literal text and '%' alone, matched by searching for their pieces in
// order. Arrow's match_like hands any pattern with more than one piece ('%special%requests%',
// TPC-H Q13) to RE2, which was ~19 % of Q13's time; a search for each piece is several times
// cheaper and gives the same answer for such patterns.
#pragma once

#include <arrow/compute/expression.h>
#include <arrow/compute/registry.h>
#include <arrow/status.h>

namespace sluice::plan {

/// match_like of utf8, large_utf8 or string_view with MatchSubstringOptions, as Arrow's, for
/// patterns without '_' or '\' and with ignore_case false; other patterns are an error (the
/// rewrite below never makes such a call).
inline constexpr const char* kLikeFunction = "sluice_match_like";

/// Adds kLikeFunction to `registry`.
arrow::Status RegisterLikeKernels(arrow::compute::FunctionRegistry* registry);

/// `expression` with each match_like whose pattern kLikeFunction takes replaced by it. For the
/// executor: plans keep Arrow's name, so plan bytes do not change.
arrow::compute::Expression WithLikeKernels(const arrow::compute::Expression& expression);

}  // namespace sluice::plan
