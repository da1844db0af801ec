#include "sql/binder.h"

#include <arrow/api.h>
#include <arrow/compute/api.h>
#include <arrow/compute/expression.h>

#include <algorithm>
#include <chrono>
#include <deque>
#include <map>
#include <optional>
#include <regex>
#include <set>
#include <utility>

#include "plan/compute_init.h"
#include "plan/conjuncts.h"
#include "plan/decimal_kernels.h"
#include "plan/library_functions.h"
#include "plan/string_agg.h"
#include "sluice/schemas/codec.hpp"
#include "sql/interval_text.h"
#include "sql/named_windows.h"
#include "sql/optimizer/cardinality.h"
#include "sql/optimizer/conjuncts.h"
#include "sql/optimizer/constant_folding.h"
#include "sql/optimizer/join_order.h"
#include "sql/optimizer/optimizer.h"
#include "sql/optimizer/physical_choices.h"
#include "sql/relation.h"
#include "sql/sql_parser.h"
#include "sql/type_resolution.h"

namespace sluice::sql {

namespace {

namespace cp = arrow::compute;
using json = nlohmann::json;

constexpr const char* kAggregates[] = {
    "sum",      "avg",      "count",   "min",      "max",     "stddev", "stddev_samp", "stddev_pop",
    "variance", "var_samp", "var_pop", "bool_and", "bool_or", "every",  "string_agg"};

// A final step's function in the binder only: the sum of a group's distinct values, which
// DistinctAggregates plans as a sum over the values made distinct below it.
constexpr char kSumDistinct[] = "sum_distinct";

// Keys the binder sets on the UNION ALLs it writes for VALUES: on all (errors say VALUES), and
// on those below the top one.
constexpr char kValuesUnion[] = "sluice_values";
constexpr char kValuesUnionInner[] = "sluice_values_inner";
// The column ValuesAsUnion adds last to each row of several: its number, which the top UNION ALL
// sorts by and drops (the rows come out in the order written, as in PostgreSQL).
constexpr char kValuesRow[] = "sluice_values_row";

// Parse-tree nodes as libpg_query writes them, for the queries the binder writes itself, each
// at the SQL position `loc` of what it stands for (errors in them point there).
struct TreeWriter {
  int loc;
  static json Name(const std::string& s) { return json{{"String", {{"sval", s}}}}; }
  json Column(const std::vector<std::string>& parts) const {
    json fields = json::array();
    for (const auto& p : parts) fields.push_back(Name(p));
    return json{{"ColumnRef", {{"fields", fields}, {"location", loc}}}};
  }
  // fn(arg)
  json Call(const std::string& fn, json arg) const {
    return json{{"FuncCall",
                 {{"funcname", json::array({Name(fn)})},
                  {"args", json::array({std::move(arg)})},
                  {"location", loc}}}};
  }
  // count(*) without an argument, else count(arg).
  json Count(std::optional<json> arg) const {
    json body = {{"funcname", json::array({Name("count")})}, {"location", loc}};
    if (arg) {
      body["args"] = json::array({*arg});
    } else {
      body["agg_star"] = true;
    }
    return json{{"FuncCall", body}};
  }
  // SELECT value FROM (subselect) AS alias(v)
  json SelectFrom(json value, const json& subselect, const std::string& alias) const {
    return json{
        {"targetList",
         json::array({json{{"ResTarget", {{"val", std::move(value)}, {"location", loc}}}}})},
        {"fromClause",
         json::array({json{
             {"RangeSubselect",
              {{"subquery", {{"SelectStmt", subselect}}},
               {"alias", {{"aliasname", alias}, {"colnames", json::array({Name("v")})}}}}}}})},
        {"op", "SETOP_NONE"}};
  }
};

// A cast to `type` as SQL casts: checked, except that an integer becomes the nearest double, as
// PostgreSQL and DuckDB cast, compare and compute with one (an int64 past 2^53 has no exact one;
// Arrow's safe cast refused it, and CAST(i AS double), i + 0.5 and i = d failed).
cp::CastOptions CastAs(const arrow::TypeHolder& type) {
  cp::CastOptions options = cp::CastOptions::Safe(type);
  options.allow_float_truncate = arrow::is_floating(type.id());
  return options;
}

bool IsDistinctStep(const std::string& function) {
  return function == "count_distinct" || function == kSumDistinct;
}

bool IsAggregateName(const std::string& name) {
  for (const char* a : kAggregates) {
    if (name == a) return true;
  }
  return false;
}

// A node's list member, or an empty list. Unlike json::value(), this does not copy the
// member, which for an expression tree is the whole subtree (quadratic, and deep on the stack).
const json& ListMember(const json& node, const char* key) {
  static const json kEmpty = json::array();
  auto it = node.find(key);
  return it == node.end() ? kEmpty : *it;
}

// The last String of a name list (funcname, typeName.names, ColumnRef.fields).
std::string LastName(const json& names) {
  std::string out;
  for (const auto& n : names) {
    if (n.contains("String")) out = n.at("String").value("sval", "");
  }
  return out;
}

size_t EditDistance(const std::string& a, const std::string& b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t prev = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t cur = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, prev + (a[i - 1] == b[j - 1] ? 0 : 1)});
      prev = cur;
    }
  }
  return row[b.size()];
}

// A date ± interval literal is folded here: PostgreSQL interval arithmetic on dates
// (months clamp to the month's last day) is not an Arrow kernel.
using schemas::internal::CivilFromDays;
using schemas::internal::DaysFromCivil;

int32_t AddInterval(int32_t date, const Interval& iv, int sign) {
  return static_cast<int32_t>(plan::DaysPlusMonths(date, int64_t{sign} * iv.months) +
                              sign * iv.days);
}

// A parse tree without its "location" fields: two spellings of one expression compare equal.
json WithoutLocations(const json& node) {
  if (node.is_array()) {
    json out = json::array();
    for (const auto& x : node) out.push_back(WithoutLocations(x));
    return out;
  }
  if (!node.is_object()) return node;
  json out = json::object();
  for (auto it = node.begin(); it != node.end(); ++it) {
    if (it.key() != "location") out[it.key()] = WithoutLocations(it.value());
  }
  return out;
}

// Whether a select list or HAVING clause calls an aggregate of this query level (a subquery's
// aggregates are its own).
bool ContainsAggregate(const json& node, const FunctionResolver& functions) {
  if (node.is_array()) {
    return std::any_of(node.begin(), node.end(),
                       [&](const json& x) { return ContainsAggregate(x, functions); });
  }
  if (!node.is_object()) return false;
  for (auto it = node.begin(); it != node.end(); ++it) {
    if (it.key() == "SubLink") continue;
    // sum(x) OVER (...) is a window function, which does not group its query.
    if (it.key() == "FuncCall" && it.value().is_object() && !it.value().contains("over")) {
      const std::string name = LastName(ListMember(it.value(), "funcname"));
      if (IsAggregateName(name)) return true;
      if (functions) {
        auto found = functions(name);
        if (found.ok() && found->has_value() &&
            (*found)->signature.kind == artifact::FunctionSignature::Kind::kAggregate) {
          return true;
        }
      }
    }
    if (ContainsAggregate(it.value(), functions)) return true;
  }
  return false;
}

// The operands of a top-level AND in a parse tree.
void SplitAnd(const json& node, std::vector<const json*>* out) {
  if (node.contains("BoolExpr") && node.at("BoolExpr").value("boolop", "") == "AND_EXPR") {
    for (const auto& a : node.at("BoolExpr").at("args")) SplitAnd(a, out);
    return;
  }
  out->push_back(&node);
}

// State shared by every query level of one statement.
struct Context {
  const std::string& sql;
  const TableResolver& resolve;
  const FunctionResolver& functions;
  int next_id = 0;
  /// Digests of the function libraries called so far.
  std::set<std::string> libraries;
  std::string NewId(const std::string& base) { return base + "#" + std::to_string(next_id++); }
};

// What a subquery is bound for: its shape and how the outer query joins it.
enum class Purpose { kQuery, kScalar, kExists };

// A Filter over `input`, kept even when `conjuncts` is empty: the join_order pass finds a query
// level's joins under it (join_order.h).
std::unique_ptr<PlanNode> LevelFilter(std::unique_ptr<PlanNode> input,
                                      const std::vector<cp::Expression>& conjuncts) {
  auto f = plan::MakeNode(PlanNode::Kind::kFilter, std::move(input));
  f->predicate = conjuncts.empty()       ? cp::literal(true)
                 : conjuncts.size() == 1 ? conjuncts[0]
                                         : cp::and_(conjuncts);
  return f;
}

// The FROM items of one query level as a join set, which the join_order pass orders; `result`
// receives what it learns.
std::unique_ptr<PlanNode> JoinSet(std::vector<Relation> items,
                                  std::shared_ptr<plan::JoinSetResult> result) {
  auto set = plan::MakeNode(PlanNode::Kind::kJoinSet);
  for (auto& r : items) {
    set->item_names.push_back(r.columns.empty() ? "" : r.columns[0].qualifier);
    set->item_cardinalities.push_back(std::move(r.cardinality));
    set->items.push_back(std::move(r.plan));
  }
  set->join_set = std::move(result);
  return set;
}

// The joined rows of a level once join_order has ordered it.
arrow::Result<const plan::JoinSetResult*> Ordered(const plan::JoinSetResult& result) {
  if (!result.ready) {
    return arrow::Status::Invalid("internal: an estimate read before its joins were ordered");
  }
  return &result;
}

// Dates as day numbers and back: Arrow casts date32 to and from int32 without a copy.
cp::Expression DateToDays(const cp::Expression& date) {
  return cp::call("cast", {date}, CastAs(arrow::int32()));
}
// `s` with its UTF-8 characters in reverse order (each character's bytes kept in order).
std::string ReverseUtf8(const std::string& s) {
  std::string out;
  out.reserve(s.size());
  size_t end = s.size();
  while (end > 0) {
    size_t begin = end - 1;
    while (begin > 0 && (static_cast<unsigned char>(s[begin]) & 0xC0) == 0x80) --begin;
    out.append(s, begin, end - begin);
    end = begin;
  }
  return out;
}

cp::Expression DaysToDate(const cp::Expression& days) {
  return cp::call("cast", {cp::call("cast", {days}, CastAs(arrow::int32()))},
                  CastAs(arrow::date32()));
}

// `k` times `times` (an int64 expression), or `k` where there is none: an interval's field
// scaled by its multiplier (ts + n * interval).
cp::Expression Scaled(const std::optional<cp::Expression>& times, int64_t k) {
  return times ? cp::call("multiply_checked", {*times, cp::literal(k)}) : cp::literal(k);
}

// ts +/- an interval (`sign` 1 or -1) for a timestamp of `type`: the months move its date as
// they move a date (a month's last day where the day does not exist), keeping the time of day;
// then the days move it by 24 hours each, as PostgreSQL adds an interval. `times`, where given,
// is an int64 expression that multiplies every field of the interval (ts + n * interval).
[[gnu::noinline]] cp::Expression TimestampPlusInterval(
    cp::Expression ts, const std::shared_ptr<arrow::DataType>& type, const Interval& iv, int sign,
    const std::optional<cp::Expression>& times = std::nullopt) {
  const auto unit = static_cast<const arrow::TimestampType&>(*type).unit();
  const int32_t months = iv.months;
  const int32_t days = iv.days;
  // `n` times a constant, as an int64 expression.
  auto scaled = [&](int64_t n) { return Scaled(times, n); };
  if (months != 0) {
    const cp::Expression date = cp::call("cast", {ts}, CastAs(arrow::date32()));
    const cp::Expression time_of_day =
        cp::call("subtract_checked", {ts, cp::call("cast", {date}, CastAs(type))});
    const cp::Expression moved =
        cp::call(plan::kAddMonthsFunction, {date, scaled(static_cast<int64_t>(sign) * months)});
    ts = cp::call("add_checked", {cp::call("cast", {moved}, CastAs(type)), time_of_day});
  }
  // Then the days and the time, in the timestamp's unit (a second's fraction is dropped for a
  // timestamp in seconds or milliseconds that cannot hold it, as a cast would).
  const int64_t per_day = unit == arrow::TimeUnit::SECOND  ? 86400
                          : unit == arrow::TimeUnit::MILLI ? int64_t{86400} * 1000
                          : unit == arrow::TimeUnit::MICRO ? int64_t{86400} * 1000000
                                                           : int64_t{86400} * 1000000000;
  const int64_t time = unit == arrow::TimeUnit::SECOND  ? iv.micros / 1000000
                       : unit == arrow::TimeUnit::MILLI ? iv.micros / 1000
                       : unit == arrow::TimeUnit::MICRO ? iv.micros
                                                        : iv.micros * 1000;
  const int64_t shift = int64_t{days} * per_day + time;
  if (shift == 0) return ts;
  if (times) {
    const cp::Expression duration =
        cp::call("cast", {scaled(shift)}, CastAs(arrow::duration(unit)));
    return cp::call(sign > 0 ? "add_checked" : "subtract_checked", {ts, duration});
  }
  return cp::call(sign > 0 ? "add_checked" : "subtract_checked",
                  {ts, cp::literal(std::make_shared<arrow::DurationScalar>(shift, unit))});
}

class Binder {
 public:
  // `parent` is the query a subquery may correlate with; `cte_parent` is where WITH names are
  // looked up next (a derived table sees the CTEs but cannot correlate).
  Binder(Context& ctx, Binder* parent, Binder* cte_parent)
      : ctx_(ctx), sql_(ctx.sql), parent_(parent), cte_parent_(cte_parent) {}

  arrow::Result<Relation> Bind(const json& select, Purpose purpose);

  // Output names of the query just bound (the top level's result column names).
  const std::vector<std::string>& output_names() const { return output_names_; }
  // For Purpose::kScalar: the outer columns the subquery's correlated equalities read.
  const std::vector<std::string>& correlation_outer() const { return correlation_outer_; }
  // For Purpose::kScalar: the result is a bare count(), 0 where no group joins.
  bool count_result() const { return count_result_; }
  // For Purpose::kExists: the conditions that read the outer query.
  const std::vector<cp::Expression>& correlated() const { return correlated_; }
  int outer_references() const { return outer_refs_; }
  // Whether every condition on the outer query is `own column = outer column`: those the
  // decorrelate pass can make join keys of through projections and aggregates.
  bool CorrelatedByKeysOnly() const {
    const std::set<std::string> own = OwnColumns();
    for (const auto& c : correlated_) {
      if (!InnerOuterEquality(c, own)) return false;
    }
    return true;
  }
  bool aggregated() const { return aggregated_; }
  std::set<std::string> OwnColumns() const {
    std::set<std::string> own;
    for (const auto& c : columns_) own.insert(c.id());
    return own;
  }

 private:
  enum class Scope { kRow, kAggregated };

  // The SQL offset of a node, looking inside a {"NodeType": {...}} wrapper.
  static int Location(const json& node) {
    if (!node.is_object()) return -1;
    if (node.contains("location")) return node.value("location", -1);
    // A SELECT has no location of its own: point at its first select-list item.
    if (node.contains("targetList") && node.at("targetList").is_array() &&
        !node.at("targetList").empty()) {
      return Location(node.at("targetList").at(0));
    }
    if (node.size() == 1 && node.begin().value().is_object()) {
      return node.begin().value().value("location", -1);
    }
    return -1;
  }

  arrow::Status Error(const json& node, const std::string& message) const {
    const int location = Location(node);
    if (location < 0) return arrow::Status::Invalid(message);
    return arrow::Status::Invalid(message, " (", Position(sql_, location), ")");
  }
  arrow::Status Unsupported(const json& node, const std::string& what) const {
    const int location = Location(node);
    const std::string where = location >= 0 ? " (" + Position(sql_, location) + ")" : "";
    return arrow::Status::NotImplemented("not supported: ", what, where);
  }

  // FROM
  struct FromItems {
    std::vector<Relation> relations;
    std::vector<const json*> conditions;  // ON clauses of inner joins, planned with WHERE
  };
  arrow::Status BindFrom(const json& item, FromItems* out);
  arrow::Result<Relation> BindTable(const json& range_var);
  static Relation ConstantRow();
  arrow::Result<Relation> BindDerived(const json& select, const std::string& alias,
                                      const json& colnames, const json& node);
  arrow::Result<Relation> BindOuterJoin(const json& join);
  // A USING or NATURAL join's condition, `l.k = r.k AND ...`, over the columns_ the join's left
  // side added in [left, right) and its right side in [right, end). The side that is not kept
  // (`keep_right`: a right join's left) has those columns merged away; the kept side's come
  // first, in the USING list's order, as SELECT * lists them.
  // `pairs` (optional) gets each USING name's two columns, left first.
  arrow::Result<const json*> UsingCondition(
      const json& join, size_t left, size_t right, size_t end, bool keep_right,
      std::vector<std::pair<ColumnInfo, ColumnInfo>>* pairs = nullptr);
  arrow::Result<Relation> Combine(FromItems items);
  void AddColumns(const Relation& r) {
    for (const auto& c : r.columns) {
      columns_.push_back(c);
      columns_.back().ordinal = columns_.size();
      row_fields_.push_back(c.field);
    }
    row_schema_ = nullptr;
  }
  const json* FindCte(const std::string& name, Binder** owner);

  // ORDER BY and LIMIT/OFFSET over `plan`, whose outputs are `out_ids` (SQL `names`). An ORDER BY
  // expression that is no output column is computed by `main`, the select list's projection;
  // with none (DISTINCT, a set operation) it is the error `refusal`.
  arrow::Result<std::unique_ptr<PlanNode>> OrderAndLimit(const json& select,
                                                         std::unique_ptr<PlanNode> plan,
                                                         const std::vector<std::string>& names,
                                                         const std::vector<std::string>& out_ids,
                                                         bool top, Scope out_scope, PlanNode* main,
                                                         const char* refusal);
  // UNION, INTERSECT and EXCEPT.
  arrow::Result<Relation> BindSetOperation(const json& select, bool top);

  // WHERE
  arrow::Status BindWhereCondition(const json& node, std::vector<cp::Expression>* local);
  arrow::Status BindExists(const json& sublink, bool negated, std::vector<cp::Expression>* local);
  arrow::Status BindIn(const json& sublink, bool negated, std::vector<cp::Expression>* local);
  arrow::Result<cp::Expression> ScalarSubquery(const json& sublink, Scope scope);
  // EXISTS or IN inside an expression (under OR, in the select list): counts of the subquery's
  // matching rows, as correlated scalar subqueries.
  arrow::Result<cp::Expression> SubqueryTest(const json& sublink, Scope scope);
  // An uncorrelated IN subquery's counts of rows and of non-NULL values, as scalar subqueries.
  struct RowCounts {
    cp::Expression rows, values;
  };
  // `what` names the construct, in the error for a correlated one.
  arrow::Result<RowCounts> SubqueryCounts(const json& sublink, const std::string& what,
                                          Scope scope);
  // x op ALL (q) and x op ANY (q) for a comparison op other than IN's and NOT IN's (= ANY and
  // <> ALL), from q's counts and its least and greatest value.
  arrow::Result<cp::Expression> QuantifiedComparison(const json& sublink, Scope scope);
  // <> ALL (q) as NOT IN (q) reads it, or = ANY (q) as IN: the same sublink as IN's.
  static json AsInSublink(const json& sublink);
  // VALUES (a, b), (c, d) as PostgreSQL names its columns (column1, column2, ...): a UNION ALL
  // of one-row SELECTs, paired up as a balanced tree (binding recurses once per level), with
  // the statement's ORDER BY and LIMIT.
  arrow::Result<json> ValuesAsUnion(const json& values);
  // The scalar subquery `select`, written by the binder at SQL position `loc`.
  arrow::Result<cp::Expression> SynthesizedScalar(json select, int loc, Scope scope);
  // Parse-tree nodes the binder writes itself (SubqueryTest's subqueries), kept while bound.
  std::deque<json> synthesized_;
  // `plan` under each of `joins` (kDependentJoin nodes without their input), in order.
  static std::unique_ptr<PlanNode> Stack(std::unique_ptr<PlanNode> plan,
                                         std::vector<std::unique_ptr<PlanNode>>* joins) {
    for (auto& j : *joins) {
      j->input = std::move(plan);
      plan = std::move(j);
    }
    joins->clear();
    return plan;
  }

  // Expressions
  arrow::Result<cp::Expression> Expr(const json& node, Scope scope);
  arrow::Result<cp::Expression> Column(const json& ref, Scope scope);
  arrow::Result<cp::Expression> Constant(const json& a_const);
  // CASE branches and COALESCE arguments: a NULL or integer literal takes the others' type
  // (case_when and coalesce want one type).
  arrow::Status UnifyBranches(std::vector<cp::Expression>* values, Scope scope, const json& node);
  // An integer A_Const's value. libpg_query 15-4.0's JSON writes zero and negative integers as
  // an empty "ival" object (-5 reads as {}), so those are read back from the SQL text.
  arrow::Result<int64_t> IntConstant(const json& a_const) const;
  arrow::Result<cp::Expression> Operator(const json& a_expr, Scope scope);
  // a IS [NOT] DISTINCT FROM b (`kind` AEXPR_DISTINCT or AEXPR_NOT_DISTINCT).
  arrow::Result<cp::Expression> DistinctFrom(const std::string& kind, const json& e, Scope scope);
  // CASE's condition `c` of branch `when` (compared with `subject` in CASE x WHEN v), as
  // case_when reads it.
  arrow::Result<cp::Expression> WhenCondition(const json& when, cp::Expression c,
                                              const std::optional<cp::Expression>& subject,
                                              Scope scope);
  arrow::Result<cp::Expression> BinaryOperator(const std::string& op, const json& e,
                                               cp::Expression l, cp::Expression r, Scope scope);
  arrow::Result<cp::Expression> Function(const json& call, Scope scope);
  // A scalar function of its bound arguments. Kept out of Function, which recurses through
  // the arguments: this frame is large, and nested calls must not each carry it.
  arrow::Result<cp::Expression> ScalarFunction(const json& call, const std::string& name,
                                               std::vector<cp::Expression> bound, Scope scope);
  // The string, math and date functions beyond ScalarFunction's first few.
  arrow::Result<cp::Expression> MoreFunctions(const json& call, const std::string& name,
                                              std::vector<cp::Expression> bound, Scope scope);
  // now() and CURRENT_TIMESTAMP: the moment the query is bound, in UTC.
  static cp::Expression Now() {
    const auto micros = std::chrono::duration_cast<std::chrono::microseconds>(
                            std::chrono::system_clock::now().time_since_epoch())
                            .count();
    return cp::literal(std::make_shared<arrow::TimestampScalar>(
        micros, arrow::timestamp(arrow::TimeUnit::MICRO, "UTC")));
  }
  arrow::Result<cp::Expression> Cast(const json& cast, Scope scope);
  arrow::Result<Interval> IntervalLiteral(const json& cast);
  // `l` +/- `iv` (op "+" or "-"), a date or timestamp, with every field of the interval times
  // `times` where given; `e` is the expression, for errors.
  arrow::Result<cp::Expression> PlusInterval(const json& e, const std::string& op, cp::Expression l,
                                             const Interval& iv,
                                             const std::optional<cp::Expression>& times,
                                             Scope scope);
  arrow::Result<cp::Expression> Aggregate(const json& call);
  // Whether an ORDER BY key (a SortBy body) sorts descending: DESC, or USING >.
  arrow::Result<bool> Descending(const json& by) const;
  // string_agg's ORDER BY: 0 for none, 1 or 2 for its value ascending or descending.
  arrow::Result<int64_t> StringAggOrder(const json& call, const cp::Expression& value);
  // A call of a function library's scalar or aggregate function: arguments cast to the
  // declared types, the call named by library digest (plan/library_functions.h).
  arrow::Result<cp::Expression> CallLibraryFunction(const json& call, const LibraryFunction& fn,
                                                    Scope scope);
  // Argument i of a library function call, bound in `scope` and cast to its declared type.
  arrow::Result<cp::Expression> LibraryArgument(const json& arg, const LibraryFunction& fn,
                                                size_t i, Scope scope);
  // "f(double, double) of function library ex", for messages.
  static std::string LibraryDisplay(const LibraryFunction& fn) {
    std::string declared;
    for (const auto& t : fn.signature.arguments) {
      declared += (declared.empty() ? "" : ", ") + t->ToString();
    }
    return fn.signature.name + "(" + declared + ") of function library " + fn.library_name;
  }
  // f(...) OVER (...): a column of the kWindow node that runs after aggregation and HAVING.
  arrow::Result<cp::Expression> WindowFunction(const json& call, Scope scope);
  // An expression a window function reads, as a column: a new one of the projection below the
  // window node unless it is one already.
  arrow::Result<std::string> WindowInput(const json& node, Scope scope,
                                         std::shared_ptr<arrow::DataType>* type);
  arrow::Result<plan::WindowFrame> Frame(const json& over);
  // grouping(a, b): bit i (from the right) is 1 where the (n - 1 - i)-th argument is not grouped.
  arrow::Result<cp::Expression> Grouping(const json& call, Scope scope) {
    const auto& args = ListMember(call, "args");
    if (scope != Scope::kAggregated || in_aggregate_ || args.empty() || args.size() > 31) {
      return Error(call, "GROUPING takes grouping expressions of its query level (1 to 31)");
    }
    cp::Expression out = cp::literal(int64_t{0});
    for (size_t i = 0; i < args.size(); ++i) {
      auto bound = Expr(args[i], scope);  // an ungrouped column fails here
      const auto* ref = bound.ok() ? bound->field_ref() : nullptr;
      const auto it = ref == nullptr || ref->name() == nullptr
                          ? group_keys_.end()
                          : std::find(group_keys_.begin(), group_keys_.end(), *ref->name());
      if (it == group_keys_.end()) {
        return Error(args[i],
                     "arguments to GROUPING must be grouping expressions of the associated query "
                     "level");
      }
      if (grouping_id_.empty()) continue;  // one grouping on every key: 0
      const auto k = static_cast<int64_t>(it - group_keys_.begin());
      const auto bit = cp::call(
          "bit_wise_and", {cp::call("shift_right", {cp::field_ref(grouping_id_), cp::literal(k)}),
                           cp::literal(int64_t{1})});
      out = cp::call(
          "bit_wise_or",
          {out,
           cp::call("shift_left", {bit, cp::literal(static_cast<int64_t>(args.size() - 1 - i))})});
    }
    return out;
  }
  // x % y on integers: x - (x / y) * y, the sign of x, as in PostgreSQL; y = 0 is an error.
  arrow::Result<cp::Expression> Modulo(const json& node, cp::Expression x, cp::Expression y,
                                       Scope scope) {
    const auto schema = SchemaFor(scope);
    ARROW_ASSIGN_OR_RAISE(auto tx, x.Bind(*schema));
    ARROW_ASSIGN_OR_RAISE(auto ty, y.Bind(*schema));
    if (!arrow::is_integer(tx.type()->id()) || !arrow::is_integer(ty.type()->id())) {
      return Unsupported(node, "% on " + tx.type()->ToString() + " and " + ty.type()->ToString() +
                                   " (integers only)");
    }
    y = GuardedDivisor(y, scope);
    return cp::call("subtract_checked",
                    {x, cp::call("multiply_checked", {cp::call("divide_checked", {x, y}), y})});
  }
  // Arrow evaluates every branch of a CASE on every row, where PostgreSQL evaluates only the
  // branch a row takes: inside a branch, a divisor is NULL on the rows that do not take it, so
  // that `CASE WHEN y > 0 THEN x / y END` never divides by zero.
  cp::Expression GuardedDivisor(const cp::Expression& divisor, Scope scope) {
    if (!case_guard_.has_value()) return divisor;
    auto typed = divisor.Bind(*SchemaFor(scope));
    if (!typed.ok()) return divisor;
    return cp::call("if_else", {*case_guard_, divisor,
                                cp::literal(arrow::MakeNullScalar(typed->type()->GetSharedPtr()))});
  }
  // NULLIF(a, b): NULL where a = b, else a (also where b is NULL).
  arrow::Result<cp::Expression> NullIf(const json& node, cp::Expression a, cp::Expression b,
                                       Scope scope) {
    const auto schema = SchemaFor(scope);
    b = NarrowIntegerLiteral(b, a, *schema);
    ARROW_ASSIGN_OR_RAISE(auto typed, a.Bind(*schema));
    cp::Expression x = a, y = b;
    MeetFloat(&x, &y, *schema);
    ARROW_RETURN_NOT_OK(Typecheck(cp::equal(x, y), node, *schema).status());
    return cp::call("if_else",
                    {cp::call("coalesce", {cp::equal(x, y), cp::literal(false)}),
                     cp::literal(arrow::MakeNullScalar(typed.type()->GetSharedPtr())), a});
  }
  // Resolves a (qualified) name in this query's FROM items; nullptr if absent, an error if
  // ambiguous.
  arrow::Result<const ColumnInfo*> Lookup(const std::vector<std::string>& parts, const json& ref);
  bool KnowsQualifier(const std::string& q) const {
    for (const auto& c : columns_) {
      if (c.qualifier == q) return true;
    }
    return false;
  }
  // This query's row schema, with the outer queries' columns a correlated reference may read.
  const arrow::Schema& RowSchema() {
    if (row_schema_ == nullptr) {
      arrow::FieldVector fields = row_fields_;
      for (Binder* p = parent_; p != nullptr; p = p->parent_) {
        fields.insert(fields.end(), p->row_fields_.begin(), p->row_fields_.end());
      }
      row_schema_ = arrow::schema(fields);
    }
    return *row_schema_;
  }
  // The columns after aggregation: group keys and aggregate results.
  std::shared_ptr<arrow::Schema> AggregatedSchema() {
    arrow::FieldVector fields;
    for (size_t i = 0; i < group_keys_.size(); ++i) {
      auto bound = group_exprs_[i].Bind(RowSchema());
      if (bound.ok()) fields.push_back(arrow::field(group_keys_[i], bound->type()->GetSharedPtr()));
    }
    fields.insert(fields.end(), aggregate_fields_.begin(), aggregate_fields_.end());
    fields.insert(fields.end(), window_fields_.begin(), window_fields_.end());
    fields.insert(fields.end(), having_fields_.begin(), having_fields_.end());
    return arrow::schema(fields);
  }
  // The schema an expression in `scope` reads: the rows, or (outside an aggregate's argument)
  // what aggregation produces. Computed only for the scope asked.
  std::shared_ptr<arrow::Schema> SchemaFor(Scope scope) {
    if (scope == Scope::kRow || in_aggregate_) {
      RowSchema();
      return row_schema_;
    }
    return AggregatedSchema();
  }
  // Binds an expression to the current schema to check its types; returns it simplified.
  arrow::Result<cp::Expression> Typecheck(const cp::Expression& e, const json& node,
                                          const arrow::Schema& schema);

  // A string literal next to a date is a date, as PostgreSQL reads an untyped literal
  // (o_orderdate < '1995-03-15'); one that is no date is that error, not a kernel's.
  arrow::Result<cp::Expression> DateLiteral(const cp::Expression& literal,
                                            const cp::Expression& other,
                                            const arrow::Schema& schema, const json& node) {
    if (literal.literal() == nullptr || literal.literal()->type()->id() != arrow::Type::STRING) {
      return literal;
    }
    auto bound = other.Bind(schema);
    if (!bound.ok()) return literal;
    if (bound->type()->id() == arrow::Type::TIMESTAMP) {
      return TimestampFromText(literal.literal()->scalar()->ToString(),
                               bound->type()->GetSharedPtr(), node);
    }
    if (bound->type()->id() != arrow::Type::DATE32) return literal;
    return DateFromText(literal.literal()->scalar()->ToString(), node);
  }

