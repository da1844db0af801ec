// sluice's example function library: the TPC-H revenue expression as a scalar function, a
// weighted average as an aggregate whose state (two running sums) stays right when split across
// workers, the rank of a row's revenue within its window partition, and the BLAKE3 digest of
// text.
#include <arrow/io/memory.h>
#include <arrow/json/reader.h>
#include <blake3.h>
#include <sluice/sdk/function.hpp>

#include "sluice/schemas/arrow.hpp"
#include "sluice/schemas/conversation/conversation_message_gateway.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

namespace {

// net_revenue(price, discount) = price * (1 - discount); NULL when either is NULL.
arrow::Result<std::shared_ptr<arrow::Array>> NetRevenue(const arrow::StructArray& args) {
  const auto& price = static_cast<const arrow::DoubleArray&>(*args.field(0));
  const auto& discount = static_cast<const arrow::DoubleArray&>(*args.field(1));
  arrow::DoubleBuilder out;
  ARROW_RETURN_NOT_OK(out.Reserve(args.length()));
  for (int64_t i = 0; i < args.length(); ++i) {
    if (price.IsNull(i) || discount.IsNull(i)) {
      out.UnsafeAppendNull();
    } else {
      out.UnsafeAppend(price.Value(i) * (1 - discount.Value(i)));
    }
  }
  return out.Finish();
}

// revenue_rank(price, discount) OVER (PARTITION BY ...): 1 for the row of the partition with the
// highest net revenue, rows with equal revenue sharing a rank as SQL's rank() does; NULL where
// the revenue is NULL. The window's ORDER BY does not change it.
arrow::Result<std::shared_ptr<arrow::Array>> RevenueRank(const arrow::StructArray& args,
                                                         const int64_t* /*peer_groups*/) {
  ARROW_ASSIGN_OR_RAISE(auto revenue, NetRevenue(args));
  const auto& r = static_cast<const arrow::DoubleArray&>(*revenue);
  std::vector<int64_t> order;
  for (int64_t i = 0; i < r.length(); ++i) {
    if (r.IsValid(i)) order.push_back(i);
  }
  std::stable_sort(order.begin(), order.end(),
                   [&](int64_t a, int64_t b) { return r.Value(a) > r.Value(b); });
  std::vector<int64_t> rank(static_cast<size_t>(r.length()), 0);
  for (size_t k = 0; k < order.size(); ++k) {
    const bool tie = k > 0 && r.Value(order[k]) == r.Value(order[k - 1]);
    rank[order[k]] = tie ? rank[order[k - 1]] : static_cast<int64_t>(k) + 1;
  }
  arrow::Int64Builder out;
  ARROW_RETURN_NOT_OK(out.Reserve(r.length()));
  for (int64_t i = 0; i < r.length(); ++i) {
    if (r.IsValid(i)) {
      out.UnsafeAppend(rank[static_cast<size_t>(i)]);
    } else {
      out.UnsafeAppendNull();
    }
  }
  return out.Finish();
}

// blake3_hex(text): the BLAKE3 digest of the text's UTF-8 bytes, as 64 hex digits.
arrow::Result<std::shared_ptr<arrow::Array>> Blake3Hex(const arrow::StructArray& args) {
  const auto& text = static_cast<const arrow::StringArray&>(*args.field(0));
  arrow::StringBuilder out;
  ARROW_RETURN_NOT_OK(out.Reserve(args.length()));
  ARROW_RETURN_NOT_OK(out.ReserveData(args.length() * 64));
  static const char kHex[] = "0123456789abcdef";
  for (int64_t i = 0; i < args.length(); ++i) {
    if (text.IsNull(i)) {
      out.UnsafeAppendNull();
      continue;
    }
    const std::string_view v = text.GetView(i);
    blake3_hasher hasher;
    blake3_hasher_init(&hasher);
    blake3_hasher_update(&hasher, v.data(), v.size());
    uint8_t digest[BLAKE3_OUT_LEN];
    blake3_hasher_finalize(&hasher, digest, BLAKE3_OUT_LEN);
    char hex[2 * BLAKE3_OUT_LEN];
    for (size_t b = 0; b < BLAKE3_OUT_LEN; ++b) {
      hex[2 * b] = kHex[digest[b] >> 4];
      hex[2 * b + 1] = kHex[digest[b] & 15];
    }
    out.UnsafeAppend(std::string_view(hex, sizeof(hex)));
  }
  return out.Finish();
}

// weighted_avg(value, weight) = sum(value * weight) / sum(weight) over the rows where both are
// present; NULL where the weights sum to zero. The state is those two sums per group.
struct WeightedAvg {
  // The sums of `state` grown to num_groups (new groups start at zero).
  static void Load(const arrow::StructArray& state, int64_t num_groups, std::vector<double>* vw,
                   std::vector<double>* w) {
    vw->assign(static_cast<size_t>(num_groups), 0.0);
    w->assign(static_cast<size_t>(num_groups), 0.0);
    const auto& s_vw = static_cast<const arrow::DoubleArray&>(*state.field(0));
    const auto& s_w = static_cast<const arrow::DoubleArray&>(*state.field(1));
    for (int64_t g = 0; g < state.length() && g < num_groups; ++g) {
      (*vw)[g] = s_vw.Value(g);
      (*w)[g] = s_w.Value(g);
    }
  }

