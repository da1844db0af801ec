// Function libraries through the real ABI: the example library (functions/) and a library that
// breaks every rule (tests/functions/garbage_functions.cc), loaded with dlopen from a sealed
// memfd and called through Arrow's registry, as plans call them.
#include "plan/library_functions.h"

#include <arrow/acero/exec_plan.h>
#include <arrow/acero/options.h>
#include <arrow/api.h>
#include <arrow/c/bridge.h>
#include <arrow/compute/api.h>
#include <arrow/io/file.h>
#include <gtest/gtest.h>

#include "artifact/blake3_digest.h"
#include "artifact/verified_loader.h"
#include "plan/compute_init.h"
#include "plan/table_provider.h"

#ifndef SLUICE_EXAMPLE_FUNCTIONS_SO
#error "SLUICE_EXAMPLE_FUNCTIONS_SO must name the example function library"
#endif

namespace sluice::plan {
namespace {

namespace cp = arrow::compute;

struct Loaded {
  std::string digest;
  std::shared_ptr<artifact::FunctionLibrary> library;
};

Loaded Load(const std::string& path) {
  EXPECT_TRUE(EnsureComputeInitialized().ok());
  auto file = arrow::io::ReadableFile::Open(path).ValueOrDie();
  auto bytes = file->Read(file->GetSize().ValueOrDie()).ValueOrDie();
  const artifact::Digest digest = artifact::Blake3(*bytes);
  auto library = artifact::LoadVerifiedFunctionLibrary({digest, bytes});
  EXPECT_TRUE(library.ok()) << library.status().ToString();
  EXPECT_TRUE(RegisterFunctionLibrary(digest.ToHex(), *library).ok());
  return {digest.ToHex(), *library};
}

std::shared_ptr<arrow::Array> Doubles(const std::vector<std::optional<double>>& values) {
  arrow::DoubleBuilder b;
  for (const auto& v : values) {
    EXPECT_TRUE(v.has_value() ? b.Append(*v).ok() : b.AppendNull().ok());
  }
  return b.Finish().ValueOrDie();
}

TEST(LibraryFunctions, NetRevenueRunsThroughTheAbiWithNulls) {
  Loaded lib = Load(SLUICE_EXAMPLE_FUNCTIONS_SO);
  const std::string name = LibraryFunctionName(lib.digest, "net_revenue");
  auto out = cp::CallFunction(
      name, {Doubles({100, 50, std::nullopt, 10}), Doubles({0.1, 0, 0.5, std::nullopt})});
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_TRUE(out->make_array()->Equals(*Doubles({90, 50, std::nullopt, std::nullopt})))
      << out->make_array()->ToString();
  // All-literal arguments still get a row count.
  auto scalar = cp::CallFunction(name, {arrow::Datum(200.0), arrow::Datum(0.25)});
  ASSERT_TRUE(scalar.ok()) << scalar.status().ToString();
  ASSERT_TRUE(scalar->is_scalar());
  EXPECT_EQ(scalar->scalar()->ToString(), "150");
}

TEST(LibraryFunctions, Blake3HexIsTheDigestOfTheText) {
  Loaded lib = Load(SLUICE_EXAMPLE_FUNCTIONS_SO);
  arrow::StringBuilder b;
  ASSERT_TRUE(b.Append("abc").ok());
  ASSERT_TRUE(b.AppendNull().ok());
  auto out =
      cp::CallFunction(LibraryFunctionName(lib.digest, "blake3_hex"), {b.Finish().ValueOrDie()});
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  auto hex = std::static_pointer_cast<arrow::StringArray>(out->make_array());
  EXPECT_EQ(hex->GetString(0), artifact::Blake3("abc", 3).ToHex());
  EXPECT_TRUE(hex->IsNull(1));
}

// revenue_rank over one partition: the highest revenue ranks 1, ties share a rank, NULL stays
// NULL.
TEST(LibraryFunctions, RevenueRankRanksAPartitionByRevenue) {
  Loaded lib = Load(SLUICE_EXAMPLE_FUNCTIONS_SO);
  const std::string name = LibraryFunctionName(lib.digest, "revenue_rank");
  ASSERT_TRUE(LibraryWindowType(name).ok());
  EXPECT_EQ(LibraryWindowType(name).ValueOrDie()->id(), arrow::Type::INT64);
  auto out = CallLibraryWindow(
      name, {Doubles({10, 40, 20, std::nullopt, 40}), Doubles({0, 0.5, 0, 0, 0.25})},
      {0, 0, 1, 1, 2});
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  arrow::Int64Builder want;
  // Revenues 10, 20, 20, NULL, 30.
  ASSERT_TRUE(want.AppendValues({4, 2, 2, 0, 1}, {true, true, true, false, true}).ok());
  EXPECT_TRUE((*out)->Equals(*want.Finish().ValueOrDie())) << (*out)->ToString();
  auto missing = LibraryWindowType(LibraryFunctionName(std::string(64, 'c'), "revenue_rank"));
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("is not available on this worker"), std::string::npos);
}

// weighted_avg grouped by Acero's aggregate node: the partial states of each half of the rows,
// merged, equal the whole, which is sum(v * w) / sum(w) per group.
TEST(LibraryFunctions, WeightedAvgMergedFromPartialStatesEqualsTheWhole) {
  Loaded lib = Load(SLUICE_EXAMPLE_FUNCTIONS_SO);
  const std::string name = LibraryFunctionName(lib.digest, "weighted_avg");
  const int64_t n = 10000;
  arrow::Int64Builder keys;
  arrow::DoubleBuilder values, weights;
  std::map<int64_t, std::pair<double, double>> expected;
  for (int64_t i = 0; i < n; ++i) {
    const int64_t k = i % 7;
    ASSERT_TRUE(keys.Append(k).ok());
    const double v = static_cast<double>(i % 13), w = static_cast<double>(i % 5);
    if (i % 11 == 0) {
      ASSERT_TRUE(values.AppendNull().ok());  // skipped, as SQL aggregates skip NULLs
    } else {
      ASSERT_TRUE(values.Append(v).ok());
      expected[k].first += v * w;
      expected[k].second += w;
    }
    ASSERT_TRUE(weights.Append(w).ok());
  }
  auto args =
      arrow::StructArray::Make({values.Finish().ValueOrDie(), weights.Finish().ValueOrDie()},
                               std::vector<std::string>{"a0", "a1"})
          .ValueOrDie();
  auto k = keys.Finish().ValueOrDie();
  auto schema = arrow::schema({arrow::field("k", arrow::int64()), arrow::field("x", args->type())});
  auto table = arrow::Table::Make(schema, {k, args});
  // Two batches that Acero may give to different threads, so the kernels' merge runs too.
  auto batches = arrow::TableBatchReader(*table);
  batches.set_chunksize(n / 2);
  namespace ac = arrow::acero;
  ac::Declaration partial{
      "aggregate",
      {ac::Declaration{"table_source", ac::TableSourceNodeOptions(table, n / 2)}},
      ac::AggregateNodeOptions({{"hash_" + name + kPartialSuffix, nullptr, "x", "state"}}, {"k"})};
  ac::Declaration final_step{
      "aggregate",
      {std::move(partial)},
      ac::AggregateNodeOptions({{"hash_" + name + kMergeSuffix, nullptr, "state", "avg"}}, {"k"})};
  auto result = ac::DeclarationToTable(std::move(final_step));
  ASSERT_TRUE(result.ok()) << result.status().ToString();
  ASSERT_EQ((*result)->num_rows(), 7);
  auto combined = (*result)->CombineChunksToBatch().ValueOrDie();
  auto avg = std::static_pointer_cast<arrow::DoubleArray>(combined->GetColumnByName("avg"));
  auto key = std::static_pointer_cast<arrow::Int64Array>(combined->GetColumnByName("k"));
  for (int64_t r = 0; r < combined->num_rows(); ++r) {
    const auto& [vw, w] = expected[key->Value(r)];
    EXPECT_NEAR(avg->Value(r), vw / w, 1e-12 * std::abs(vw / w)) << "group " << key->Value(r);
  }
  // Without GROUP BY: one state, and NULL over no rows (the weights sum to zero).
  auto none = cp::CallFunction(name + kPartialSuffix, {args->Slice(0, 0)});
  ASSERT_TRUE(none.ok()) << none.status().ToString();
  auto states = arrow::MakeArrayFromScalar(*none->scalar(), 1).ValueOrDie();
  auto empty = cp::CallFunction(name + kMergeSuffix, {states});
  ASSERT_TRUE(empty.ok()) << empty.status().ToString();
  EXPECT_FALSE(empty->scalar()->is_valid);
}

TEST(LibraryFunctions, GarbageFromALibraryIsAnErrorNamingTheFunction) {
  Loaded lib = Load(SLUICE_TEST_GARBAGE_FUNCTIONS_SO);
  auto arg = Doubles({1, 2, 3});
  const std::pair<const char*, const char*> cases[] = {
      {"wrong_length", "returned 4 rows, not 3"},
      {"wrong_type", "returned int64, not the declared double"},
      {"no_array", "returned no array"},
      {"bad_offsets", "returned an invalid array"},
      {"refuses", "the value was not positive"},
  };
  for (const auto& [function, message] : cases) {
    auto out = cp::CallFunction(LibraryFunctionName(lib.digest, function), {arg});
    ASSERT_FALSE(out.ok()) << function;
    EXPECT_NE(out.status().message().find("function " + std::string(function) +
                                          " (library garbage-functions 1, " + lib.digest),
              std::string::npos)
        << out.status().ToString();
    EXPECT_NE(out.status().message().find(message), std::string::npos) << out.status().ToString();
  }
  auto window =
      CallLibraryWindow(LibraryFunctionName(lib.digest, "short_window"), {arg}, {0, 1, 2});
  ASSERT_FALSE(window.ok());
  EXPECT_NE(window.status().message().find("function short_window (library garbage-functions"),
            std::string::npos)
      << window.status().ToString();
  EXPECT_NE(window.status().message().find("returned 2 rows, not 3"), std::string::npos);
  auto args = arrow::StructArray::Make({arg}, std::vector<std::string>{"a0"}).ValueOrDie();
  auto state =
      cp::CallFunction(LibraryFunctionName(lib.digest, "short_state") + kPartialSuffix, {args});
  ASSERT_FALSE(state.ok());
  EXPECT_NE(state.status().message().find("function short_state"), std::string::npos);
  EXPECT_NE(state.status().message().find("update returned 0 rows, not 1"), std::string::npos)
      << state.status().ToString();
}

// What the SDK does with arrays that break the C Data Interface's promises, handed straight to
// the example library's entry points: an error from the library, never a crash.
TEST(LibraryFunctions, TheSdkRefusesMalformedArrays) {
  Loaded lib = Load(SLUICE_EXAMPLE_FUNCTIONS_SO);
  const sluice_function_entry& net_revenue = lib.library->entry(0);
  ASSERT_STREQ(net_revenue.name, "net_revenue");
  auto call = [&](const std::shared_ptr<arrow::Array>& args, int64_t rows) {
    std::string error;
    sluice_function_host host{
        SLUICE_FUNCTION_ABI_VERSION, sizeof(sluice_function_host), &error,
        [](void* ctx, const char* m, size_t n) { static_cast<std::string*>(ctx)->assign(m, n); }};
    struct ArrowSchema as {
    }, os{};
    struct ArrowArray aa {
    }, oa{};
    EXPECT_TRUE(arrow::ExportArray(*args, &aa, &as).ok());
    const int32_t rc = net_revenue.scalar(&host, &as, &aa, rows, &os, &oa);
    if (oa.release != nullptr) oa.release(&oa);
    if (os.release != nullptr) os.release(&os);
    EXPECT_EQ(as.release, nullptr) << "the library must release what it was given";
    return rc == SLUICE_FUNCTION_OK ? std::string() : error;
  };
  auto two = [](std::shared_ptr<arrow::Array> a, std::shared_ptr<arrow::Array> b) {
    return std::static_pointer_cast<arrow::Array>(
        arrow::StructArray::Make({a, b}, std::vector<std::string>{"a0", "a1"}).ValueOrDie());
  };
  auto good = Doubles({1, 2, 3});
  EXPECT_EQ(call(two(good, good), 3), "");
  // Wrong types: int64 and text where doubles are declared.
  arrow::Int64Builder ints;
  ASSERT_TRUE(ints.AppendValues({1, 2, 3}).ok());
  EXPECT_NE(call(two(ints.Finish().ValueOrDie(), good), 3).find("not the declared"),
            std::string::npos);
  arrow::StringBuilder text;
  ASSERT_TRUE(text.AppendValues({"a", "b", "c"}).ok());
  EXPECT_NE(call(two(text.Finish().ValueOrDie(), good), 3).find("not the declared"),
            std::string::npos);
  // A row count that is not the arguments'.
  EXPECT_NE(call(two(good, good), 5).find("3 rows, not 5"), std::string::npos);
  // A truncated array: a child with fewer buffers than its type has. (The C Data Interface
  // carries no buffer sizes, so a buffer shorter than its length says cannot be seen by either
  // side; a library is trusted with lengths as much as any producer.)
  {
    std::string error;
    sluice_function_host host{
        SLUICE_FUNCTION_ABI_VERSION, sizeof(sluice_function_host), &error,
        [](void* ctx, const char* m, size_t n) { static_cast<std::string*>(ctx)->assign(m, n); }};
    struct ArrowSchema as {
    }, os{};
    struct ArrowArray aa {
    }, oa{};
    ASSERT_TRUE(arrow::ExportArray(*two(good, good), &aa, &as).ok());
    aa.children[0]->n_buffers = 1;
    EXPECT_EQ(net_revenue.scalar(&host, &as, &aa, 3, &os, &oa), SLUICE_FUNCTION_ERROR);
    EXPECT_NE(error.find("buffers"), std::string::npos) << error;
    EXPECT_EQ(oa.release, nullptr);
  }
  // Children shorter than their struct.
  auto short_child = std::static_pointer_cast<arrow::Array>(std::make_shared<arrow::StructArray>(
      arrow::struct_({arrow::field("a0", arrow::float64()), arrow::field("a1", arrow::float64())}),
      10, arrow::ArrayVector{good, good}));
  EXPECT_FALSE(call(short_child, 10).empty());
}

TEST(LibraryFunctions, ALibraryNameMeansOneDigestInAProcess) {
  Loaded lib = Load(SLUICE_EXAMPLE_FUNCTIONS_SO);
  const std::string other(64, 'e');
  auto st = RegisterFunctionLibrary(other, lib.library);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find(other), std::string::npos) << st.ToString();
  EXPECT_NE(st.message().find(lib.digest), std::string::npos) << st.ToString();
  EXPECT_EQ(RegisteredFunctionLibraries().at("sluice-example-functions"), lib.digest);
}