  // A timestamp of `type` as ISO 8601 text reads ('2024-01-02 10:30:00', a 'T' too, with
  // fractions of a second, and a zone offset for a timestamp with one).
  arrow::Result<cp::Expression> TimestampFromText(const std::string& text,
                                                  const std::shared_ptr<arrow::DataType>& type,
                                                  const json& node) const {
    std::string trimmed = Trim(text);
    if (static_cast<const arrow::TimestampType&>(*type).timezone().empty() && trimmed.size() > 10) {
      // A timestamp without a time zone ignores a zone written after the time, as PostgreSQL's
      // does: '2020-01-01 00:00:00+02' is midnight.
      const size_t zone = trimmed.find_first_of("+-Zz", 11);
      if (zone != std::string::npos) trimmed = Trim(trimmed.substr(0, zone));
    }
    auto value = arrow::Scalar::Parse(type, trimmed);
    if (!value.ok()) {
      return Error(node, "invalid input syntax for type timestamp: \"" + text + "\"");
    }
    return cp::literal(*value);
  }

  // A string literal next to a number is that number, as PostgreSQL reads an untyped literal
  // (k = '1'); one that is no number of that type is that error, not a kernel's.
  arrow::Result<cp::Expression> NumberLiteral(const cp::Expression& literal,
                                              const cp::Expression& other,
                                              const arrow::Schema& schema, const json& node) {
    if (literal.literal() == nullptr || literal.literal()->type()->id() != arrow::Type::STRING ||
        !literal.literal()->scalar()->is_valid) {
      return literal;
    }
    auto bound = other.Bind(schema);
    if (!bound.ok()) return literal;
    const auto type = bound->type()->GetSharedPtr();
    if (!arrow::is_integer(type->id()) && !arrow::is_decimal(type->id()) &&
        !arrow::is_floating(type->id())) {
      return literal;
    }
    const std::string text = literal.literal()->scalar()->ToString();
    arrow::Result<std::shared_ptr<arrow::Scalar>> value = arrow::Status::Invalid("not a number");
    if (arrow::is_decimal(type->id())) {
      // A decimal of the literal's own digits, as a numeric constant reads.
      arrow::Decimal128 d;
      int32_t precision = 0, scale = 0;
      if (arrow::Decimal128::FromString(Trim(text), &d, &precision, &scale).ok() &&
          precision <= 38 && scale >= 0) {
        value = std::make_shared<arrow::Decimal128Scalar>(
            d, arrow::decimal128(std::max(precision, scale + 1), scale));
      }
    } else {
      value = arrow::Scalar::Parse(type, Trim(text));
    }
    if (!value.ok()) {
      const std::string name = type->id() == arrow::Type::INT64   ? "bigint"
                               : type->id() == arrow::Type::INT32 ? "integer"
                               : type->id() == arrow::Type::INT16 ? "smallint"
                               : arrow::is_decimal(type->id())    ? "numeric"
                                                                  : "double precision";
      return Error(node, "invalid input syntax for type " + name + ": \"" + text + "\"");
    }
    return cp::literal(*value);
  }
  static std::string Trim(const std::string& s) {
    const auto b = s.find_first_not_of(' ');
    return b == std::string::npos ? "" : s.substr(b, s.find_last_not_of(' ') - b + 1);
  }

  // A date as PostgreSQL reads 'Y-M-D' (months and days need not have two digits).
  arrow::Result<cp::Expression> DateFromText(const std::string& text, const json& node) const {
    int y, m, d, end = 0;
    const bool ymd = std::sscanf(text.c_str(), " %d-%d-%d%n", &y, &m, &d, &end) == 3;
    // A time of day after the date (and a zone after it) is read and dropped, as PostgreSQL's
    // date input drops it: '1995-01-01 12:00:00' is 1995-01-01.
    static const std::regex kTimeOfDay(
        R"(^(?:[ T]([0-9]{1,2}):([0-9]{1,2})(?::([0-9]{1,2})(?:\.[0-9]+)?)?\s*(?:Z|[+-]([0-9]{1,2})(?::?[0-9]{2})?)?)?\s*$)");
    std::smatch time;
    const std::string rest = ymd ? text.substr(static_cast<size_t>(end)) : text;
    if (!ymd || !std::regex_match(rest, time, kTimeOfDay) || m < 1 || m > 12 || d < 1 || d > 31) {
      return Error(node, "invalid input syntax for type date: \"" + text + "\"");
    }
    if (time[1].matched) {
      const int hour = std::stoi(time[1].str()), minute = std::stoi(time[2].str());
      const int second = time[3].matched ? std::stoi(time[3].str()) : 0;
      if (hour > 24 || minute > 59 || second > 60 || (hour == 24 && minute + second > 0)) {
        return Error(node, "date/time field value out of range: \"" + text + "\"");
      }
      if (time[4].matched && std::stoi(time[4].str()) > 15) {
        return Error(node, "time zone displacement out of range: \"" + text + "\"");
      }
    }
    // A day the month does not have (2020-02-30) is an error, not the next month.
    const int64_t days = DaysFromCivil(y, static_cast<unsigned>(m), static_cast<unsigned>(d));
    int64_t cy;
    unsigned cm, cd;
    CivilFromDays(days, &cy, &cm, &cd);
    if (cd != static_cast<unsigned>(d)) {
      return Error(node, "date/time field value out of range: \"" + text + "\"");
    }
    return cp::literal(std::make_shared<arrow::Date32Scalar>(static_cast<int32_t>(days)));
  }

  // An integer literal next to a decimal becomes a decimal of just its digits: Arrow would widen
  // it to decimal(19, 0), and a few such steps overflow decimal128's 38 digits (1 - l_discount).
  cp::Expression NarrowIntegerLiteral(const cp::Expression& literal, const cp::Expression& other,
                                      const arrow::Schema& schema) {
    // Any integer type: CAST(2 AS int) is an int32, which Arrow widened to decimal(10, 0).
    if (literal.literal() == nullptr || !arrow::is_integer(literal.literal()->type()->id())) {
      return literal;
    }
    auto bound = other.Bind(schema);
    if (!bound.ok() || bound->type()->id() != arrow::Type::DECIMAL128) return literal;
    if (!literal.literal()->scalar()->is_valid) {
      // A NULL stays NULL (CAST(NULL AS bigint) + d once read as d + 0).
      return cp::literal(arrow::MakeNullScalar(arrow::decimal128(1, 0)));
    }
    auto as_int64 = literal.literal()->scalar()->CastTo(arrow::int64());
    if (!as_int64.ok()) return literal;  // a uint64 past int64's range
    const int64_t v = static_cast<const arrow::Int64Scalar&>(**as_int64).value;
    const int32_t digits = static_cast<int32_t>(std::to_string(v < 0 ? -v : v).size());
    return cp::literal(std::make_shared<arrow::Decimal128Scalar>(arrow::Decimal128(v),
                                                                 arrow::decimal128(digits, 0)));
  }

  // A uint64 compared with a signed integer literal that is not negative: the literal is read
  // as a uint64, so that the comparison is of uint64s (Arrow compares the two as int64, which
  // fails past 2^63) and still prunes row groups. Other such comparisons meet in decimal(20, 0)
  // in the executor (plan/unsigned_comparisons.h), which leaves a correlation `b.u = a.i` as
  // the decorrelator reads it.
  void MeetUnsigned64(cp::Expression* a, cp::Expression* b, const arrow::Schema& schema) {
    auto at = a->Bind(schema);
    auto bt = b->Bind(schema);
    if (!at.ok() || !bt.ok()) return;
    const bool a_u64 = at->type()->id() == arrow::Type::UINT64;
    const bool b_u64 = bt->type()->id() == arrow::Type::UINT64;
    if (a_u64 == b_u64) return;
    cp::Expression* other = a_u64 ? b : a;
    if (!arrow::is_signed_integer((a_u64 ? bt : at)->type()->id())) return;
    const arrow::Datum* literal = other->literal();
    if (literal == nullptr) return;
    const arrow::Scalar& scalar = *literal->scalar();
    if (!scalar.is_valid) {
      *other = cp::literal(arrow::MakeNullScalar(arrow::uint64()));
      return;
    }
    auto value = scalar.CastTo(arrow::int64());
    if (value.ok() && static_cast<const arrow::Int64Scalar&>(**value).value >= 0) {
      *other =
          cp::literal(static_cast<uint64_t>(static_cast<const arrow::Int64Scalar&>(**value).value));
    }
  }

  // A uint64 beside a signed integer, each cast to the decimal of as many digits as its type
  // holds (decimal(20, 0) for the uint64), which computes exactly where DuckDB's HUGEINT does.
  // A literal is left to NarrowIntegerLiteral, which gives it its own digits. For a `product`,
  // the signed side keeps at most 17 digits, so that the product's type stays within 38 (where
  // FitDecimalProduct would cut the uint64 to 18 digits, which most of its values pass).
  void WidenUnsigned64(cp::Expression* a, cp::Expression* b, const arrow::Schema& schema,
                       bool product) {
    auto at = a->Bind(schema);
    auto bt = b->Bind(schema);
    if (!at.ok() || !bt.ok()) return;
    const auto ai = at->type()->id(), bi = bt->type()->id();
    if (!(ai == arrow::Type::UINT64 && arrow::is_signed_integer(bi)) &&
        !(bi == arrow::Type::UINT64 && arrow::is_signed_integer(ai))) {
      return;
    }
    for (auto [x, id] : {std::pair{a, ai}, std::pair{b, bi}}) {
      if (x->literal() != nullptr) continue;
      const int n = id == arrow::Type::UINT64 || !product ? plan::IntegerDigits(id)
                                                          : std::min(plan::IntegerDigits(id), 17);
      *x = cp::call("cast", {*x}, CastAs(arrow::decimal128(n, 0)));
    }
  }

  // An integer beside a float, or a float beside a double, compares as two doubles: the integer
  // as its nearest double, as PostgreSQL and DuckDB compare them. Arrow's implicit cast refused
  // an integer past 2^53 (u > 1e19, i BETWEEN d + 0 AND 1e19). Two columns meet in the executor
  // instead (plan/unsigned_comparisons.h), which leaves `a.i = b.d` a join key or a correlation
  // as the planner reads one.
  void MeetFloat(cp::Expression* a, cp::Expression* b, const arrow::Schema& schema) {
    if (a->field_ref() != nullptr && b->field_ref() != nullptr) return;
    auto at = a->Bind(schema);
    auto bt = b->Bind(schema);
    if (!at.ok() || !bt.ok()) return;
    const auto ai = at->type()->id(), bi = bt->type()->id();
    const auto number = [](arrow::Type::type id) {
      return arrow::is_floating(id) || arrow::is_integer(id);
    };
    if (ai == bi || !(arrow::is_floating(ai) || arrow::is_floating(bi)) || !number(ai) ||
        !number(bi)) {
      return;
    }
    if (ai != arrow::Type::DOUBLE) *a = cp::call("cast", {*a}, CastAs(arrow::float64()));
    if (bi != arrow::Type::DOUBLE) *b = cp::call("cast", {*b}, CastAs(arrow::float64()));
  }

  // decimal(p1, s1) * decimal(p2, s2) is decimal(p1 + p2 + 1, s1 + s2) in Arrow, which passes
  // decimal128's 38 digits after two or three products although the values are small. Like
  // DuckDB, cap the precision: the wider operand is cast (checked, so a value that does not fit
  // is an error, never a wrong answer) to the precision that leaves room for the product.
  void FitDecimalProduct(cp::Expression* l, cp::Expression* r) {
    const arrow::Schema& schema = RowSchema();
    auto lb = l->Bind(schema);
    auto rb = r->Bind(schema);
    if (!lb.ok() || !rb.ok() || lb->type()->id() != arrow::Type::DECIMAL128 ||
        rb->type()->id() != arrow::Type::DECIMAL128) {
      return;
    }
    const auto& lt = static_cast<const arrow::Decimal128Type&>(*lb->type());
    const auto& rt = static_cast<const arrow::Decimal128Type&>(*rb->type());
    if (lt.precision() + rt.precision() + 1 <= 38) return;
    cp::Expression* wide = lt.precision() >= rt.precision() ? l : r;
    const auto& wt = lt.precision() >= rt.precision() ? lt : rt;
    const auto& nt = lt.precision() >= rt.precision() ? rt : lt;
    const int32_t precision = 38 - nt.precision() - 1;
    if (precision <= wt.scale()) return;  // no room: let Arrow report it
    *wide = cp::call("cast", {*wide}, CastAs(arrow::decimal128(precision, wt.scale())));
  }

  // The (precision, scale) of a decimal or integer operand, or none.
  static std::optional<std::pair<int32_t, int32_t>> DecimalShapeOf(const arrow::DataType& t) {
    if (t.id() == arrow::Type::DECIMAL128) {
      const auto& d = static_cast<const arrow::Decimal128Type&>(t);
      return std::make_pair(d.precision(), d.scale());
    }
    if (arrow::is_integer(t.id())) {
      return std::make_pair(t.id() == arrow::Type::INT64 || t.id() == arrow::Type::UINT64 ? 19 : 10,
                            0);
    }
    return std::nullopt;
  }

  // a + b and a - b of decimals need max(p - s) + max(s) + 1 digits, which passes decimal128's
  // 38 for sums of sums (TPC-DS q75: a year's sales minus the last's); as DuckDB does, the result
  // is capped at 38 digits, each operand cast (checked) to fit.
  // A comparison's operands meet in max(p - s) + max(s) digits (`carry` 0) and are capped alike.
  void FitDecimalSum(cp::Expression* l, cp::Expression* r, const arrow::Schema& schema,
                     int32_t carry = 1) {
    auto lb = l->Bind(schema);
    auto rb = r->Bind(schema);
    if (!lb.ok() || !rb.ok()) return;
    const auto lt = DecimalShapeOf(*lb->type()), rt = DecimalShapeOf(*rb->type());
    if (!lt || !rt ||
        (lb->type()->id() != arrow::Type::DECIMAL128 &&
         rb->type()->id() != arrow::Type::DECIMAL128)) {
      return;
    }
    const int32_t scale = std::max(lt->second, rt->second);
    const int32_t digits = std::max(lt->first - lt->second, rt->first - rt->second);
    if (digits + scale + carry <= 38) return;
    const int32_t room = 38 - carry - scale;  // integer digits each operand may keep
    for (auto [e, t] : {std::make_pair(l, *lt), std::make_pair(r, *rt)}) {
      if (t.first - t.second > room) {
        *e = cp::call("cast", {*e}, CastAs(arrow::decimal128(room + t.second, t.second)));
      }
    }
  }

  // a / b with a decimal: Arrow's result scale is max(4, s1 + p2 - s2 + 1), which truncates a
  // small quotient to 4 places (27.6666) and passes 38 digits for sums. PostgreSQL keeps at
  // least 16 significant digits: the dividend is scaled so that the quotient has 16 places
  // (or its operands' scale), and where that needs more than 38 digits the quotient is computed
  // in double precision, as DuckDB's always is.
  void FitDecimalQuotient(cp::Expression* l, cp::Expression* r, const arrow::Schema& schema) {
    auto lb = l->Bind(schema);
    auto rb = r->Bind(schema);
    if (!lb.ok() || !rb.ok()) return;
    const auto lt = DecimalShapeOf(*lb->type()), rt = DecimalShapeOf(*rb->type());
    if (!lt || !rt ||
        (lb->type()->id() != arrow::Type::DECIMAL128 &&
         rb->type()->id() != arrow::Type::DECIMAL128)) {
      return;
    }
    const auto [p1, s1] = *lt;
    const auto [p2, s2] = *rt;
    const int32_t target = std::max({16, s1, s2});
    // Arrow's quotient scale is s1' + p2 - s2 + 1 for a dividend of scale s1' (at least 4).
    const int32_t dividend_scale = std::max(s1, target - p2 + s2 - 1);
    const int32_t quotient_scale = std::max(4, dividend_scale + p2 - s2 + 1);
    const int32_t precision = (p1 - s1) + s2 + quotient_scale;
    if (precision > 38 || (p1 - s1) + dividend_scale > 38) {
      auto to_double = [](const cp::Expression& x) {
        return cp::call("cast", {x}, CastAs(arrow::float64()));
      };
      *l = to_double(*l);
      *r = to_double(*r);
      return;
    }
    if (dividend_scale != s1 || lb->type()->id() != arrow::Type::DECIMAL128) {
      *l = cp::call("cast", {*l},
                    CastAs(arrow::decimal128((p1 - s1) + dividend_scale, dividend_scale)));
    }
  }

  // The outputs of final_ that merge partial counts: over no rows without keys they must read
  // 0, where a merge (a sum) of no partials is NULL.
  std::set<std::string> MergedCounts() const {
    std::set<std::string> counts;
    for (const auto& p : partial_) {
      if (p.function != "count" && p.function != "count_all") continue;
      for (const auto& f : final_) {
        if (f.input == p.output) counts.insert(f.output);
      }
    }
    return counts;
  }

  // The aggregate of `pre` (the keys and the aggregates' inputs) by `keys` (all of them, or a
  // grouping set's) where DISTINCT aggregates read several inputs, or one sums its distinct
  // values. `pre`'s rows come once per distinct input
  // (that input's value alone, the others NULL) and once for the other aggregates, each copy
  // with its number; the executor reads `pre` once for all of them (exec/expand_node.h).
  // Grouped by the keys, the copy and the values, each value comes once per key, and copy 0
  // has the other aggregates. Grouped again by the keys, the values are counted or summed, and
  // the other aggregates' results of copy 0 merged by their own final functions. The output
  // has the keys and final_'s outputs, as aggregate_on's does.
  arrow::Result<std::unique_ptr<PlanNode>> DistinctAggregates(
      const json& select, std::unique_ptr<PlanNode> pre, const std::vector<std::string>& keys) {
    ARROW_ASSIGN_OR_RAISE(auto pre_schema, OutputSchema(*pre));
    std::vector<std::string> distinct;  // the distinct inputs, in order of first use
    std::vector<AggregateCall> others;  // the other aggregates' final steps
    for (const auto& f : final_) {
      if (!IsDistinctStep(f.function)) {
        if (f.function != "sum" && f.function != "min" && f.function != "max") {
          // Only a function library's aggregate has another final step.
          return Unsupported(select,
                             "a function library's aggregate beside DISTINCT aggregates of "
                             "several expressions, or beside sum or avg of DISTINCT values");
        }
        others.push_back(f);
      } else if (std::find(distinct.begin(), distinct.end(), f.input) == distinct.end()) {
        distinct.push_back(f.input);
      }
    }
    std::vector<std::string> other_inputs;  // read by the other aggregates' partial steps
    for (const auto& p : partial_) {
      if (!p.input.empty() &&
          std::find(other_inputs.begin(), other_inputs.end(), p.input) == other_inputs.end()) {
        other_inputs.push_back(p.input);
      }
    }
    auto null_of = [&](const std::string& column) {
      return cp::literal(arrow::MakeNullScalar(pre_schema->GetFieldByName(column)->type()));
    };
    // A partial and a final step by `by`, as aggregate_on's.
    auto aggregate = [](std::unique_ptr<PlanNode> input, const std::vector<std::string>& by,
                        std::vector<AggregateCall> partials, std::vector<AggregateCall> finals) {
      auto partial = plan::MakeNode(PlanNode::Kind::kAggregate, std::move(input));
      partial->keys = by;
      partial->aggregates = std::move(partials);
      auto final_agg = plan::MakeNode(PlanNode::Kind::kAggregate, std::move(partial));
      final_agg->final_phase = true;
      final_agg->keys = by;
      final_agg->aggregates = std::move(finals);
      return final_agg;
    };
    const std::string copy_id = ctx_.NewId("copy");
    std::vector<std::string> values;  // per distinct input: its column in the copies
    for (const auto& d : distinct) values.push_back(ctx_.NewId(d));
    std::vector<std::string> columns = keys;  // the copies' columns
    columns.push_back(copy_id);
    columns.insert(columns.end(), values.begin(), values.end());
    columns.insert(columns.end(), other_inputs.begin(), other_inputs.end());
    const size_t first_value = others.empty() ? 0 : 1;  // copy 0: the other aggregates
    const size_t copies = distinct.size() + first_value;
    std::unique_ptr<PlanNode> rows;
    for (size_t c = 0; c < copies; ++c) {
      auto project = plan::MakeNode(PlanNode::Kind::kProject,
                                    c + 1 < copies ? plan::CopyPlan(*pre) : std::move(pre));
      std::vector<cp::Expression>& e = project->expressions;
      for (const auto& k : keys) e.push_back(cp::field_ref(k));
      e.push_back(cp::literal(static_cast<int32_t>(c)));
      for (size_t d = 0; d < distinct.size(); ++d) {
        e.push_back(c == d + first_value ? cp::field_ref(distinct[d]) : null_of(distinct[d]));
      }
      for (const auto& i : other_inputs) {
        e.push_back(c == 0 && first_value == 1 ? cp::field_ref(i) : null_of(i));
      }
      for (const auto& name : columns) {
        project->names.push_back(copies == 1 ? name : ctx_.NewId(name));
      }
      if (rows == nullptr) {
        rows = std::move(project);
        continue;
      }
      auto u = plan::MakeNode(PlanNode::Kind::kUnion, std::move(rows));
      for (const auto& name : columns) u->names.push_back(ctx_.NewId(name));
      u->right = std::move(project);
      rows = std::move(u);
    }
    rows->names = columns;
    // By the keys, the copy and the values: the other aggregates under new names.
    std::vector<std::string> by_value = keys;
    by_value.push_back(copy_id);
    by_value.insert(by_value.end(), values.begin(), values.end());
    std::vector<AggregateCall> finals;
    for (const auto& f : others) finals.push_back({f.function, f.input, ctx_.NewId(f.output)});
    rows = aggregate(std::move(rows), by_value, partial_, finals);
    ARROW_ASSIGN_OR_RAISE(auto by_value_schema, OutputSchema(*rows));
    // The other aggregates' results of copy 0 alone: the other copies computed theirs over
    // NULLs, and count(*) over their rows.
    std::vector<std::string> masked;
    if (!others.empty()) {
      auto project = plan::MakeNode(PlanNode::Kind::kProject, std::move(rows));
      for (const auto& k : keys) {
        project->expressions.push_back(cp::field_ref(k));
        project->names.push_back(k);
      }
      for (const auto& v : values) {
        project->expressions.push_back(cp::field_ref(v));
        project->names.push_back(v);
      }
      for (const auto& f : finals) {
        const auto type = by_value_schema->GetFieldByName(f.output)->type();
        project->expressions.push_back(cp::call(
            "if_else", {cp::equal(cp::field_ref(copy_id), cp::literal(int32_t{0})),
                        cp::field_ref(f.output), cp::literal(arrow::MakeNullScalar(type))}));
        masked.push_back(ctx_.NewId(f.output));
        project->names.push_back(masked.back());
      }
      rows = std::move(project);
    }
    // By the keys: counts and sums of the values, the other aggregates merged. Without keys, a
    // count over no rows is 0 where the merge of counts is NULL.
    const std::set<std::string> counts = MergedCounts();
    const bool coalesce = keys.empty() && !counts.empty();
    std::vector<std::string> outputs;  // per final_ entry, as the last aggregate names it
    std::vector<AggregateCall> partials;
    finals.clear();
    for (const auto& f : final_) {
      const std::string step = ctx_.NewId(f.output);
      outputs.push_back(coalesce ? ctx_.NewId(f.output) : f.output);
      if (IsDistinctStep(f.function)) {
        const size_t d = std::find(distinct.begin(), distinct.end(), f.input) - distinct.begin();
        partials.push_back({f.function == "count_distinct" ? "count" : "sum", values[d], step});
        finals.push_back({"sum", step, outputs.back()});
      } else {
        const size_t o = std::find_if(others.begin(), others.end(),
                                      [&](const auto& x) { return x.output == f.output; }) -
                         others.begin();
        partials.push_back({f.function, masked[o], step});
        finals.push_back({f.function, step, outputs.back()});
      }
    }
    rows = aggregate(std::move(rows), keys, std::move(partials), std::move(finals));
    if (!coalesce) return rows;
    auto out = plan::MakeNode(PlanNode::Kind::kProject, std::move(rows));
    for (size_t i = 0; i < final_.size(); ++i) {
      cp::Expression value = cp::field_ref(outputs[i]);
      if (counts.count(final_[i].output)) {
        value = cp::call("coalesce", {value, cp::literal(int64_t{0})});
      }
      out->expressions.push_back(std::move(value));
      out->names.push_back(final_[i].output);
    }
    return out;
  }

  // Unwraps {"NodeType": {...}} into its type and body.
  static std::pair<std::string, const json*> Node(const json& n) {
    if (!n.is_object() || n.empty()) return {"", nullptr};
    return {n.begin().key(), &n.begin().value()};
  }

  Context& ctx_;
  const std::string& sql_;
  Binder* parent_;
  Binder* cte_parent_;
  std::map<std::string, const json*> ctes_;
  std::set<std::string> binding_ctes_;  // refuses a CTE that reads itself
  // Every column the FROM items offer.
  std::vector<ColumnInfo> columns_;
  arrow::FieldVector row_fields_;  // FROM columns and scalar subquery results, by plan id
  std::shared_ptr<arrow::Schema> row_schema_;
  // Joins to subqueries (kDependentJoin, without their input): EXISTS and IN, scalar subqueries
  // before the WHERE filter, and after the aggregate (HAVING).
  std::vector<std::unique_ptr<PlanNode>> semi_joins_;
  std::vector<std::unique_ptr<PlanNode>> row_scalars_;
  std::vector<std::unique_ptr<PlanNode>> having_scalars_;
  // Their results, which expressions after aggregation read beside the aggregates: typed with
  // them, sum(x) - (SELECT sum(x) ...) is capped at 38 digits as sum(x) - sum(y) is.
  arrow::FieldVector having_fields_;
  // Correlation with the outer query.
  int outer_refs_ = 0;
  int correlated_refs_ = 0;  // the outer references in WHERE conditions
  bool count_result_ = false;
  std::vector<cp::Expression> correlated_;
  std::vector<std::string> correlation_outer_;
  // Aggregation state.
  std::vector<std::string> group_keys_;      // plan ids
  std::vector<cp::Expression> group_exprs_;  // per key: its pre-aggregation expression
  std::vector<std::pair<std::string, std::string>> group_by_text_;  // GROUP BY expression -> id
  // GROUPING SETS, ROLLUP, CUBE: the keys (indices into group_keys_) of each grouping, and the
  // column that says which grouping a row comes from (bit k: key k is not grouped).
  std::vector<std::vector<size_t>> grouping_sets_;
  std::string grouping_id_;
  std::vector<AggregateCall> partial_;
  std::vector<AggregateCall> final_;
  std::vector<cp::Expression> agg_inputs_;  // pre-aggregation projection
  std::vector<std::string> agg_input_names_;
  std::map<std::string, cp::Expression> agg_by_text_;  // dedups identical aggregate calls
  arrow::FieldVector aggregate_fields_;                // final aggregate outputs, typed
  // Window functions: their calls, the projection of what they read, and their result fields.
  std::vector<plan::WindowCall> windows_;
  std::vector<cp::Expression> window_inputs_;
  std::vector<std::string> window_input_names_;
  arrow::FieldVector window_fields_;
  bool windows_allowed_ = false;  // only while the select list is bound
  // While a CASE branch's value is bound: whether a row takes that branch (never NULL).
  std::optional<cp::Expression> case_guard_;
  bool has_distinct_aggregate_ = false;
  bool in_aggregate_ = false;
  bool aggregated_ = false;
  std::vector<std::string> output_names_;
};

arrow::Result<cp::Expression> Binder::Typecheck(const cp::Expression& e, const json& node,
                                                const arrow::Schema& schema) {
  auto bound = e.Bind(schema);
  if (!bound.ok()) {
    const auto& st = bound.status();
    return Error(node, std::string(st.IsNotImplemented() ? "type error: " : "") + st.message());
  }
  // Plans keep unbound expressions: each operator binds them to its own input schema, so a
  // field index bound against the whole table can never be used on a narrower input.
  auto folded = FoldConstantSubtrees(e);
  if (!folded.ok()) return Error(node, folded.status().message());
  return folded;
}

arrow::Result<const ColumnInfo*> Binder::Lookup(const std::vector<std::string>& parts,
                                                const json& ref) {
  const ColumnInfo* found = nullptr;
  for (const auto& c : columns_) {
    if (c.name != parts.back() || (parts.size() == 2 && c.qualifier != parts[0])) continue;
    if (parts.size() == 1 && c.merged_away) continue;
    if (found != nullptr) {
      return Error(ref, "column reference \"" + parts.back() + "\" is ambiguous");
    }
    found = &c;
  }
  return found;
}

arrow::Result<cp::Expression> Binder::Column(const json& ref, Scope scope) {
  std::vector<std::string> parts;
  for (const auto& f : ref.at("fields")) {
    if (f.contains("A_Star")) return Unsupported(ref, "* outside the select list");
    parts.push_back(f.at("String").value("sval", ""));
  }
  const std::string name = parts.back();
  if (parts.size() > 2) return Unsupported(ref, "qualified names with more than two parts");
  ARROW_ASSIGN_OR_RAISE(const ColumnInfo* column, Lookup(parts, ref));
  if (column == nullptr) {
    // PostgreSQL's rule: the nearest query level that has the name; an outer one makes this a
    // correlated reference.
    int levels = 0;
    for (Binder* p = parent_; p != nullptr && column == nullptr; p = p->parent_) {
      ++levels;
      ARROW_ASSIGN_OR_RAISE(column, p->Lookup(parts, ref));
    }
    if (column != nullptr) {
      if (levels > 1) {
        return Unsupported(ref, "a reference to a column two or more query levels out");
      }
      ++outer_refs_;
      return cp::field_ref(column->id());
    }
    if (parts.size() == 2) {
      bool known = KnowsQualifier(parts[0]);
      for (Binder* p = parent_; p != nullptr; p = p->parent_)
        known = known || p->KnowsQualifier(parts[0]);
      if (!known) return Error(ref, "missing FROM-clause entry for table \"" + parts[0] + "\"");
    }
    std::string best;
    size_t best_d = 3;
    for (Binder* b = this; b != nullptr; b = b->parent_) {
      for (const auto& c : b->columns_) {
        const size_t d = EditDistance(name, c.name);
        if (d < best_d) {
          best_d = d;
          best = c.name;
        }
      }
    }
    std::string msg = "column \"" + name + "\" does not exist";
    const int loc = ref.value("location", -1);
    if (loc >= 0) msg += " (" + Position(sql_, loc) + ")";
    if (!best.empty()) msg += "; did you mean \"" + best + "\"?";
    return arrow::Status::Invalid(msg);
  }
  if (scope == Scope::kAggregated && !in_aggregate_ &&
      std::find(group_keys_.begin(), group_keys_.end(), column->id()) == group_keys_.end()) {
    return Error(ref, "column \"" + name +
                          "\" must appear in the GROUP BY clause or be used in an aggregate "
                          "function");
  }
  return cp::field_ref(column->id());
}

// A NULL literal as written, whose type nothing has decided yet.
bool IsUntypedNull(const cp::Expression& e) {
  return e.literal() != nullptr && e.literal()->type()->id() == arrow::Type::NA;
}

// `e`, or where it is an untyped NULL, the unknown boolean, as a condition reads it (WHERE NULL
// keeps no row, as in PostgreSQL).
cp::Expression UnknownAsBoolean(const cp::Expression& e) {
  return IsUntypedNull(e) ? cp::literal(arrow::MakeNullScalar(arrow::boolean())) : e;
}

