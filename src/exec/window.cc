#include "exec/window.h"

#include <arrow/api.h>
#include <arrow/buffer_builder.h>
#include <arrow/compute/api.h>
#include <arrow/util/decimal.h>

#include <algorithm>
#include <deque>
#include <map>
#include <optional>
#include <set>
#include <string>

#include "exec/window_order.h"
#include "plan/exact_sum.h"
#include "plan/library_functions.h"

namespace sluice::exec {

namespace {

namespace cp = arrow::compute;
using plan::WindowCall;
using plan::WindowFrame;
using ArrayPtr = std::shared_ptr<arrow::Array>;

using Layout = WindowLayout;

arrow::Result<ArrayPtr> Take(const ArrayPtr& values, const ArrayPtr& indices) {
  ARROW_ASSIGN_OR_RAISE(arrow::Datum out, cp::Take(values, indices));
  return out.make_array();
}

// Marks each row (from the second) that differs from the one before it on `column`, NULL equal
// to NULL.
arrow::Status MarkChanges(const ArrayPtr& column, const std::string& name,
                          std::vector<uint8_t>* changed) {
  const int64_t n = column->length();
  if (n < 2) return arrow::Status::OK();
  const ArrayPtr a = column->Slice(1), b = column->Slice(0, n - 1);
  auto differs = [&]() -> arrow::Result<arrow::Datum> {
    ARROW_ASSIGN_OR_RAISE(auto ne, cp::CallFunction("not_equal", {a, b}));
    if (arrow::is_floating(column->type_id())) {  // NaN is NaN's peer, as SQL groups them
      ARROW_ASSIGN_OR_RAISE(auto nan_a, cp::CallFunction("is_nan", {a}));
      ARROW_ASSIGN_OR_RAISE(auto nan_b, cp::CallFunction("is_nan", {b}));
      ARROW_ASSIGN_OR_RAISE(auto both_nan, cp::CallFunction("and", {nan_a, nan_b}));
      ARROW_ASSIGN_OR_RAISE(ne, cp::CallFunction("and_not", {ne, both_nan}));
    }
    ARROW_ASSIGN_OR_RAISE(auto va, cp::CallFunction("is_valid", {a}));
    ARROW_ASSIGN_OR_RAISE(auto vb, cp::CallFunction("is_valid", {b}));
    ARROW_ASSIGN_OR_RAISE(auto both, cp::CallFunction("and", {va, vb}));
    ARROW_ASSIGN_OR_RAISE(auto one, cp::CallFunction("not_equal", {va, vb}));
    return cp::CallFunction("if_else", {both, ne, one});
  }();
  if (!differs.ok()) {
    return arrow::Status::TypeError("window: cannot compare values of column ", name, " (",
                                    column->type()->ToString(), "): ", differs.status().message());
  }
  const auto array = differs->make_array();  // owns what `bits` reads
  const auto& bits = static_cast<const arrow::BooleanArray&>(*array);
  for (int64_t i = 0; i + 1 < n; ++i) {
    if (bits.IsValid(i) && bits.Value(i)) (*changed)[static_cast<size_t>(i + 1)] = 1;
  }
  return arrow::Status::OK();
}

arrow::Result<Layout> MakeLayout(const arrow::RecordBatch& sorted, const WindowCall& call) {
  const auto n = static_cast<size_t>(sorted.num_rows());
  std::vector<uint8_t> new_part(n, 0), new_peer(n, 0);
  if (n > 0) new_part[0] = new_peer[0] = 1;
  for (const auto& k : call.partition_keys) {
    ARROW_RETURN_NOT_OK(MarkChanges(sorted.GetColumnByName(k), k, &new_part));
  }
  new_peer = new_part;
  for (const auto& k : call.order_keys) {
    ARROW_RETURN_NOT_OK(
        MarkChanges(sorted.GetColumnByName(*k.target.name()), *k.target.name(), &new_peer));
  }
  return LayoutFromMarks(new_part, new_peer);
}

// Row i's frame as [*lo, *hi], clamped to its partition; empty where *lo > *hi.
void FrameOf(const WindowFrame& f, const Layout& l, int64_t i, int64_t* lo, int64_t* hi) {
  using B = WindowFrame::Bound;
  const int64_t pb = l.part_begin[static_cast<size_t>(i)];
  const int64_t pe = l.part_end[static_cast<size_t>(i)];
  const bool rows = f.unit == WindowFrame::Unit::kRows;
  // Offsets saturate at the partition's ends (an offset may be as large as int64 allows).
  auto back = [&](int64_t off) { return off > i - pb ? pb - 1 : i - off; };
  auto ahead = [&](int64_t off) { return off >= pe - i ? pe : i + off; };
  // Where a bound falls: for the frame's start the first row in, for its end the last.
  auto at = [&](B bound, int64_t off, bool start) -> int64_t {
    switch (bound) {
      case B::kUnboundedPreceding:
        return start ? pb : pb - 1;
      case B::kPreceding:
        return back(off);
      case B::kCurrentRow:
        if (rows) return i;
        return start ? l.peer_begin[static_cast<size_t>(i)]
                     : l.peer_end[static_cast<size_t>(i)] - 1;
      case B::kFollowing:
        return ahead(off);
      case B::kUnboundedFollowing:
        return start ? pe : pe - 1;
    }
    return pe;
  };
  *lo = at(f.start, f.start_offset, true);
  *hi = at(f.end, f.end_offset, false);
  *lo = std::max(*lo, pb);
  *hi = std::min(*hi, pe - 1);
}

arrow::Result<ArrayPtr> Int64s(const std::vector<int64_t>& values) {
  arrow::Int64Builder b;
  ARROW_RETURN_NOT_OK(b.AppendValues(values));
  return b.Finish();
}

arrow::Result<ArrayPtr> Doubles(const std::vector<double>& values) {
  arrow::DoubleBuilder b;
  ARROW_RETURN_NOT_OK(b.AppendValues(values));
  return b.Finish();
}

// Positions into the sorted value per row, -1 for none (a NULL result).
arrow::Result<ArrayPtr> Positions(const std::vector<int64_t>& at) {
  arrow::Int64Builder b;
  ARROW_RETURN_NOT_OK(b.Reserve(static_cast<int64_t>(at.size())));
  for (int64_t p : at) {
    if (p < 0) {
      b.UnsafeAppendNull();
    } else {
      b.UnsafeAppend(p);
    }
  }
  return b.Finish();
}

arrow::Result<ArrayPtr> Ranking(const WindowCall& call, const Layout& l, int64_t n) {
  const std::string& f = call.function;
  if (f == "percent_rank" || f == "cume_dist") {
    std::vector<double> out(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) {
      const auto s = static_cast<size_t>(i);
      const double rows = static_cast<double>(l.part_end[s] - l.part_begin[s]);
      if (f == "cume_dist") {
        out[s] = static_cast<double>(l.peer_end[s] - l.part_begin[s]) / rows;
      } else {
        out[s] = rows > 1 ? static_cast<double>(l.peer_begin[s] - l.part_begin[s]) / (rows - 1) : 0;
      }
    }
    return Doubles(out);
  }
  std::vector<int64_t> out(static_cast<size_t>(n));
  int64_t dense = 0;
  for (int64_t i = 0; i < n; ++i) {
    const auto s = static_cast<size_t>(i);
    const int64_t pb = l.part_begin[s];
    if (f == "row_number") {
      out[s] = i - pb + 1;
    } else if (f == "rank") {
      out[s] = l.peer_begin[s] - pb + 1;
    } else if (f == "dense_rank") {
      if (i == pb) dense = 0;
      if (l.peer_begin[s] == i) ++dense;
      out[s] = dense;
    } else {  // ntile, as PostgreSQL deals rows: the first (rows % n) buckets get one more
      const int64_t rows = l.part_end[s] - pb, buckets = call.parameter;
      const int64_t per = rows / buckets, extra = rows % buckets, r = i - pb;
      const int64_t big = extra * (per + 1);
      out[s] = 1 + (r < big ? r / (per + 1) : extra + (r - big) / std::max<int64_t>(per, 1));
    }
  }
  return Int64s(out);
}

// lag, lead, first_value, last_value, nth_value: a value taken from another row.
arrow::Result<ArrayPtr> Shifted(const WindowCall& call, const Layout& l,
                                const std::vector<ArrayPtr>& args) {
  const int64_t n = args[0]->length();
  std::vector<int64_t> at(static_cast<size_t>(n), -1);
  const std::string& f = call.function;
  for (int64_t i = 0; i < n; ++i) {
    const auto s = static_cast<size_t>(i);
    if (f == "lag" || f == "lead") {
      const int64_t k = f == "lag" ? -call.parameter : call.parameter;
      const int64_t j = i + k;
      if (j >= l.part_begin[s] && j < l.part_end[s]) at[s] = j;
      continue;
    }
    int64_t lo, hi;
    FrameOf(call.frame, l, i, &lo, &hi);
    if (lo > hi) continue;
    if (f == "first_value") {
      at[s] = lo;
    } else if (f == "last_value") {
      at[s] = hi;
    } else if (call.parameter >= 1 && call.parameter - 1 <= hi - lo) {
      at[s] = lo + call.parameter - 1;
    }
  }
  ARROW_ASSIGN_OR_RAISE(auto positions, Positions(at));
  ARROW_ASSIGN_OR_RAISE(auto taken, Take(args[0], positions));
  if (args.size() < 2) return taken;
  // lag/lead's default where the offset leaves the partition (not where the value is NULL).
  ARROW_ASSIGN_OR_RAISE(auto outside, cp::CallFunction("is_null", {positions}));
  ARROW_ASSIGN_OR_RAISE(auto out, cp::CallFunction("if_else", {outside, args[1], taken}));
  return out.make_array();
}

// min and max: the frame's least (greatest) value, a sliding extremum (frame ends only move
// forward within a partition). Values compare by their ordinals (window_order.h), or else by
// their positions in the value's own sorted order (strings, say), which costs a sort. Reads
// `value` in the input's order through `indices` (the window's order; null: the same) and
// returns the result in the input's order: one take of the values instead of three.
arrow::Result<ArrayPtr> Extremum(const WindowCall& call, const Layout& l, const ArrayPtr& value,
                                 const ArrayPtr& indices) {
  const int64_t n = value->length();
  const uint64_t* order =
      indices != nullptr ? static_cast<const arrow::UInt64Array&>(*indices).raw_values() : nullptr;
  auto row = [&](int64_t i) { return order != nullptr ? static_cast<int64_t>(order[i]) : i; };
  std::optional<std::vector<uint64_t>> rank = OrderOrdinals(*value);
  if (!rank) {
    ARROW_ASSIGN_OR_RAISE(auto sorted, cp::SortIndices(*value));
    const auto& sorted_values = static_cast<const arrow::UInt64Array&>(*sorted);
    rank.emplace(static_cast<size_t>(n));
    for (int64_t j = 0; j < n; ++j) (*rank)[sorted_values.Value(j)] = static_cast<uint64_t>(j);
  }
  const bool min = call.function == "min";
  // `kept` comes before `added`: of equal values min keeps the first and max the last, as the
  // positions of a stable sort rank them.
  auto worse = [&](int64_t kept, int64_t added) {
    const uint64_t k = (*rank)[static_cast<size_t>(row(kept))];
    const uint64_t a = (*rank)[static_cast<size_t>(row(added))];
    return min ? k > a : k <= a;
  };
  std::vector<int64_t> at(static_cast<size_t>(n), -1);  // by input row
  std::deque<int64_t> best;
  int64_t next = 0;
  for (int64_t i = 0; i < n; ++i) {
    if (l.part_begin[static_cast<size_t>(i)] == i) {
      best.clear();
      next = i;
    }
    int64_t lo, hi;
    FrameOf(call.frame, l, i, &lo, &hi);
    next = std::max(next, lo);
    for (; next <= hi; ++next) {
      if (value->IsNull(row(next))) continue;
      while (!best.empty() && worse(best.back(), next)) best.pop_back();
      best.push_back(next);
    }
    while (!best.empty() && best.front() < lo) best.pop_front();
    if (lo <= hi && !best.empty()) at[static_cast<size_t>(row(i))] = row(best.front());
  }
  ARROW_ASSIGN_OR_RAISE(auto positions, Positions(at));
  return Take(value, positions);
}

// Sums within each partition up to each row; a frame's sum is the difference of two.
template <typename T>
struct Prefix {
  std::vector<T> sums;
  std::vector<int64_t> counts;
};

template <typename T, typename Get>
Prefix<T> PrefixOf(const Layout& l, const arrow::Array& value, Get get) {
  const auto n = static_cast<size_t>(value.length());
  Prefix<T> p;
  p.sums.resize(n);
  p.counts.resize(n);
  for (size_t i = 0; i < n; ++i) {
    const bool first = l.part_begin[i] == static_cast<int64_t>(i);
    T sum = first ? T{} : p.sums[i - 1];
    int64_t count = first ? 0 : p.counts[i - 1];
    if (value.IsValid(static_cast<int64_t>(i))) {
      sum = sum + get(static_cast<int64_t>(i));
      ++count;
    }
    p.sums[i] = sum;
    p.counts[i] = count;
  }
  return p;
}

// The frame's [lo, hi] sum and count of non-NULL values from prefix sums.
template <typename T>
void FrameSum(const Prefix<T>& p, const Layout& l, int64_t lo, int64_t hi, T* sum, int64_t* count) {
  if (lo > hi) {
    *sum = T{};
    *count = 0;
    return;
  }
  const bool from_start = lo == l.part_begin[static_cast<size_t>(lo)];
  *sum = p.sums[static_cast<size_t>(hi)];
  *count = p.counts[static_cast<size_t>(hi)];
  if (!from_start) {
    *sum = *sum - p.sums[static_cast<size_t>(lo - 1)];
    *count -= p.counts[static_cast<size_t>(lo - 1)];
  }
}

arrow::Result<ArrayPtr> Count(const WindowCall& call, const Layout& l, const ArrayPtr& value,
                              int64_t n) {
  std::vector<int64_t> out(static_cast<size_t>(n));
  Prefix<int64_t> p;
  if (value != nullptr) p = PrefixOf<int64_t>(l, *value, [](int64_t) { return int64_t{0}; });
  for (int64_t i = 0; i < n; ++i) {
    int64_t lo, hi;
    FrameOf(call.frame, l, i, &lo, &hi);
    if (value == nullptr) {
      out[static_cast<size_t>(i)] = std::max<int64_t>(0, hi - lo + 1);
    } else {
      int64_t unused;
      FrameSum(p, l, lo, hi, &unused, &out[static_cast<size_t>(i)]);
    }
  }
  return Int64s(out);
}

arrow::Result<ArrayPtr> Sum(const WindowCall& call, const Layout& l, const ArrayPtr& value,
                            const std::shared_ptr<arrow::DataType>& out_type) {
  const int64_t n = value->length();
  const auto id = value->type()->id();
  if (arrow::is_integer(id)) {
    // Prefix sums in 128 bits of the values as they are (a uint64 past 2^63 too): no partial
    // sum overflows, and a frame's that does not fit the result type is an error below.
    const bool is_unsigned = arrow::is_unsigned_integer(id);
    ARROW_ASSIGN_OR_RAISE(arrow::Datum wide,
                          cp::Cast(value, is_unsigned ? arrow::uint64() : arrow::int64()));
    const auto& data = *wide.array();
    const uint64_t* bits = data.GetValues<uint64_t>(1);
    auto p = PrefixOf<__int128>(l, *wide.make_array(), [&](int64_t i) {
      return is_unsigned ? static_cast<__int128>(bits[i])
                         : static_cast<__int128>(static_cast<int64_t>(bits[i]));
    });
    const auto type = is_unsigned ? arrow::uint64() : arrow::int64();
    const __int128 low = is_unsigned ? 0 : std::numeric_limits<int64_t>::min();
    const __int128 high = is_unsigned ? static_cast<__int128>(std::numeric_limits<uint64_t>::max())
                                      : std::numeric_limits<int64_t>::max();
    ARROW_ASSIGN_OR_RAISE(auto values, arrow::AllocateBuffer(n * 8));
    auto* out = reinterpret_cast<uint64_t*>(values->mutable_data());
    arrow::TypedBufferBuilder<bool> valid;
    ARROW_RETURN_NOT_OK(valid.Reserve(n));
    int64_t nulls = 0;
    for (int64_t i = 0; i < n; ++i) {
      int64_t lo, hi, count;
      __int128 sum;
      FrameOf(call.frame, l, i, &lo, &hi);
      FrameSum(p, l, lo, hi, &sum, &count);
      valid.UnsafeAppend(count > 0);
      nulls += count > 0 ? 0 : 1;
      if (count > 0 && (sum < low || sum > high)) {
        return plan::SumOverflow(call.function + " over a window", *type);
      }
      out[i] = count > 0 ? static_cast<uint64_t>(sum) : 0;
    }
    ARROW_ASSIGN_OR_RAISE(auto validity, valid.Finish());
    return arrow::MakeArray(arrow::ArrayData::Make(
        type, n, {nulls > 0 ? validity : nullptr, std::move(values)}, nulls));
  }
  if (id == arrow::Type::DECIMAL128) {
    const auto& dec = static_cast<const arrow::Decimal128Array&>(*value);
    auto p = PrefixOf<arrow::Decimal128>(
        l, dec, [&](int64_t i) { return arrow::Decimal128(dec.GetValue(i)); });
    arrow::Decimal128Builder b(out_type);
    for (int64_t i = 0; i < n; ++i) {
      int64_t lo, hi, count;
      arrow::Decimal128 sum;
      FrameOf(call.frame, l, i, &lo, &hi);
      FrameSum(p, l, lo, hi, &sum, &count);
      ARROW_RETURN_NOT_OK(count == 0 ? b.AppendNull() : b.Append(sum));
    }
    return b.Finish();
  }
  if (arrow::is_floating(id)) {
    ARROW_ASSIGN_OR_RAISE(arrow::Datum wide, cp::Cast(value, arrow::float64()));
    const auto doubles = std::static_pointer_cast<arrow::DoubleArray>(wide.make_array());
    auto p = PrefixOf<double>(l, *doubles, [&](int64_t i) { return doubles->Value(i); });
    arrow::DoubleBuilder b;
    for (int64_t i = 0; i < n; ++i) {
      int64_t lo, hi, count;
      double sum;
      FrameOf(call.frame, l, i, &lo, &hi);
      FrameSum(p, l, lo, hi, &sum, &count);
      ARROW_RETURN_NOT_OK(count == 0 ? b.AppendNull() : b.Append(sum));
    }
    return b.Finish();
  }
  return arrow::Status::TypeError("function ", call.function, "(", value->type()->ToString(),
                                  ") over a window does not exist");
}

// A function library's window function, called once per partition with the partition's rows
// in window order and their peer groups (library_functions.h).
arrow::Result<ArrayPtr> LibraryWindow(const WindowCall& call, const Layout& l,
                                      const std::vector<ArrayPtr>& args, int64_t n) {
  arrow::ArrayVector parts;
  for (int64_t begin = 0; begin < n;) {
    const int64_t end = l.part_end[static_cast<size_t>(begin)];
    std::vector<int64_t> peers;
    peers.reserve(static_cast<size_t>(end - begin));
    int64_t group = -1;
    for (int64_t i = begin; i < end; ++i) {
      if (l.peer_begin[static_cast<size_t>(i)] == i) ++group;
      peers.push_back(group);
    }
    arrow::ArrayVector slices;
    for (const auto& a : args) slices.push_back(a->Slice(begin, end - begin));
    ARROW_ASSIGN_OR_RAISE(auto part, plan::CallLibraryWindow(call.function, slices, peers));
    parts.push_back(std::move(part));
    begin = end;
  }
  if (parts.empty()) {
    ARROW_ASSIGN_OR_RAISE(auto type, plan::LibraryWindowType(call.function));
    return arrow::MakeEmptyArray(type);
  }
  return arrow::Concatenate(parts);
}

// One spec's calls: the sort they share, the rows' layout, then each function.
arrow::Result<std::vector<ArrayPtr>> ComputeSpec(const std::shared_ptr<arrow::RecordBatch>& batch,
                                                 const std::vector<const WindowCall*>& calls,
                                                 const arrow::Schema& out_schema) {
  const WindowCall& spec = *calls.front();
  const int64_t n = batch->num_rows();
  std::vector<cp::SortKey> keys;
  for (const auto& k : spec.partition_keys) keys.emplace_back(arrow::FieldRef(k));
  for (const auto& k : spec.order_keys) keys.push_back(k);
  ArrayPtr indices;
  Layout layout;
  if (!keys.empty() && n > 1) {
    ARROW_ASSIGN_OR_RAISE(auto coded, OrderByCodes(*batch, spec.partition_keys, spec.order_keys));
    if (coded) {
      indices = std::move(coded->indices);
      layout = std::move(coded->layout);
    } else {
      ARROW_ASSIGN_OR_RAISE(indices, cp::SortIndices(arrow::Datum(batch), cp::SortOptions(keys)));
    }
  }
  // Only the columns the functions read are put in the window's order, each once.
  std::map<std::string, ArrayPtr> sorted;
  auto sorted_column = [&](const std::string& name) -> arrow::Result<ArrayPtr> {
    auto at = sorted.find(name);
    if (at != sorted.end()) return at->second;
    ArrayPtr column = batch->GetColumnByName(name);
    if (column == nullptr) return arrow::Status::Invalid("internal: window column ", name);
    if (indices != nullptr) {
      ARROW_ASSIGN_OR_RAISE(column, Take(column, indices));
    }
    sorted.emplace(name, column);
    return column;
  };
  if (layout.part_begin.size() != static_cast<size_t>(n)) {
    std::vector<std::string> names = spec.partition_keys;
    for (const auto& k : spec.order_keys) names.push_back(*k.target.name());
    std::vector<std::shared_ptr<arrow::Field>> fields;
    std::vector<ArrayPtr> columns;
    std::set<std::string> seen;
    for (const auto& name : names) {
      if (!seen.insert(name).second) continue;  // a key named twice
      fields.push_back(batch->schema()->GetFieldByName(name));
      ARROW_ASSIGN_OR_RAISE(columns.emplace_back(), sorted_column(name));
    }
    const auto key_batch = arrow::RecordBatch::Make(arrow::schema(fields), n, columns);
    ARROW_ASSIGN_OR_RAISE(layout, MakeLayout(*key_batch, spec));
  }
  std::vector<ArrayPtr> out;
  std::vector<bool> in_input_order(calls.size(), false);
  for (const WindowCall* call : calls) {
    const std::string& f = call->function;
    const bool extremum = (f == "min" || f == "max") && call->arguments.size() == 1;
    std::vector<ArrayPtr> args;
    for (const auto& a : call->arguments) {
      if (extremum) break;  // reads the input's order
      ARROW_ASSIGN_OR_RAISE(args.emplace_back(), sorted_column(a));
    }
    ArrayPtr result;
    if (extremum) {
      const ArrayPtr value = batch->GetColumnByName(call->arguments[0]);
      if (value == nullptr) {
        return arrow::Status::Invalid("internal: window column ", call->arguments[0]);
      }
      ARROW_ASSIGN_OR_RAISE(result, Extremum(*call, layout, value, indices));
      in_input_order[out.size()] = true;
    } else if (plan::ParseLibraryFunctionName(f)) {
      ARROW_ASSIGN_OR_RAISE(result, LibraryWindow(*call, layout, args, n));
    } else if (f == "row_number" || f == "rank" || f == "dense_rank" || f == "percent_rank" ||
               f == "cume_dist" || f == "ntile") {
      ARROW_ASSIGN_OR_RAISE(result, Ranking(*call, layout, n));
    } else if (f == "count_all") {
      ARROW_ASSIGN_OR_RAISE(result, Count(*call, layout, nullptr, n));
    } else if (args.empty()) {
      return arrow::Status::Invalid("internal: window function ", f, " without its value");
    } else if (f == "count") {
      ARROW_ASSIGN_OR_RAISE(result, Count(*call, layout, args[0], n));
    } else if (f == "sum") {
      ARROW_ASSIGN_OR_RAISE(
          result, Sum(*call, layout, args[0], out_schema.GetFieldByName(call->output)->type()));
    } else {
      ARROW_ASSIGN_OR_RAISE(result, Shifted(*call, layout, args));
    }
    out.push_back(std::move(result));
  }
  if (indices != nullptr) {
    // Back to the input's order: row indices[i] of the input is row i of the sorted rows.
    const auto& sorted_at = static_cast<const arrow::UInt64Array&>(*indices);
    std::vector<int64_t> inverse(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) inverse[sorted_at.Value(i)] = i;
    ARROW_ASSIGN_OR_RAISE(auto back, Int64s(inverse));
    for (size_t k = 0; k < out.size(); ++k) {
      if (in_input_order[k]) continue;
      ARROW_ASSIGN_OR_RAISE(out[k], Take(out[k], back));
    }
  }
  return out;
}

bool SameSpec(const WindowCall& a, const WindowCall& b) {
  return a.partition_keys == b.partition_keys && a.order_keys == b.order_keys;
}

}  // namespace

arrow::Result<std::shared_ptr<arrow::Table>> ComputeWindows(
    const std::shared_ptr<arrow::Table>& input, const std::vector<plan::WindowCall>& calls) {
  // Dictionaries (a scan's string columns) as their values: compared, sorted and taken alike.
  arrow::FieldVector fields = input->schema()->fields();
  arrow::ChunkedArrayVector columns = input->columns();
  for (size_t c = 0; c < columns.size(); ++c) {
    const auto& type = columns[c]->type();
    if (type->id() != arrow::Type::DICTIONARY) continue;
    ARROW_ASSIGN_OR_RAISE(
        arrow::Datum plain,
        cp::Cast(columns[c], static_cast<const arrow::DictionaryType&>(*type).value_type()));
    columns[c] = plain.chunked_array();
    fields[c] = fields[c]->WithType(columns[c]->type());
  }
  const auto schema = arrow::schema(fields, input->schema()->metadata());
  // Only the columns the windows read (keys and values) are made one batch to sort and take;
  // the others pass through in their chunks (q67: four of its strings, 505K rows, copied whole
  // for nothing).
  std::vector<int> read;
  auto reads = [&](const std::string& name) {
    const int i = schema->GetFieldIndex(name);
    if (i >= 0 && std::find(read.begin(), read.end(), i) == read.end()) read.push_back(i);
  };
  for (const auto& w : calls) {
    for (const auto& k : w.partition_keys) reads(k);
    for (const auto& k : w.order_keys) {
      if (k.target.name() != nullptr) reads(*k.target.name());
    }
    for (const auto& a : w.arguments) reads(a);
  }
  arrow::FieldVector read_fields;
  arrow::ChunkedArrayVector read_columns;
  for (int i : read) {
    read_fields.push_back(fields[i]);
    read_columns.push_back(columns[i]);
  }
  ARROW_ASSIGN_OR_RAISE(
      auto batch, arrow::Table::Make(arrow::schema(read_fields), read_columns, input->num_rows())
                      ->CombineChunksToBatch());
  // The output types as the plan derives them.
  ARROW_ASSIGN_OR_RAISE(const auto out_schema, plan::WindowSchema(*schema, calls));
  std::map<std::string, ArrayPtr> results;
  std::vector<bool> done(calls.size(), false);
  for (size_t i = 0; i < calls.size(); ++i) {
    if (done[i]) continue;
    std::vector<const WindowCall*> group;
    for (size_t j = i; j < calls.size(); ++j) {
      if (!done[j] && SameSpec(calls[i], calls[j])) {
        group.push_back(&calls[j]);
        done[j] = true;
      }
    }
    ARROW_ASSIGN_OR_RAISE(auto arrays, ComputeSpec(batch, group, *out_schema));
    for (size_t k = 0; k < group.size(); ++k) results[group[k]->output] = arrays[k];
  }
  for (const auto& w : calls) {
    columns.push_back(std::make_shared<arrow::ChunkedArray>(results.at(w.output)));
  }
  return arrow::Table::Make(out_schema, std::move(columns), input->num_rows());
}

}  // namespace sluice::exec