TEST(LibraryFunctions, NamesCarryTheDigestAndTheFunction) {
  const std::string d(64, 'a');
  auto ref =
      ParseLibraryFunctionName("hash_" + LibraryFunctionName(d, "weighted_avg") + kPartialSuffix);
  ASSERT_TRUE(ref.has_value());
  EXPECT_EQ(ref->digest_hex, d);
  EXPECT_EQ(ref->function, "weighted_avg");
  EXPECT_FALSE(ParseLibraryFunctionName("sum").has_value());
  EXPECT_FALSE(ParseLibraryFunctionName("ext:abc:f").has_value());
}

// A provider table's description is all a worker gets: versioned, readable, checked.
TEST(LibraryFunctions, ProviderDescriptionsRoundTripAndAreChecked) {
  Loaded lib = Load(SLUICE_EXAMPLE_FUNCTIONS_SO);
  auto schema = arrow::schema({arrow::field("k", arrow::utf8())});
  auto text = ProviderDescription(lib.digest, "gateway_objects", "raw/", *schema);
  ASSERT_TRUE(text.ok());
  EXPECT_EQ(text->rfind(kProviderMagic, 0), 0u);
  EXPECT_NE(text->find(R"("options":"raw/")"), std::string::npos) << *text;
  auto parsed = ParseProviderDescription(*text, "t");
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  EXPECT_EQ(parsed->digest_hex, lib.digest);
  EXPECT_TRUE(parsed->schema->Equals(*schema));
  auto error = [](const std::string& bytes) {
    return ParseProviderDescription(bytes, "t").status().message();
  };
  EXPECT_NE(error("SLUICE-TABLE-PROVIDER/9\n{}").find("not a table provider description"),
            std::string::npos);
  EXPECT_NE(error(std::string(kProviderMagic) + "{").find("not JSON"), std::string::npos);
  EXPECT_NE(error(std::string(kProviderMagic) + "{}").find("lacks 'library'"), std::string::npos);
  std::string other = *text;
  other.replace(other.find(lib.digest), 64, std::string(64, 'd'));
  EXPECT_NE(error(other).find("is not available on this worker"), std::string::npos);
  std::string bad_schema = *text;
  bad_schema.replace(bad_schema.find(R"("schema":")") + 10, 8, "zzzzzzzz");
  EXPECT_FALSE(ParseProviderDescription(bad_schema, "t").ok());
}

TEST(FunctionIdentity, ErrorsNameTheFunctionAndTheField) {
  auto parse = [](const std::string& json) {
    return artifact::FunctionIdentity::Parse(SLUICE_FUNCTION_IDENTITY_MAGIC + json, "lib.so")
        .status()
        .ToString();
  };
  const std::string head = R"({"abi_version":1,"qualified_name":"q","version":"1","functions":[)";
  EXPECT_NE(parse(head + R"({"name":"f","kind":"scalar","arguments":["zz"],"returns":"g"}]})")
                .find("function f: type 'zz'"),
            std::string::npos);
  EXPECT_NE(parse(head + R"({"name":"F","kind":"scalar","arguments":[],"returns":"g"}]})")
                .find("lower case"),
            std::string::npos);
  EXPECT_NE(parse(head + R"({"name":"f","kind":"aggregate","arguments":["g"],"returns":"g"}]})")
                .find("needs 'state'"),
            std::string::npos);
  EXPECT_NE(parse(head + R"({"name":"f","kind":"window","arguments":[],"returns":"g",)"
                         R"("state":[["s","g"]]}]})")
                .find("only an aggregate has a state"),
            std::string::npos);
  EXPECT_NE(parse(head + "]}").find("1 to 1024"), std::string::npos);
}

}  // namespace
}  // namespace sluice::plan