arrow::Status Binder::UnifyBranches(std::vector<cp::Expression>* values, Scope scope,
                                    const json& node) {
  const auto scope_schema = SchemaFor(scope);
  const arrow::Schema& schema = *scope_schema;
  for (auto& v : *values) {
    // A cast constant (CAST(NULL AS bigint)) as the literal it is, to be typed below. Only a
    // cast: a branch's other constants (1/0) must fail only where a row reaches them.
    const auto* call = v.call();
    if (call != nullptr && call->function_name == "cast" && cp::FieldsInExpression(v).empty()) {
      auto folded = FoldConstantSubtrees(v);
      if (folded.ok()) v = *std::move(folded);
    }
  }
  // The first column's type, else the first constant's: CASE WHEN c THEN 0 ELSE d END is a
  // decimal, as with the 0 last. Not a NULL's type: COALESCE(CAST(NULL AS bigint), d) is too.
  std::shared_ptr<arrow::DataType> common;
  for (bool constants : {false, true}) {
    for (const auto& v : *values) {
      if (common != nullptr || (v.literal() != nullptr) != constants) continue;
      if (v.literal() != nullptr && !v.literal()->scalar()->is_valid) continue;
      auto typed = v.Bind(schema);
      if (typed.ok() && typed->type()->id() != arrow::Type::NA) {
        common = typed->type()->GetSharedPtr();
      }
    }
  }
  if (common == nullptr) return arrow::Status::OK();
  // An integer beside a float is its nearest double, as SQL takes it; Arrow's implicit cast
  // refused one past 2^53 (COALESCE(i, d)).
  const auto is_float = [&](const cp::Expression& v) {
    auto typed = v.Bind(schema);
    return typed.ok() && arrow::is_floating(typed->type()->id());
  };
  if (std::any_of(values->begin(), values->end(), is_float)) {
    for (auto& v : *values) {
      auto typed = v.Bind(schema);
      if (typed.ok() && arrow::is_integer(typed->type()->id())) {
        v = cp::call("cast", {v}, CastAs(arrow::float64()));
      }
    }
  } else {
    // Integers of which one is unsigned meet in a type that holds them all (uint64 and int64 in
    // decimal(20, 0)); Arrow's implicit cast took them as int64, which failed past 2^63. A
    // literal that is not negative takes the others' type (COALESCE(u, 0) is a uint64).
    std::shared_ptr<arrow::DataType> exact;
    bool any_unsigned = false;
    for (const auto& v : *values) {
      auto typed = v.Bind(schema);
      if (!typed.ok() || !arrow::is_integer(typed->type()->id())) continue;
      const auto t = typed->type()->GetSharedPtr();
      any_unsigned |= arrow::is_unsigned_integer(t->id());
      const auto* lit = v.literal();
      if (lit != nullptr) {
        auto wide = lit->scalar()->CastTo(arrow::int64());
        if (!lit->scalar()->is_valid ||
            (wide.ok() && static_cast<const arrow::Int64Scalar&>(**wide).value >= 0)) {
          continue;
        }
      }
      exact = exact == nullptr ? t : ExactCommonType(exact, t);
      if (exact == nullptr) break;
    }
    // A literal that does not fit the others' type widens it (COALESCE(u8, 300) is an int32;
    // Scalar::CastTo would wrap the value instead of refusing it).
    for (const auto& v : *values) {
      const auto* lit = v.literal();
      if (exact == nullptr || lit == nullptr || !lit->scalar()->is_valid ||
          !arrow::is_integer(lit->type()->id()) ||
          cp::Cast(*lit, cp::CastOptions::Safe(exact)).ok()) {
        continue;
      }
      exact = ExactCommonType(exact, lit->type()->GetSharedPtr());
    }
    if (any_unsigned && exact != nullptr) {
      for (auto& v : *values) {
        auto typed = v.Bind(schema);
        if (typed.ok() && arrow::is_integer(typed->type()->id()) &&
            !typed->type()->Equals(*exact)) {
          v = cp::call("cast", {v}, CastAs(exact));
        }
      }
      common = exact;
    }
  }
  for (auto& v : *values) {
    const auto* lit = v.literal();
    if (lit != nullptr && (lit->type()->id() == arrow::Type::NA || !lit->scalar()->is_valid)) {
      v = cp::literal(arrow::MakeNullScalar(common));
    } else if (lit != nullptr && lit->type()->id() == arrow::Type::STRING &&
               (common->id() == arrow::Type::DATE32 || common->id() == arrow::Type::TIMESTAMP)) {
      // Text beside a date or timestamp is one, as PostgreSQL reads an untyped literal
      // (COALESCE(d, '2024-01-05')).
      const std::string text = lit->scalar()->ToString();
      ARROW_ASSIGN_OR_RAISE(v, common->id() == arrow::Type::DATE32
                                   ? DateFromText(text, node)
                                   : TimestampFromText(text, common, node));
    } else if (lit != nullptr && common->id() == arrow::Type::DECIMAL128) {
      for (const auto& other : *values) {
        if (other.literal() == nullptr) {
          v = NarrowIntegerLiteral(v, other, schema);
          break;
        }
      }
    }
  }
  return arrow::Status::OK();
}

arrow::Result<int64_t> Binder::IntConstant(const json& c) const {
  const json& ival = c.at("ival");
  if (ival.contains("ival")) return ival.at("ival").get<int64_t>();
  // The grammar folds '-' (and parentheses) into the constant: "-5", "- 5", "-(5)", "0".
  const int location = c.value("location", -1);
  size_t i = location < 0 ? sql_.size() : static_cast<size_t>(location);
  bool negative = false;
  while (i < sql_.size() &&
         (sql_[i] == '-' || sql_[i] == '(' || std::isspace(static_cast<unsigned char>(sql_[i])))) {
    if (sql_[i] == '-') negative = !negative;
    ++i;
  }
  int64_t value = 0;
  size_t digits = 0;
  while (i < sql_.size() && std::isdigit(static_cast<unsigned char>(sql_[i])) && digits < 18) {
    value = value * 10 + (sql_[i] - '0');
    ++i;
    ++digits;
  }
  if (digits == 0) {
    return arrow::Status::Invalid("internal: cannot read the integer constant at ",
                                  location < 0 ? "an unknown position" : Position(sql_, location));
  }
  return negative ? -value : value;
}

arrow::Result<cp::Expression> Binder::Constant(const json& c) {
  if (c.value("isnull", false)) return cp::literal(arrow::MakeNullScalar(arrow::null()));
  if (c.contains("ival")) {
    ARROW_ASSIGN_OR_RAISE(int64_t v, IntConstant(c));
    return cp::literal(v);
  }
  if (c.contains("fval")) {
    // SQL numeric literals are exact: 0.06 - 0.01 must be 0.05, as in PostgreSQL and DuckDB.
    const std::string text = c.at("fval").value("fval", "");
    const size_t dot = text.find('.');
    const int32_t scale =
        dot == std::string::npos ? 0 : static_cast<int32_t>(text.size() - dot - 1);
    const int32_t precision = std::max<int32_t>(
        scale + 1, static_cast<int32_t>(text.size()) - (dot == std::string::npos ? 0 : 1));
    if (precision <= 38 && text.find_first_of("eE") == std::string::npos) {
      ARROW_ASSIGN_OR_RAISE(auto value, arrow::Decimal128::FromString(text));
      return cp::literal(
          std::make_shared<arrow::Decimal128Scalar>(value, arrow::decimal128(precision, scale)));
    }
    return cp::literal(std::stod(text));
  }
  if (c.contains("sval")) return cp::literal(c.at("sval").value("sval", ""));
  if (c.contains("boolval")) return cp::literal(c.at("boolval").value("boolval", false));
  return Unsupported(c, "this kind of constant");
}

arrow::Result<cp::Expression> Binder::PlusInterval(const json& e, const std::string& op,
                                                   cp::Expression l, const Interval& iv,
                                                   const std::optional<cp::Expression>& times,
                                                   Scope scope) {
  const int sign = op == "+" ? 1 : -1;
  // A date and an interval with a time of day make a timestamp, as in PostgreSQL.
  const auto micro_ts = arrow::timestamp(arrow::TimeUnit::MICRO);
  if (l.literal() != nullptr && l.literal()->type()->id() == arrow::Type::NA) {
    return cp::literal(arrow::MakeNullScalar(micro_ts));  // NULL + interval
  }
  auto typed = l.Bind(*SchemaFor(scope));
  if (!typed.ok() || (typed->type()->id() != arrow::Type::TIMESTAMP &&
                      typed->type()->id() != arrow::Type::DATE32)) {
    return Error(e, "operator " + op + " takes a date or timestamp and an interval");
  }
  cp::Expression out;
  if (typed->type()->id() == arrow::Type::TIMESTAMP) {
    out = TimestampPlusInterval(l, typed->type()->GetSharedPtr(), iv, sign, times);
  } else if (iv.micros != 0) {
    out = TimestampPlusInterval(cp::call("cast", {l}, CastAs(micro_ts)), micro_ts, iv, sign, times);
  } else if (l.literal() != nullptr && !times) {
    // A constant date folds here: PostgreSQL's month arithmetic is no Arrow kernel.
    const int32_t date = static_cast<const arrow::Date32Scalar&>(*l.literal()->scalar()).value;
    return cp::literal(std::make_shared<arrow::Date32Scalar>(AddInterval(date, iv, sign)));
  } else {
    // A date moves by whole days as day numbers; months need the calendar. Months first, then
    // days, as PostgreSQL adds an interval.
    auto scaled = [&](int64_t k) { return Scaled(times, k); };
    out = l;
    if (iv.months != 0) {
      out = cp::call(plan::kAddMonthsFunction, {out, scaled(int64_t{sign} * iv.months)});
    }
    if (iv.days != 0) {
      const cp::Expression days = cp::call("cast", {DateToDays(out)}, CastAs(arrow::int64()));
      out = DaysToDate(cp::call("add_checked", {days, scaled(int64_t{sign} * iv.days)}));
    }
  }
  return l.literal() != nullptr ? FoldConstantSubtrees(out) : out;
}

arrow::Result<Interval> Binder::IntervalLiteral(const json& cast) {
  const json& arg = cast.at("arg");
  auto [kind, body] = Node(arg);
  if (kind != "A_Const" || !body->contains("sval")) {
    return Unsupported(cast, "a non-constant interval");
  }
  const std::string text = (*body).at("sval").value("sval", "");
  // interval '90' day, '2' day to hour: the fields are a typmod bit mask.
  const auto& mods = ListMember(cast.at("typeName"), "typmods");
  const int64_t mask =
      mods.empty() ? 0 : mods.at(0).at("A_Const").at("ival").value("ival", int64_t{0});
  auto iv = ParseInterval(text, IntervalFieldsOfMask(mask));
  if (!iv.ok()) return Error(cast, iv.status().message());
  return *iv;
}

arrow::Result<cp::Expression> Binder::Cast(const json& cast, Scope scope) {
  const std::string type = LastName(cast.at("typeName").at("names"));
  if (type == "interval") return Unsupported(cast, "an interval outside date +/- interval");
  ARROW_ASSIGN_OR_RAISE(cp::Expression arg, Expr(cast.at("arg"), scope));
  std::shared_ptr<arrow::DataType> to;
  if (type == "date") {
    if (arg.literal() != nullptr && arg.literal()->type()->id() == arrow::Type::STRING) {
      return DateFromText(arg.literal()->scalar()->ToString(), cast);
    }
    to = arrow::date32();
  } else if (type == "timestamp" || type == "timestamptz") {
    // Microseconds, as PostgreSQL keeps them; with a zone, in UTC.
    to = type == "timestamp" ? arrow::timestamp(arrow::TimeUnit::MICRO)
                             : arrow::timestamp(arrow::TimeUnit::MICRO, "UTC");
    if (arg.literal() != nullptr && arg.literal()->type()->id() == arrow::Type::STRING) {
      return TimestampFromText(arg.literal()->scalar()->ToString(), to, cast);
    }
  } else if (type == "float8" || type == "double" || type == "float4" || type == "real") {
    to = arrow::float64();
  } else if (type == "int2" || type == "smallint") {
    to = arrow::int16();
  } else if (type == "int4" || type == "int" || type == "integer") {
    to = arrow::int32();
  } else if (type == "int8" || type == "bigint") {
    to = arrow::int64();
  } else if (type == "text" || type == "varchar" || type == "bpchar") {
    to = arrow::utf8();
  } else if (type == "bool" || type == "boolean") {
    if (arg.literal() != nullptr && arg.literal()->type()->id() == arrow::Type::STRING) {
      // PostgreSQL's spellings: true/false, t/f, yes/no, on/off, 1/0, any case.
      std::string text = arg.literal()->scalar()->ToString();
      for (char& c : text) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      static const std::set<std::string> kTrue = {"true", "t", "yes", "y", "on", "1"};
      static const std::set<std::string> kFalse = {"false", "f", "no", "n", "off", "0"};
      if (kTrue.count(text)) return cp::literal(true);
      if (kFalse.count(text)) return cp::literal(false);
      return Error(cast, "invalid input syntax for type boolean: \"" +
                             arg.literal()->scalar()->ToString() + "\"");
    }
    to = arrow::boolean();
  } else if (type == "numeric" || type == "decimal") {
    const auto& mods = ListMember(cast.at("typeName"), "typmods");
    int64_t p = 38, s = 0;
    if (mods.size() > 0) {
      ARROW_ASSIGN_OR_RAISE(p, IntConstant(mods.at(0).at("A_Const")));
    }
    if (mods.size() > 1) {
      ARROW_ASSIGN_OR_RAISE(s, IntConstant(mods.at(1).at("A_Const")));
    }
    if (p < 1 || p > 38 || s < 0 || s > p) {
      return Error(cast, "NUMERIC(" + std::to_string(p) + ", " + std::to_string(s) +
                             ") is not a valid precision and scale");
    }
    to = arrow::decimal128(static_cast<int32_t>(p), static_cast<int32_t>(s));
  } else {
    return Unsupported(cast, "CAST to " + type);
  }
  if (arrow::is_integer(to->id()) || arrow::is_floating(to->id()) || arrow::is_decimal(to->id())) {
    // PostgreSQL reads a number from text with spaces around it (CAST(' 12 ' AS int)).
    auto typed = arg.Bind(*SchemaFor(scope));
    if (typed.ok() && arrow::is_string(typed->type()->id())) {
      arg = cp::call("utf8_trim_whitespace", {arg});
      if (arrow::is_integer(to->id())) {
        // And with a sign of +, which Arrow's integer parse refuses.
        arg = cp::call("replace_substring_regex", {arg},
                       cp::ReplaceSubstringOptions("^\\+", "", /*max_replacements=*/1));
      }
    }
  }
  if (to->id() == arrow::Type::DECIMAL128) {
    // Arrow refuses an integer to decimal(p, s) cast unless p holds every value of the integer
    // type (19 + s digits for int64); PostgreSQL checks the values. Through decimal(38, s), the
    // second cast checks each value against p.
    auto typed = arg.Bind(*SchemaFor(scope));
    const int32_t scale = static_cast<const arrow::Decimal128Type&>(*to).scale();
    if (typed.ok() && arrow::is_integer(typed->type()->id()) && scale <= 18) {
      arg = cp::call("cast", {arg}, CastAs(arrow::decimal128(38, scale)));
    }
    // To fewer decimal places PostgreSQL rounds (half away from zero), where Arrow refuses to
    // lose digits: CAST(3.99 AS numeric(3, 1)) is 4.0. One more digit of precision first, for a
    // carry (9.99 to 10.0).
    if (typed.ok() && typed->type()->id() == arrow::Type::DECIMAL128) {
      const auto& from = static_cast<const arrow::Decimal128Type&>(*typed->type());
      if (from.scale() > scale && from.precision() < 38) {
        arg =
            cp::call("cast", {arg}, CastAs(arrow::decimal128(from.precision() + 1, from.scale())));
        arg =
            cp::call("round", {arg}, cp::RoundOptions(scale, cp::RoundMode::HALF_TOWARDS_INFINITY));
      }
    }
    if (typed.ok() && arrow::is_floating(typed->type()->id())) {
      // A double too: half away from zero at the scale (Arrow's cast rounds 2.5 to 2).
      arg = cp::call("round", {arg}, cp::RoundOptions(scale, cp::RoundMode::HALF_TOWARDS_INFINITY));
    }
  }
  if (arrow::is_integer(to->id())) {
    // PostgreSQL rounds a numeric or float to an integer (half away from zero); Arrow's safe
    // cast refuses the fraction instead.
    auto typed = arg.Bind(*SchemaFor(scope));
    // (a numeric half away from zero, a double half to even: rint).
    if (typed.ok() && arrow::is_decimal(typed->type()->id())) {
      arg = cp::call("round", {arg}, cp::RoundOptions(0, cp::RoundMode::HALF_TOWARDS_INFINITY));
    } else if (typed.ok() && arrow::is_floating(typed->type()->id())) {
      arg = cp::call("round", {arg}, cp::RoundOptions(0, cp::RoundMode::HALF_TO_EVEN));
    }
  }
  return cp::call("cast", {arg}, CastAs(to));
}

// Apart from Operator and Expr, as BinaryOperator is: their frames stay small on the binder's
// stack (sql_parser_test's deepest queries, under ASan).
[[gnu::noinline]] arrow::Result<cp::Expression> Binder::DistinctFrom(const std::string& kind,
                                                                     const json& e, Scope scope) {
  // a IS DISTINCT FROM b: a <> b where both are known, else whether just one is NULL. Never
  // NULL itself.
  ARROW_ASSIGN_OR_RAISE(auto l, Expr(e.at("lexpr"), scope));
  ARROW_ASSIGN_OR_RAISE(auto r, Expr(e.at("rexpr"), scope));
  ARROW_ASSIGN_OR_RAISE(l, FoldConstantSubtrees(l));
  ARROW_ASSIGN_OR_RAISE(r, FoldConstantSubtrees(r));
  cp::Expression distinct = cp::literal(false);  // NULL and NULL
  if (!IsUntypedNull(l) || !IsUntypedNull(r)) {
    ARROW_ASSIGN_OR_RAISE(auto differ, BinaryOperator("<>", e, l, r, scope));
    distinct = plan::IsDistinctFrom(std::move(differ), l, r);
  }
  return kind == "AEXPR_DISTINCT" ? distinct : cp::not_(distinct);
}

[[gnu::noinline]] arrow::Result<cp::Expression> Binder::WhenCondition(
    const json& when, cp::Expression c, const std::optional<cp::Expression>& subject, Scope scope) {
  if (subject.has_value()) {
    ARROW_ASSIGN_OR_RAISE(c, BinaryOperator("=", when, *subject, std::move(c), scope));
  }
  // WHEN NULL never holds. Arrow's case_when must not see a null-typed condition: it crashed on
  // one (CASE WHEN NULL THEN 1 ELSE 2 END).
  return UnknownAsBoolean(c);
}

// The operator `op` of a binary A_Expr over its bound operands: literal coercions, decimal
// fitting and the kernel. Apart from Operator, which recurses once per nesting level: its own
// frame stays small on the binder's stack.
[[gnu::noinline]] arrow::Result<cp::Expression> Binder::BinaryOperator(
    const std::string& op, const json& e, cp::Expression l, cp::Expression r, Scope scope) {
  static const std::set<std::string> kComparisons = {"=", "<>", "!=", "<", "<=", ">", ">="};
  static const std::set<std::string> kDateOperators = {"-", "=", "<>", "!=", "<", "<=", ">", ">="};
  if (kComparisons.count(op) && IsUntypedNull(l) && IsUntypedNull(r)) {
    // NULL = NULL is unknown; Arrow has no comparison of two null-typed values.
    return UnknownAsBoolean(l);
  }
  if (op == "^") {
    // Exponentiation, in double precision as power() computes it.
    auto to_double = [](const cp::Expression& x) {
      return cp::call("cast", {x}, CastAs(arrow::float64()));
    };
    return cp::call("power_checked", {to_double(l), to_double(r)});
  }
  if (kComparisons.count(op) || op == "+" || op == "-" || op == "*" || op == "/" || op == "%") {
    const auto schema = SchemaFor(scope);
    ARROW_ASSIGN_OR_RAISE(l, NumberLiteral(l, r, *schema, e));
    ARROW_ASSIGN_OR_RAISE(r, NumberLiteral(r, l, *schema, e));
  }
  if (kDateOperators.count(op)) {
    const auto schema = SchemaFor(scope);
    ARROW_ASSIGN_OR_RAISE(l, DateLiteral(l, r, *schema, e));
    ARROW_ASSIGN_OR_RAISE(r, DateLiteral(r, l, *schema, e));
  }
  if (op == "-" || op == "+") {
    // date - date is the number of days between them, and date +/- integer moves by days, as
    // in PostgreSQL.
    const auto schema = SchemaFor(scope);
    auto lt = l.Bind(*schema);
    auto rt = r.Bind(*schema);
    if (lt.ok() && rt.ok()) {
      const auto lid = lt->type()->id(), rid = rt->type()->id();
      const bool l_time = lid == arrow::Type::TIMESTAMP || lid == arrow::Type::DATE32;
      const bool r_time = rid == arrow::Type::TIMESTAMP || rid == arrow::Type::DATE32;
      if (op == "-" && l_time && r_time &&
          (lid == arrow::Type::TIMESTAMP || rid == arrow::Type::TIMESTAMP)) {
        // PostgreSQL's answer is an interval, which sluice has no type for.
        return Unsupported(e,
                           "subtracting timestamps (an interval); cast both to date for the "
                           "days between them");
      }
      if (op == "-" && lid == arrow::Type::DATE32 && rid == arrow::Type::DATE32) {
        return cp::call("subtract_checked", {DateToDays(l), DateToDays(r)});
      }
      auto days = [](const cp::Expression& x) {
        return cp::call("cast", {x}, CastAs(arrow::int32()));
      };
      if (lid == arrow::Type::DATE32 && arrow::is_integer(rid)) {
        return DaysToDate(
            cp::call(op == "+" ? "add_checked" : "subtract_checked", {DateToDays(l), days(r)}));
      }
      if (op == "+" && arrow::is_integer(lid) && rid == arrow::Type::DATE32) {
        return DaysToDate(cp::call("add_checked", {days(l), DateToDays(r)}));
      }
    }
  }
  if (op == "+" || op == "-" || op == "*" || op == "/") {
    // An integer beside a double is a double before Arrow sees them: folding a double literal
    // with an integer literal picked float32 (CAST(1 AS float8) / 3 gave 0.33333334).
    const auto schema = SchemaFor(scope);
    auto lt = l.Bind(*schema);
    auto rt = r.Bind(*schema);
    if (lt.ok() && rt.ok()) {
      const auto lid = lt->type()->id(), rid = rt->type()->id();
      auto to_double = [](const cp::Expression& x) {
        return cp::call("cast", {x}, CastAs(arrow::float64()));
      };
      if (arrow::is_floating(lid) && arrow::is_integer(rid)) r = to_double(r);
      if (arrow::is_integer(lid) && arrow::is_floating(rid)) l = to_double(l);
    }
    if (op != "/") {
      // A uint64 beside a signed integer: Arrow computes the two as int64, which failed past
      // 2^63. A literal that is not negative is a uint64 (u + 1 stays a uint64, checked, as in
      // DuckDB); anything else meets it in decimal(20, 0).
      MeetUnsigned64(&l, &r, *schema);
      WidenUnsigned64(&l, &r, *schema, /*product=*/op == "*");
    }
  }
  if (scope == Scope::kRow || in_aggregate_) {
    l = NarrowIntegerLiteral(l, r, RowSchema());
    r = NarrowIntegerLiteral(r, l, RowSchema());
    if (op == "*") FitDecimalProduct(&l, &r);
    if (op == "+" || op == "-") FitDecimalSum(&l, &r, RowSchema());
    if (kComparisons.count(op)) {
      FitDecimalSum(&l, &r, RowSchema(), 0);
      MeetUnsigned64(&l, &r, RowSchema());
      MeetFloat(&l, &r, RowSchema());
    }
    if (op == "/") FitDecimalQuotient(&l, &r, RowSchema());
  } else if (op != "*" && op != "/") {
    const auto schema = SchemaFor(scope);
    l = NarrowIntegerLiteral(l, r, *schema);
    r = NarrowIntegerLiteral(r, l, *schema);
    if (op == "+" || op == "-") FitDecimalSum(&l, &r, *schema);
    if (kComparisons.count(op)) {
      FitDecimalSum(&l, &r, *schema, 0);
      MeetUnsigned64(&l, &r, *schema);
      MeetFloat(&l, &r, *schema);
    }
  } else {
    // After aggregation, products and ratios of decimal sums outgrow decimal128 (TPC-H Q14:
    // 100.00 * sum(...) / sum(...)); compute them in double, as DuckDB's results compare.
    auto to_double = [](const cp::Expression& x) {
      return cp::call("cast", {x}, CastAs(arrow::float64()));
    };
    l = to_double(l);
    r = to_double(r);
  }
  if (kComparisons.count(op)) {
    // A timestamp with a zone beside one without (now() beside a column) compares as
    // PostgreSQL's with its session in UTC: both as UTC wall times, in the finer unit.
    const auto schema = SchemaFor(scope);
    auto lt = l.Bind(*schema);
    auto rt = r.Bind(*schema);
    if (lt.ok() && rt.ok() && lt->type()->id() == arrow::Type::TIMESTAMP &&
        rt->type()->id() == arrow::Type::TIMESTAMP) {
      const auto& a = static_cast<const arrow::TimestampType&>(*lt->type());
      const auto& b = static_cast<const arrow::TimestampType&>(*rt->type());
      if (a.timezone().empty() != b.timezone().empty()) {
        const auto unit = std::max(a.unit(), b.unit());  // SECOND < MILLI < MICRO < NANO
        const auto naive = arrow::timestamp(unit);
        l = cp::call("cast", {l}, CastAs(naive));
        r = cp::call("cast", {r}, CastAs(naive));
      }
    }
  }
  static const std::map<std::string, std::string> kOps = {{"+", "add_checked"},
                                                          {"-", "subtract_checked"},
                                                          {"*", "multiply_checked"},
                                                          {"/", "divide_checked"},
                                                          {"=", "equal"},
                                                          {"<>", "not_equal"},
                                                          {"!=", "not_equal"},
                                                          {"<", "less"},
                                                          {"<=", "less_equal"},
                                                          {">", "greater"},
                                                          {">=", "greater_equal"}};
  if (op == "%") return Modulo(e, l, r, scope);
  if (op == "~" || op == "~*" || op == "!~" || op == "!~*") {
    // POSIX regular expressions, as RE2 reads them.
    if (r.literal() == nullptr || r.literal()->type()->id() != arrow::Type::STRING) {
      return Unsupported(e, "a regular expression that is not a constant");
    }
    auto match = cp::call("match_substring_regex", {l},
                          cp::MatchSubstringOptions(r.literal()->scalar()->ToString(),
                                                    /*ignore_case=*/op.back() == '*'));
    return op[0] == '!' ? cp::not_(match) : match;
  }
  if (op == "||") {
    // Text concatenation; a NULL operand makes NULL, and other types are cast to text.
    const auto schema = SchemaFor(scope);
    for (cp::Expression* x : {&l, &r}) {
      ARROW_ASSIGN_OR_RAISE(auto typed, x->Bind(*schema));
      if (typed.type()->id() != arrow::Type::STRING) {
        *x = cp::call("cast", {*x}, CastAs(arrow::utf8()));
      }
    }
    return cp::call("binary_join_element_wise", {l, r, cp::literal("")});
  }
  auto it = kOps.find(op);
  if (it == kOps.end()) return Unsupported(e, "operator " + op);
  if (op == "/") r = GuardedDivisor(r, scope);
  return cp::call(it->second, {l, r});
}

