#include "plan/library_functions.h"

#include <arrow/api.h>
#include <arrow/c/bridge.h>
#include <arrow/compute/api.h>
#include <arrow/compute/kernel.h>

#include <algorithm>
#include <mutex>
#include <set>

#include "artifact/blake3_digest.h"
#include "artifact/verified_loader.h"
#include "common/version.h"
#include "plan/compute_init.h"

namespace sluice::plan {

namespace {

namespace cp = arrow::compute;
using artifact::FunctionSignature;

static_assert(kFunctionAbiVersion == SLUICE_FUNCTION_ABI_VERSION,
              "sluice --version must report the function ABI this host speaks");

// One library function as the kernels see it.
struct Bound {
  std::shared_ptr<artifact::FunctionLibrary> library;  // keeps the code mapped
  const sluice_function_entry* entry = nullptr;
  FunctionSignature signature;
  std::shared_ptr<arrow::DataType> args_type;  // struct<a0, a1, ...>
  std::string where;                           // "function f (library q 1.0, <digest>)"
};

struct BoundState : cp::KernelState {
  std::shared_ptr<const Bound> fn;
};

void SetError(void* ctx, const char* message, size_t len) {
  if (message != nullptr) static_cast<std::string*>(ctx)->assign(message, len);
}

// One call's host struct and the error the library recorded.
struct Call {
  std::string error;
  sluice_function_host host{SLUICE_FUNCTION_ABI_VERSION, sizeof(sluice_function_host), &error,
                            SetError};
};

// Moves `array` into a C Data Interface pair for the library.
arrow::Status Export(const arrow::Array& array, struct ArrowSchema* schema,
                     struct ArrowArray* out) {
  ARROW_RETURN_NOT_OK(arrow::ExportType(*array.type(), schema));
  arrow::Status st = arrow::ExportArray(array, out);
  if (!st.ok()) schema->release(schema);
  return st;
}

// Takes the library's output, releases it on every path, and checks it is `type` with `length`
// rows and valid buffers before anything reads it.
arrow::Result<std::shared_ptr<arrow::Array>> Receive(const Bound& fn, const Call& call, int32_t rc,
                                                     struct ArrowSchema* schema,
                                                     struct ArrowArray* array,
                                                     const arrow::DataType& type, int64_t length,
                                                     const char* step) {
  auto release = [&] {
    if (array->release != nullptr) array->release(array);
    if (schema->release != nullptr) schema->release(schema);
  };
  if (rc != SLUICE_FUNCTION_OK) {
    release();
    return arrow::Status::Invalid(fn.where, ": ", call.error.empty() ? "failed" : call.error);
  }
  if (array->release == nullptr || schema->release == nullptr) {
    release();
    return arrow::Status::Invalid(fn.where, ": ", step, " returned no array");
  }
  auto imported = arrow::ImportArray(array, schema);  // releases both, also on failure
  if (!imported.ok()) {
    return arrow::Status::Invalid(fn.where, ": ", step, " returned a malformed array (",
                                  imported.status().message(), ")");
  }
  const auto& out = *imported;
  if (!out->type()->Equals(type)) {
    return arrow::Status::TypeError(fn.where, ": ", step, " returned ", out->type()->ToString(),
                                    ", not the declared ", type.ToString());
  }
  if (out->length() != length) {
    return arrow::Status::Invalid(fn.where, ": ", step, " returned ", out->length(), " rows, not ",
                                  length);
  }
  arrow::Status valid = out->ValidateFull();
  if (!valid.ok()) {
    return arrow::Status::Invalid(fn.where, ": ", step, " returned an invalid array (",
                                  valid.message(), ")");
  }
  return out;
}

// The call's arguments as one struct array of `length` rows (literals repeated).
arrow::Result<std::shared_ptr<arrow::Array>> ArgsArray(const Bound& fn, const cp::ExecSpan& batch,
                                                       int64_t length, int num_args) {
  arrow::ArrayVector children;
  for (int i = 0; i < num_args; ++i) {
    const cp::ExecValue& v = batch[i];
    if (v.is_scalar()) {
      ARROW_ASSIGN_OR_RAISE(auto a, arrow::MakeArrayFromScalar(*v.scalar, length));
      children.push_back(std::move(a));
    } else {
      children.push_back(v.array.ToArray());
    }
  }
  return arrow::StructArray::Make(children, fn.args_type->fields());
}

arrow::Status ScalarExec(cp::KernelContext* ctx, const cp::ExecSpan& batch, cp::ExecResult* out) {
  const Bound& fn = *static_cast<const BoundState&>(*ctx->kernel()->data).fn;
  const int num_args = static_cast<int>(fn.signature.arguments.size());
  ARROW_ASSIGN_OR_RAISE(auto args, ArgsArray(fn, batch, batch.length, num_args));
  struct ArrowSchema args_schema {
  }, out_schema{};
  struct ArrowArray args_array {
  }, out_array{};
  ARROW_RETURN_NOT_OK(Export(*args, &args_schema, &args_array));
  Call call;
  const int32_t rc = fn.entry->scalar(&call.host, &args_schema, &args_array, batch.length,
                                      &out_schema, &out_array);
  ARROW_ASSIGN_OR_RAISE(auto result, Receive(fn, call, rc, &out_schema, &out_array,
                                             *fn.signature.returns, batch.length, "the call"));
  out->value = result->data();
  return arrow::Status::OK();
}

// Per-kernel-instance aggregate state: the library's state struct for the groups seen so far
// (fewer rows than num_groups when groups were added since the last call).
// The three forms of one library aggregate: the partial step (arguments in, state out), the
// merge step (states in, result out), and both in one, which a query in one process runs.
enum class Step { kPartial, kMerge, kFull };

struct AggregateState : cp::KernelState {
  std::shared_ptr<const Bound> fn;
  bool merge_input = false;  // consume merges partial states instead of updating from args
  std::shared_ptr<arrow::Array> state;
  int64_t num_groups = 0;
};

arrow::Result<std::shared_ptr<arrow::Array>> CallUpdateOrMerge(
    const Bound& fn, bool merge, const std::shared_ptr<arrow::Array>& state,
    const arrow::Array& input, const uint32_t* groups, int64_t num_groups) {
  struct ArrowSchema state_schema {
  }, in_schema{}, out_schema{};
  struct ArrowArray state_array {
  }, in_array{}, out_array{};
  ARROW_RETURN_NOT_OK(Export(*state, &state_schema, &state_array));
  arrow::Status st = Export(input, &in_schema, &in_array);
  if (!st.ok()) {
    state_array.release(&state_array);
    state_schema.release(&state_schema);
    return st;
  }
  Call call;
  const int32_t rc = merge
                         ? fn.entry->merge(&call.host, &state_schema, &state_array, &in_schema,
                                           &in_array, groups, num_groups, &out_schema, &out_array)
                         : fn.entry->update(&call.host, &state_schema, &state_array, &in_schema,
                                            &in_array, groups, num_groups, &out_schema, &out_array);
  return Receive(fn, call, rc, &out_schema, &out_array, *fn.signature.state, num_groups,
                 merge ? "merge" : "update");
}

arrow::Result<std::shared_ptr<arrow::Array>> CallFinalize(
    const Bound& fn, const std::shared_ptr<arrow::Array>& state) {
  struct ArrowSchema state_schema {
  }, out_schema{};
  struct ArrowArray state_array {
  }, out_array{};
  ARROW_RETURN_NOT_OK(Export(*state, &state_schema, &state_array));
  Call call;
  const int32_t rc =
      fn.entry->finalize(&call.host, &state_schema, &state_array, &out_schema, &out_array);
  return Receive(fn, call, rc, &out_schema, &out_array, *fn.signature.returns, state->length(),
                 "finalize");
}

// The state grown to num_groups rows by the library, with no input rows.
arrow::Result<std::shared_ptr<arrow::Array>> FullState(const AggregateState& s) {
  if (s.state->length() == s.num_groups) return s.state;
  ARROW_ASSIGN_OR_RAISE(
      auto empty, arrow::MakeEmptyArray(s.merge_input ? s.fn->signature.state : s.fn->args_type));
  return CallUpdateOrMerge(*s.fn, s.merge_input, s.state, *empty, nullptr, s.num_groups);
}

arrow::Status Consume(AggregateState* s, const arrow::Array& input, const uint32_t* groups) {
  ARROW_ASSIGN_OR_RAISE(
      s->state, CallUpdateOrMerge(*s->fn, s->merge_input, s->state, input, groups, s->num_groups));
  return arrow::Status::OK();
}

// Arrow's thread-local states of one aggregate are merged with the library's merge.
arrow::Status MergeStates(AggregateState* into, AggregateState&& other, const uint32_t* mapping) {
  ARROW_ASSIGN_OR_RAISE(auto theirs, FullState(other));
  ARROW_ASSIGN_OR_RAISE(into->state, CallUpdateOrMerge(*into->fn, /*merge=*/true, into->state,
                                                       *theirs, mapping, into->num_groups));
  return arrow::Status::OK();
}

arrow::Result<std::shared_ptr<arrow::Array>> Finish(const AggregateState& s, bool partial) {
  ARROW_ASSIGN_OR_RAISE(auto state, FullState(s));
  if (partial) return state;
  return CallFinalize(*s.fn, state);
}

arrow::Result<std::unique_ptr<cp::KernelState>> InitAggregate(std::shared_ptr<const Bound> fn,
                                                              bool merge_input) {
  auto s = std::make_unique<AggregateState>();
  s->fn = std::move(fn);
  s->merge_input = merge_input;
  ARROW_ASSIGN_OR_RAISE(s->state, arrow::MakeEmptyArray(s->fn->signature.state));
  return s;
}

// --- hash_ kernels (GROUP BY) ---

arrow::Status HashResize(cp::KernelContext* ctx, int64_t num_groups) {
  auto* s = static_cast<AggregateState*>(ctx->state());
  if (num_groups > s->num_groups) s->num_groups = num_groups;
  return arrow::Status::OK();
}

arrow::Status HashConsume(cp::KernelContext* ctx, const cp::ExecSpan& batch) {
  auto* s = static_cast<AggregateState*>(ctx->state());
  const auto input = batch[0].array.ToArray();
  const uint32_t* groups = batch[1].array.GetValues<uint32_t>(1);
  return Consume(s, *input, groups);
}

arrow::Status HashMerge(cp::KernelContext* ctx, cp::KernelState&& other,
                        const arrow::ArrayData& mapping) {
  auto* s = static_cast<AggregateState*>(ctx->state());
  const uint32_t* groups = mapping.GetValues<uint32_t>(1);
  for (int64_t i = 0; i < mapping.length; ++i) {
    s->num_groups = std::max<int64_t>(s->num_groups, int64_t{groups[i]} + 1);
  }
  return MergeStates(s, std::move(static_cast<AggregateState&>(other)), groups);
}

template <bool kPartial>
arrow::Status HashFinalize(cp::KernelContext* ctx, arrow::Datum* out) {
  ARROW_ASSIGN_OR_RAISE(auto result, Finish(*static_cast<AggregateState*>(ctx->state()), kPartial));
  *out = result;
  return arrow::Status::OK();
}

// --- scalar aggregate kernels (no GROUP BY): one group ---

arrow::Status ScalarConsume(cp::KernelContext* ctx, const cp::ExecSpan& batch) {
  auto* s = static_cast<AggregateState*>(ctx->state());
  s->num_groups = 1;
  std::shared_ptr<arrow::Array> input;
  if (batch[0].is_scalar()) {
    ARROW_ASSIGN_OR_RAISE(input, arrow::MakeArrayFromScalar(*batch[0].scalar, batch.length));
  } else {
    input = batch[0].array.ToArray();
  }
  std::vector<uint32_t> zeros(static_cast<size_t>(input->length()), 0);
  return Consume(s, *input, zeros.data());
}

arrow::Status ScalarMerge(cp::KernelContext* ctx, cp::KernelState&& other, cp::KernelState* dst) {
  auto* into = static_cast<AggregateState*>(dst);
  auto& from = static_cast<AggregateState&>(other);
  into->num_groups = from.num_groups = 1;
  const uint32_t zero = 0;
  return MergeStates(into, std::move(from), &zero);
}

template <bool kPartial>
arrow::Status ScalarFinalize(cp::KernelContext* ctx, arrow::Datum* out) {
  auto* s = static_cast<AggregateState*>(ctx->state());
  s->num_groups = 1;  // an aggregate of no rows still has its one group
  ARROW_ASSIGN_OR_RAISE(auto result, Finish(*s, kPartial));
  ARROW_ASSIGN_OR_RAISE(auto scalar, result->GetScalar(0));
  *out = scalar;
  return arrow::Status::OK();
}

cp::FunctionDoc Doc(const Bound& fn) {
  return cp::FunctionDoc(fn.signature.name, fn.where, {"args"});
}

arrow::Status AddAggregate(cp::FunctionRegistry* registry, const std::string& name,
                           const std::shared_ptr<const Bound>& fn, Step step) {
  const bool partial = step == Step::kPartial;
  const bool merge_input = step == Step::kMerge;
  const auto& in = merge_input ? fn->signature.state : fn->args_type;
  const auto& out = partial ? fn->signature.state : fn->signature.returns;
  cp::KernelInit init = [fn, merge_input](cp::KernelContext*, const cp::KernelInitArgs&)
      -> arrow::Result<std::unique_ptr<cp::KernelState>> { return InitAggregate(fn, merge_input); };

  auto scalar = std::make_shared<cp::ScalarAggregateFunction>(name, cp::Arity::Unary(), Doc(*fn));
  cp::ScalarAggregateKernel sk({cp::InputType(in)}, cp::OutputType(out), init, ScalarConsume,
                               ScalarMerge, partial ? ScalarFinalize<true> : ScalarFinalize<false>,
                               /*ordered=*/false);
  ARROW_RETURN_NOT_OK(scalar->AddKernel(std::move(sk)));
  ARROW_RETURN_NOT_OK(registry->AddFunction(std::move(scalar)));

  auto hash =
      std::make_shared<cp::HashAggregateFunction>("hash_" + name, cp::Arity::Binary(), Doc(*fn));
  cp::HashAggregateKernel hk({cp::InputType(in), cp::InputType(arrow::uint32())},
                             cp::OutputType(out), init, HashConsume, HashResize, HashMerge,
                             partial ? HashFinalize<true> : HashFinalize<false>,
                             /*ordered=*/false);
  ARROW_RETURN_NOT_OK(hash->AddKernel(std::move(hk)));
  return registry->AddFunction(std::move(hash));
}

struct Registered {
  std::mutex mutex;
  std::set<std::string> digests;
  std::map<std::string, std::string> by_name;                   // qualified name -> digest
  std::map<std::string, std::shared_ptr<const Bound>> windows;  // "ext:..." -> function
  std::map<std::string, std::shared_ptr<artifact::FunctionLibrary>> libraries;  // by digest
};

Registered& Libraries() {
  static auto* registered = new Registered();  // never destroyed, like the libraries
  return *registered;
}

arrow::Status RegisterLocked(Registered& r, const std::string& digest_hex,
                             const std::shared_ptr<artifact::FunctionLibrary>& library) {
  const auto& id = library->identity();
  if (auto it = r.by_name.find(id.qualified_name);
      it != r.by_name.end() && it->second != digest_hex) {
    return arrow::Status::Invalid("function library ", id.qualified_name, " ", digest_hex,
                                  " cannot join this session: it already has ", id.qualified_name,
                                  " ", it->second, " loaded");
  }
  if (r.digests.count(digest_hex)) return arrow::Status::OK();
  ARROW_RETURN_NOT_OK(EnsureComputeInitialized());
  auto* registry = cp::GetFunctionRegistry();
  for (size_t i = 0; i < id.functions.size(); ++i) {
    auto fn = std::make_shared<Bound>();
    fn->library = library;
    fn->entry = &library->entry(i);
    fn->signature = id.functions[i];
    arrow::FieldVector fields;
    for (size_t a = 0; a < fn->signature.arguments.size(); ++a) {
      fields.push_back(arrow::field("a" + std::to_string(a), fn->signature.arguments[a]));
    }
    fn->args_type = arrow::struct_(fields);
    fn->where = "function " + fn->signature.name + " (library " + id.qualified_name + " " +
                id.version + ", " + digest_hex + ")";
    const std::string name = LibraryFunctionName(digest_hex, fn->signature.name);
    if (fn->signature.kind == FunctionSignature::Kind::kScalar) {
      std::vector<cp::InputType> in;
      for (const auto& t : fn->signature.arguments) in.emplace_back(t);
      auto function = std::make_shared<cp::ScalarFunction>(
          name, cp::Arity(static_cast<int>(in.size())), Doc(*fn));
      cp::ScalarKernel kernel(std::move(in), cp::OutputType(fn->signature.returns), ScalarExec);
      kernel.null_handling = cp::NullHandling::COMPUTED_NO_PREALLOCATE;
      kernel.mem_allocation = cp::MemAllocation::NO_PREALLOCATE;
      auto state = std::make_shared<BoundState>();
      state->fn = fn;
      kernel.data = state;
      ARROW_RETURN_NOT_OK(function->AddKernel(std::move(kernel)));
      ARROW_RETURN_NOT_OK(registry->AddFunction(std::move(function)));
    } else if (fn->signature.kind == FunctionSignature::Kind::kWindow) {
      r.windows[name] = fn;
    } else {
      ARROW_RETURN_NOT_OK(AddAggregate(registry, name + kPartialSuffix, fn, Step::kPartial));
      ARROW_RETURN_NOT_OK(AddAggregate(registry, name + kMergeSuffix, fn, Step::kMerge));
      ARROW_RETURN_NOT_OK(AddAggregate(registry, name, fn, Step::kFull));
    }
  }
  r.digests.insert(digest_hex);
  r.by_name[id.qualified_name] = digest_hex;
  r.libraries[digest_hex] = library;
  return arrow::Status::OK();
}

}  // namespace

std::string LibraryFunctionName(const std::string& digest_hex, const std::string& function) {
  return std::string(kLibraryFunctionPrefix) + digest_hex + ":" + function;
}

std::optional<LibraryFunctionRef> ParseLibraryFunctionName(const std::string& full) {
  std::string name = full.rfind("hash_", 0) == 0 ? full.substr(5) : full;
  const std::string prefix = kLibraryFunctionPrefix;
  if (name.rfind(prefix, 0) != 0) return std::nullopt;
  name = name.substr(prefix.size());
  const size_t colon = name.find(':');
  if (colon != 64) return std::nullopt;  // a BLAKE3 digest in hex
  LibraryFunctionRef ref{name.substr(0, colon), name.substr(colon + 1)};
  for (const char* suffix : {kPartialSuffix, kMergeSuffix}) {
    const std::string s = suffix;
    if (ref.function.size() > s.size() &&
        ref.function.compare(ref.function.size() - s.size(), s.size(), s) == 0) {
      ref.function.resize(ref.function.size() - s.size());
    }
  }
  if (ref.function.empty() || ref.function.find(':') != std::string::npos) return std::nullopt;
  return ref;
}

arrow::Status RegisterFunctionLibrary(const std::string& digest_hex,
                                      const std::shared_ptr<artifact::FunctionLibrary>& library) {
  Registered& r = Libraries();
  std::lock_guard<std::mutex> lock(r.mutex);
  return RegisterLocked(r, digest_hex, library);
}

arrow::Result<std::shared_ptr<artifact::FunctionLibrary>> EnsureFunctionLibrary(
    const std::shared_ptr<storage::ObjectStore>& store, const std::string& cache_dir,
    const std::string& digest_hex) {
  ARROW_ASSIGN_OR_RAISE(auto digest, artifact::Digest::FromHex(digest_hex));
  artifact::ArtifactCache cache(store, cache_dir);
  ARROW_ASSIGN_OR_RAISE(auto verified,
                        cache.FetchVerified(digest, artifact::ArtifactKind::kFunctionLibrary));
  ARROW_ASSIGN_OR_RAISE(auto library, artifact::LoadVerifiedFunctionLibrary(verified));
  ARROW_RETURN_NOT_OK(RegisterFunctionLibrary(digest_hex, library));
  return library;
}

std::shared_ptr<artifact::FunctionLibrary> RegisteredLibrary(const std::string& digest_hex) {
  Registered& r = Libraries();
  std::lock_guard<std::mutex> lock(r.mutex);
  auto it = r.libraries.find(digest_hex);
  return it == r.libraries.end() ? nullptr : it->second;
}

std::map<std::string, std::string> RegisteredFunctionLibraries() {
  Registered& r = Libraries();
  std::lock_guard<std::mutex> lock(r.mutex);
  return r.by_name;
}

namespace {

arrow::Result<std::shared_ptr<const Bound>> WindowFunction(const std::string& name) {
  Registered& r = Libraries();
  std::lock_guard<std::mutex> lock(r.mutex);
  auto it = r.windows.find(name);
  if (it != r.windows.end()) return it->second;
  if (auto ref = ParseLibraryFunctionName(name)) {
    return arrow::Status::Invalid(MissingLibraryFunctionMessage(*ref));
  }
  return arrow::Status::Invalid("internal: ", name, " is not a library window function");
}

}  // namespace

arrow::Result<std::shared_ptr<arrow::DataType>> LibraryWindowType(const std::string& name) {
  ARROW_ASSIGN_OR_RAISE(auto fn, WindowFunction(name));
  return fn->signature.returns;
}

arrow::Result<std::shared_ptr<arrow::Array>> CallLibraryWindow(
    const std::string& name, const arrow::ArrayVector& args,
    const std::vector<int64_t>& peer_groups) {
  ARROW_ASSIGN_OR_RAISE(auto fn, WindowFunction(name));
  const auto rows = static_cast<int64_t>(peer_groups.size());
  if (args.size() != fn->signature.arguments.size()) {
    return arrow::Status::Invalid("internal: ", fn->where, " called with ", args.size(),
                                  " arguments");
  }
  ARROW_ASSIGN_OR_RAISE(auto packed, arrow::StructArray::Make(args, fn->args_type->fields()));
  if (packed->length() != rows) {
    return arrow::Status::Invalid("internal: ", fn->where, ": ", packed->length(), " rows and ",
                                  rows, " peer groups");
  }
  struct ArrowSchema args_schema {
  }, out_schema{};
  struct ArrowArray args_array {
  }, out_array{};
  ARROW_RETURN_NOT_OK(Export(*packed, &args_schema, &args_array));
  Call call;
  const int32_t rc = fn->entry->window(&call.host, &args_schema, &args_array, peer_groups.data(),
                                       rows, &out_schema, &out_array);
  return Receive(*fn, call, rc, &out_schema, &out_array, *fn->signature.returns, rows, "the call");
}

std::string MissingLibraryFunctionMessage(const LibraryFunctionRef& ref) {
  return "function " + ref.function + " of library " + ref.digest_hex +
         " is not available on this worker: the session spec does not list the library and "
         "this worker's session has not registered it";
}

}  // namespace sluice::plan