  static arrow::Result<std::shared_ptr<arrow::Array>> Store(const std::vector<double>& vw,
                                                            const std::vector<double>& w) {
    arrow::DoubleBuilder b_vw, b_w;
    ARROW_RETURN_NOT_OK(b_vw.AppendValues(vw));
    ARROW_RETURN_NOT_OK(b_w.AppendValues(w));
    ARROW_ASSIGN_OR_RAISE(auto a_vw, b_vw.Finish());
    ARROW_ASSIGN_OR_RAISE(auto a_w, b_w.Finish());
    return arrow::StructArray::Make({a_vw, a_w},
                                    std::vector<std::string>{"weighted_sum", "weight_sum"});
  }

  static arrow::Result<std::shared_ptr<arrow::Array>> Update(const arrow::StructArray& state,
                                                             const arrow::StructArray& args,
                                                             const uint32_t* group_ids,
                                                             int64_t num_groups) {
    std::vector<double> vw, w;
    Load(state, num_groups, &vw, &w);
    const auto& value = static_cast<const arrow::DoubleArray&>(*args.field(0));
    const auto& weight = static_cast<const arrow::DoubleArray&>(*args.field(1));
    for (int64_t i = 0; i < args.length(); ++i) {
      if (value.IsNull(i) || weight.IsNull(i) || args.IsNull(i)) continue;
      const uint32_t g = group_ids[i];
      if (g >= num_groups) return arrow::Status::Invalid("group id ", g, " out of range");
      vw[g] += value.Value(i) * weight.Value(i);
      w[g] += weight.Value(i);
    }
    return Store(vw, w);
  }

  static arrow::Result<std::shared_ptr<arrow::Array>> Merge(const arrow::StructArray& state,
                                                            const arrow::StructArray& other,
                                                            const uint32_t* mapping,
                                                            int64_t num_groups) {
    std::vector<double> vw, w;
    Load(state, num_groups, &vw, &w);
    const auto& o_vw = static_cast<const arrow::DoubleArray&>(*other.field(0));
    const auto& o_w = static_cast<const arrow::DoubleArray&>(*other.field(1));
    for (int64_t i = 0; i < other.length(); ++i) {
      if (other.IsNull(i)) continue;
      const uint32_t g = mapping[i];
      if (g >= num_groups) return arrow::Status::Invalid("group id ", g, " out of range");
      vw[g] += o_vw.Value(i);
      w[g] += o_w.Value(i);
    }
    return Store(vw, w);
  }