arrow::Result<cp::Expression> Binder::Operator(const json& e, Scope scope) {
  const std::string kind = e.value("kind", "");
  const std::string op = LastName(ListMember(e, "name"));
  if (kind == "AEXPR_OP") {
    if (!e.contains("lexpr")) {  // unary
      ARROW_ASSIGN_OR_RAISE(auto r, Expr(e.at("rexpr"), scope));
      if (op == "-") return cp::call("negate_checked", {r});
      if (op == "+") return r;
      return Unsupported(e, "unary operator " + op);
    }
    // x +/- interval (an interval literal, or one times a number, on either side of +).
    const json* interval = nullptr;
    const json* times = nullptr;
    const json* base = &e.at("lexpr");
    auto is_interval = [&](const json& node) {
      auto [k, b] = Node(node);
      return k == "TypeCast" && LastName((*b).at("typeName").at("names")) == "interval";
    };
    // `node` is an interval, or a product of one and something else (then `*other`).
    auto interval_of = [&](const json& node, const json** other) -> const json* {
      if (is_interval(node)) return &node;
      auto [k, b] = Node(node);
      if (k != "A_Expr" || (*b).value("kind", "") != "AEXPR_OP" || !b->contains("lexpr") ||
          LastName(ListMember(*b, "name")) != "*") {
        return nullptr;
      }
      if (is_interval(b->at("rexpr"))) {
        *other = &b->at("lexpr");
        return &b->at("rexpr");
      }
      if (is_interval(b->at("lexpr"))) {
        *other = &b->at("rexpr");
        return &b->at("lexpr");
      }
      return nullptr;
    };
    if (op == "+" || op == "-") {
      interval = interval_of(e.at("rexpr"), &times);
      if (interval == nullptr && op == "+") {
        interval = interval_of(e.at("lexpr"), &times);
        base = &e.at("rexpr");
      }
    }
    if (interval != nullptr) {
      auto [ikind, ibody] = Node(*interval);
      ARROW_ASSIGN_OR_RAISE(Interval iv, IntervalLiteral(*ibody));
      ARROW_ASSIGN_OR_RAISE(auto l, Expr(*base, scope));
      std::optional<cp::Expression> n;
      if (times != nullptr) {
        ARROW_ASSIGN_OR_RAISE(auto bound, Expr(*times, scope));
        auto typed = bound.Bind(*SchemaFor(scope));
        if (!typed.ok() || !arrow::is_integer(typed->type()->id())) {
          return Unsupported(*times, "an interval multiplied by anything but an integer");
        }
        n = cp::call("cast", {bound}, CastAs(arrow::int64()));
      }
      return PlusInterval(e, op, std::move(l), iv, n, scope);
    }
    ARROW_ASSIGN_OR_RAISE(auto l, Expr(e.at("lexpr"), scope));
    ARROW_ASSIGN_OR_RAISE(auto r, Expr(e.at("rexpr"), scope));
    // Fold first, so that "1 + 10" is a literal by the time it meets a decimal.
    ARROW_ASSIGN_OR_RAISE(l, FoldConstantSubtrees(l));
    ARROW_ASSIGN_OR_RAISE(r, FoldConstantSubtrees(r));
    return BinaryOperator(op, e, std::move(l), std::move(r), scope);
  }
  if (kind == "AEXPR_BETWEEN" || kind == "AEXPR_NOT_BETWEEN") {
    ARROW_ASSIGN_OR_RAISE(auto x, Expr(e.at("lexpr"), scope));
    const auto& bounds = e.at("rexpr").at("List").at("items");
    ARROW_ASSIGN_OR_RAISE(auto lo, Expr(bounds.at(0), scope));
    ARROW_ASSIGN_OR_RAISE(auto hi, Expr(bounds.at(1), scope));
    // Integer bounds on a decimal narrow as a comparison's operands do (c_acctbal BETWEEN 3096
    // AND 5025 would otherwise compare decimal(12, 2) with decimal(19, 0)).
    ARROW_ASSIGN_OR_RAISE(lo, FoldConstantSubtrees(lo));
    ARROW_ASSIGN_OR_RAISE(hi, FoldConstantSubtrees(hi));
    const auto schema = SchemaFor(scope);
    lo = NarrowIntegerLiteral(lo, x, *schema);
    hi = NarrowIntegerLiteral(hi, x, *schema);
    ARROW_ASSIGN_OR_RAISE(lo, DateLiteral(lo, x, *schema, e));
    ARROW_ASSIGN_OR_RAISE(hi, DateLiteral(hi, x, *schema, e));
    ARROW_ASSIGN_OR_RAISE(lo, NumberLiteral(lo, x, *schema, e));
    ARROW_ASSIGN_OR_RAISE(hi, NumberLiteral(hi, x, *schema, e));
    cp::Expression x_lo = x, x_hi = x;
    FitDecimalSum(&x_lo, &lo, *schema, 0);
    FitDecimalSum(&x_hi, &hi, *schema, 0);
    MeetUnsigned64(&x_lo, &lo, *schema);
    MeetFloat(&x_lo, &lo, *schema);
    MeetUnsigned64(&x_hi, &hi, *schema);
    MeetFloat(&x_hi, &hi, *schema);
    auto in = cp::and_(cp::greater_equal(x_lo, lo), cp::less_equal(x_hi, hi));
    return kind == "AEXPR_BETWEEN" ? in : cp::not_(in);
  }
  if (kind == "AEXPR_DISTINCT" || kind == "AEXPR_NOT_DISTINCT") return DistinctFrom(kind, e, scope);
  if (kind == "AEXPR_NULLIF") {
    ARROW_ASSIGN_OR_RAISE(auto a, Expr(e.at("lexpr"), scope));
    ARROW_ASSIGN_OR_RAISE(auto b, Expr(e.at("rexpr"), scope));
    return NullIf(e, a, b, scope);
  }
  if (kind == "AEXPR_LIKE" || kind == "AEXPR_ILIKE") {
    ARROW_ASSIGN_OR_RAISE(auto x, Expr(e.at("lexpr"), scope));
    ARROW_ASSIGN_OR_RAISE(auto pattern, Expr(e.at("rexpr"), scope));
    if (pattern.literal() == nullptr) return Unsupported(e, "LIKE with a non-constant pattern");
    if (!pattern.literal()->scalar()->is_valid) {
      return cp::literal(arrow::MakeNullScalar(arrow::boolean()));  // x LIKE NULL is NULL
    }
    auto like = cp::call("match_like", {x},
                         cp::MatchSubstringOptions(pattern.literal()->scalar()->ToString(),
                                                   /*ignore_case=*/kind == "AEXPR_ILIKE"));
    if (op == "~~" || op == "~~*") return like;
    if (op == "!~~" || op == "!~~*") return cp::not_(like);
    return Unsupported(e, "operator " + op);
  }
  if (kind == "AEXPR_IN") {
    ARROW_ASSIGN_OR_RAISE(auto x, Expr(e.at("lexpr"), scope));
    if (!e.at("rexpr").contains("List")) return Unsupported(e, "IN with a subquery");
    std::vector<std::shared_ptr<arrow::Scalar>> values;
    std::vector<cp::Expression> expressions;
    bool constant = true;
    for (const auto& item : e.at("rexpr").at("List").at("items")) {
      ARROW_ASSIGN_OR_RAISE(auto v, Expr(item, scope));
      ARROW_ASSIGN_OR_RAISE(v, FoldConstantSubtrees(v));
      ARROW_ASSIGN_OR_RAISE(v, DateLiteral(v, x, *SchemaFor(scope), item));
      ARROW_ASSIGN_OR_RAISE(v, NumberLiteral(v, x, *SchemaFor(scope), item));
      expressions.push_back(v);
      if (v.literal() == nullptr) {
        constant = false;
      } else {
        values.push_back(v.literal()->scalar());
      }
    }
    // Values of more than one type (1, 2.5) compare as equalities, each in its common type.
    for (const auto& v : values) {
      if (v->type->id() != arrow::Type::NA && !values.empty() &&
          !v->type->Equals(*values.front()->type) &&
          values.front()->type->id() != arrow::Type::NA) {
        constant = false;
      }
    }
    if (!constant) {
      // x IN (a, b) is x = a OR x = b, with the same NULL rule.
      std::vector<cp::Expression> equal;
      const auto schema = SchemaFor(scope);
      for (const auto& v : expressions) {
        cp::Expression xv = x;
        cp::Expression vv = NarrowIntegerLiteral(v, x, *schema);
        MeetUnsigned64(&xv, &vv, *schema);
        MeetFloat(&xv, &vv, *schema);
        cp::Expression c = cp::equal(std::move(xv), std::move(vv));
        ARROW_ASSIGN_OR_RAISE(c, Typecheck(c, e, *schema));
        equal.push_back(std::move(c));
      }
      auto in = equal.size() == 1 ? equal[0] : cp::or_(equal);
      return op == "=" ? in : cp::not_(in);
    }
    std::shared_ptr<arrow::DataType> type = arrow::null();
    for (const auto& v : values) {
      if (v->type->id() != arrow::Type::NA) type = v->type;
    }
    // A uint64 beside signed values: Arrow would compare them as int64, which fails past 2^63.
    // A negative value matches no uint64, so the set holds the others as uint64.
    auto x_type = x.Bind(*SchemaFor(scope));
    const bool unsigned64 = x_type.ok() && x_type->type()->id() == arrow::Type::UINT64 &&
                            arrow::is_signed_integer(type->id());
    std::unique_ptr<arrow::ArrayBuilder> builder;
    ARROW_RETURN_NOT_OK(arrow::MakeBuilder(arrow::default_memory_pool(),
                                           unsigned64 ? arrow::uint64() : type, &builder));
    for (const auto& v : values) {
      if (v->type->id() == arrow::Type::NA) {
        ARROW_RETURN_NOT_OK(builder->AppendNull());
        continue;
      }
      if (!v->type->Equals(*type)) return Error(e, "IN list values must all have one type");
      if (unsigned64) {
        ARROW_ASSIGN_OR_RAISE(auto wide, v->CastTo(arrow::int64()));
        const int64_t value = static_cast<const arrow::Int64Scalar&>(*wide).value;
        if (value >= 0) {
          ARROW_RETURN_NOT_OK(
              static_cast<arrow::UInt64Builder&>(*builder).Append(static_cast<uint64_t>(value)));
        }
        continue;
      }
      ARROW_RETURN_NOT_OK(builder->AppendScalar(*v));
    }
    ARROW_ASSIGN_OR_RAISE(auto set, builder->Finish());
    // SQL's rule: NULL IN (...) is NULL, and so is x IN (..., NULL) when x is not listed, so
    // that NOT IN never keeps a row whose answer is unknown.
    // (EMIT_NULL is the same rule when the list has no NULL.)
    auto in = cp::call(
        "is_in", {x},
        cp::SetLookupOptions(set, set->null_count() > 0 ? cp::SetLookupOptions::INCONCLUSIVE
                                                        : cp::SetLookupOptions::EMIT_NULL));
    return op == "=" ? in : cp::not_(in);
  }
  return Unsupported(e, "expression kind " + kind);
}

arrow::Result<bool> Binder::Descending(const json& by) const {
  const std::string dir = by.value("sortby_dir", "");
  if (dir != "SORTBY_USING") return dir == "SORTBY_DESC";
  // ORDER BY x USING op: < and > are ascending and descending; PostgreSQL takes no other
  // operator of sluice's types as an ordering one.
  const std::string op = LastName(ListMember(by, "useOp"));
  if (op == "<") return false;
  if (op == ">") return true;
  return Error(by.at("node"), "operator " + op + " is not a valid ordering operator");
}

arrow::Result<int64_t> Binder::StringAggOrder(const json& call, const cp::Expression& value) {
  if (!call.contains("agg_order")) return 0;
  const auto& keys = ListMember(call, "agg_order");
  if (keys.size() != 1) {
    return Unsupported(call, "string_agg(... ORDER BY) on several keys");
  }
  const json& by = keys.at(0).at("SortBy");
  // The same expression, however written (t.s and s).
  in_aggregate_ = true;
  auto key = Expr(by.at("node"), Scope::kRow);
  in_aggregate_ = false;
  ARROW_RETURN_NOT_OK(key.status());
  ARROW_ASSIGN_OR_RAISE(auto typed_key, Typecheck(*key, by.at("node"), RowSchema()));
  if (!typed_key.Equals(value)) {
    return Unsupported(by.at("node"),
                       "string_agg(... ORDER BY) on another expression than its value");
  }
  ARROW_ASSIGN_OR_RAISE(const bool desc, Descending(by));
  return desc ? 2 : 1;
}

arrow::Result<cp::Expression> Binder::Aggregate(const json& call) {
  const std::string name = LastName(call.at("funcname"));
  if (in_aggregate_) return Error(call, "aggregate function calls cannot be nested");
  if (call.contains("over")) return Unsupported(call, "OVER on this aggregate");
  bool star = call.value("agg_star", false);
  // The least or greatest of the distinct values is that of all of them (bool_and and bool_or
  // are those of booleans).
  const bool distinct = call.value("agg_distinct", false) && name != "min" && name != "max" &&
                        name != "bool_and" && name != "bool_or" && name != "every";
  std::string text_key = name + (distinct ? " distinct " : " ") + (star ? "*" : "");
  cp::Expression arg;
  // string_agg's delimiter, and its order: 0 as consumed, 1 ascending, 2 descending.
  cp::Expression delimiter;
  int64_t order = 0;
  if (!star) {
    const auto& args = ListMember(call, "args");
    if (name == "string_agg") {
      if (args.size() != 2) {
        return Error(call, "function string_agg of " + std::to_string(args.size()) +
                               " arguments does not exist; it is string_agg(value, delimiter)");
      }
      in_aggregate_ = true;
      auto bound = Expr(args[1], Scope::kRow);
      in_aggregate_ = false;
      ARROW_RETURN_NOT_OK(bound.status());
      ARROW_ASSIGN_OR_RAISE(delimiter, FoldConstantSubtrees(*bound));
      if (delimiter.literal() == nullptr) {
        return Unsupported(args[1], "a string_agg delimiter that is not a constant");
      }
      if (!delimiter.literal()->scalar()->is_valid) {
        // A NULL delimiter joins with nothing between, as in PostgreSQL.
        delimiter = cp::literal(std::string());
      } else if (delimiter.literal()->type()->id() != arrow::Type::STRING) {
        return Error(args[1], "function string_agg's delimiter must be text, not " +
                                  delimiter.literal()->type()->ToString());
      }
      text_key += delimiter.ToString() + " ";
    } else if (args.size() != 1) {
      return Error(call, "function " + name + " takes one argument");
    } else if (call.contains("agg_order")) {
      return Unsupported(call, "ORDER BY inside " + name + "()");
    }
    in_aggregate_ = true;
    auto bound = Expr(args[0], Scope::kRow);
    in_aggregate_ = false;
    ARROW_RETURN_NOT_OK(bound.status());
    ARROW_ASSIGN_OR_RAISE(arg, Typecheck(*bound, args[0], RowSchema()));
    if (name == "string_agg") {
      ARROW_ASSIGN_OR_RAISE(order, StringAggOrder(call, arg));
      text_key += "order " + std::to_string(order) + " ";
      ARROW_ASSIGN_OR_RAISE(auto typed, arg.Bind(RowSchema()));
      if (typed.type()->id() == arrow::Type::NA) {
        arg = cp::literal(arrow::MakeNullScalar(arrow::utf8()));
      } else if (typed.type()->id() != arrow::Type::STRING) {
        return Error(args[0], "function string_agg(" + typed.type()->ToString() +
                                  ", text) does not exist; cast the value to text");
      }
    }
  } else if (name != "count") {
    return Error(call, name + "(*) is not valid; only count(*)");
  }
  if (call.contains("agg_filter") && call.at("agg_filter").is_object()) {
    // agg(x) FILTER (WHERE c) is agg over x where c holds, NULL elsewhere (count(*): a count of
    // the rows where c holds).
    in_aggregate_ = true;
    auto bound = Expr(call.at("agg_filter"), Scope::kRow);
    in_aggregate_ = false;
    ARROW_RETURN_NOT_OK(bound.status());
    ARROW_ASSIGN_OR_RAISE(auto condition,
                          Typecheck(UnknownAsBoolean(*bound), call.at("agg_filter"), RowSchema()));
    ARROW_ASSIGN_OR_RAISE(auto typed, condition.Bind(RowSchema()));
    if (!typed.type()->Equals(*arrow::boolean())) {
      return Error(call.at("agg_filter"),
                   "argument of FILTER must be type boolean, not type " + typed.type()->ToString());
    }
    if (star) {
      arg = cp::literal(true);
      star = false;
      text_key = name + " ";
    }
    ARROW_ASSIGN_OR_RAISE(auto value_type, arg.Bind(RowSchema()));
    arg = cp::call("if_else",
                   {cp::call("coalesce", {condition, cp::literal(false)}), arg,
                    cp::literal(arrow::MakeNullScalar(value_type.type()->GetSharedPtr()))});
  }
  if (!star) text_key += arg.ToString();
  if (auto it = agg_by_text_.find(text_key); it != agg_by_text_.end()) return it->second;
  if (name == "avg" && !star) {
    // avg of 64-bit integers sums them as decimals: a sum past int64 (six nanosecond epochs)
    // is an error for sum(), but avg's total only needs to reach the division, as in DuckDB.
    ARROW_ASSIGN_OR_RAISE(auto typed, arg.Bind(RowSchema()));
    const auto id = typed.type()->id();
    if (id == arrow::Type::INT64 || id == arrow::Type::UINT64) {
      arg = cp::call("cast", {arg}, CastAs(arrow::decimal128(20, 0)));
    }
  }
  const size_t first_final = final_.size();
  const std::string id = std::to_string(ctx_.next_id++);
  const std::string result = "__agg" + id;
  std::string input;
  const bool statistic = name.rfind("stddev", 0) == 0 || name.rfind("var", 0) == 0;
  if (!star) {
    input = "__in" + id;
    // sum(x) and avg(x) read one input column (a statistic changes its own, so keeps it).
    for (size_t i = 0; i < agg_inputs_.size() && !statistic; ++i) {
      if (agg_inputs_[i].Equals(arg)) input = agg_input_names_[i];
    }
    if (input == "__in" + id) {
      agg_inputs_.push_back(arg);
      agg_input_names_.push_back(input);
    }
  }
  auto part = [&](const std::string& suffix) { return "__p" + id + suffix; };
  // count(x) of a column that cannot be null is count(*).
  const arrow::FieldRef* column = star ? nullptr : arg.field_ref();
  const auto column_field = column != nullptr ? column->GetOneOrNone(RowSchema()) : nullptr;
  const bool never_null =
      column_field.ok() && *column_field != nullptr && !(*column_field)->nullable();
  // The final output of `partial_fn` over the input merged by `final_fn`: an existing one
  // where another aggregate computes the same (sum(x) of avg(x) and of sum(x)), else new.
  auto step = [&](const std::string& partial_fn, const std::string& final_fn,
                  const std::string& suffix) {
    const bool all = partial_fn == "count_all" || (partial_fn == "count" && never_null);
    const std::string fn = all ? "count_all" : partial_fn, in = all ? "" : input;
    for (const auto& p : partial_) {
      if (p.function != fn || p.input != in) continue;
      for (const auto& f : final_) {
        if (f.function == final_fn && f.input == p.output) return f.output;
      }
    }
    partial_.push_back({fn, in, part(suffix)});
    final_.push_back({final_fn, part(suffix), result + suffix});
    return result + suffix;
  };
  cp::Expression out;
  if (star) {
    out = cp::field_ref(step("count_all", "sum", ""));
  } else if (distinct) {
    if (name != "count" && name != "sum" && name != "avg") {
      return Unsupported(call, name + "(DISTINCT ...)");
    }
    if (call.contains("agg_order")) return Unsupported(call, "ORDER BY inside " + name + "()");
    // A distinct count or sum cannot be merged from partial ones: the distinct values become
    // group keys below (DistinctAggregates, or the partial step's keys for one distinct count),
    // and only a final step counts or sums them. These final steps read the input itself.
    has_distinct_aggregate_ = true;
    if (name == "count") {
      final_.push_back({"count_distinct", input, result});
      out = cp::field_ref(result);
    } else if (name == "sum") {
      final_.push_back({kSumDistinct, input, result});
      out = cp::field_ref(result);
    } else {
      final_.push_back({kSumDistinct, input, result + "s"});
      final_.push_back({"count_distinct", input, result + "c"});
      out = cp::call("divide",
                     {cp::call("cast", {cp::field_ref(result + "s")}, CastAs(arrow::float64())),
                      cp::call("cast", {cp::field_ref(result + "c")}, CastAs(arrow::float64()))});
    }
  } else if (name == "sum" || name == "min" || name == "max") {
    out = cp::field_ref(step(name, name, ""));
  } else if (name == "bool_and" || name == "every" || name == "bool_or") {
    // Over booleans false sorts first: every value true is the least of them true, and some
    // value true the greatest. NULLs are skipped, and no value at all is NULL, as for min.
    ARROW_ASSIGN_OR_RAISE(auto typed, arg.Bind(RowSchema()));
    if (typed.type()->id() != arrow::Type::BOOL && typed.type()->id() != arrow::Type::NA) {
      return Error(call, "function " + name + "(" + typed.type()->ToString() +
                             ") does not exist; it takes a boolean");
    }
    const std::string fn = name == "bool_or" ? "max" : "min";
    out = cp::field_ref(step(fn, fn, ""));
  } else if (name == "string_agg") {
    // The group's strings as a list, whose partial lists a final step merges; then joined.
    const std::string strings = step(plan::kStringAggFunction, plan::kStringAggFunction, "");
    out = cp::call(plan::kStringJoinFunction,
                   {cp::field_ref(strings), delimiter, cp::literal(order)});
  } else if (name == "count") {
    out = cp::field_ref(step("count", "sum", ""));
  } else if (name == "avg") {
    // avg = sum / count, both merged across partials; computed in double as PostgreSQL returns
    // a floating result for float inputs (and DuckDB for every input).
    const std::string sum = step("sum", "sum", "s"), count = step("count", "sum", "c");
    out = cp::call("divide", {cp::call("cast", {cp::field_ref(sum)}, CastAs(arrow::float64())),
                              cp::call("cast", {cp::field_ref(count)}, CastAs(arrow::float64()))});
  } else if (statistic) {
    // From the merged count, sum and sum of squares in double precision; a sample needs two
    // values, a population one.
    const cp::Expression in = cp::call("cast", {agg_inputs_.back()}, CastAs(arrow::float64()));
    agg_inputs_.back() = in;
    arg = in;  // the partial steps' input type
    const std::string square = "__sq" + id;
    agg_inputs_.push_back(cp::call("multiply", {in, in}));
    agg_input_names_.push_back(square);
    partial_.push_back({"sum", input, part("s")});
    partial_.push_back({"sum", square, part("q")});
    partial_.push_back({"count", input, part("c")});
    final_.push_back({"sum", part("s"), result + "s"});
    final_.push_back({"sum", part("q"), result + "q"});
    final_.push_back({"sum", part("c"), result + "c"});
    const bool population = name == "stddev_pop" || name == "var_pop";
    const cp::Expression n =
        cp::call("cast", {cp::field_ref(result + "c")}, CastAs(arrow::float64()));
    const cp::Expression sum = cp::field_ref(result + "s");
    // (sum of squares - sum^2 / n) / (n or n - 1), never below zero from rounding.
    cp::Expression variance =
        cp::call("divide",
                 {cp::call("subtract", {cp::field_ref(result + "q"),
                                        cp::call("divide", {cp::call("multiply", {sum, sum}), n})}),
                  population ? n : cp::call("subtract", {n, cp::literal(1.0)})});
    variance = cp::call("max_element_wise", {variance, cp::literal(0.0)});
    if (name.rfind("stddev", 0) == 0) variance = cp::call("sqrt", {variance});
    out = cp::call("if_else", {cp::greater_equal(n, cp::literal(population ? 1.0 : 2.0)), variance,
                               cp::literal(arrow::MakeNullScalar(arrow::float64()))});
  }
  agg_by_text_[text_key] = out;
  // Type the new final outputs through their partial steps.
  auto arg_type = star ? arrow::boolean()
                       : arg.Bind(RowSchema()).ValueOr(cp::literal(true)).type()->GetSharedPtr();
  for (size_t i = first_final; i < final_.size(); ++i) {
    std::shared_ptr<arrow::DataType> type = arg_type;
    for (const auto& p : partial_) {
      if (p.output == final_[i].input) {
        ARROW_ASSIGN_OR_RAISE(type, AggregateOutputType(p, arg_type));
      }
    }
    AggregateCall typed = final_[i];
    if (typed.function == kSumDistinct) typed.function = "sum";  // a sum, of fewer values
    ARROW_ASSIGN_OR_RAISE(type, AggregateOutputType(typed, type));
    aggregate_fields_.push_back(arrow::field(final_[i].output, type));
  }
  return out;
}

arrow::Result<cp::Expression> Binder::LibraryArgument(const json& arg, const LibraryFunction& fn,
                                                      size_t i, Scope scope) {
  const auto schema = SchemaFor(scope);
  ARROW_ASSIGN_OR_RAISE(auto e, Expr(arg, scope));
  ARROW_ASSIGN_OR_RAISE(auto checked, Typecheck(e, arg, *schema));
  ARROW_ASSIGN_OR_RAISE(auto typed, checked.Bind(*schema));
  const auto& want = fn.signature.arguments[i];
  if (typed.type()->Equals(*want)) return checked;
  // PostgreSQL resolves a call by implicit casts to the declared types: among numbers, among
  // text types, date to timestamp, and NULL to anything; text is never read as a number.
  const auto from = typed.type()->id(), to = want->id();
  auto number = [](arrow::Type::type t) {
    return arrow::is_integer(t) || arrow::is_floating(t) || arrow::is_decimal(t);
  };
  const bool implicit = from == arrow::Type::NA || (number(from) && number(to)) ||
                        (arrow::is_base_binary_like(from) && arrow::is_base_binary_like(to) &&
                         arrow::is_string(from) == arrow::is_string(to)) ||
                        (from == arrow::Type::DATE32 && to == arrow::Type::TIMESTAMP);
  if (!implicit || !cp::CanCast(*typed.type(), *want)) {
    return Error(arg, "function " + LibraryDisplay(fn) + ": argument " + std::to_string(i + 1) +
                          " is " + typed.type()->ToString() + ", which does not convert to " +
                          want->ToString());
  }
  return cp::call("cast", {std::move(checked)}, CastAs(want));
}

arrow::Result<cp::Expression> Binder::CallLibraryFunction(const json& call,
                                                          const LibraryFunction& fn, Scope scope) {
  const auto& sig = fn.signature;
  const bool aggregate = sig.kind == artifact::FunctionSignature::Kind::kAggregate;
  const std::string display = LibraryDisplay(fn);
  if (sig.kind == artifact::FunctionSignature::Kind::kWindow) {
    return Error(call, "window function " + display + " requires an OVER clause");
  }
  if (call.value("agg_star", false) || call.value("agg_distinct", false) ||
      call.contains("agg_filter") || call.contains("agg_order")) {
    return Unsupported(call, "*, DISTINCT, FILTER or ORDER BY in a call of " + display);
  }
  if (aggregate) {
    if (scope != Scope::kAggregated) {
      return Error(call, in_aggregate_ ? "aggregate function calls cannot be nested"
                                       : "aggregate functions are not allowed here");
    }
    if (in_aggregate_) return Error(call, "aggregate function calls cannot be nested");
  }
  const auto& args = ListMember(call, "args");
  if (args.size() != sig.arguments.size()) {
    return Error(call, "function " + display + " takes " + std::to_string(sig.arguments.size()) +
                           " arguments, not " + std::to_string(args.size()));
  }
  const Scope arg_scope = aggregate ? Scope::kRow : scope;
  std::vector<cp::Expression> bound;
  for (size_t i = 0; i < args.size(); ++i) {
    in_aggregate_ = aggregate;
    auto e = LibraryArgument(args[i], fn, i, arg_scope);
    in_aggregate_ = false;
    ARROW_RETURN_NOT_OK(e.status());
    bound.push_back(*std::move(e));
  }
  ctx_.libraries.insert(fn.digest_hex);
  const std::string name = plan::LibraryFunctionName(fn.digest_hex, sig.name);
  if (!aggregate) return cp::call(name, std::move(bound));

  // An aggregate's arguments travel as one struct column; its partial step keeps the library's
  // state per group (which crosses a shuffle), and the final step merges and finalizes.
  std::vector<std::string> fields;
  for (size_t i = 0; i < bound.size(); ++i) fields.push_back("a" + std::to_string(i));
  cp::Expression arg = cp::call("make_struct", std::move(bound), cp::MakeStructOptions(fields));
  const std::string text_key = name + " " + arg.ToString();
  if (auto it = agg_by_text_.find(text_key); it != agg_by_text_.end()) return it->second;
  const std::string id = std::to_string(ctx_.next_id++);
  const std::string input = "__in" + id, partial = "__p" + id, result = "__agg" + id;
  agg_inputs_.push_back(arg);
  agg_input_names_.push_back(input);
  partial_.push_back({name + plan::kPartialSuffix, input, partial});
  final_.push_back({name + plan::kMergeSuffix, partial, result});
  ARROW_ASSIGN_OR_RAISE(
      auto state_type,
      AggregateOutputType(partial_.back(),
                          arg.Bind(RowSchema()).ValueOrDie().type()->GetSharedPtr()));
  ARROW_ASSIGN_OR_RAISE(auto result_type, AggregateOutputType(final_.back(), state_type));
  aggregate_fields_.push_back(arrow::field(result, result_type));
  cp::Expression out = cp::field_ref(result);
  agg_by_text_[text_key] = out;
  return out;
}

arrow::Result<std::string> Binder::WindowInput(const json& node, Scope scope,
                                               std::shared_ptr<arrow::DataType>* type) {
  ARROW_ASSIGN_OR_RAISE(auto e, Expr(node, scope));
  const auto schema = SchemaFor(scope);
  ARROW_ASSIGN_OR_RAISE(e, Typecheck(e, node, *schema));
  ARROW_ASSIGN_OR_RAISE(auto typed, e.Bind(*schema));
  if (type != nullptr) *type = typed.type()->GetSharedPtr();
  if (const auto* ref = e.field_ref(); ref != nullptr && ref->name() != nullptr) {
    return *ref->name();
  }
  const std::string id = ctx_.NewId("__window_input");
  window_inputs_.push_back(std::move(e));
  window_input_names_.push_back(id);
  return id;
}

arrow::Result<plan::WindowFrame> Binder::Frame(const json& over) {
  // PostgreSQL's FRAMEOPTION_* bits (nodes/parsenodes.h).
  constexpr int64_t kRows = 0x4, kGroups = 0x8, kStartUnboundedPreceding = 0x20,
                    kEndUnboundedPreceding = 0x40, kStartUnboundedFollowing = 0x80,
                    kEndUnboundedFollowing = 0x100, kStartCurrentRow = 0x200,
                    kEndCurrentRow = 0x400, kStartPreceding = 0x800, kEndPreceding = 0x1000,
                    kStartFollowing = 0x2000, kEndFollowing = 0x4000, kExclude = 0x38000;
  using B = plan::WindowFrame::Bound;
  const int64_t options = over.value("frameOptions", int64_t{0x422});
  if (options & kGroups) return Unsupported(over, "GROUPS window frames");
  if (options & kExclude) return Unsupported(over, "EXCLUDE in a window frame");
  plan::WindowFrame frame;
  frame.unit = (options & kRows) ? plan::WindowFrame::Unit::kRows : plan::WindowFrame::Unit::kRange;
  auto offset = [&](const char* key, const char* which) -> arrow::Result<int64_t> {
    if (!over.contains(key)) return Error(over, std::string("frame ") + which + " offset missing");
    auto [kind, body] = Node(over.at(key));
    if (kind != "A_Const" || !body->contains("ival")) {
      return Unsupported(over.at(key), std::string("a non-integer frame ") + which + " offset");
    }
    ARROW_ASSIGN_OR_RAISE(int64_t v, IntConstant(*body));
    if (v < 0)
      return Error(over.at(key), std::string("frame ") + which + " offset must not be negative");
    return v;
  };
  if (options & kStartUnboundedFollowing) {
    return Error(over, "frame start cannot be UNBOUNDED FOLLOWING");
  }
  if (options & kEndUnboundedPreceding)
    return Error(over, "frame end cannot be UNBOUNDED PRECEDING");
  // A bound from its bits: unbounded, current row, or n preceding / following.
  auto bound = [&](int64_t unbounded, B unbounded_bound, int64_t current, int64_t preceding,
                   int64_t following, const char* key, const char* which, B* out,
                   int64_t* off) -> arrow::Status {
    *out = B::kCurrentRow;
    if (options & unbounded) *out = unbounded_bound;
    if (options & current) *out = B::kCurrentRow;
    if (options & (preceding | following)) {
      *out = (options & preceding) ? B::kPreceding : B::kFollowing;
      ARROW_ASSIGN_OR_RAISE(*off, offset(key, which));
    }
    return arrow::Status::OK();
  };
  ARROW_RETURN_NOT_OK(bound(kStartUnboundedPreceding, B::kUnboundedPreceding, kStartCurrentRow,
                            kStartPreceding, kStartFollowing, "startOffset", "starting",
                            &frame.start, &frame.start_offset));
  if (!(options &
        (kStartUnboundedPreceding | kStartCurrentRow | kStartPreceding | kStartFollowing))) {
    frame.start = B::kUnboundedPreceding;
  }
  ARROW_RETURN_NOT_OK(bound(kEndUnboundedFollowing, B::kUnboundedFollowing, kEndCurrentRow,
                            kEndPreceding, kEndFollowing, "endOffset", "ending", &frame.end,
                            &frame.end_offset));
  if (frame.unit == plan::WindowFrame::Unit::kRange &&
      (options & (kStartPreceding | kStartFollowing | kEndPreceding | kEndFollowing))) {
    return Unsupported(over, "RANGE with an offset in a window frame (ROWS is)");
  }
  if (frame.start == B::kCurrentRow && frame.end == B::kPreceding) {
    return Error(over, "frame starting from current row cannot have preceding rows");
  }
  if (frame.start == B::kFollowing && (frame.end == B::kPreceding || frame.end == B::kCurrentRow)) {
    return Error(over, "frame starting from following row cannot have preceding rows");
  }
  return frame;
}

