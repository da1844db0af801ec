// Subexpressions that several outputs of one projection compute alike. TPC-H Q1 computes
// l_extendedprice * (1 - l_discount) for two sums, once alone and once inside a larger product;
// the executor computes such a part once, in a projection before the one that reads it.
#pragma once

#include <arrow/compute/expression.h>

#include <string>
#include <vector>

namespace sluice::plan {

/// Whether `expression`'s value depends on its arguments alone, so that computing it once for
/// two places gives what each would: not random(), and not a library's function, which is not
/// known to be so.
bool DependsOnArgumentsAlone(const arrow::compute::Expression& expression);

/// `expressions`, with each call that occurs more than once among them replaced by a reference
/// to a column of `shared`: shared[i] computes column names[i]. The largest repeated parts are
/// taken first. Parts under a conditional (if_else, case_when, coalesce, choose) stay where they
/// are, since a branch that is not taken may not be evaluated alike everywhere; constant parts
/// and functions that do not depend on their arguments alone stay too. `taken`: names the
/// columns must not have.
struct CommonSubexpressions {
  std::vector<arrow::compute::Expression> expressions;
  std::vector<arrow::compute::Expression> shared;
  std::vector<std::string> names;
};
CommonSubexpressions FactorCommonSubexpressions(
    const std::vector<arrow::compute::Expression>& expressions,
    const std::vector<std::string>& taken);

}  // namespace sluice::plan
