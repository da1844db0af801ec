// A guess at how many bytes a row of some columns takes, for choices that weigh memory before
// any row exists: which side of a join to hash, how far a scan reads ahead.
#pragma once

#include <arrow/type_fwd.h>

namespace sluice::plan {

/// The bytes a string or other variable-width value is taken to hold.
inline constexpr double kVariableWidthBytes = 32;

/// The bytes of one row of `fields`: fixed-width types by their width (a boolean as one byte),
/// others at kVariableWidthBytes; at least 1.
double GuessRowBytes(const arrow::FieldVector& fields);

}  // namespace sluice::plan