arrow::Result<cp::Expression> Binder::WindowFunction(const json& call, Scope scope) {
  const std::string name = LastName(call.at("funcname"));
  if (!windows_allowed_ || in_aggregate_) {
    return Error(call, in_aggregate_
                           ? "aggregate function calls cannot contain window function calls"
                           : "window functions are only allowed in the select list");
  }
  static const std::set<std::string> kRanking = {"row_number",   "rank",      "dense_rank",
                                                 "percent_rank", "cume_dist", "ntile"};
  static const std::set<std::string> kValues = {"lag", "lead", "first_value", "last_value",
                                                "nth_value"};
  static const std::set<std::string> kAggregates = {"sum", "count", "avg", "min", "max"};
  std::optional<LibraryFunction> library;
  if (!kRanking.count(name) && !kValues.count(name) && !kAggregates.count(name)) {
    if (ctx_.functions) {
      ARROW_ASSIGN_OR_RAISE(library, ctx_.functions(name));
    }
    if (!library.has_value()) return Unsupported(call, "window function " + name + "()");
    if (library->signature.kind != artifact::FunctionSignature::Kind::kWindow) {
      return Unsupported(call, "OVER on " + LibraryDisplay(*library) +
                                   ", which is not a window "
                                   "function");
    }
  }
  const json& over = call.at("over");
  if (over.contains("name") || over.contains("refname")) {
    // Named windows are substituted before binding (named_windows.h): a name left is unknown.
    const std::string name = over.value("name", over.value("refname", ""));
    return Error(over, "window \"" + name + "\" does not exist");
  }
  if (call.contains("agg_filter") && call.at("agg_filter").is_object()) {
    return Unsupported(call, "FILTER on a window function");
  }
  if (call.value("agg_distinct", false)) {
    return Unsupported(call, "DISTINCT in a window function");
  }
  const auto& args = ListMember(call, "args");
  const bool star = call.value("agg_star", false);
  auto arity = [&](size_t least, size_t most) -> arrow::Status {
    if (args.size() < least || args.size() > most) {
      return Error(call,
                   "function " + name + " takes " +
                       (least == most ? std::to_string(least)
                                      : std::to_string(least) + " to " + std::to_string(most)) +
                       " argument" + (most == 1 ? "" : "s"));
    }
    return arrow::Status::OK();
  };
  auto constant = [&](const json& node, const char* what) -> arrow::Result<int64_t> {
    auto [kind, body] = Node(node);
    if (kind != "A_Const" || !body->contains("ival")) {
      return Unsupported(node, std::string("a non-constant ") + what + " of " + name + "()");
    }
    return IntConstant(*body);
  };
  plan::WindowCall w;
  w.function = name;
  std::shared_ptr<arrow::DataType> value_type;
  if (library.has_value()) {
    if (star || args.size() != library->signature.arguments.size()) {
      return Error(call, "function " + LibraryDisplay(*library) + " takes " +
                             std::to_string(library->signature.arguments.size()) +
                             " arguments, not " + (star ? "*" : std::to_string(args.size())));
    }
    for (size_t i = 0; i < args.size(); ++i) {
      ARROW_ASSIGN_OR_RAISE(auto e, LibraryArgument(args[i], *library, i, scope));
      const std::string id = ctx_.NewId("window_argument");
      window_inputs_.push_back(std::move(e));
      window_input_names_.push_back(id);
      w.arguments.push_back(id);
    }
    ctx_.libraries.insert(library->digest_hex);
    w.function = plan::LibraryFunctionName(library->digest_hex, library->signature.name);
  } else if (kRanking.count(name)) {
    ARROW_RETURN_NOT_OK(arity(name == "ntile" ? 1 : 0, name == "ntile" ? 1 : 0));
    if (name == "ntile") {
      ARROW_ASSIGN_OR_RAISE(w.parameter, constant(args[0], "bucket count"));
      if (w.parameter < 1) return Error(args[0], "argument of ntile must be greater than zero");
    }
  } else if (star) {
    if (name != "count") return Error(call, name + "(*) is not valid; only count(*)");
    w.function = "count_all";
  } else {
    if (name == "lag" || name == "lead") {
      ARROW_RETURN_NOT_OK(arity(1, 3));
    } else if (name == "nth_value") {
      ARROW_RETURN_NOT_OK(arity(2, 2));
    } else {
      ARROW_RETURN_NOT_OK(arity(1, 1));
    }
    ARROW_ASSIGN_OR_RAISE(auto value, WindowInput(args[0], scope, &value_type));
    if (name == "avg" &&
        (value_type->id() == arrow::Type::INT64 || value_type->id() == arrow::Type::UINT64)) {
      // As avg's aggregate: its sum of 64-bit integers is a decimal, which may pass 2^63.
      value_type = arrow::decimal128(20, 0);
      window_inputs_.push_back(cp::call("cast", {cp::field_ref(value)}, CastAs(value_type)));
      value = ctx_.NewId("__window_input");
      window_input_names_.push_back(value);
    }
    w.arguments.push_back(value);
    if (name == "lag" || name == "lead") {
      w.parameter = 1;
      if (args.size() >= 2) {
        ARROW_ASSIGN_OR_RAISE(w.parameter, constant(args[1], "offset"));
      }
      if (args.size() == 3) {
        // The default, in the value's type.
        ARROW_ASSIGN_OR_RAISE(auto d, Expr(args[2], scope));
        const auto schema = SchemaFor(scope);
        d = NarrowIntegerLiteral(d, cp::field_ref(value), *schema);
        ARROW_ASSIGN_OR_RAISE(auto typed, d.Bind(*schema));
        if (!typed.type()->Equals(*value_type)) {
          d = cp::call("cast", {d}, CastAs(value_type));
        }
        ARROW_RETURN_NOT_OK(Typecheck(d, args[2], *schema).status());
        const std::string id = ctx_.NewId("window_default");
        window_inputs_.push_back(std::move(d));
        window_input_names_.push_back(id);
        w.arguments.push_back(id);
      }
    }
    if (name == "nth_value") {
      ARROW_ASSIGN_OR_RAISE(w.parameter, constant(args[1], "position"));
      if (w.parameter < 1) return Error(args[1], "argument of nth_value must be greater than zero");
    }
    if ((name == "sum" || name == "avg") && !arrow::is_integer(value_type->id()) &&
        !arrow::is_floating(value_type->id()) && !arrow::is_decimal(value_type->id())) {
      return Error(call, "function " + name + "(" + value_type->ToString() + ") does not exist");
    }
  }
  for (const auto& p : ListMember(over, "partitionClause")) {
    ARROW_ASSIGN_OR_RAISE(auto key, WindowInput(p, scope, nullptr));
    w.partition_keys.push_back(key);
  }
  for (const auto& o : ListMember(over, "orderClause")) {
    const auto& by = o.at("SortBy");
    ARROW_ASSIGN_OR_RAISE(auto key, WindowInput(by.at("node"), scope, nullptr));
    ARROW_ASSIGN_OR_RAISE(const bool desc, Descending(by));
    const std::string nulls = by.value("sortby_nulls", "SORTBY_NULLS_DEFAULT");
    const bool nulls_first = nulls == "SORTBY_NULLS_DEFAULT" ? desc : nulls == "SORTBY_NULLS_FIRST";
    w.order_keys.emplace_back(arrow::FieldRef(key),
                              desc ? cp::SortOrder::Descending : cp::SortOrder::Ascending,
                              nulls_first ? cp::NullPlacement::AtStart : cp::NullPlacement::AtEnd);
  }
  ARROW_ASSIGN_OR_RAISE(w.frame, Frame(over));
  // A result column per call (avg: a sum's and a count's).
  auto add = [&](plan::WindowCall call_copy) -> arrow::Result<std::string> {
    call_copy.output = ctx_.NewId("__window");
    ARROW_ASSIGN_OR_RAISE(auto type, plan::WindowOutputType(call_copy, value_type));
    auto field = arrow::field(call_copy.output, type);
    window_fields_.push_back(field);
    if (scope == Scope::kRow) {
      row_fields_.push_back(field);
      row_schema_ = nullptr;
    }
    windows_.push_back(std::move(call_copy));
    return windows_.back().output;
  };
  if (name == "avg") {
    plan::WindowCall sum = w, count = w;
    sum.function = "sum";
    count.function = "count";
    ARROW_ASSIGN_OR_RAISE(auto s, add(sum));
    ARROW_ASSIGN_OR_RAISE(auto c, add(count));
    return cp::call("divide", {cp::call("cast", {cp::field_ref(s)}, CastAs(arrow::float64())),
                               cp::call("cast", {cp::field_ref(c)}, CastAs(arrow::float64()))});
  }
  ARROW_ASSIGN_OR_RAISE(auto out, add(w));
  return cp::field_ref(out);
}

arrow::Result<cp::Expression> Binder::Function(const json& call, Scope scope) {
  const std::string name = LastName(call.at("funcname"));
  const auto& args = ListMember(call, "args");
  if (call.contains("over")) return WindowFunction(call, scope);
  static const std::set<std::string> kKnown = {"extract",     "date_part",
                                               "substring",   "substr",
                                               "abs",         "lower",
                                               "upper",       "length",
                                               "round",       "mod",
                                               "btrim",       "ltrim",
                                               "rtrim",       "nullif",
                                               "grouping",    "position",
                                               "strpos",      "replace",
                                               "starts_with", "regexp_replace",
                                               "trunc",       "ceil",
                                               "ceiling",     "floor",
                                               "power",       "pow",
                                               "sqrt",        "ln",
                                               "log",         "log10",
                                               "exp",         "sign",
                                               "date_trunc",  "now",
                                               "lpad",        "rpad",
                                               "reverse",     "left",
                                               "right",       "concat",
                                               "char_length", "character_length",
                                               "initcap",     "split_part",
                                               "repeat",      "div"};
  if (!IsAggregateName(name) && !kKnown.count(name)) {
    if (ctx_.functions) {
      ARROW_ASSIGN_OR_RAISE(auto library_function, ctx_.functions(name));
      if (library_function.has_value()) return CallLibraryFunction(call, *library_function, scope);
    }
    // Before its arguments: they would be bound in a scope that may not fit them (a column
    // outside GROUP BY is not what is wrong with string_agg(x, ',')).
    if (plan::IsWindowFunction(name)) {
      return Error(call, "window function " + name + " requires an OVER clause");
    }
    return Unsupported(call, "function " + name + "()");
  }
  if (IsAggregateName(name)) {
    if (scope != Scope::kAggregated) {
      return Error(call, in_aggregate_ ? "aggregate function calls cannot be nested"
                                       : "aggregate functions are not allowed here");
    }
    return Aggregate(call);
  }
  if (name == "grouping") return Grouping(call, scope);
  // Functions of text whose text argument may be a bare NULL (upper(NULL) is NULL).
  static const std::set<std::string> kText = {
      "lower",      "upper",       "length",           "btrim",          "ltrim",    "rtrim",
      "substring",  "substr",      "replace",          "reverse",        "lpad",     "rpad",
      "left",       "right",       "initcap",          "strpos",         "position", "starts_with",
      "split_part", "char_length", "character_length", "regexp_replace", "repeat"};
  std::vector<cp::Expression> bound;
  for (const auto& a : args) {
    ARROW_ASSIGN_OR_RAISE(auto e, Expr(a, scope));
    if (bound.empty() && kText.count(name) && e.literal() != nullptr &&
        e.literal()->type()->id() == arrow::Type::NA) {
      e = cp::literal(arrow::MakeNullScalar(arrow::utf8()));
    }
    bound.push_back(e);
  }
  return ScalarFunction(call, name, std::move(bound), scope);
}

arrow::Result<cp::Expression> Binder::ScalarFunction(const json& call, const std::string& name,
                                                     std::vector<cp::Expression> bound,
                                                     Scope scope) {
  if (name == "extract" || name == "date_part") {
    if (bound.size() != 2 || bound[0].literal() == nullptr)
      return Error(call, "EXTRACT(field FROM date)");
    std::string field = bound[0].literal()->scalar()->ToString();
    for (char& c : field) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (field == "hour" || field == "minute" || field == "second") {
      auto typed = bound[1].Bind(*SchemaFor(scope));
      if (typed.ok() && typed->type()->id() == arrow::Type::DATE32) {
        return Error(call, "unit \"" + field + "\" not supported for type date");
      }
    }
    if (field == "second") {
      // With its fraction, as PostgreSQL gives it (Arrow's second is whole).
      auto typed = bound[1].Bind(*SchemaFor(scope));
      if (typed.ok() && typed->type()->id() == arrow::Type::TIMESTAMP) {
        return cp::call(
            "add", {cp::call("cast", {cp::call("second", {bound[1]})}, CastAs(arrow::float64())),
                    cp::call("subsecond", {bound[1]})});
      }
    }
    if (field == "year" || field == "month" || field == "day" || field == "quarter" ||
        field == "hour" || field == "minute" || field == "second") {
      return cp::call(field, {bound[1]});
    }
    if (field == "week") return cp::call("iso_week", {bound[1]});
    if (field == "doy") return cp::call("day_of_year", {bound[1]});
    // PostgreSQL: dow counts from Sunday = 0, isodow from Monday = 1 to Sunday = 7.
    if (field == "dow") return cp::call("day_of_week", {bound[1]}, cp::DayOfWeekOptions(true, 7));
    if (field == "isodow") {
      return cp::call("day_of_week", {bound[1]}, cp::DayOfWeekOptions(false, 1));
    }
    if (field == "epoch") {
      // Seconds since 1970-01-01 00:00 (UTC for a timestamptz), in double precision as DuckDB
      // gives them (PostgreSQL's numeric has the same value).
      auto typed = bound[1].Bind(*SchemaFor(scope));
      if (!typed.ok()) return typed.status();
      const arrow::DataType& type = *typed->type();
      if (type.id() == arrow::Type::DATE32) {
        return cp::call("multiply",
                        {cp::call("cast", {DateToDays(bound[1])}, CastAs(arrow::float64())),
                         cp::literal(86400.0)});
      }
      if (type.id() == arrow::Type::TIMESTAMP) {
        const auto unit = static_cast<const arrow::TimestampType&>(type).unit();
        const double per_second = unit == arrow::TimeUnit::SECOND  ? 1
                                  : unit == arrow::TimeUnit::MILLI ? 1e3
                                  : unit == arrow::TimeUnit::MICRO ? 1e6
                                                                   : 1e9;
        const cp::Expression ticks = cp::call("cast", {bound[1]}, CastAs(arrow::int64()));
        return cp::call("divide", {cp::call("cast", {ticks}, CastAs(arrow::float64())),
                                   cp::literal(per_second)});
      }
      return Error(call,
                   "EXTRACT(epoch FROM ...) takes a date or a timestamp, not " + type.ToString());
    }
    return Unsupported(call, "EXTRACT(" + field + ")");
  }
  if (name == "mod") {
    if (bound.size() != 2) return Error(call, "mod(x, y) takes two arguments");
    return Modulo(call, bound[0], bound[1], scope);
  }
  if (name == "nullif") {
    if (bound.size() != 2) return Error(call, "NULLIF(a, b) takes two arguments");
    return NullIf(call, bound[0], bound[1], scope);
  }
  if (name == "round") {
    if (bound.empty() || bound.size() > 2 || (bound.size() == 2 && bound[1].literal() == nullptr)) {
      return Unsupported(call, "round() with a non-constant number of digits");
    }
    ARROW_ASSIGN_OR_RAISE(auto typed, bound[0].Bind(*SchemaFor(scope)));
    const auto id = typed.type()->id();
    int64_t digits = 0;
    if (bound.size() == 2) {
      // round(x, NULL) is NULL, as in PostgreSQL.
      if (!bound[1].literal()->scalar()->is_valid) {
        return cp::literal(arrow::MakeNullScalar(typed.type()->GetSharedPtr()));
      }
      ARROW_ASSIGN_OR_RAISE(auto d, bound[1].literal()->scalar()->CastTo(arrow::int64()));
      digits = static_cast<const arrow::Int64Scalar&>(*d).value;
    }
    if (arrow::is_integer(id) && digits >= 0) return bound[0];
    if (!arrow::is_decimal(id) && !arrow::is_floating(id)) {
      return Error(call, "function round(" + typed.type()->ToString() + ") does not exist");
    }
    // PostgreSQL rounds a numeric half away from zero, and a double half to even (rint).
    return cp::call(
        "round", {bound[0]},
        cp::RoundOptions(digits, arrow::is_decimal(id) ? cp::RoundMode::HALF_TOWARDS_INFINITY
                                                       : cp::RoundMode::HALF_TO_EVEN));
  }
  if (name == "btrim" || name == "ltrim" || name == "rtrim") {
    // TRIM([BOTH|LEADING|TRAILING] [chars] FROM s) parses to these; the default is spaces.
    if (bound.empty() || bound.size() > 2 || (bound.size() == 2 && bound[1].literal() == nullptr)) {
      return Unsupported(call, "TRIM with non-constant characters");
    }
    const std::string chars = bound.size() == 2 ? bound[1].literal()->scalar()->ToString() : " ";
    const std::string fn = name == "btrim" ? "utf8_trim" : "utf8_" + name;
    return cp::call(fn, {bound[0]}, cp::TrimOptions(chars));
  }
  if (name == "substring" || name == "substr") {
    if (bound.size() < 2 || bound.size() > 3) {
      return Error(call, "function " + name + " takes 2 or 3 arguments");
    }
    // The start and the length: integer constants (a NULL makes NULL, as in PostgreSQL).
    std::vector<int64_t> at;
    for (size_t i = 1; i < bound.size(); ++i) {
      const auto* lit = bound[i].literal();
      if (lit != nullptr && !lit->scalar()->is_valid) {
        return cp::literal(arrow::MakeNullScalar(arrow::utf8()));
      }
      if (lit != nullptr && lit->type()->id() == arrow::Type::STRING) {
        return Unsupported(call, "SUBSTRING with a regular expression");
      }
      if (lit == nullptr || !arrow::is_integer(lit->type()->id())) {
        return Unsupported(call, "SUBSTRING with positions that are not integer constants");
      }
      ARROW_ASSIGN_OR_RAISE(auto v, lit->scalar()->CastTo(arrow::int64()));
      at.push_back(static_cast<const arrow::Int64Scalar&>(*v).value);
    }
    if (at.size() == 2 && at[1] < 0) return Error(call, "negative substring length not allowed");
    const int64_t start = at[0] - 1;
    const int64_t most = std::numeric_limits<int64_t>::max();
    const int64_t stop =
        at.size() == 2 && at[1] <= most - std::max<int64_t>(start, 0) ? start + at[1] : most;
    return cp::call("utf8_slice_codeunits", {bound[0]},
                    cp::SliceOptions(std::max<int64_t>(start, 0), std::max<int64_t>(stop, 0)));
  }
  static const std::map<std::string, std::string> kScalar = {
      {"abs", "abs"}, {"lower", "utf8_lower"}, {"upper", "utf8_upper"}, {"length", "utf8_length"}};
  if (auto it = kScalar.find(name); it != kScalar.end() && bound.size() == 1) {
    return cp::call(it->second, bound);
  }
  return MoreFunctions(call, name, std::move(bound), scope);
}

arrow::Result<cp::Expression> Binder::MoreFunctions(const json& call, const std::string& name,
                                                    std::vector<cp::Expression> bound,
                                                    Scope scope) {
  auto arity = [&](size_t least, size_t most) -> arrow::Status {
    if (bound.size() < least || bound.size() > most) {
      return Error(call, "function " + name + " takes " + std::to_string(least) +
                             (least == most ? "" : " to " + std::to_string(most)) + " argument" +
                             (most == 1 ? "" : "s"));
    }
    return arrow::Status::OK();
  };
  // These functions are strict: a NULL constant argument (CAST(NULL AS int) too) makes NULL.
  if (name == "left" || name == "right" || name == "lpad" || name == "rpad" ||
      name == "split_part") {
    for (const auto& b : bound) {
      ARROW_ASSIGN_OR_RAISE(const cp::Expression c, FoldConstantSubtrees(b));
      if (c.literal() != nullptr && !c.literal()->scalar()->is_valid) {
        return cp::literal(arrow::MakeNullScalar(arrow::utf8()));
      }
    }
  }
  // Arguments that must be constants (Arrow takes them as options), folded first: right(s, 1 - 3)
  // has the length -2.
  auto text = [&](size_t i, const char* what) -> arrow::Result<std::string> {
    ARROW_ASSIGN_OR_RAISE(const cp::Expression c, FoldConstantSubtrees(bound[i]));
    if (c.literal() == nullptr || !c.literal()->scalar()->is_valid ||
        c.literal()->type()->id() != arrow::Type::STRING) {
      return Unsupported(call, name + "() with a non-constant " + what);
    }
    return c.literal()->scalar()->ToString();
  };
  auto integer = [&](size_t i, const char* what) -> arrow::Result<int64_t> {
    ARROW_ASSIGN_OR_RAISE(const cp::Expression c, FoldConstantSubtrees(bound[i]));
    if (c.literal() == nullptr || !arrow::is_integer(c.literal()->type()->id())) {
      return Unsupported(call, name + "() with a non-constant " + what);
    }
    ARROW_ASSIGN_OR_RAISE(auto v, c.literal()->scalar()->CastTo(arrow::int64()));
    return static_cast<const arrow::Int64Scalar&>(*v).value;
  };
  auto type_of = [&](const cp::Expression& e) -> arrow::Result<arrow::Type::type> {
    ARROW_ASSIGN_OR_RAISE(auto typed, e.Bind(*SchemaFor(scope)));
    return typed.type()->id();
  };
  auto to_double = [](const cp::Expression& x) {
    return cp::call("cast", {x}, CastAs(arrow::float64()));
  };
  if (name == "position" || name == "strpos") {
    // position(sub IN s) parses to position(s, sub); 1-based, 0 where absent.
    ARROW_RETURN_NOT_OK(arity(2, 2));
    ARROW_ASSIGN_OR_RAISE(auto sub, text(1, "substring"));
    auto found =
        cp::call("cast", {cp::call("find_substring", {bound[0]}, cp::MatchSubstringOptions(sub))},
                 CastAs(arrow::int64()));
    if (sub.empty()) return cp::call("add", {found, cp::literal(int64_t{1})});
    // In characters, not bytes (find_substring's offset): position('本' IN '日本語') is 2. The
    // characters before the first occurrence are those of the text a split there leaves first.
    auto before = cp::call(
        "list_element",
        {cp::call("split_pattern", {bound[0]}, cp::SplitPatternOptions(sub, /*max_splits=*/1)),
         cp::literal(int32_t{0})});
    auto chars = cp::call("cast", {cp::call("utf8_length", {before})}, CastAs(arrow::int64()));
    return cp::call("if_else",
                    {cp::call("less", {found, cp::literal(int64_t{0})}), cp::literal(int64_t{0}),
                     cp::call("add", {chars, cp::literal(int64_t{1})})});
  }
  if (name == "replace") {
    ARROW_RETURN_NOT_OK(arity(3, 3));
    ARROW_ASSIGN_OR_RAISE(auto from, text(1, "pattern"));
    ARROW_ASSIGN_OR_RAISE(auto to, text(2, "replacement"));
    // An empty pattern replaces nothing, as in PostgreSQL; Arrow's kernel never returned and
    // grew until the process was killed.
    if (from.empty()) return bound[0];
    return cp::call("replace_substring", {bound[0]}, cp::ReplaceSubstringOptions(from, to));
  }
  if (name == "starts_with") {
    ARROW_RETURN_NOT_OK(arity(2, 2));
    ARROW_ASSIGN_OR_RAISE(auto prefix, text(1, "prefix"));
    return cp::call("starts_with", {bound[0]}, cp::MatchSubstringOptions(prefix));
  }
  if (name == "regexp_replace") {
    ARROW_RETURN_NOT_OK(arity(3, 4));
    ARROW_ASSIGN_OR_RAISE(auto pattern, text(1, "pattern"));
    ARROW_ASSIGN_OR_RAISE(auto replacement, text(2, "replacement"));
    std::string flags;
    if (bound.size() == 4) {
      ARROW_ASSIGN_OR_RAISE(flags, text(3, "flags"));
    }
    if (flags.find_first_not_of("gi") != std::string::npos) {
      return Unsupported(call, "regexp_replace flags other than g and i");
    }
    if (flags.find('i') != std::string::npos) pattern = "(?i)" + pattern;
    // PostgreSQL replaces the first match unless the g flag asks for all.
    return cp::call("replace_substring_regex", {bound[0]},
                    cp::ReplaceSubstringOptions(pattern, replacement,
                                                flags.find('g') != std::string::npos ? -1 : 1));
  }
  if (name == "trunc" || name == "ceil" || name == "ceiling" || name == "floor") {
    ARROW_RETURN_NOT_OK(arity(1, name == "trunc" ? 2 : 1));
    int64_t digits = 0;
    if (bound.size() == 2) {
      ARROW_ASSIGN_OR_RAISE(digits, integer(1, "number of digits"));
    }
    ARROW_ASSIGN_OR_RAISE(auto id, type_of(bound[0]));
    if (arrow::is_integer(id)) return bound[0];
    if (!arrow::is_decimal(id) && !arrow::is_floating(id)) {
      return Error(call, "function " + name + " takes a number");
    }
    const auto mode = name == "trunc"   ? cp::RoundMode::TOWARDS_ZERO
                      : name == "floor" ? cp::RoundMode::DOWN
                                        : cp::RoundMode::UP;
    return cp::call("round", {bound[0]}, cp::RoundOptions(digits, mode));
  }
  if (name == "power" || name == "pow") {
    ARROW_RETURN_NOT_OK(arity(2, 2));
    return cp::call("power_checked", {to_double(bound[0]), to_double(bound[1])});
  }
  if (name == "sqrt" || name == "ln" || name == "log10" || name == "exp" || name == "sign" ||
      (name == "log" && bound.size() == 1)) {
    ARROW_RETURN_NOT_OK(arity(1, 1));
    static const std::map<std::string, std::string> kMath = {
        {"sqrt", "sqrt_checked"}, {"ln", "ln_checked"}, {"log10", "log10_checked"},
        {"log", "log10_checked"}, {"exp", "exp"},       {"sign", "sign"}};
    return cp::call(kMath.at(name), {to_double(bound[0])});
  }
  if (name == "log") {
    ARROW_RETURN_NOT_OK(arity(1, 2));
    // log(b, x) = ln(x) / ln(b)
    return cp::call("divide", {cp::call("ln_checked", {to_double(bound[1])}),
                               cp::call("ln_checked", {to_double(bound[0])})});
  }
  if (name == "date_trunc") {
    ARROW_RETURN_NOT_OK(arity(2, 2));
    ARROW_ASSIGN_OR_RAISE(std::string field, text(0, "field"));
    for (char& c : field) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    static const std::map<std::string, cp::CalendarUnit> kUnits = {
        {"microseconds", cp::CalendarUnit::MICROSECOND},
        {"milliseconds", cp::CalendarUnit::MILLISECOND},
        {"second", cp::CalendarUnit::SECOND},
        {"minute", cp::CalendarUnit::MINUTE},
        {"hour", cp::CalendarUnit::HOUR},
        {"day", cp::CalendarUnit::DAY},
        {"week", cp::CalendarUnit::WEEK},
        {"month", cp::CalendarUnit::MONTH},
        {"quarter", cp::CalendarUnit::QUARTER},
        {"year", cp::CalendarUnit::YEAR}};
    auto unit = kUnits.find(field);
    if (unit == kUnits.end()) return Unsupported(call, "date_trunc('" + field + "', ...)");
    ARROW_ASSIGN_OR_RAISE(auto id, type_of(bound[1]));
    cp::Expression ts = bound[1];
    if (id == arrow::Type::DATE32) {
      // A date truncates to a timestamp, as in PostgreSQL.
      ts = cp::call("cast", {ts}, CastAs(arrow::timestamp(arrow::TimeUnit::MICRO)));
    } else if (id != arrow::Type::TIMESTAMP) {
      return Error(call, "function date_trunc takes a date or a timestamp");
    }
    return cp::call("floor_temporal", {ts}, cp::RoundTemporalOptions(1, unit->second));
  }
  if (name == "now") {
    ARROW_RETURN_NOT_OK(arity(0, 0));
    return Now();
  }
  if (name == "lpad" || name == "rpad") {
    ARROW_RETURN_NOT_OK(arity(2, 3));
    ARROW_ASSIGN_OR_RAISE(int64_t width, integer(1, "length"));
    std::string fill = " ";
    if (bound.size() == 3) {
      ARROW_ASSIGN_OR_RAISE(fill, text(2, "fill"));
    }
    width = std::max<int64_t>(width, 0);
    if (fill.empty()) return bound[0];
    // PostgreSQL also cuts a longer string to the length, keeping its start.
    auto padded = cp::call(name == "lpad" ? "utf8_lpad" : "utf8_rpad", {bound[0]},
                           cp::PadOptions(width, fill));
    return cp::call("utf8_slice_codeunits", {padded}, cp::SliceOptions(0, width));
  }
  if (name == "left" || name == "right") {
    ARROW_RETURN_NOT_OK(arity(2, 2));
    ARROW_ASSIGN_OR_RAISE(int64_t n, integer(1, "length"));
    // A negative length keeps all but that many characters: at the end for left, at the start
    // for right.
    if (n < 0) {
      return cp::call("utf8_slice_codeunits", {bound[0]},
                      name == "left" ? cp::SliceOptions(0, n) : cp::SliceOptions(-n));
    }
    if (name == "left" || n == 0) {
      return cp::call("utf8_slice_codeunits", {bound[0]}, cp::SliceOptions(0, n));
    }
    return cp::call("utf8_slice_codeunits", {bound[0]}, cp::SliceOptions(-n));
  }
  if (name == "reverse" || name == "char_length" || name == "character_length" ||
      name == "initcap") {
    ARROW_RETURN_NOT_OK(arity(1, 1));
    static const std::map<std::string, std::string> kText = {{"reverse", "utf8_reverse"},
                                                             {"char_length", "utf8_length"},
                                                             {"character_length", "utf8_length"},
                                                             {"initcap", "utf8_title"}};
    return cp::call(kText.at(name), {bound[0]});
  }
  if (name == "split_part") {
    ARROW_RETURN_NOT_OK(arity(3, 3));
    ARROW_ASSIGN_OR_RAISE(auto delimiter, text(1, "delimiter"));
    ARROW_ASSIGN_OR_RAISE(int64_t n, integer(2, "field number"));
    if (n == 0) return Error(call, "field position must not be zero");
    if (delimiter.empty()) return n == 1 || n == -1 ? bound[0] : cp::literal(std::string());
    if (n > 1000 || n < -1000) return Unsupported(call, "split_part() beyond field 1000");
    // Counted from the end (n < 0): field -n of the text reversed, split by the delimiter
    // reversed, itself reversed back.
    const bool from_end = n < 0;
    const std::string by = from_end ? ReverseUtf8(delimiter) : delimiter;
    const cp::Expression source = from_end ? cp::call("utf8_reverse", {bound[0]}) : bound[0];
    const int64_t field = from_end ? -n : n;
    // `field` delimiters appended make that field exist (empty where the text has fewer
    // fields), so that list_element never reads past a list's end.
    std::string padding;
    for (int64_t i = 0; i < field; ++i) padding += by;
    auto padded =
        cp::call("binary_join_element_wise", {source, cp::literal(padding), cp::literal("")});
    auto part = cp::call(
        "list_element",
        {cp::call("split_pattern", {padded}, cp::SplitPatternOptions(by)), cp::literal(field - 1)});
    return from_end ? cp::call("utf8_reverse", {part}) : part;
  }
  if (name == "repeat") {
    // A count below one repeats nothing, as in PostgreSQL; a NULL count is NULL.
    ARROW_RETURN_NOT_OK(arity(2, 2));
    ARROW_ASSIGN_OR_RAISE(auto count_type, type_of(bound[1]));
    if (!arrow::is_integer(count_type) && count_type != arrow::Type::NA) {
      return Error(call, "function repeat takes an integer count");
    }
    auto count =
        cp::call("max_element_wise",
                 {cp::call("cast", {bound[1]}, CastAs(arrow::int64())), cp::literal(int64_t{0})},
                 cp::ElementWiseAggregateOptions(/*skip_nulls=*/false));
    return cp::call("binary_repeat", {bound[0], count});
  }
  if (name == "div") {
    // The quotient truncated toward zero: integer division for integers, else the quotient's
    // whole part.
    ARROW_RETURN_NOT_OK(arity(2, 2));
    ARROW_ASSIGN_OR_RAISE(auto a, type_of(bound[0]));
    ARROW_ASSIGN_OR_RAISE(auto b, type_of(bound[1]));
    ARROW_ASSIGN_OR_RAISE(auto quotient, BinaryOperator("/", call, bound[0], bound[1], scope));
    if (arrow::is_integer(a) && arrow::is_integer(b)) return quotient;
    auto whole = cp::call("round", {quotient}, cp::RoundOptions(0, cp::RoundMode::TOWARDS_ZERO));
    ARROW_ASSIGN_OR_RAISE(auto typed, whole.Bind(*SchemaFor(scope)));
    if (typed.type()->id() != arrow::Type::DECIMAL128) return whole;
    // A numeric of no places, as PostgreSQL's div returns.
    const auto& d = static_cast<const arrow::Decimal128Type&>(*typed.type());
    return cp::call("cast", {whole},
                    CastAs(arrow::decimal128(std::max(1, d.precision() - d.scale()), 0)));
  }
  if (name == "concat") {
    // NULL arguments count as empty text, unlike ||.
    if (bound.empty()) return Error(call, "function concat takes at least one argument");
    std::vector<cp::Expression> parts;
    for (auto& b : bound) {
      ARROW_ASSIGN_OR_RAISE(auto id, type_of(b));
      parts.push_back(id == arrow::Type::STRING ? b : cp::call("cast", {b}, CastAs(arrow::utf8())));
    }
    parts.push_back(cp::literal(""));
    return cp::call("binary_join_element_wise", std::move(parts),
                    cp::JoinOptions(cp::JoinOptions::REPLACE, ""));
  }

  return Unsupported(call, "function " + name + "()");
}

