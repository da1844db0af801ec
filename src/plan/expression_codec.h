// Arrow compute expressions as CBOR, for the plan codec (plan_codec.h).
//
// Expressions are encoded here, not with arrow::compute::Serialize: Arrow's Deserialize is not
// hardened against damaged bytes (a flipped byte in an option crashed it in our fuzz test), so
// only the option types sluice plans use are accepted, field by field. A call is a map of the
// function name and its arguments, a field is referenced by name, and a literal is a one-value
// IPC stream, validated on reading.
#pragma once

#include <arrow/compute/expression.h>
#include <arrow/result.h>

#include <nlohmann/json.hpp>

namespace sluice::plan {

/// The deepest query nesting the SQL parser accepts (sql_parser.h), and so the bound on every
/// depth the plan codec decodes.
inline constexpr int kMaxQueryNesting = 256;

/// Expressions nest at most this deep in plan bytes.
inline constexpr int kMaxExpressionDepth = 2 * kMaxQueryNesting;

arrow::Result<nlohmann::json> EncodeExpression(const arrow::compute::Expression& e);

/// Refuses unknown functions and options, bad literals and nesting beyond kMaxExpressionDepth.
arrow::Result<arrow::compute::Expression> DecodeExpression(const nlohmann::json& v, int depth = 0);

}  // namespace sluice::plan