  static arrow::Result<std::shared_ptr<arrow::Array>> Finalize(const arrow::StructArray& state) {
    const auto& vw = static_cast<const arrow::DoubleArray&>(*state.field(0));
    const auto& w = static_cast<const arrow::DoubleArray&>(*state.field(1));
    arrow::DoubleBuilder out;
    ARROW_RETURN_NOT_OK(out.Reserve(state.length()));
    for (int64_t g = 0; g < state.length(); ++g) {
      if (state.IsNull(g) || w.Value(g) == 0) {
        out.UnsafeAppendNull();
      } else {
        out.UnsafeAppend(vw.Value(g) / w.Value(g));
      }
    }
    return out.Finish();
  }
};

// gateway_objects: the gateway's JSONL objects under a store prefix (the table's options) as a
// table, one partition per object, parsed with the schema the example transform reads
// (ConversationMessageGateway).
struct GatewayObjects {
  static arrow::Result<std::shared_ptr<arrow::Schema>> Schema(const sluice::sdk::Store&,
                                                              const std::string&) {
    return sluice::schemas::ArrowSchema<
        sluice::schemas::conversation::ConversationMessageGateway>();
  }

  static arrow::Result<std::vector<std::string>> Partitions(const sluice::sdk::Store& store,
                                                            const std::string& prefix) {
    ARROW_ASSIGN_OR_RAISE(auto keys, store.List(prefix));
    std::vector<std::string> objects;
    for (auto& k : keys) {
      if (k.size() > 6 && k.compare(k.size() - 6, 6, ".jsonl") == 0) objects.push_back(k);
    }
    return objects;  // the store lists keys sorted
  }

  static arrow::Result<std::shared_ptr<arrow::RecordBatchReader>> Scan(
      const sluice::sdk::Store& store, const std::string&, const std::string& key,
      const std::vector<int>& columns) {
    ARROW_ASSIGN_OR_RAISE(auto bytes, store.Read(key));
    ARROW_ASSIGN_OR_RAISE(auto schema, Schema(store, ""));
    auto parse = arrow::json::ParseOptions::Defaults();
    parse.explicit_schema = schema;
    parse.unexpected_field_behavior = arrow::json::UnexpectedFieldBehavior::Ignore;
    auto read = arrow::json::ReadOptions::Defaults();
    read.use_threads = false;  // the host scans partitions on its own threads
    ARROW_ASSIGN_OR_RAISE(auto reader,
                          arrow::json::TableReader::Make(
                              arrow::default_memory_pool(),
                              std::make_shared<arrow::io::BufferReader>(bytes), read, parse));
    auto table = reader->Read();
    if (!table.ok()) {
      return arrow::Status::Invalid("object '", key, "': ", table.status().message());
    }
    ARROW_ASSIGN_OR_RAISE(auto projected, (*table)->SelectColumns(columns));
    ARROW_ASSIGN_OR_RAISE(auto combined, projected->CombineChunksToBatch());
    return arrow::RecordBatchReader::Make({combined}, combined->schema());
  }
};

}  // namespace

SLUICE_FUNCTION_IDENTITY(
    R"({"abi_version":1,"qualified_name":"sluice-example-functions","version":"0.1.0",)"
    R"("functions":[)"
    R"({"name":"net_revenue","kind":"scalar","arguments":["g","g"],"returns":"g"},)"
    R"({"name":"weighted_avg","kind":"aggregate","arguments":["g","g"],"returns":"g",)"
    R"("state":[["weighted_sum","g"],["weight_sum","g"]]},)"
    R"({"name":"blake3_hex","kind":"scalar","arguments":["u"],"returns":"u"},)"
    R"({"name":"revenue_rank","kind":"window","arguments":["g","g"],"returns":"l"}],)"
    R"("tables":[{"name":"gateway_objects"}]})")

SLUICE_FUNCTION_TABLE(sluice::sdk::Scalar<NetRevenue>("net_revenue"),
                      sluice::sdk::Aggregate<WeightedAvg>("weighted_avg"),
                      sluice::sdk::Scalar<Blake3Hex>("blake3_hex"),
                      sluice::sdk::Window<RevenueRank>("revenue_rank"))

SLUICE_TABLE_PROVIDERS(sluice::sdk::TableProvider<GatewayObjects>("gateway_objects"))