arrow::Result<cp::Expression> Binder::Expr(const json& node, Scope scope) {
  auto [kind, body] = Node(node);
  if (scope == Scope::kAggregated && !in_aggregate_ && !group_by_text_.empty() &&
      kind != "A_Const") {
    const std::string text = WithoutLocations(node).dump();
    for (const auto& [group_text, id] : group_by_text_) {
      if (group_text == text) return cp::field_ref(id);
    }
  }
  if (kind == "ColumnRef") return Column(*body, scope);
  if (kind == "A_Const") return Constant(*body);
  if (kind == "A_Expr") return Operator(*body, scope);
  if (kind == "TypeCast") return Cast(*body, scope);
  if (kind == "FuncCall") return Function(*body, scope);
  if (kind == "GroupingFunc") return Grouping(*body, scope);
  if (kind == "BoolExpr") {
    std::vector<cp::Expression> args;
    for (const auto& a : body->at("args")) {
      ARROW_ASSIGN_OR_RAISE(auto e, Expr(a, scope));
      // A bare NULL is an unknown boolean here (NULL OR true is true).
      args.push_back(UnknownAsBoolean(e));
    }
    const std::string op = body->value("boolop", "");
    if (op == "NOT_EXPR") return cp::not_(args.at(0));
    // SQL's three-valued logic is Arrow's Kleene logic.
    return op == "AND_EXPR" ? cp::and_(args) : cp::or_(args);
  }
  if (kind == "NullTest") {
    ARROW_ASSIGN_OR_RAISE(auto e, Expr(body->at("arg"), scope));
    return body->value("nulltesttype", "") == "IS_NULL" ? cp::is_null(e) : cp::is_valid(e);
  }
  if (kind == "CaseExpr") {
    // CASE x WHEN v THEN ... is CASE WHEN x = v THEN ...
    std::optional<cp::Expression> subject;
    if (body->contains("arg")) {
      ARROW_ASSIGN_OR_RAISE(subject, Expr(body->at("arg"), scope));
    }
    std::vector<cp::Expression> conditions, values;
    std::vector<std::string> names;
    const std::optional<cp::Expression> outer_guard = case_guard_;
    // Whether no earlier branch was taken.
    cp::Expression none_before = outer_guard.value_or(cp::literal(true));
    auto bind_branch = [&](const json& node, const cp::Expression& guard) {
      case_guard_ = guard;
      auto v = Expr(node, scope);
      case_guard_ = outer_guard;
      return v;
    };
    for (const auto& w : body->at("args")) {
      const auto& when = w.at("CaseWhen");
      // A condition too is only evaluated where no earlier one held.
      ARROW_ASSIGN_OR_RAISE(auto c, bind_branch(when.at("expr"), none_before));
      ARROW_ASSIGN_OR_RAISE(c, WhenCondition(when.at("expr"), std::move(c), subject, scope));
      const cp::Expression taken = cp::call("coalesce", {c, cp::literal(false)});
      ARROW_ASSIGN_OR_RAISE(auto v, bind_branch(when.at("result"), cp::and_(none_before, taken)));
      none_before = cp::and_(none_before, cp::not_(taken));
      conditions.push_back(c);
      values.push_back(v);
      names.push_back("c" + std::to_string(names.size()));
    }
    if (body->contains("defresult")) {
      ARROW_ASSIGN_OR_RAISE(auto d, bind_branch(body->at("defresult"), none_before));
      values.push_back(d);
    }
    ARROW_RETURN_NOT_OK(UnifyBranches(&values, scope, *body));
    std::vector<cp::Expression> args = {
        cp::call("make_struct", conditions, cp::MakeStructOptions(names))};
    args.insert(args.end(), values.begin(), values.end());
    return cp::call("case_when", args);
  }
  if (kind == "MinMaxExpr") {
    // GREATEST and LEAST skip NULLs, as in PostgreSQL: NULL only when every argument is.
    std::vector<cp::Expression> args;
    for (const auto& a : body->at("args")) {
      ARROW_ASSIGN_OR_RAISE(auto x, Expr(a, scope));
      args.push_back(std::move(x));
    }
    ARROW_RETURN_NOT_OK(UnifyBranches(&args, scope, *body));
    // Arrow's element-wise min and max want one type: each argument cast to the common one.
    const auto schema = SchemaFor(scope);
    std::shared_ptr<arrow::DataType> common = arrow::null();
    for (const auto& a : args) {
      ARROW_ASSIGN_OR_RAISE(auto typed, a.Bind(*schema));
      auto t = CommonType(common, typed.type()->GetSharedPtr());
      if (!t.ok()) return Error(*body, std::string("GREATEST/LEAST ") + t.status().message());
      common = *t;
    }
    // Every argument NULL as written: NULL (Arrow has no kernel over null-typed values).
    if (common->id() == arrow::Type::NA) return cp::literal(arrow::MakeNullScalar(common));
    for (auto& a : args) {
      ARROW_ASSIGN_OR_RAISE(auto typed, a.Bind(*schema));
      if (!typed.type()->Equals(*common)) {
        a = cp::call("cast", {a}, CastAs(common));
      }
    }
    return cp::call(
        body->value("op", "") == "IS_GREATEST" ? "max_element_wise" : "min_element_wise",
        std::move(args), cp::ElementWiseAggregateOptions(/*skip_nulls=*/true));
  }
  if (kind == "SQLValueFunction") {
    const std::string op = body->value("op", "");
    if (op == "SVFOP_CURRENT_TIMESTAMP") return Now();
    if (op == "SVFOP_LOCALTIMESTAMP") {
      // The time without a zone: the UTC wall time, the session's zone being UTC.
      return cp::literal(std::make_shared<arrow::TimestampScalar>(
          static_cast<const arrow::TimestampScalar&>(*Now().literal()->scalar()).value,
          arrow::timestamp(arrow::TimeUnit::MICRO)));
    }
    if (op == "SVFOP_CURRENT_DATE") {
      const auto days = std::chrono::duration_cast<std::chrono::hours>(
                            std::chrono::system_clock::now().time_since_epoch())
                            .count() /
                        24;
      return cp::literal(std::make_shared<arrow::Date32Scalar>(static_cast<int32_t>(days)));
    }
    return Unsupported(*body, "the SQL value function " + op);
  }
  if (kind == "CoalesceExpr") {
    std::vector<cp::Expression> args;
    for (const auto& a : body->at("args")) {
      ARROW_ASSIGN_OR_RAISE(auto x, Expr(a, scope));
      args.push_back(std::move(x));
    }
    ARROW_RETURN_NOT_OK(UnifyBranches(&args, scope, *body));
    return cp::call("coalesce", std::move(args));
  }
  if (kind == "SubLink") {
    const std::string type = body->value("subLinkType", "");
    if (type == "EXPR_SUBLINK") return ScalarSubquery(*body, scope);
    const bool in = type == "ANY_SUBLINK" &&
                    (!body->contains("operName") || LastName(body->at("operName")) == "=");
    if (type == "EXISTS_SUBLINK" || in) return SubqueryTest(*body, scope);
    if (type == "ANY_SUBLINK" || type == "ALL_SUBLINK") return QuantifiedComparison(*body, scope);
    return Unsupported(*body, "a subquery of kind " + type);
  }
  return Unsupported(body != nullptr ? *body : node, "expression " + kind);
}

const json* Binder::FindCte(const std::string& name, Binder** owner) {
  for (Binder* b = this; b != nullptr; b = b->cte_parent_) {
    auto it = b->ctes_.find(name);
    if (it != b->ctes_.end()) {
      *owner = b;
      return it->second;
    }
  }
  return nullptr;
}

Relation Binder::ConstantRow() {
  auto table = std::make_shared<TableSource>();
  table->name = "(no FROM)";
  table->format = std::string(plan::kConstantRowFormat);
  table->schema = arrow::schema(arrow::FieldVector{});
  table->file_schema = table->schema;
  table->num_rows = 1;
  Relation r;
  r.plan = plan::MakeNode(PlanNode::Kind::kScan);
  r.plan->table = std::move(table);
  r.cardinality = []() -> arrow::Result<plan::Cardinality> { return plan::Cardinality{}; };
  return r;
}

arrow::Result<Relation> Binder::BindTable(const json& range_var) {
  const std::string name = range_var.value("relname", "");
  if (range_var.contains("schemaname")) {
    return Unsupported(range_var, "schema-qualified table names");
  }
  auto table = ctx_.resolve(name);
  if (!table.ok()) return Error(range_var, table.status().message());
  std::string alias = name;
  if (range_var.contains("alias")) alias = range_var.at("alias").value("aliasname", "");
  Relation r;
  auto scan = std::make_unique<PlanNode>();
  scan->kind = PlanNode::Kind::kScan;
  scan->table = *table;
  for (const auto& f : (*table)->schema->fields()) {
    const std::string id = ctx_.NewId(f->name());
    scan->columns.push_back(f->name());
    scan->names.push_back(id);
    r.columns.push_back({alias, f->name(), f->WithName(id)});
  }
  plan::Cardinality card;
  for (const auto& c : r.columns) {
    auto range = (*table)->int_ranges.find(c.name);
    if (range == (*table)->int_ranges.end()) continue;
    card.distinct[c.id()] = (*table)->DistinctBound(c.name);
    card.ranges[c.id()] = range->second;
  }
  card.rows = static_cast<double>(std::max<int64_t>((*table)->num_rows, 1));
  card.estimate = card.rows;
  r.cardinality = [card]() -> arrow::Result<plan::Cardinality> { return card; };
  r.plan = std::move(scan);
  return r;
}

arrow::Result<Relation> Binder::BindDerived(const json& select, const std::string& alias,
                                            const json& colnames, const json& node) {
  Binder child(ctx_, nullptr, this);
  ARROW_ASSIGN_OR_RAISE(Relation r, child.Bind(select, Purpose::kQuery));
  std::vector<std::string> names = child.output_names();
  if (colnames.size() > names.size()) {
    return Error(node, "\"" + alias + "\" has " + std::to_string(names.size()) +
                           " columns available but " + std::to_string(colnames.size()) +
                           " columns specified");
  }
  for (size_t i = 0; i < colnames.size(); ++i) {
    names[i] = colnames.at(i).at("String").value("sval", "");
  }
  for (size_t i = 0; i < r.columns.size(); ++i) {
    r.columns[i].qualifier = alias;
    r.columns[i].name = names[i];
  }
  return r;
}

arrow::Status Binder::BindFrom(const json& item, FromItems* out) {
  auto [kind, body] = Node(item);
  if (kind == "RangeVar" || kind == "RangeSubselect") {
    Relation r;
    std::string alias;
    if (body->contains("alias")) alias = body->at("alias").value("aliasname", "");
    if (kind == "RangeVar") {
      const std::string name = body->value("relname", "");
      Binder* owner = nullptr;
      if (const json* cte = FindCte(name, &owner)) {
        if (owner->binding_ctes_.count(name)) {
          return Unsupported(*body, "a CTE that refers to itself (WITH RECURSIVE)");
        }
        owner->binding_ctes_.insert(name);
        auto bound = BindDerived(cte->at("ctequery").at("SelectStmt"), alias.empty() ? name : alias,
                                 ListMember(*cte, "aliascolnames"), *body);
        owner->binding_ctes_.erase(name);
        ARROW_ASSIGN_OR_RAISE(r, std::move(bound));
      } else {
        ARROW_ASSIGN_OR_RAISE(r, BindTable(*body));
      }
      if (alias.empty()) alias = name;
    } else {
      if (body->value("lateral", false)) return Unsupported(*body, "LATERAL");
      const json colnames =
          body->contains("alias") ? ListMember(body->at("alias"), "colnames") : json::array();
      ARROW_ASSIGN_OR_RAISE(
          r, BindDerived(body->at("subquery").at("SelectStmt"), alias, colnames, item));
    }
    if (!alias.empty()) {
      for (const auto& c : columns_) {
        if (c.qualifier == alias) {
          return Error(item, "table name \"" + alias + "\" specified more than once");
        }
      }
    }
    AddColumns(r);
    out->relations.push_back(std::move(r));
    return arrow::Status::OK();
  }
  if (kind == "JoinExpr") {
    if (body->contains("alias")) return Unsupported(*body, "an alias on a JOIN");
    const std::string type = body->value("jointype", "");
    if (type == "JOIN_INNER") {
      const size_t left = columns_.size();
      ARROW_RETURN_NOT_OK(BindFrom(body->at("larg"), out));
      const size_t right = columns_.size();
      ARROW_RETURN_NOT_OK(BindFrom(body->at("rarg"), out));
      if (body->value("isNatural", false) || body->contains("usingClause")) {
        ARROW_ASSIGN_OR_RAISE(const json* on,
                              UsingCondition(*body, left, right, columns_.size(), false));
        if (on != nullptr) out->conditions.push_back(on);
      }
      if (body->contains("quals")) out->conditions.push_back(&body->at("quals"));
      return arrow::Status::OK();
    }
    if (type == "JOIN_LEFT" || type == "JOIN_RIGHT" || type == "JOIN_FULL") {
      ARROW_ASSIGN_OR_RAISE(Relation r, BindOuterJoin(*body));
      out->relations.push_back(std::move(r));
      return arrow::Status::OK();
    }
    return Unsupported(*body, "join type " + type);
  }
  return Unsupported(item, "FROM " + kind);
}

arrow::Result<Relation> Binder::Combine(FromItems items) {
  const size_t semis = semi_joins_.size(), scalars = row_scalars_.size();
  const size_t correlated = correlated_.size();
  std::vector<cp::Expression> conditions;
  for (const json* c : items.conditions) {
    std::vector<const json*> parts;
    SplitAnd(*c, &parts);
    for (const json* p : parts) ARROW_RETURN_NOT_OK(BindWhereCondition(*p, &conditions));
  }
  if (semi_joins_.size() != semis) {
    return Unsupported(*items.conditions.front(), "EXISTS or IN in the ON clause of an outer join");
  }
  if (row_scalars_.size() != scalars || correlated_.size() != correlated) {
    // Their joins and conditions would run at the query level, above the outer join.
    return Unsupported(*items.conditions.front(),
                       "a scalar subquery or a correlated reference in an ON clause inside an "
                       "outer join");
  }
  auto joins = std::make_shared<plan::JoinSetResult>();
  Relation r;
  for (const auto& item : items.relations) {
    r.columns.insert(r.columns.end(), item.columns.begin(), item.columns.end());
  }
  r.plan = LevelFilter(JoinSet(std::move(items.relations), joins), conditions);
  r.cardinality = [joins]() -> arrow::Result<plan::Cardinality> {
    ARROW_ASSIGN_OR_RAISE(const plan::JoinSetResult* ordered, Ordered(*joins));
    return ordered->joined;
  };
  return r;
}

arrow::Result<const json*> Binder::UsingCondition(
    const json& join, size_t left, size_t right, size_t end, bool keep_right,
    std::vector<std::pair<ColumnInfo, ColumnInfo>>* pairs) {
  // The columns an unqualified name reads on each side.
  auto visible = [&](size_t begin, size_t stop) {
    std::vector<size_t> out;
    for (size_t i = begin; i < stop; ++i) {
      if (!columns_[i].merged_away) out.push_back(i);
    }
    return out;
  };
  const std::vector<size_t> lefts = visible(left, right), rights = visible(right, end);
  std::vector<std::string> names;
  if (join.value("isNatural", false)) {
    // The names both sides have, in the left side's order.
    for (size_t i : lefts) {
      const std::string& n = columns_[i].name;
      const bool both = std::any_of(rights.begin(), rights.end(),
                                    [&](size_t j) { return columns_[j].name == n; });
      if (both && std::find(names.begin(), names.end(), n) == names.end()) names.push_back(n);
    }
  } else {
    for (const auto& u : join.at("usingClause")) names.push_back(u.at("String").value("sval", ""));
  }
  auto find = [&](const std::vector<size_t>& side, const std::string& name,
                  const char* which) -> arrow::Result<size_t> {
    std::optional<size_t> found;
    for (size_t i : side) {
      if (columns_[i].name != name) continue;
      if (found) {
        return Error(join, "common column name \"" + name + "\" appears more than once in " +
                               which + " table");
      }
      found = i;
    }
    if (!found) {
      return Error(join, "column \"" + name + "\" specified in USING clause does not exist in " +
                             which + " table");
    }
    if (columns_[*found].qualifier.empty()) {
      return Unsupported(join, "USING or NATURAL with a FROM item that has no alias");
    }
    return *found;
  };
  const TreeWriter tree{Location(join)};
  json condition;
  std::vector<size_t> kept;
  for (const auto& name : names) {
    if (std::count(names.begin(), names.end(), name) > 1) {
      return Error(join, "column name \"" + name + "\" appears more than once in USING clause");
    }
    ARROW_ASSIGN_OR_RAISE(size_t l, find(lefts, name, "left"));
    ARROW_ASSIGN_OR_RAISE(size_t r, find(rights, name, "right"));
    json equal = {{"A_Expr",
                   {{"kind", "AEXPR_OP"},
                    {"name", json::array({TreeWriter::Name("=")})},
                    {"lexpr", tree.Column({columns_[l].qualifier, name})},
                    {"rexpr", tree.Column({columns_[r].qualifier, name})},
                    {"location", tree.loc}}}};
    condition = condition.is_null()
                    ? std::move(equal)
                    : json{{"BoolExpr",
                            {{"boolop", "AND_EXPR"},
                             {"args", json::array({std::move(condition), std::move(equal)})},
                             {"location", tree.loc}}}};
    if (pairs != nullptr) pairs->emplace_back(columns_[l], columns_[r]);
    columns_[keep_right ? l : r].merged_away = true;
    kept.push_back(keep_right ? r : l);
  }
  // SELECT * lists the join's columns first, in the USING list's order (PostgreSQL's).
  std::vector<ColumnInfo> ordered;
  for (size_t i : kept) ordered.push_back(columns_[i]);
  for (size_t i = left; i < end; ++i) {
    if (std::find(kept.begin(), kept.end(), i) == kept.end()) ordered.push_back(columns_[i]);
  }
  std::copy(ordered.begin(), ordered.end(), columns_.begin() + static_cast<std::ptrdiff_t>(left));
  if (condition.is_null()) return nullptr;  // NATURAL without a common name: a cross join
  synthesized_.push_back(std::move(condition));
  return &synthesized_.back();
}

arrow::Result<Relation> Binder::BindOuterJoin(const json& join) {
  FromItems left_items, right_items;
  const size_t left_begin = columns_.size();
  ARROW_RETURN_NOT_OK(BindFrom(join.at("larg"), &left_items));
  const size_t right_begin = columns_.size();
  ARROW_RETURN_NOT_OK(BindFrom(join.at("rarg"), &right_items));
  const json* quals = join.contains("quals") ? &join.at("quals") : nullptr;
  std::vector<std::pair<ColumnInfo, ColumnInfo>> using_pairs;
  if (join.value("isNatural", false) || join.contains("usingClause")) {
    ARROW_ASSIGN_OR_RAISE(quals,
                          UsingCondition(join, left_begin, right_begin, columns_.size(),
                                         join.value("jointype", "") == "JOIN_RIGHT", &using_pairs));
  }
  ARROW_ASSIGN_OR_RAISE(Relation left, Combine(std::move(left_items)));
  ARROW_ASSIGN_OR_RAISE(Relation right, Combine(std::move(right_items)));
  if (join.value("jointype", "") == "JOIN_RIGHT") std::swap(left, right);
  const bool full = join.value("jointype", "") == "JOIN_FULL";
  std::set<std::string> right_ids, padded;
  for (const auto& c : right.columns) right_ids.insert(c.id());
  padded = right_ids;
  if (full) {
    for (const auto& c : left.columns) padded.insert(c.id());
  }
  // The preserved side's columns stay as they are; the other side's (both of a full join's)
  // become nullable.
  for (auto& f : row_fields_) {
    if (padded.count(f->name())) f = f->WithNullable(true);
  }
  for (auto& c : columns_) {
    if (padded.count(c.id())) c.field = c.field->WithNullable(true);
  }
  row_schema_ = nullptr;
  auto node = std::make_unique<PlanNode>();
  node->kind = PlanNode::Kind::kJoin;
  node->join_type = full ? JoinType::kFull : JoinType::kLeft;
  // ON conditions beyond the key equalities stay on the join (the filter_pushdown pass moves
  // those on the joined side alone below it); the ones on the joined side alone count in its
  // estimate.
  std::vector<cp::Expression> right_only, on_filter;
  if (quals == nullptr) return Unsupported(join, "an outer join without ON");
  // Which side each operand of an equality reads alone: 1 left, 2 right, 3 both or neither.
  auto sides_of = [&](const cp::Expression& x) {
    int sides = 0;
    for (const auto& ref : cp::FieldsInExpression(x)) sides |= right_ids.count(*ref.name()) ? 2 : 1;
    return sides == 0 ? 3 : sides;
  };
  // A key's column on `side`; an expression (t1.k = t2.k + 1) is computed by a projection first.
  auto key = [&](const cp::Expression& x, Relation* side) {
    if (x.field_ref() != nullptr) return *x.field_ref()->name();
    const std::string id = ctx_.NewId("key");
    auto project = plan::MakeNode(PlanNode::Kind::kProject, std::move(side->plan));
    project->keep_input = true;
    project->expressions.push_back(x);
    project->names.push_back(id);
    side->plan = std::move(project);
    return id;
  };
  std::vector<std::pair<cp::Expression, cp::Expression>> null_equal;
  std::vector<cp::Expression> null_equal_conditions;
  std::vector<const json*> parts;
  SplitAnd(*quals, &parts);
  for (const json* p : parts) {
    const int refs = outer_refs_;
    const size_t scalars = row_scalars_.size();
    ARROW_ASSIGN_OR_RAISE(auto e, Expr(*p, Scope::kRow));
    ARROW_ASSIGN_OR_RAISE(e, Typecheck(e, *p, RowSchema()));
    if (outer_refs_ != refs) return Unsupported(*p, "a correlated reference in an ON clause");
    if (row_scalars_.size() != scalars) {
      return Unsupported(*p, "a scalar subquery in the ON clause of an outer join");
    }
    bool left_side = false, right_side = false;
    for (const auto& ref : cp::FieldsInExpression(e)) {
      (right_ids.count(*ref.name()) ? right_side : left_side) = true;
    }
    const cp::Expression::Call* call = e.call();
    std::optional<std::pair<cp::Expression, cp::Expression>> operands;
    if (call != nullptr && call->function_name == "equal" && call->arguments.size() == 2) {
      operands.emplace(call->arguments[0], call->arguments[1]);
    }
    const auto not_distinct = plan::NotDistinctOperands(e);
    if (left_side && right_side && not_distinct && sides_of(not_distinct->first) != 3 &&
        sides_of(not_distinct->second) != 3 &&
        sides_of(not_distinct->first) != sides_of(not_distinct->second)) {
      // a IS NOT DISTINCT FROM b: the join's keys where it has no equality (below).
      null_equal.push_back(*not_distinct);
      null_equal_conditions.push_back(e);
      continue;
    }
    if (left_side && right_side && operands && sides_of(operands->first) != 3 &&
        sides_of(operands->second) != 3 &&
        sides_of(operands->first) != sides_of(operands->second)) {
      // A key on each side; an expression (t1.k = t2.k + 1) is computed by a projection first.
      cp::Expression a = operands->first, b = operands->second;
      if (sides_of(a) == 2) std::swap(a, b);
      node->left_keys.push_back(key(a, &left));
      node->right_keys.push_back(key(b, &right));
    } else {
      if (right_side && !left_side) right_only.push_back(e);
      on_filter.push_back(e);
    }
  }
  if (node->left_keys.empty() && !null_equal.empty()) {
    // Only IS NOT DISTINCT FROM between the sides: keys that compare NULLs as equal.
    for (auto& [a, b] : null_equal) {
      if (sides_of(a) == 2) std::swap(a, b);
      node->left_keys.push_back(key(a, &left));
      node->right_keys.push_back(key(b, &right));
    }
    node->null_equal_keys = true;
  } else {
    on_filter.insert(on_filter.end(), null_equal_conditions.begin(), null_equal_conditions.end());
  }
  if (node->left_keys.empty()) {
    return Unsupported(join, "an outer join without an equality between its two sides");
  }
  if (!on_filter.empty()) {
    node->join_filter = on_filter.size() == 1 ? on_filter[0] : cp::and_(on_filter);
  }
  // The build_sides pass hashes the preserved side when it is clearly smaller (Q13: 150K
  // customers, not 1.5M orders).
  node->input_cardinality = left.cardinality;
  node->right_cardinality = [right_card = right.cardinality,
                             right_only]() -> arrow::Result<plan::Cardinality> {
    ARROW_ASSIGN_OR_RAISE(plan::Cardinality c, right_card());
    for (const auto& e : right_only) c.estimate *= Selectivity(e, c);
    return c;
  };
  node->input = std::move(left.plan);
  node->right = std::move(right.plan);
  Relation out;
  out.plan = std::move(node);
  out.cardinality = [left_card = left.cardinality, right_card = right.cardinality,
                     full]() -> arrow::Result<plan::Cardinality> {
    ARROW_ASSIGN_OR_RAISE(plan::Cardinality c, left_card());
    plan::Cardinality o;
    o.rows = c.rows;
    o.estimate = c.estimate;
    o.distinct = c.distinct;
    if (full) {
      // At most every row of either side once more, unmatched.
      ARROW_ASSIGN_OR_RAISE(plan::Cardinality r, right_card());
      o.rows += r.rows;
      o.estimate += r.estimate;
      o.distinct.clear();
    }
    return o;
  };
  out.columns = left.columns;
  if (full) {
    for (auto& c : out.columns) c.field = c.field->WithNullable(true);
  }
  for (auto c : right.columns) {
    c.field = c.field->WithNullable(true);
    out.columns.push_back(std::move(c));
  }
  if (full && !using_pairs.empty()) {
    // A full join's USING column is neither side's: COALESCE(l.k, r.k), computed above the join
    // and listed first; both sides' are merged away.
    auto project = plan::MakeNode(PlanNode::Kind::kProject, std::move(out.plan));
    project->keep_input = true;
    std::vector<ColumnInfo> merged;
    for (const auto& [l, r] : using_pairs) {
      std::vector<cp::Expression> both = {cp::field_ref(l.id()), cp::field_ref(r.id())};
      ARROW_RETURN_NOT_OK(UnifyBranches(&both, Scope::kRow, json::object()));
      const cp::Expression value = cp::call("coalesce", std::move(both));
      ARROW_ASSIGN_OR_RAISE(auto typed, value.Bind(RowSchema()));
      ColumnInfo c;
      c.name = l.name;
      c.field = arrow::field(ctx_.NewId(l.name), typed.type()->GetSharedPtr(), true);
      project->expressions.push_back(value);
      project->names.push_back(c.field->name());
      merged.push_back(std::move(c));
      for (auto& col : columns_) {
        if (col.id() == l.id()) col.merged_away = true;
      }
    }
    out.plan = std::move(project);
    out.columns.insert(out.columns.begin(), merged.begin(), merged.end());
    columns_.insert(columns_.begin() + static_cast<std::ptrdiff_t>(left_begin), merged.begin(),
                    merged.end());
    for (const auto& c : merged) row_fields_.push_back(c.field);
    row_schema_ = nullptr;
  }
  return out;
}

arrow::Status Binder::BindWhereCondition(const json& node, std::vector<cp::Expression>* local) {
  auto [kind, body] = Node(node);
  bool negated = false;
  if (kind == "BoolExpr" && body->value("boolop", "") == "NOT_EXPR" &&
      body->at("args").size() == 1) {
    auto [inner_kind, inner_body] = Node(body->at("args").at(0));
    if (inner_kind == "SubLink") {
      negated = true;
      kind = inner_kind;
      body = inner_body;
    }
  }
  if (kind == "SubLink") {
    const std::string type = body->value("subLinkType", "");
    if (type == "EXISTS_SUBLINK") return BindExists(*body, negated, local);
    const std::string op = body->contains("operName") ? LastName(body->at("operName")) : "=";
    if (type == "ANY_SUBLINK" && op == "=") return BindIn(*body, negated, local);
    if (type == "ALL_SUBLINK" && (op == "<>" || op == "!=")) {
      // x <> ALL (q) is x NOT IN (q): an anti join.
      synthesized_.push_back(AsInSublink(*body));
      return BindIn(synthesized_.back(), !negated, local);
    }
  }
  const int refs = outer_refs_;
  ARROW_ASSIGN_OR_RAISE(auto e, Expr(node, Scope::kRow));
  e = UnknownAsBoolean(e);
  ARROW_ASSIGN_OR_RAISE(e, Typecheck(e, node, RowSchema()));
  ARROW_ASSIGN_OR_RAISE(auto typed, e.Bind(RowSchema()));
  if (!typed.type()->Equals(*arrow::boolean())) {
    return Error(node,
                 "argument of WHERE must be type boolean, not type " + typed.type()->ToString());
  }
  if (outer_refs_ == refs) {
    local->push_back(e);
    return arrow::Status::OK();
  }
  correlated_refs_ += outer_refs_ - refs;
  // (x = outer.x AND a) OR (x = outer.x AND b): the equality every branch repeats is a
  // correlation key, the rest a condition of this query alone (TPC-DS q41).
  std::set<std::string> own;  // this level's columns and scalar subquery results
  for (const auto& f : row_fields_) own.insert(f->name());
  for (auto& c : FactorOr(e)) {
    bool outer = false;
    for (const auto& ref : cp::FieldsInExpression(c)) outer = outer || !own.count(*ref.name());
    (outer ? correlated_ : *local).push_back(std::move(c));
  }
  return arrow::Status::OK();
}

arrow::Status Binder::BindExists(const json& link, bool negated,
                                 std::vector<cp::Expression>* local) {
  Binder child(ctx_, this, this);
  ARROW_ASSIGN_OR_RAISE(Relation r,
                        child.Bind(link.at("subselect").at("SelectStmt"), Purpose::kExists));
  // The decorrelate pass makes the join's keys of these equalities; without one there is no
  // hash join to run.
  const std::set<std::string> inner = child.OwnColumns();
  const auto& correlated = child.correlated();
  if (correlated.empty()) {
    // Uncorrelated: one count for the whole query, a condition like any other.
    ARROW_ASSIGN_OR_RAISE(auto exists, SubqueryTest(link, Scope::kRow));
    local->push_back(negated ? cp::not_(exists) : exists);
    return arrow::Status::OK();
  }
  if (std::none_of(correlated.begin(), correlated.end(), [&](const cp::Expression& c) {
        return InnerOuterEquality(c, inner).has_value();
      })) {
    return Unsupported(link,
                       "EXISTS without an equality between a subquery column and an outer column");
  }
  auto join = plan::MakeNode(PlanNode::Kind::kDependentJoin);
  join->join_type = negated ? JoinType::kAnti : JoinType::kSemi;
  join->correlated = true;
  join->right_cardinality = std::move(r.cardinality);
  join->right = std::move(r.plan);
  semi_joins_.push_back(std::move(join));
  return arrow::Status::OK();
}

