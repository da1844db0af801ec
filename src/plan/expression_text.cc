#include "plan/expression_text.h"

#include <arrow/compute/api.h>
#include <arrow/scalar.h>

#include <cctype>
#include <map>
#include <string>

#include "plan/decimal_kernels.h"
#include "plan/dictionary_kernels.h"

namespace sluice::plan {

namespace {

namespace cp = arrow::compute;

// Arrow's (and our decimal kernels') binary functions that SQL writes as an operator.
const std::map<std::string, std::string>& InfixOperators() {
  static const auto* operators = new std::map<std::string, std::string>{
      {"add", "+"},
      {"add_checked", "+"},
      {kDecimalAddFunction, "+"},
      {"subtract", "-"},
      {"subtract_checked", "-"},
      {kDecimalSubtractFunction, "-"},
      {"multiply", "*"},
      {"multiply_checked", "*"},
      {kDecimalMultiplyFunction, "*"},
      {"divide", "/"},
      {"divide_checked", "/"},
      {"equal", "="},
      {kDecimalEqualFunction, "="},
      {"not_equal", "<>"},
      {kDecimalNotEqualFunction, "<>"},
      {"less", "<"},
      {kDecimalLessFunction, "<"},
      {"less_equal", "<="},
      {kDecimalLessEqualFunction, "<="},
      {"greater", ">"},
      {kDecimalGreaterFunction, ">"},
      {"greater_equal", ">="},
      {kDecimalGreaterEqualFunction, ">="},
      {"and", "AND"},
      {"and_kleene", "AND"},
      {"or", "OR"},
      {"or_kleene", "OR"},
  };
  return *operators;
}

// `nested`: whether the text sits inside an operator, where it needs parentheses to read right.
std::string Text(const cp::Expression& e, bool nested, const ColumnTexts* texts) {
  auto Text = [&](const cp::Expression& part, bool part_nested) {
    return sluice::plan::Text(part, part_nested, texts);
  };
  if (const arrow::Datum* literal = e.literal()) {
    if (!literal->is_scalar()) return e.ToString();
    const arrow::Scalar& scalar = *literal->scalar();
    if (!scalar.is_valid) return "NULL";
    const std::string value = scalar.ToString();
    const arrow::Type::type id = scalar.type->id();
    if (id == arrow::Type::STRING || id == arrow::Type::LARGE_STRING ||
        id == arrow::Type::STRING_VIEW) {
      std::string quoted = "'";
      for (char c : value) quoted += c == '\'' ? std::string("''") : std::string(1, c);
      return quoted + "'";
    }
    return value;
  }
  if (const arrow::FieldRef* ref = e.field_ref()) {
    if (texts != nullptr && ref->name() != nullptr) {
      const auto known = texts->find(*ref->name());
      if (known != texts->end()) {
        return nested && known->second.infix ? "(" + known->second.text + ")" : known->second.text;
      }
    }
    return WithoutColumnId(ref->name() != nullptr ? *ref->name() : ref->ToString());
  }
  const cp::Expression::Call* call = e.call();
  if (call == nullptr) return e.ToString();
  const auto& args = call->arguments;
  const auto infix = InfixOperators().find(call->function_name);
  if (infix != InfixOperators().end() && args.size() == 2) {
    const std::string text = Text(args[0], true) + " " + infix->second + " " + Text(args[1], true);
    return nested ? "(" + text + ")" : text;
  }
  if (call->function_name == "cast" && args.size() == 1) {
    const auto* options = dynamic_cast<const cp::CastOptions*>(call->options.get());
    if (options != nullptr && options->to_type.type != nullptr) {
      return "CAST(" + Text(args[0], false) + " AS " + options->to_type.type->ToString() + ")";
    }
  }
  if (const cp::Expression* body = DictionaryMapBody(*call)) {
    return Text(*body, nested);  // computed per dictionary value, as written
  }
  if (call->function_name == kDecimalFitFunction && args.size() == 1) {
    return Text(args[0], nested);  // a change of precision only
  }
  if (call->function_name == "invert" && args.size() == 1) {
    const std::string text = "NOT " + Text(args[0], true);
    return nested ? "(" + text + ")" : text;
  }
  if ((call->function_name == "is_null" || call->function_name == "is_valid") && args.size() == 1) {
    const std::string text =
        Text(args[0], true) + (call->function_name == "is_null" ? " IS NULL" : " IS NOT NULL");
    return nested ? "(" + text + ")" : text;
  }
  std::string text = call->function_name + "(";
  for (size_t i = 0; i < args.size(); ++i) text += (i > 0 ? ", " : "") + Text(args[i], false);
  return text + ")";
}

}  // namespace

std::string WithoutColumnId(std::string_view name) {
  size_t end = name.size();
  while (end > 0 && std::isdigit(static_cast<unsigned char>(name[end - 1]))) --end;
  if (end > 0 && end < name.size() && name[end - 1] == '#') name = name.substr(0, end - 1);
  return std::string(name);
}

std::string ExpressionText(const cp::Expression& expression, const ColumnTexts* texts) {
  return Text(expression, false, texts);
}

bool IsInfixText(const cp::Expression& expression) {
  const cp::Expression::Call* call = expression.call();
  if (call == nullptr) return false;
  if (const cp::Expression* body = DictionaryMapBody(*call)) return IsInfixText(*body);
  if (call->function_name == kDecimalFitFunction && call->arguments.size() == 1) {
    return IsInfixText(call->arguments[0]);
  }
  const size_t args = call->arguments.size();
  return (InfixOperators().count(call->function_name) > 0 && args == 2) ||
         (call->function_name == "invert" && args == 1) ||
         ((call->function_name == "is_null" || call->function_name == "is_valid") && args == 1);
}

}  // namespace sluice::plan
