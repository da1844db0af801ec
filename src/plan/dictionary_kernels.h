// Expressions over dictionary-encoded strings, evaluated once per dictionary value instead of
// once per row. A scan under a filter keeps Parquet's dictionary columns as dictionaries, so
// `l_returnflag = 'R'` compares three strings per row group and takes the answers by code,
// instead of decoding six million strings, comparing each and filtering them.
#pragma once

#include <arrow/compute/expression.h>
#include <arrow/compute/registry.h>
#include <arrow/status.h>
#include <arrow/type_fwd.h>

namespace sluice::plan {

/// dictionary_map(d) with options holding an expression over d's column name: that expression's
/// value for each row of d, computed per dictionary value (and once for NULL) and taken by code.
/// Gives exactly what the expression gives on the decoded column.
inline constexpr const char* kDictionaryMapFunction = "sluice_dictionary_map";

/// The expression a dictionary_map call computes per value (over its column's name), or null for
/// any other call.
const arrow::compute::Expression* DictionaryMapBody(const arrow::compute::Expression::Call& call);

/// intern(s) -> int32 and intern_lookup(id) -> string, with options holding one interner: equal
/// strings get equal ids, so a GROUP BY of ids groups as one of the strings, and hashes and
/// compares 4 bytes instead of a string per row. Under dictionary_map, intern runs once per
/// dictionary value. NULL stays NULL.
inline constexpr const char* kInternFunction = "sluice_intern";
inline constexpr const char* kInternLookupFunction = "sluice_intern_lookup";

/// Options for the two functions above, with a new interner of their own.
std::shared_ptr<arrow::compute::FunctionOptions> MakeInternOptions();

/// Adds the functions above to `registry`.
arrow::Status RegisterDictionaryKernels(arrow::compute::FunctionRegistry* registry);

/// `expression` evaluable over `schema`, where some columns are dictionaries that the plan types
/// as their values: each largest part that reads one dictionary column and no other becomes
/// dictionary_map of it, and any other reference to a dictionary column is decoded by a cast.
/// Parts that call a non-deterministic or library function are evaluated per row. For the
/// executor only: plans keep their own expressions.
arrow::compute::Expression WithDictionaryMaps(const arrow::compute::Expression& expression,
                                              const arrow::Schema& schema);

}  // namespace sluice::plan