arrow::Status Binder::BindIn(const json& link, bool negated, std::vector<cp::Expression>* local) {
  if (link.contains("operName") && LastName(link.at("operName")) != "=") {
    return Unsupported(link, "ANY/ALL with a comparison other than =");
  }
  const int refs = outer_refs_;
  const size_t scalars = row_scalars_.size();
  ARROW_ASSIGN_OR_RAISE(auto x, Expr(link.at("testexpr"), Scope::kRow));
  std::shared_ptr<arrow::Field> computed;  // x's column, where x is an expression
  PlanNode* key_project = nullptr;         // and the projection that computes it
  if (x.field_ref() == nullptr) {
    // The semi join's key is a column: an expression of this level's columns is computed into
    // one under the joins, beside the columns it reads.
    if (outer_refs_ != refs || row_scalars_.size() != scalars) {
      return Unsupported(link.at("testexpr"),
                         "IN (subquery) on an expression that reads the outer query's columns or "
                         "a subquery");
    }
    ARROW_ASSIGN_OR_RAISE(auto typed, x.Bind(RowSchema()));
    const std::string id = ctx_.NewId("in_key");
    auto project = plan::MakeNode(PlanNode::Kind::kProject);
    project->keep_input = true;
    project->expressions.push_back(x);
    project->names.push_back(id);
    key_project = project.get();
    semi_joins_.push_back(std::move(project));
    computed = arrow::field(id, typed.type()->GetSharedPtr(), /*nullable=*/true);
    x = cp::field_ref(id);
  }
  Binder child(ctx_, this, this);
  ARROW_ASSIGN_OR_RAISE(Relation r,
                        child.Bind(link.at("subselect").at("SelectStmt"), Purpose::kQuery));
  // A correlated IN is a semi join on its column and on its correlation keys, which the
  // decorrelate pass adds through the subquery's projections (and aggregates: grouping by them
  // is the per-row subquery).
  const bool correlated = child.outer_references() > 0;
  if (correlated && !child.CorrelatedByKeysOnly()) {
    return Unsupported(link,
                       "a correlated IN subquery whose conditions on the outer query are not all "
                       "`column = outer column` (write it as EXISTS)");
  }
  const json& subselect = link.at("subselect").at("SelectStmt");
  if (correlated && child.aggregated() && !subselect.contains("groupClause")) {
    // Grouped by the correlation keys, an outer row with no rows behind it meets no group,
    // where SQL has the aggregate over no rows: one NULL row, which the semi join's "no match"
    // is only for min, max, sum and avg, and only for IN (NOT IN (NULL) keeps nothing).
    if (negated) {
      return Unsupported(link, "a correlated NOT IN over an aggregate (write it as NOT EXISTS)");
    }
    const json& target = subselect.at("targetList").at(0).at("ResTarget").at("val");
    auto [vkind, vbody] = Node(target);
    const std::string fn = vkind == "FuncCall" ? LastName(vbody->at("funcname")) : "";
    if (subselect.contains("havingClause") || fn.empty() ||
        (fn != "min" && fn != "max" && fn != "sum" && fn != "avg") ||
        vbody->value("agg_distinct", false)) {
      return Unsupported(link,
                         "a correlated IN over an ungrouped aggregate other than min, max, sum or "
                         "avg (its value over no rows is not NULL; write it as EXISTS)");
    }
  }
  if (r.columns.size() != 1) return Error(link, "subquery has too many columns");
  const auto& inner_field = r.columns[0].field;
  if (computed != nullptr && computed->type()->id() == arrow::Type::NA) {
    // NULL IN (...): a NULL of the subquery column's type.
    key_project->expressions[0] =
        cp::call("cast", {key_project->expressions[0]}, CastAs(inner_field->type()));
    computed = computed->WithType(inner_field->type());
  }
  auto outer_field = computed ? computed : RowSchema().GetFieldByName(*x.field_ref()->name());
  if (outer_field != nullptr && !outer_field->type()->Equals(*inner_field->type())) {
    // The two sides meet in a type that holds both, where one can be had without a cast that
    // could fail: a decimal(1, 0) IN a subquery of int32 values compares as decimal(10, 0), an
    // int32 IN int64 values as int64, not the subquery's values cut to x's type. Integers and
    // decimals take ExactCommonType (none past 38 digits); dates and timestamps CommonType. A
    // number beside a float compares as a double, as PostgreSQL and DuckDB compare them (an int64
    // past 2^53 rounds to the nearest double). Where no type holds both, the subquery's column
    // is cast to x's type below. This level's own column, or the expression computed for x, is
    // cast; an outer query's column is not.
    const auto& ot = outer_field->type();
    const auto& it = inner_field->type();
    const auto number = [](const arrow::DataType& t) {
      return arrow::is_integer(t.id()) || arrow::is_floating(t.id()) || arrow::is_decimal(t.id());
    };
    std::shared_ptr<arrow::DataType> common = ExactCommonType(ot, it);
    if (number(*ot) && number(*it) &&
        (arrow::is_floating(ot->id()) || arrow::is_floating(it->id()))) {
      common = arrow::float64();
    }
    if (common == nullptr && !number(*ot) && !number(*it)) {
      auto found = CommonType(ot, it);
      if (found.ok()) common = *found;
    }
    const bool own = computed != nullptr || OwnColumns().count(outer_field->name()) != 0;
    if (common != nullptr && !common->Equals(*ot) && own) {
      const auto to_common = CastAs(common);
      if (key_project != nullptr) {
        key_project->expressions[0] = cp::call("cast", {key_project->expressions[0]}, to_common);
        computed = computed->WithType(common);
      } else {
        const std::string id = ctx_.NewId("in_key");
        auto project = plan::MakeNode(PlanNode::Kind::kProject);
        project->keep_input = true;
        project->expressions.push_back(cp::call("cast", {x}, to_common));
        project->names.push_back(id);
        semi_joins_.push_back(std::move(project));
        computed = arrow::field(id, common, outer_field->nullable());
        x = cp::field_ref(id);
      }
      outer_field = computed;
    }
  }
  if (negated && (outer_field == nullptr || outer_field->nullable() || inner_field->nullable())) {
    // NOT IN is NULL, not true, once either side has a NULL, where the anti join keeps the row.
    // A row passes only where the subquery has no rows, or where x is not NULL and the
    // subquery no NULL: the subquery's counts of rows and of values say which.
    if (correlated || outer_field == nullptr) {
      return Unsupported(
          link, "a correlated NOT IN over a column that may be NULL (write it as NOT EXISTS)");
    }
    ARROW_ASSIGN_OR_RAISE(
        RowCounts counts,
        SubqueryCounts(link, "NOT IN over a column that may be NULL", Scope::kRow));
    const auto zero = cp::literal(int64_t{0});
    local->push_back(cp::or_(cp::equal(counts.rows, zero),
                             cp::and_(cp::is_valid(x), cp::equal(counts.values, counts.rows))));
  }
  auto join = plan::MakeNode(PlanNode::Kind::kDependentJoin);
  join->join_type = negated ? JoinType::kAnti : JoinType::kSemi;
  join->correlated = correlated;
  join->left_keys.push_back(*x.field_ref()->name());
  join->right_keys.push_back(inner_field->name());
  join->right_cardinality = std::move(r.cardinality);
  join->right = std::move(r.plan);
  if (outer_field != nullptr && !outer_field->type()->Equals(*inner_field->type())) {
    // A hash join compares keys of one type: cast the subquery's column to the outer one's.
    auto cast = plan::MakeNode(PlanNode::Kind::kProject, std::move(join->right));
    const std::string id = ctx_.NewId(r.columns[0].name);
    cast->expressions.push_back(
        cp::call("cast", {cp::field_ref(inner_field->name())}, CastAs(outer_field->type())));
    cast->names.push_back(id);
    join->right = std::move(cast);
    join->right_keys[0] = id;
  }
  semi_joins_.push_back(std::move(join));
  return arrow::Status::OK();
}

arrow::Result<cp::Expression> Binder::SynthesizedScalar(json select, int loc, Scope scope) {
  synthesized_.push_back(json{{"subLinkType", "EXPR_SUBLINK"},
                              {"subselect", {{"SelectStmt", std::move(select)}}},
                              {"location", loc}});
  return ScalarSubquery(synthesized_.back(), scope);
}

arrow::Result<Binder::RowCounts> Binder::SubqueryCounts(const json& link, const std::string& what,
                                                        Scope scope) {
  const TreeWriter tree{Location(link)};
  const json& subselect = link.at("subselect").at("SelectStmt");
  {
    // Read as a table of one column v below: more columns would be dropped unseen.
    Binder child(ctx_, this, this);
    ARROW_ASSIGN_OR_RAISE(Relation r, child.Bind(subselect, Purpose::kQuery));
    if (r.columns.size() != 1) return Error(link, "subquery has too many columns");
    // Its counts are read once for the whole query, not per outer row.
    if (child.outer_references() > 0) return Unsupported(link, "a correlated " + what);
  }
  const std::string alias = "__in" + std::to_string(ctx_.next_id++);
  RowCounts counts;
  ARROW_ASSIGN_OR_RAISE(
      counts.rows, SynthesizedScalar(tree.SelectFrom(tree.Count(std::nullopt), subselect, alias),
                                     tree.loc, scope));
  ARROW_ASSIGN_OR_RAISE(
      counts.values,
      SynthesizedScalar(tree.SelectFrom(tree.Count(tree.Column({alias, "v"})), subselect, alias),
                        tree.loc, scope));
  return counts;
}

arrow::Result<json> Binder::ValuesAsUnion(const json& values) {
  std::vector<const json*> rows;
  for (const auto& row : values.at("valuesLists")) rows.push_back(&row.at("List").at("items"));
  const size_t width = rows.front()->size();
  for (const json* row : rows) {
    if (row->size() != width) {
      return Error(values.at("valuesLists"), "VALUES lists must all be the same length");
    }
  }
  const TreeWriter tree{Location(values.at("valuesLists"))};
  // Rows [begin, end): one SELECT, or the UNION ALL of the halves. A column of NULLs alone
  // stays untyped below the top (kValuesUnionInner), so that the other rows decide its type.
  std::function<json(size_t, size_t, bool)> build = [&](size_t begin, size_t end, bool top) {
    if (end - begin == 1) {
      json targets = json::array();
      for (size_t c = 0; c < width; ++c) {
        targets.push_back(json{{"ResTarget",
                                {{"name", "column" + std::to_string(c + 1)},
                                 {"val", rows[begin]->at(c)},
                                 {"location", tree.loc}}}});
      }
      if (rows.size() > 1) {
        json number = {
            {"A_Const",
             {{"ival", {{"ival", static_cast<int64_t>(begin)}}}, {"location", tree.loc}}}};
        targets.push_back(
            json{{"ResTarget", {{"name", kValuesRow}, {"val", number}, {"location", tree.loc}}}});
      }
      return json{{"targetList", std::move(targets)}, {"op", "SETOP_NONE"}};
    }
    const size_t middle = begin + (end - begin) / 2;
    json node = {{"op", "SETOP_UNION"},
                 {"all", true},
                 {"larg", build(begin, middle, false)},
                 {"rarg", build(middle, end, false)},
                 {kValuesUnion, true}};
    if (!top) node[kValuesUnionInner] = true;
    return node;
  };
  json out = build(0, rows.size(), true);
  if (values.contains("sortClause") || values.contains("limitCount") ||
      values.contains("limitOffset")) {
    // SELECT * FROM (the rows) ORDER BY ... LIMIT ...: the same for one row as for several.
    json star = {
        {"ColumnRef",
         {{"fields", json::array({json{{"A_Star", json::object()}}})}, {"location", tree.loc}}}};
    out = json{
        {"targetList", json::array({json{{"ResTarget", {{"val", star}, {"location", tree.loc}}}}})},
        {"fromClause", json::array({json{{"RangeSubselect",
                                          {{"subquery", {{"SelectStmt", std::move(out)}}},
                                           {"alias", {{"aliasname", "*VALUES*"}}}}}}})},
        {"op", "SETOP_NONE"}};
    for (const char* key : {"sortClause", "limitCount", "limitOffset", "limitOption"}) {
      if (values.contains(key)) out[key] = values.at(key);
    }
  }
  if (values.contains("withClause")) out["withClause"] = values.at("withClause");
  return out;
}

json Binder::AsInSublink(const json& link) {
  json in = link;
  in["subLinkType"] = "ANY_SUBLINK";
  in["operName"] = json::array({TreeWriter::Name("=")});
  return in;
}

arrow::Result<cp::Expression> Binder::QuantifiedComparison(const json& link, Scope scope) {
  const bool all = link.value("subLinkType", "") == "ALL_SUBLINK";
  std::string op = LastName(link.at("operName"));
  if (op == "!=") op = "<>";
  static const std::set<std::string> kOps = {"<", "<=", ">", ">=", "=", "<>"};
  if (!kOps.count(op)) return Unsupported(link, "ALL or ANY with the operator " + op);
  if (all ? op == "<>" : op == "=") {
    // NOT IN and IN: whether x is among q's values, not only beside its least and greatest.
    synthesized_.push_back(AsInSublink(link));
    ARROW_ASSIGN_OR_RAISE(auto in, SubqueryTest(synthesized_.back(), scope));
    return all ? cp::not_(in) : in;
  }
  const TreeWriter tree{Location(link)};
  const json& subselect = link.at("subselect").at("SelectStmt");
  ARROW_ASSIGN_OR_RAISE(
      RowCounts counts,
      SubqueryCounts(link, std::string(all ? "ALL" : "ANY") + " subquery", scope));
  const std::string alias = "__in" + std::to_string(ctx_.next_id++);
  auto extreme = [&](const std::string& fn) {
    return SynthesizedScalar(
        tree.SelectFrom(tree.Call(fn, tree.Column({alias, "v"})), subselect, alias), tree.loc,
        scope);
  };
  ARROW_ASSIGN_OR_RAISE(auto least, extreme("min"));
  ARROW_ASSIGN_OR_RAISE(auto greatest, extreme("max"));
  ARROW_ASSIGN_OR_RAISE(auto x, Expr(link.at("testexpr"), scope));
  auto compare = [&](const std::string& o, const cp::Expression& bound) {
    return BinaryOperator(o, link, x, bound, scope);
  };
  // What settles the answer once q has rows and x is known: for ALL, a value of q that x fails
  // against (x > ALL fails where x <= the greatest); for ANY, one that x meets.
  cp::Expression settles;
  if (op == "=" || op == "<>") {  // = ALL fails, and <> ANY holds, where a value differs from x
    ARROW_ASSIGN_OR_RAISE(auto low, compare("<>", least));
    ARROW_ASSIGN_OR_RAISE(auto high, compare("<>", greatest));
    settles = cp::or_(low, high);
  } else {
    static const std::map<std::string, std::string> kFails = {
        {">", "<="}, {">=", "<"}, {"<", ">="}, {"<=", ">"}};
    const bool above = op[0] == '>';
    // ALL: x > every value fails against the greatest; ANY: x > some value holds at the least.
    const cp::Expression& bound = all == above ? greatest : least;
    ARROW_ASSIGN_OR_RAISE(settles, compare(all ? kFails.at(op) : op, bound));
  }
  const auto null = cp::literal(arrow::MakeNullScalar(arrow::boolean()));
  const auto zero = cp::literal(int64_t{0});
  // In order: q without rows (ALL holds, ANY does not), x NULL, the settling value, a NULL in
  // q (which might have been one), else the answer for q's values all on the other side.
  return cp::call("case_when", {cp::call("make_struct",
                                         {cp::equal(counts.rows, zero), cp::is_null(x),
                                          cp::call("coalesce", {settles, cp::literal(false)}),
                                          cp::less(counts.values, counts.rows)},
                                         cp::MakeStructOptions({"c0", "c1", "c2", "c3"})),
                                cp::literal(all), null, cp::literal(!all), null, cp::literal(all)});
}

arrow::Result<cp::Expression> Binder::SubqueryTest(const json& link, Scope scope) {
  const TreeWriter tree{Location(link)};
  const json& subselect = link.at("subselect").at("SelectStmt");
  if (subselect.value("op", "SETOP_NONE") != "SETOP_NONE" || subselect.contains("groupClause") ||
      subselect.contains("havingClause") || subselect.contains("limitCount") ||
      ContainsAggregate(ListMember(subselect, "targetList"), ctx_.functions)) {
    return Unsupported(link,
                       "EXISTS or IN over a grouped, aggregated, limited or combined "
                       "subquery inside an expression");
  }
  if (link.value("subLinkType", "") == "EXISTS_SUBLINK") {
    // EXISTS (q) is (SELECT count(*) FROM q) > 0.
    json select = subselect;
    select["targetList"] = json::array(
        {json{{"ResTarget", {{"val", tree.Count(std::nullopt)}, {"location", tree.loc}}}}});
    select.erase("distinctClause");
    select.erase("sortClause");
    ARROW_ASSIGN_OR_RAISE(auto n, SynthesizedScalar(std::move(select), tree.loc, scope));
    return cp::greater(n, cp::literal(int64_t{0}));
  }
  if (link.contains("operName") && LastName(link.at("operName")) != "=") {
    return Unsupported(link, "ANY/ALL with a comparison other than =");
  }
  auto [tkind, tbody] = Node(link.at("testexpr"));
  if (tkind != "ColumnRef") {
    return Unsupported(link.at("testexpr"),
                       "IN, NOT IN, = ANY or <> ALL (subquery) inside an expression on something "
                       "other than a column");
  }
  // x IN (q): true where q has x, NULL where it does not but has a NULL or x is NULL (and q has
  // rows), else false: the count of matches, and q's counts of rows and of values.
  const std::string alias = "__in" + std::to_string(ctx_.next_id++);
  json matches = tree.SelectFrom(tree.Count(std::nullopt), subselect, alias);
  matches["whereClause"] = {{"A_Expr",
                             {{"kind", "AEXPR_OP"},
                              {"name", json::array({TreeWriter::Name("=")})},
                              {"lexpr", tree.Column({alias, "v"})},
                              {"rexpr", link.at("testexpr")},
                              {"location", tree.loc}}}};
  // The counts first: they refuse a correlated subquery by name.
  ARROW_ASSIGN_OR_RAISE(RowCounts counts,
                        SubqueryCounts(link, "IN subquery inside an expression", scope));
  ARROW_ASSIGN_OR_RAISE(auto m, SynthesizedScalar(std::move(matches), tree.loc, scope));
  const cp::Expression& n = counts.rows;
  const cp::Expression& v = counts.values;
  ARROW_ASSIGN_OR_RAISE(auto x, Expr(link.at("testexpr"), scope));
  const auto null = cp::literal(arrow::MakeNullScalar(arrow::boolean()));
  const auto zero = cp::literal(int64_t{0});
  return cp::call(
      "case_when",
      {cp::call("make_struct",
                {cp::greater(m, zero), cp::equal(n, zero), cp::or_(cp::is_null(x), cp::less(v, n))},
                cp::MakeStructOptions({"c0", "c1", "c2"})),
       cp::literal(true), cp::literal(false), null, cp::literal(false)});
}

arrow::Result<cp::Expression> Binder::ScalarSubquery(const json& link, Scope scope) {
  Binder child(ctx_, this, this);
  const json& subselect = link.at("subselect").at("SelectStmt");
  const auto& targets = ListMember(subselect, "targetList");
  const bool one_aggregate =
      (subselect.contains("havingClause") || ContainsAggregate(targets, ctx_.functions)) &&
      !subselect.contains("groupClause") && targets.size() == 1 &&
      !subselect.contains("limitCount") && !subselect.contains("distinctClause") &&
      subselect.value("op", "SETOP_NONE") == "SETOP_NONE";
  Relation r;
  if (one_aggregate) {
    ARROW_ASSIGN_OR_RAISE(r, child.Bind(subselect, Purpose::kScalar));
  } else {
    // Any other query: its one value, NULL for no row, an error for more than one (checked
    // as it runs; the plan cannot know).
    ARROW_ASSIGN_OR_RAISE(r, child.Bind(subselect, Purpose::kQuery));
    if (child.outer_references() > 0) {
      return Unsupported(link,
                         "a correlated scalar subquery that is not one ungrouped aggregate (it "
                         "could return more than one row)");
    }
    if (r.columns.size() != 1) return Error(link, "subquery must return only one column");
    const std::string value = r.columns[0].id();
    const std::string id = std::to_string(ctx_.next_id++);
    auto partial = plan::MakeNode(PlanNode::Kind::kAggregate, std::move(r.plan));
    partial->aggregates = {{"min", value, "__p" + id + "v"}, {"count_all", "", "__p" + id + "n"}};
    auto final_agg = plan::MakeNode(PlanNode::Kind::kAggregate, std::move(partial));
    final_agg->final_phase = true;
    final_agg->aggregates = {{"min", "__p" + id + "v", "__one" + id + "v"},
                             {"sum", "__p" + id + "n", "__one" + id + "n"}};
    auto check = plan::MakeNode(PlanNode::Kind::kFilter, std::move(final_agg));
    check->predicate =
        cp::call(plan::kAtMostOneRowFunction,
                 {cp::field_ref("__one" + id + "n"), cp::literal(Position(sql_, Location(link)))});
    auto project = plan::MakeNode(PlanNode::Kind::kProject, std::move(check));
    project->expressions.push_back(cp::field_ref("__one" + id + "v"));
    project->names.push_back(ctx_.NewId(r.columns[0].name));
    r.columns[0].field = r.columns[0].field->WithName(project->names[0])->WithNullable(true);
    r.plan = std::move(project);
    r.cardinality = []() -> arrow::Result<plan::Cardinality> { return plan::Cardinality{}; };
  }
  auto value = r.columns.back().field->WithNullable(true);
  // A left join: no group for an outer row's key, or no row at all behind a HAVING, is the
  // aggregate over no rows, NULL.
  auto join = plan::MakeNode(PlanNode::Kind::kDependentJoin);
  join->join_type = JoinType::kLeft;
  const bool correlated = !child.correlation_outer().empty();
  join->correlated = correlated;
  if (correlated) {
    // Only the subquery's estimate: the build side stays the group table.
    join->right_cardinality = std::move(r.cardinality);
  } else {
    // At most one aggregate row: every outer row joins it on a constant key, named here.
    join->left_keys.push_back(ctx_.NewId("one"));
    join->right_keys.push_back(ctx_.NewId("one"));
  }
  join->right = std::move(r.plan);
  if (scope == Scope::kAggregated && !in_aggregate_) {
    if (correlated) return Unsupported(link, "a correlated subquery after aggregation");
    having_scalars_.push_back(std::move(join));
    having_fields_.push_back(value);
  } else {
    row_scalars_.push_back(std::move(join));
    row_fields_.push_back(value);
    row_schema_ = nullptr;
  }
  if (child.count_result()) {
    return cp::call("coalesce", {cp::field_ref(value->name()), cp::literal(int64_t{0})});
  }
  return cp::field_ref(value->name());
}

arrow::Result<std::unique_ptr<PlanNode>> Binder::OrderAndLimit(
    const json& select, std::unique_ptr<PlanNode> plan, const std::vector<std::string>& names,
    const std::vector<std::string>& out_ids, bool top, Scope out_scope, PlanNode* main,
    const char* refusal) {
  // ORDER BY output names, positions or expressions; only where the order is observable: at the
  // top, or below a LIMIT.
  const bool limited = select.contains("limitCount") || select.contains("limitOffset");
  if (select.contains("sortClause") && (top || limited)) {
    std::vector<cp::Expression> hidden;
    std::vector<std::string> hidden_ids;
    std::vector<cp::SortKey> keys;
    for (const auto& s : select.at("sortClause")) {
      const auto& by = s.at("SortBy");
      auto [skind, sbody] = Node(by.at("node"));
      std::string target;
      if (skind == "A_Const" && sbody->contains("ival")) {
        ARROW_ASSIGN_OR_RAISE(const int64_t pos, IntConstant(*sbody));
        if (pos < 1 || pos > static_cast<int>(names.size())) {
          return Error(*sbody,
                       "ORDER BY position " + std::to_string(pos) + " is not in select list");
        }
        target = out_ids[static_cast<size_t>(pos - 1)];
      } else if (skind == "ColumnRef" && sbody->at("fields").size() == 1 &&
                 sbody->at("fields").at(0).contains("String")) {
        const std::string name = sbody->at("fields").at(0).at("String").value("sval", "");
        for (size_t i = 0; i < names.size() && target.empty(); ++i) {
          if (names[i] == name) target = out_ids[i];
        }
      }
      if (target.empty()) {
        if (main == nullptr) return Error(by.at("node"), refusal);
        ARROW_ASSIGN_OR_RAISE(auto target_expr, Expr(by.at("node"), out_scope));
        if (out_scope == Scope::kRow) {
          ARROW_ASSIGN_OR_RAISE(target_expr, Typecheck(target_expr, by.at("node"), RowSchema()));
        }
        target = ctx_.NewId("__sort");
        hidden.push_back(target_expr);
        hidden_ids.push_back(target);
      }
      ARROW_ASSIGN_OR_RAISE(const bool desc, Descending(by));
      const std::string nulls = by.value("sortby_nulls", "SORTBY_NULLS_DEFAULT");
      // PostgreSQL puts NULLs last ascending and first descending, each key on its own (Arrow's
      // sort keys carry their NULL placement, so no extra key column is needed).
      const bool nulls_first =
          nulls == "SORTBY_NULLS_DEFAULT" ? desc : nulls == "SORTBY_NULLS_FIRST";
#pragma GCC diagnostic push
      // GCC 12 reports a false maybe-uninitialized inside FieldRef's std::variant move.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
      keys.emplace_back(arrow::FieldRef(target),
                        desc ? cp::SortOrder::Descending : cp::SortOrder::Ascending,
                        nulls_first ? cp::NullPlacement::AtStart : cp::NullPlacement::AtEnd);
#pragma GCC diagnostic pop
    }
    // Expression keys are computed by the select list's projection.
    if (main != nullptr && main->kind == PlanNode::Kind::kProject) {
      for (size_t i = 0; i < hidden.size(); ++i) {
        main->expressions.push_back(hidden[i]);
        main->names.push_back(hidden_ids[i]);
      }
    }
    auto sort = std::make_unique<PlanNode>();
    sort->kind = PlanNode::Kind::kSort;
    sort->sort_keys = std::move(keys);
    sort->input = std::move(plan);
    plan = std::move(sort);
  }
  if (limited) {
    if (outer_refs_ > 0) {
      // Per outer row, which no join of the decorrelated subquery can say.
      return Unsupported(select, "LIMIT/OFFSET in a correlated subquery");
    }
    auto limit = std::make_unique<PlanNode>();
    limit->kind = PlanNode::Kind::kLimit;
    auto number = [&](const char* key, int64_t* out) -> arrow::Status {
      if (!select.contains(key)) return arrow::Status::OK();
      auto [k, b] = Node(select.at(key));
      if (k != "A_Const" || !b->contains("ival"))
        return Unsupported(select.at(key), "non-constant LIMIT/OFFSET");
      ARROW_ASSIGN_OR_RAISE(*out, IntConstant(*b));
      if (*out < 0)
        return Error(select.at(key),
                     std::string(key == std::string("limitCount") ? "LIMIT" : "OFFSET") +
                         " must not be negative");
      return arrow::Status::OK();
    };
    ARROW_RETURN_NOT_OK(number("limitCount", &limit->count));
    ARROW_RETURN_NOT_OK(number("limitOffset", &limit->offset));
    limit->input = std::move(plan);
    plan = std::move(limit);
  }
  return plan;
}

