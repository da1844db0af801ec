// Fewer rows for the build side of a semi or anti join that crosses a hash exchange: such a
// join asks only whether a key is there, so a key's repeats are bytes the exchange need not
// carry (TPC-H Q4 sends lineitem's order keys, which repeat one to seven times in a row).
#pragma once

#include <arrow/result.h>
#include <arrow/table.h>

#include <memory>
#include <string>
#include <vector>

namespace sluice::exec {

/// Rows of `table` holding every distinct value of `keys` (NULLs equal) at least once, with
/// `table`'s columns. A table of one fixed-width key column first loses every row that repeats
/// the row before it; when that halves it (keys that arrive clustered), that is the answer, a
/// key then being repeated only where its run was broken. Otherwise each key is kept exactly
/// once by hashing, which is the rule for any other table.
arrow::Result<std::shared_ptr<arrow::Table>> DropRepeatedKeys(
    const std::shared_ptr<arrow::Table>& table, const std::vector<std::string>& keys);

}  // namespace sluice::exec
