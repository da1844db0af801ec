#include "plan/unsigned_comparisons.h"

#include <arrow/compute/api_scalar.h>
#include <arrow/compute/cast.h>
#include <arrow/type.h>

#include <set>
#include <string>
#include <utility>
#include <vector>

namespace sluice::plan {

namespace {

namespace cp = arrow::compute;

// The type of `e` over `schema`, or null where it does not bind.
std::shared_ptr<arrow::DataType> TypeOf(const cp::Expression& e, const arrow::Schema& schema) {
  if (e.type() != nullptr) return e.type()->GetSharedPtr();
  auto bound = e.Bind(schema);
  return bound.ok() && bound->type() != nullptr ? bound->type()->GetSharedPtr() : nullptr;
}

}  // namespace

cp::Expression WithExactUnsignedComparisons(const cp::Expression& expression,
                                            const arrow::Schema& schema) {
  const cp::Expression::Call* call = expression.call();
  if (call == nullptr) return expression;
  std::vector<cp::Expression> args;
  args.reserve(call->arguments.size());
  for (const auto& a : call->arguments) args.push_back(WithExactUnsignedComparisons(a, schema));
  static const std::set<std::string> kComparisons = {"equal",      "not_equal", "less",
                                                     "less_equal", "greater",   "greater_equal"};
  if (args.size() == 2 && kComparisons.count(call->function_name) != 0) {
    const auto a = TypeOf(args[0], schema);
    const auto b = TypeOf(args[1], schema);
    if (a != nullptr && b != nullptr) {
      const bool a64 = a->id() == arrow::Type::UINT64;
      const bool b64 = b->id() == arrow::Type::UINT64;
      if ((a64 && arrow::is_signed_integer(b->id())) ||
          (b64 && arrow::is_signed_integer(a->id()))) {
        const auto exact = cp::CastOptions::Safe(arrow::decimal128(20, 0));
        for (auto& arg : args) arg = cp::call("cast", {std::move(arg)}, exact);
      } else if ((arrow::is_integer(a->id()) && arrow::is_floating(b->id())) ||
                 (arrow::is_floating(a->id()) && arrow::is_integer(b->id()))) {
        // The integer as its nearest double: Arrow's implicit cast is checked, and refused one
        // past 2^53.
        auto nearest = cp::CastOptions::Safe(arrow::float64());
        nearest.allow_float_truncate = true;
        for (size_t i = 0; i < 2; ++i) {
          if ((i == 0 ? a : b)->id() != arrow::Type::DOUBLE) {
            args[i] = cp::call("cast", {std::move(args[i])}, nearest);
          }
        }
      }
    }
  }
  return cp::call(call->function_name, std::move(args), call->options);
}

}  // namespace sluice::plan