arrow::Result<Relation> Binder::BindSetOperation(const json& select, bool top) {
  const std::string op = select.value("op", "");
  const bool all = select.value("all", false);
  const std::string what = select.contains(kValuesUnion) ? "VALUES"
                           : op == "SETOP_UNION"         ? "UNION"
                           : op == "SETOP_INTERSECT"     ? "INTERSECT"
                                                         : "EXCEPT";
  const json& larg = select.at("larg").contains("SelectStmt") ? select.at("larg").at("SelectStmt")
                                                              : select.at("larg");
  const json& rarg = select.at("rarg").contains("SelectStmt") ? select.at("rarg").at("SelectStmt")
                                                              : select.at("rarg");
  // Each side is a query of its own that sees this level's CTEs.
  Binder left_binder(ctx_, parent_, this), right_binder(ctx_, parent_, this);
  ARROW_ASSIGN_OR_RAISE(Relation left, left_binder.Bind(larg, Purpose::kQuery));
  ARROW_ASSIGN_OR_RAISE(Relation right, right_binder.Bind(rarg, Purpose::kQuery));
  if (left_binder.outer_references() > 0 || right_binder.outer_references() > 0) {
    return Unsupported(larg, "a correlated reference inside " + what);
  }
  const std::vector<std::string> names = left_binder.output_names();
  if (left.columns.size() != right.columns.size()) {
    return Error(rarg, "each " + what + " query must have the same number of columns");
  }
  // Both sides under fresh names, cast to the types they share.
  std::vector<std::shared_ptr<arrow::DataType>> types;
  for (size_t i = 0; i < left.columns.size(); ++i) {
    auto common = CommonType(left.columns[i].field->type(), right.columns[i].field->type());
    if (!common.ok()) {
      return Error(rarg, what + " " + common.status().message() + " (column " +
                             std::to_string(i + 1) + ", \"" + names[i] + "\")");
    }
    // Only NULLs on both sides: PostgreSQL resolves the unknown type as text (inside VALUES,
    // once all its rows are seen).
    const bool unresolved =
        (*common)->id() == arrow::Type::NA && !select.contains(kValuesUnionInner);
    types.push_back(unresolved ? arrow::utf8() : *common);
  }
  auto cast_side = [&](Relation* side) {
    auto project = plan::MakeNode(PlanNode::Kind::kProject, std::move(side->plan));
    for (size_t i = 0; i < side->columns.size(); ++i) {
      const auto& field = side->columns[i].field;
      cp::Expression e = cp::field_ref(field->name());
      if (!field->type()->Equals(*types[i])) {
        e = cp::call("cast", {e}, CastAs(types[i]));
      }
      project->expressions.push_back(std::move(e));
      project->names.push_back(ctx_.NewId(names[i]));
    }
    side->plan = std::move(project);
  };
  cast_side(&left);
  cast_side(&right);
  auto distinct = [](std::unique_ptr<PlanNode> plan, const std::vector<std::string>& keys) {
    for (bool final_phase : {false, true}) {
      auto agg = plan::MakeNode(PlanNode::Kind::kAggregate, std::move(plan));
      agg->final_phase = final_phase;
      agg->keys = keys;
      plan = std::move(agg);
    }
    return plan;
  };
  const plan::DeferredCardinality left_card = left.cardinality;
  const plan::DeferredCardinality right_card = right.cardinality;
  std::unique_ptr<PlanNode> plan;
  std::vector<std::string> out_ids;
  plan::DeferredCardinality cardinality;
  if (op == "SETOP_UNION") {
    auto u = plan::MakeNode(PlanNode::Kind::kUnion, std::move(left.plan));
    u->right = std::move(right.plan);
    for (const auto& n : names) u->names.push_back(ctx_.NewId(n));
    out_ids = u->names;
    plan = all ? std::move(u) : distinct(std::move(u), out_ids);
    cardinality = [left_card, right_card]() -> arrow::Result<plan::Cardinality> {
      ARROW_ASSIGN_OR_RAISE(plan::Cardinality l, left_card());
      ARROW_ASSIGN_OR_RAISE(plan::Cardinality r, right_card());
      plan::Cardinality c;
      c.rows = l.rows + r.rows;
      c.estimate = l.estimate + r.estimate;
      return c;
    };
  } else {
    // The left side's distinct rows that do (INTERSECT) or do not (EXCEPT) occur on the right,
    // rows compared as wholes: NULL matches NULL. With ALL, the n-th copy of a row matches the
    // n-th copy on the other side: each copy is numbered within its equal rows.
    auto numbered = [&](std::unique_ptr<PlanNode> side) {
      plan::WindowCall number;
      number.function = "row_number";
      number.partition_keys = side->OutputNames();
      number.output = ctx_.NewId("copy");
      auto window = plan::MakeNode(PlanNode::Kind::kWindow, std::move(side));
      window->windows.push_back(std::move(number));
      return window;
    };
    std::vector<std::string> left_ids = left.plan->OutputNames();
    std::vector<std::string> right_ids = right.plan->OutputNames();
    std::unique_ptr<PlanNode> left_rows =
        all ? numbered(std::move(left.plan)) : distinct(std::move(left.plan), left_ids);
    std::unique_ptr<PlanNode> right_rows =
        all ? numbered(std::move(right.plan)) : std::move(right.plan);
    auto join = plan::MakeNode(PlanNode::Kind::kJoin, std::move(left_rows));
    join->join_type = op == "SETOP_INTERSECT" ? JoinType::kSemi : JoinType::kAnti;
    join->left_keys = join->input->OutputNames();
    join->right_keys = right_rows->OutputNames();
    join->null_equal_keys = true;
    join->right = std::move(right_rows);
    join->input_cardinality = left_card;
    join->right_cardinality = right_card;
    plan = std::move(join);
    if (all) {
      // Without the copy numbers.
      auto project = plan::MakeNode(PlanNode::Kind::kProject, std::move(plan));
      for (size_t i = 0; i < left_ids.size(); ++i) {
        project->expressions.push_back(cp::field_ref(left_ids[i]));
        project->names.push_back(ctx_.NewId(names[i]));
      }
      left_ids = project->names;
      plan = std::move(project);
    }
    out_ids = left_ids;
    cardinality = left_card;
  }
  std::vector<std::string> out_names = names;
  if (select.contains(kValuesUnion) && !select.contains(kValuesUnionInner)) {
    // VALUES rows in the order written: sorted by their numbers, which then go.
    if (out_names.empty() || out_names.back() != kValuesRow) {
      return arrow::Status::Invalid("internal: VALUES rows without their numbers");
    }
    auto sort = plan::MakeNode(PlanNode::Kind::kSort, std::move(plan));
    sort->sort_keys.emplace_back(arrow::FieldRef(out_ids.back()), cp::SortOrder::Ascending);
    out_ids.pop_back();
    out_names.pop_back();
    auto project = plan::MakeNode(PlanNode::Kind::kProject, std::move(sort));
    for (size_t i = 0; i < out_ids.size(); ++i) {
      project->expressions.push_back(cp::field_ref(out_ids[i]));
      project->names.push_back(ctx_.NewId(out_names[i]));
    }
    out_ids = project->names;
    plan = std::move(project);
  }
  ARROW_ASSIGN_OR_RAISE(
      plan, OrderAndLimit(select, std::move(plan), out_names, out_ids, top, Scope::kRow, nullptr,
                          "ORDER BY on a UNION, INTERSECT or EXCEPT result must "
                          "name one of its columns or their positions"));
  Relation out;
  out.plan = std::move(plan);
  ARROW_ASSIGN_OR_RAISE(auto schema, OutputSchema(*out.plan));
  for (size_t i = 0; i < out_ids.size(); ++i) {
    auto field = schema->GetFieldByName(out_ids[i]);
    if (field == nullptr)
      return arrow::Status::Invalid("internal: set operation output ", out_ids[i]);
    out.columns.push_back({"", out_names[i], field});
  }
  out.cardinality = std::move(cardinality);
  output_names_ = out_names;
  return out;
}

arrow::Result<Relation> Binder::Bind(const json& select, Purpose purpose) {
  const bool top = parent_ == nullptr && cte_parent_ == nullptr;
  if (select.contains("windowClause")) {
    ARROW_ASSIGN_OR_RAISE(
        json resolved,
        WithNamedWindows(select, [this](const json& node, const std::string& message) {
          return Error(node, message);
        }));
    synthesized_.push_back(std::move(resolved));
    return Bind(synthesized_.back(), purpose);
  }
  if (select.contains("valuesLists")) {
    ARROW_ASSIGN_OR_RAISE(json as_union, ValuesAsUnion(select));
    synthesized_.push_back(std::move(as_union));
    return Bind(synthesized_.back(), purpose);
  }
  if (select.contains("intoClause")) return Unsupported(select, "SELECT INTO");
  if (select.contains("withClause")) {
    const auto& with = select.at("withClause");
    if (with.value("recursive", false)) return Unsupported(with, "WITH RECURSIVE");
    for (const auto& cte : with.at("ctes")) {
      const auto& c = cte.at("CommonTableExpr");
      if (!c.at("ctequery").contains("SelectStmt"))
        return Unsupported(c, "a CTE that is not a SELECT");
      ctes_[c.value("ctename", "")] = &c;
    }
  }
  if (select.value("op", "SETOP_NONE") != "SETOP_NONE") {
    if (purpose != Purpose::kQuery) {
      return Unsupported(select, "UNION, INTERSECT or EXCEPT in an EXISTS or scalar subquery");
    }
    return BindSetOperation(select, top);
  }
  const auto& from = ListMember(select, "fromClause");
  FromItems items;
  for (const auto& item : from) ARROW_RETURN_NOT_OK(BindFrom(item, &items));
  // SELECT without FROM (`select 1`, `select 'a' || 'b'`) reads one row of no columns.
  if (from.empty()) items.relations.push_back(ConstantRow());

  const auto& targets = ListMember(select, "targetList");
  const bool aggregated = select.contains("groupClause") || select.contains("havingClause") ||
                          ContainsAggregate(targets, ctx_.functions);
  const Scope out_scope = aggregated ? Scope::kAggregated : Scope::kRow;
  aggregated_ = aggregated;

  // WHERE, with the ON conditions of inner joins.
  std::vector<cp::Expression> conditions;
  {
    std::vector<const json*> parts;
    for (const json* c : items.conditions) SplitAnd(*c, &parts);
    if (select.contains("whereClause")) SplitAnd(select.at("whereClause"), &parts);
    for (const json* p : parts) ARROW_RETURN_NOT_OK(BindWhereCondition(*p, &conditions));
  }

  if (purpose == Purpose::kExists) {
    if (aggregated || select.contains("limitCount")) {
      return Unsupported(select, "EXISTS over a grouped or limited subquery");
    }
  }
  if (purpose == Purpose::kScalar) {
    if (!aggregated || select.contains("groupClause") || targets.size() != 1 ||
        select.contains("limitCount") || select.contains("distinctClause")) {
      return Unsupported(select,
                         "a scalar subquery that is not one ungrouped aggregate (it could "
                         "return more than one row)");
    }
    const std::set<std::string> own = OwnColumns();
    for (const auto& c : correlated_) {
      if (auto key = InnerOuterEquality(c, own)) {
        // The decorrelate pass groups by the inner column and joins on it.
        correlation_outer_.push_back(key->second);
        continue;
      }
      return Unsupported(select,
                         "a correlated condition other than column = outer column in a scalar "
                         "subquery");
    }
    if (!correlated_.empty() && targets.dump().find("\"sval\":\"count\"") != std::string::npos) {
      // An outer row with no group gets NULL from the left join; count must say 0 instead,
      // which is known only when the whole result is one count.
      auto [tkind, tbody] = Node(targets.at(0).at("ResTarget").at("val"));
      if (tkind != "FuncCall" || LastName(tbody->at("funcname")) != "count") {
        return Unsupported(select,
                           "a correlated scalar subquery with count() inside an expression");
      }
      count_result_ = true;
    }
  }

  // GROUP BY: columns, select-list positions or names, or expressions, each a key once; with
  // GROUPING SETS, ROLLUP or CUBE, the sets of keys the query groups on, one after another.
  auto bind_key = [&](const json& g) -> arrow::Result<size_t> {
    auto [gkind, gbody] = Node(g);
    const json* expr = &g;
    if (gkind == "A_Const" && gbody->contains("ival")) {
      ARROW_ASSIGN_OR_RAISE(const int64_t pos, IntConstant(*gbody));
      if (pos < 1 || pos > static_cast<int>(targets.size())) {
        return Error(*gbody, "GROUP BY position " + std::to_string(pos) + " is not in select list");
      }
      expr = &targets.at(static_cast<size_t>(pos - 1)).at("ResTarget").at("val");
    } else if (gkind == "ColumnRef" && gbody->at("fields").size() == 1 &&
               gbody->at("fields").at(0).contains("String")) {
      const std::string name = gbody->at("fields").at(0).at("String").value("sval", "");
      ARROW_ASSIGN_OR_RAISE(const ColumnInfo* c, Lookup({name}, *gbody));
      if (c == nullptr) {
        for (const auto& t : targets) {
          if (t.at("ResTarget").value("name", "") == name) expr = &t.at("ResTarget").at("val");
        }
      }
    }
    auto index_of = [&](const std::string& id) {
      return static_cast<size_t>(std::find(group_keys_.begin(), group_keys_.end(), id) -
                                 group_keys_.begin());
    };
    auto [ekind, ebody] = Node(*expr);
    if (ekind == "ColumnRef") {
      ARROW_ASSIGN_OR_RAISE(auto c, Column(*ebody, Scope::kRow));
      const std::string id = *c.field_ref()->name();
      if (index_of(id) == group_keys_.size()) {
        group_keys_.push_back(id);
        group_exprs_.push_back(c);
      }
      return index_of(id);
    }
    if (ContainsAggregate(*expr, ctx_.functions)) {
      return Error(*expr, "aggregate functions are not allowed in GROUP BY");
    }
    const std::string text = WithoutLocations(*expr).dump();
    for (const auto& [group_text, id] : group_by_text_) {
      if (group_text == text) return index_of(id);
    }
    ARROW_ASSIGN_OR_RAISE(auto e, Expr(*expr, Scope::kRow));
    ARROW_ASSIGN_OR_RAISE(e, Typecheck(e, *expr, RowSchema()));
    const std::string id = ctx_.NewId("group");
    group_keys_.push_back(id);
    group_exprs_.push_back(e);
    group_by_text_.emplace_back(text, id);
    return group_keys_.size() - 1;
  };
  using KeySets = std::vector<std::vector<size_t>>;
  bool grouping_sets = false;
  // The keys of one element of ROLLUP, CUBE or GROUPING SETS: an expression or a (row).
  auto element_keys = [&](const json& e) -> arrow::Result<std::vector<size_t>> {
    auto [kind, body] = Node(e);
    std::vector<size_t> keys;
    const json* items = nullptr;
    if (kind == "RowExpr") items = &body->at("args");
    if (kind == "GroupingSet" && body->value("kind", "") == "GROUPING_SET_SIMPLE") {
      items = &body->at("content");
    }
    if (items == nullptr) {
      ARROW_ASSIGN_OR_RAISE(size_t k, bind_key(e));
      return std::vector<size_t>{k};
    }
    for (const auto& item : *items) {
      ARROW_ASSIGN_OR_RAISE(size_t k, bind_key(item));
      keys.push_back(k);
    }
    return keys;
  };
  std::function<arrow::Result<KeySets>(const json&)> sets_of =
      [&](const json& g) -> arrow::Result<KeySets> {
    auto [kind, body] = Node(g);
    if (kind != "GroupingSet") {
      ARROW_ASSIGN_OR_RAISE(auto keys, element_keys(g));
      return KeySets{keys};
    }
    grouping_sets = true;
    const std::string set_kind = body->value("kind", "");
    const json& content = ListMember(*body, "content");
    if (set_kind == "GROUPING_SET_EMPTY") return KeySets{{}};
    if (set_kind == "GROUPING_SET_SIMPLE") {
      ARROW_ASSIGN_OR_RAISE(auto keys, element_keys(g));
      return KeySets{keys};
    }
    if (set_kind == "GROUPING_SET_SETS") {
      KeySets out;
      for (const auto& item : content) {
        ARROW_ASSIGN_OR_RAISE(KeySets inner, sets_of(item));
        out.insert(out.end(), inner.begin(), inner.end());
      }
      return out;
    }
    std::vector<std::vector<size_t>> elements;
    for (const auto& item : content) {
      ARROW_ASSIGN_OR_RAISE(auto keys, element_keys(item));
      elements.push_back(std::move(keys));
    }
    KeySets out;
    if (set_kind == "GROUPING_SET_ROLLUP") {
      // (a, b, c), (a, b), (a), ().
      for (size_t n = elements.size() + 1; n-- > 0;) {
        std::vector<size_t> keys;
        for (size_t i = 0; i < n; ++i)
          keys.insert(keys.end(), elements[i].begin(), elements[i].end());
        out.push_back(std::move(keys));
      }
      return out;
    }
    if (set_kind == "GROUPING_SET_CUBE") {
      if (elements.size() > 12) return Unsupported(g, "CUBE of more than 12 elements");
      // Every subset, the whole first.
      const size_t n = elements.size();
      for (size_t mask = (size_t{1} << n); mask-- > 0;) {
        std::vector<size_t> keys;
        for (size_t i = 0; i < n; ++i) {
          if (mask & (size_t{1} << (n - 1 - i))) {
            keys.insert(keys.end(), elements[i].begin(), elements[i].end());
          }
        }
        out.push_back(std::move(keys));
      }
      return out;
    }
    return Unsupported(g, "grouping set kind " + set_kind);
  };
  KeySets key_sets = {{}};
  for (const auto& g : ListMember(select, "groupClause")) {
    ARROW_ASSIGN_OR_RAISE(KeySets item, sets_of(g));
    // GROUP BY a, ROLLUP(b): every combination of one set of each item.
    KeySets combined;
    for (const auto& left : key_sets) {
      for (const auto& right : item) {
        std::vector<size_t> keys = left;
        for (size_t k : right) {
          if (std::find(keys.begin(), keys.end(), k) == keys.end()) keys.push_back(k);
        }
        combined.push_back(std::move(keys));
      }
    }
    key_sets = std::move(combined);
    if (key_sets.size() > 4096) return Unsupported(g, "more than 4096 grouping sets");
  }
  if (grouping_sets) {
    if (!correlated_.empty()) {
      return Unsupported(select,
                         "GROUPING SETS, ROLLUP or CUBE in a subquery that reads the "
                         "outer query");
    }
    grouping_sets_ = std::move(key_sets);
    grouping_id_ = ctx_.NewId("grouping_id");
    aggregate_fields_.push_back(arrow::field(grouping_id_, arrow::int64()));
  }

  // Select list.
  std::vector<cp::Expression> outputs;
  std::vector<std::string> names;
  if (purpose != Purpose::kExists) {
    for (const auto& t : targets) {
      const auto& rt = t.at("ResTarget");
      auto [vkind, vbody] = Node(rt.at("val"));
      if (vkind == "ColumnRef" && vbody->at("fields").back().contains("A_Star")) {
        if (aggregated) return Unsupported(*vbody, "* with GROUP BY");
        if (from.empty()) return Error(*vbody, "SELECT * with no tables specified is not valid");
        const auto& fields = vbody->at("fields");
        const std::string qualifier =
            fields.size() == 2 ? fields.at(0).at("String").value("sval", "") : "";
        if (!qualifier.empty() && !KnowsQualifier(qualifier)) {
          return Error(*vbody, "missing FROM-clause entry for table \"" + qualifier + "\"");
        }
        std::vector<const ColumnInfo*> listed;
        for (const auto& c : columns_) {
          if (!qualifier.empty() && c.qualifier != qualifier) continue;
          if (qualifier.empty() && c.merged_away) continue;
          listed.push_back(&c);
        }
        if (!qualifier.empty()) {
          std::stable_sort(
              listed.begin(), listed.end(),
              [](const ColumnInfo* a, const ColumnInfo* b) { return a->ordinal < b->ordinal; });
        }
        for (const ColumnInfo* c : listed) {
          outputs.push_back(cp::field_ref(c->id()));
          names.push_back(c->name);
        }
        continue;
      }
      windows_allowed_ = true;
      auto bound = Expr(rt.at("val"), out_scope);
      windows_allowed_ = false;
      ARROW_ASSIGN_OR_RAISE(auto e, std::move(bound));
      if (out_scope == Scope::kRow) {
        ARROW_ASSIGN_OR_RAISE(e, Typecheck(e, rt.at("val"), RowSchema()));
      }
      std::string name = rt.value("name", "");
      if (name.empty()) {
        if (vkind == "ColumnRef") {
          name = LastName(vbody->at("fields"));
        } else if (vkind == "FuncCall") {
          name = LastName(vbody->at("funcname"));
        } else {
          name = "?column?";
        }
      }
      outputs.push_back(e);
      names.push_back(name);
    }
  }
  cp::Expression having = cp::literal(true);
  if (select.contains("havingClause")) {
    ARROW_ASSIGN_OR_RAISE(having, Expr(select.at("havingClause"), Scope::kAggregated));
  }
  // An aggregate only ORDER BY names (ORDER BY sum(x)) joins the aggregate step now, before it
  // is planned; OrderAndLimit binds the same expression again and finds it.
  if (aggregated && select.contains("sortClause") &&
      (top || select.contains("limitCount") || select.contains("limitOffset"))) {
    for (const auto& s : select.at("sortClause")) {
      const json& node = s.at("SortBy").at("node");
      if (!ContainsAggregate(json::array({node}), ctx_.functions)) continue;
      ARROW_RETURN_NOT_OK(Expr(node, Scope::kAggregated).status());
    }
  }
  if (outer_refs_ != correlated_refs_) {
    return Unsupported(select, "a correlated reference outside the subquery's WHERE clause");
  }

  // The logical plan, bottom-up: the FROM items as one join set, the joins to the WHERE
  // clause's subqueries (semi joins first: they only drop rows), then WHERE with the ON
  // conditions of inner joins. The join_order pass orders the set and splits WHERE between the
  // joins' keys and a Filter, which the filter_pushdown pass moves down. The conditions on the
  // outer query get a Filter of their own, which the decorrelate pass takes apart.
  auto joins = std::make_shared<plan::JoinSetResult>();
  std::unique_ptr<PlanNode> plan = JoinSet(std::move(items.relations), joins);
  plan = Stack(std::move(plan), &semi_joins_);
  plan = Stack(std::move(plan), &row_scalars_);
  plan = LevelFilter(std::move(plan), conditions);
  plan = WithFilter(std::move(plan), correlated_);
  if (purpose == Purpose::kExists) {
    Relation out;
    out.plan = std::move(plan);
    out.columns = columns_;
    out.cardinality = [joins]() -> arrow::Result<plan::Cardinality> {
      ARROW_ASSIGN_OR_RAISE(const plan::JoinSetResult* ordered, Ordered(*joins));
      plan::Cardinality c;
      c.rows = ordered->joined.rows;
      c.estimate = ordered->filtered;
      return c;
    };
    return out;
  }

  if (aggregated) {
    // count(DISTINCT x) beside other aggregates: the partial step groups by x too (with the
    // other aggregates' partials per (keys, x)), and the final step counts x's distinct values
    // while it merges the rest, which stays right when several workers send one x.
    // Several distinct inputs, or a distinct sum, take DistinctAggregates instead.
    std::string distinct_input;
    bool expand = false;
    if (has_distinct_aggregate_) {
      std::set<std::string> distinct_inputs;
      for (const auto& a : final_) {
        if (IsDistinctStep(a.function)) distinct_inputs.insert(a.input);
        expand |= a.function == kSumDistinct;
      }
      expand |= distinct_inputs.size() > 1;
      if (!expand) distinct_input = *distinct_inputs.begin();
    }
    auto pre = std::make_unique<PlanNode>();
    pre->kind = PlanNode::Kind::kProject;
    for (size_t i = 0; i < group_keys_.size(); ++i) {
      pre->expressions.push_back(group_exprs_[i]);
      pre->names.push_back(group_keys_[i]);
    }
    for (size_t i = 0; i < agg_inputs_.size(); ++i) {
      pre->expressions.push_back(agg_inputs_[i]);
      pre->names.push_back(agg_input_names_[i]);
    }
    // count(*) alone: Acero needs a column to count rows of (a correlated subquery's keys
    // will be there).
    if (pre->expressions.empty() && correlated_.empty()) {
      pre->expressions.push_back(cp::literal(true));
      pre->names.push_back(ctx_.NewId("row"));
    }
    pre->input = std::move(plan);
    auto aggregate_on = [&](std::unique_ptr<PlanNode> input, const std::vector<std::string>& keys) {
      auto partial = plan::MakeNode(PlanNode::Kind::kAggregate, std::move(input));
      partial->keys = keys;
      if (!distinct_input.empty()) partial->keys.push_back(distinct_input);
      partial->aggregates = partial_;
      auto final_agg = plan::MakeNode(PlanNode::Kind::kAggregate, std::move(partial));
      final_agg->final_phase = true;
      final_agg->keys = keys;
      final_agg->aggregates = final_;
      return final_agg;
    };
    if (expand && !correlated_.empty()) {
      return Unsupported(select,
                         "DISTINCT aggregates over several expressions, or sum or avg of "
                         "DISTINCT values, in a correlated subquery");
    }
    if (expand && grouping_sets_.empty()) {
      ARROW_ASSIGN_OR_RAISE(plan, DistinctAggregates(select, std::move(pre), group_keys_));
    } else if (grouping_sets_.empty()) {
      plan = aggregate_on(std::move(pre), group_keys_);
    } else {
      // One aggregate per grouping, its missing keys NULL; their union under the keys' and
      // aggregates' names, with the grouping's id. Where every final step is a sum, min or max
      // (no DISTINCT, no library aggregate), each grouping regroups the finest grouping's rows
      // (all the keys) by its own keys with the same functions: that finest aggregate is the
      // same subplan in every grouping, which the executor runs once (exec/shared_subplans.h),
      // so the rows are read and joined once rather than once per grouping (TPC-DS q22's
      // ROLLUP of four keys, q67's of eight). Otherwise each grouping aggregates its own copy
      // of the rows.
      ARROW_ASSIGN_OR_RAISE(auto pre_schema, OutputSchema(*pre));
      const bool regroup =
          distinct_input.empty() && std::all_of(final_.begin(), final_.end(), [](const auto& f) {
            return f.function == "sum" || f.function == "min" || f.function == "max";
          });
      // Counts: a grouping with no keys over no rows counts 0, where a regrouped sum is NULL.
      const std::set<std::string> counts = MergedCounts();
      std::vector<std::unique_ptr<PlanNode>> inputs;
      for (size_t i = 0; i + 1 < grouping_sets_.size(); ++i) inputs.push_back(plan::CopyPlan(*pre));
      inputs.push_back(std::move(pre));
      std::unique_ptr<PlanNode> all;
      for (size_t i = 0; i < grouping_sets_.size(); ++i) {
        const auto& set = grouping_sets_[i];
        std::vector<std::string> keys;
        int64_t id = 0;
        for (size_t k = 0; k < group_keys_.size(); ++k) {
          if (std::find(set.begin(), set.end(), k) != set.end()) {
            keys.push_back(group_keys_[k]);
          } else {
            id |= int64_t{1} << k;
          }
        }
        std::unique_ptr<PlanNode> grouped;
        std::vector<std::string> outputs;  // the aggregates' columns, in final_'s order
        // The finest grouping is the shared aggregate itself: its rows are already one per
        // key, so regrouping them (q67: 342K rows by eight keys, five of them strings) would
        // only hash them again.
        const bool finest = std::all_of(group_keys_.begin(), group_keys_.end(), [&](const auto& k) {
          return std::find(keys.begin(), keys.end(), k) != keys.end();
        });
        if (regroup && finest) {
          grouped = aggregate_on(std::move(inputs[i]), group_keys_);
          for (const auto& f : final_) outputs.push_back(f.output);
        } else if (regroup) {
          auto partial = plan::MakeNode(PlanNode::Kind::kAggregate,
                                        aggregate_on(std::move(inputs[i]), group_keys_));
          partial->keys = keys;
          auto final_agg = plan::MakeNode(PlanNode::Kind::kAggregate);
          final_agg->final_phase = true;
          final_agg->keys = keys;
          for (const auto& f : final_) {
            const std::string step = ctx_.NewId(f.output), out = ctx_.NewId(f.output);
            partial->aggregates.push_back({f.function, f.output, step});
            final_agg->aggregates.push_back({f.function, step, out});
            outputs.push_back(out);
          }
          final_agg->input = std::move(partial);
          grouped = std::move(final_agg);
        } else if (expand) {
          ARROW_ASSIGN_OR_RAISE(grouped, DistinctAggregates(select, std::move(inputs[i]), keys));
          for (const auto& f : final_) outputs.push_back(f.output);
        } else {
          grouped = aggregate_on(std::move(inputs[i]), keys);
          for (const auto& f : final_) outputs.push_back(f.output);
        }
        auto project = plan::MakeNode(PlanNode::Kind::kProject, std::move(grouped));
        for (const auto& k : group_keys_) {
          if (std::find(keys.begin(), keys.end(), k) != keys.end()) {
            project->expressions.push_back(cp::field_ref(k));
          } else {
            project->expressions.push_back(
                cp::literal(arrow::MakeNullScalar(pre_schema->GetFieldByName(k)->type())));
          }
          project->names.push_back(ctx_.NewId(k));
        }
        for (size_t a = 0; a < final_.size(); ++a) {
          cp::Expression value = cp::field_ref(outputs[a]);
          if (regroup && keys.empty() && counts.count(final_[a].output)) {
            value = cp::call("coalesce", {value, cp::literal(int64_t{0})});
          }
          project->expressions.push_back(std::move(value));
          project->names.push_back(ctx_.NewId(final_[a].output));
        }
        project->expressions.push_back(cp::literal(id));
        project->names.push_back(ctx_.NewId(grouping_id_));
        if (all == nullptr) {
          all = std::move(project);
          continue;
        }
        auto u = plan::MakeNode(PlanNode::Kind::kUnion, std::move(all));
        for (const auto& n : project->names) u->names.push_back(ctx_.NewId(n));
        u->right = std::move(project);
        all = std::move(u);
      }
      if (all->kind != PlanNode::Kind::kUnion) {
        // One grouping: the projection already has every column, under new names.
        auto u = plan::MakeNode(PlanNode::Kind::kProject, std::move(all));
        std::vector<std::string> names = u->input->names;
        for (const auto& n : names) u->expressions.push_back(cp::field_ref(n));
        all = std::move(u);
      }
      all->names = group_keys_;
      for (const auto& a : final_) all->names.push_back(a.output);
      all->names.push_back(grouping_id_);
      plan = std::move(all);
    }
    plan = Stack(std::move(plan), &having_scalars_);
    if (!having.Equals(cp::literal(true))) plan = WithFilter(std::move(plan), {having});
  }

  // Window functions, over the rows after aggregation and HAVING.
  if (!windows_.empty()) {
    if (!window_inputs_.empty()) {
      auto inputs = plan::MakeNode(PlanNode::Kind::kProject, std::move(plan));
      inputs->keep_input = true;
      inputs->expressions = window_inputs_;
      inputs->names = window_input_names_;
      plan = std::move(inputs);
    }
    auto window = plan::MakeNode(PlanNode::Kind::kWindow, std::move(plan));
    window->windows = windows_;
    plan = std::move(window);
  }

  // The select list, under fresh plan names, then hidden sort keys after it.
  auto project = std::make_unique<PlanNode>();
  project->kind = PlanNode::Kind::kProject;
  std::vector<std::string> out_ids;
  for (size_t i = 0; i < outputs.size(); ++i) {
    out_ids.push_back(ctx_.NewId(names[i]));
    project->expressions.push_back(outputs[i]);
    project->names.push_back(out_ids.back());
  }
  project->input = std::move(plan);
  plan = std::move(project);

  const bool distinct = select.contains("distinctClause");
  if (distinct) {
    for (const auto& d : select.at("distinctClause")) {
      if (!d.empty()) return Unsupported(select.at("distinctClause"), "DISTINCT ON");
    }
    for (bool final_phase : {false, true}) {
      auto agg = std::make_unique<PlanNode>();
      agg->kind = PlanNode::Kind::kAggregate;
      agg->final_phase = final_phase;
      agg->keys = out_ids;
      agg->input = std::move(plan);
      plan = std::move(agg);
    }
  }

  PlanNode* main = distinct ? nullptr : plan.get();
  ARROW_ASSIGN_OR_RAISE(
      plan, OrderAndLimit(select, std::move(plan), names, out_ids, top, out_scope, main,
                          "for SELECT DISTINCT, ORDER BY expressions must appear in select list"));

  Relation out;
  out.plan = std::move(plan);
  ARROW_ASSIGN_OR_RAISE(auto schema, OutputSchema(*out.plan));
  for (size_t i = 0; i < out_ids.size(); ++i) {
    auto field = schema->GetFieldByName(out_ids[i]);
    if (field == nullptr) return arrow::Status::Invalid("internal: output ", out_ids[i]);
    out.columns.push_back({"", names[i], field});
  }
  // A correlated subquery is grouped by its keys (the decorrelate pass adds them).
  const bool one_row = aggregated && group_keys_.empty() && correlated_.empty();
  const bool having_filter = aggregated && !having.Equals(cp::literal(true));
  out.cardinality = [joins, one_row, having_filter]() -> arrow::Result<plan::Cardinality> {
    ARROW_ASSIGN_OR_RAISE(const plan::JoinSetResult* ordered, Ordered(*joins));
    plan::Cardinality c;
    c.rows = one_row ? 1 : ordered->joined.rows;
    c.estimate = one_row ? 1 : ordered->filtered;
    if (having_filter) c.estimate = HavingEstimate(c.estimate);
    return c;
  };
  output_names_ = names;
  return out;
}

}  // namespace

arrow::Result<BoundQuery> BindLogical(const json& select, const std::string& sql,
                                      const TableResolver& resolve,
                                      const FunctionResolver& functions) {
  // Type checking binds compute expressions, which needs Arrow's kernels registered.
  ARROW_RETURN_NOT_OK(plan::EnsureComputeInitialized());
  Context ctx{sql, resolve, functions, 0, {}};
  Binder binder(ctx, nullptr, nullptr);
  // The binder reads libpg_query's tree by its documented shapes; a shape it does not expect
  // (nlohmann throws on those) is a construct it does not support, not a crash.
  try {
    ARROW_ASSIGN_OR_RAISE(Relation r, binder.Bind(select, Purpose::kQuery));
    return BoundQuery{std::move(r.plan), binder.output_names(),
                      std::vector<std::string>(ctx.libraries.begin(), ctx.libraries.end())};
  } catch (const std::exception& e) {
    return arrow::Status::NotImplemented(
        "not supported: a query construct the binder does not handle (", e.what(), ")");
  }
}

arrow::Result<BoundQuery> BindSelect(const json& select, const std::string& sql,
                                     const TableResolver& resolve,
                                     const FunctionResolver& functions) {
  ARROW_ASSIGN_OR_RAISE(BoundQuery bound, BindLogical(select, sql, resolve, functions));
  ARROW_RETURN_NOT_OK(Optimize(bound.plan.get(), DefaultPasses()));
  return bound;
}

}  // namespace sluice::sql
