// A function library that breaks every rule of the function ABI on purpose, written against the
// C ABI directly (the SDK would catch most of these first): the host must turn each into an
// error naming the function, never a crash.
#include <arrow/api.h>
#include <arrow/c/bridge.h>
#include <sluice/function_abi.h>

#include <cstring>

namespace {

void Release(struct ArrowSchema* s, struct ArrowArray* a) {
  if (a->release != nullptr) a->release(a);
  if (s->release != nullptr) s->release(s);
}

int32_t Emit(const std::shared_ptr<arrow::Array>& array, struct ArrowSchema* os,
             struct ArrowArray* oa) {
  return arrow::ExportArray(*array, oa, os).ok() ? SLUICE_FUNCTION_OK : SLUICE_FUNCTION_ERROR;
}

std::shared_ptr<arrow::Array> Doubles(int64_t n) {
  arrow::DoubleBuilder b;
  for (int64_t i = 0; i < n; ++i) (void)b.Append(static_cast<double>(i));
  return b.Finish().ValueOrDie();
}

// One row too many.
int32_t WrongLength(const sluice_function_host*, struct ArrowSchema* as, struct ArrowArray* aa,
                    int64_t n, struct ArrowSchema* os, struct ArrowArray* oa) {
  Release(as, aa);
  return Emit(Doubles(n + 1), os, oa);
}

// int64 where float64 is declared.
int32_t WrongType(const sluice_function_host*, struct ArrowSchema* as, struct ArrowArray* aa,
                  int64_t n, struct ArrowSchema* os, struct ArrowArray* oa) {
  Release(as, aa);
  arrow::Int64Builder b;
  for (int64_t i = 0; i < n; ++i) (void)b.Append(i);
  return Emit(b.Finish().ValueOrDie(), os, oa);
}

// Success without an array.
int32_t NoArray(const sluice_function_host*, struct ArrowSchema* as, struct ArrowArray* aa, int64_t,
                struct ArrowSchema*, struct ArrowArray*) {
  Release(as, aa);
  return SLUICE_FUNCTION_OK;
}

// Text whose offsets go backwards.
int32_t BadOffsets(const sluice_function_host*, struct ArrowSchema* as, struct ArrowArray* aa,
                   int64_t n, struct ArrowSchema* os, struct ArrowArray* oa) {
  Release(as, aa);
  auto offsets = arrow::AllocateBuffer((n + 1) * sizeof(int32_t)).ValueOrDie();
  auto* o = reinterpret_cast<int32_t*>(offsets->mutable_data());
  for (int64_t i = 0; i <= n; ++i) o[i] = static_cast<int32_t>(i == n ? 3 : (n - i) % 3);
  auto data = arrow::AllocateBuffer(3).ValueOrDie();
  std::memcpy(data->mutable_data(), "abc", 3);
  auto array = arrow::MakeArray(
      arrow::ArrayData::Make(arrow::utf8(), n, {nullptr, std::move(offsets), std::move(data)}, 0));
  return Emit(array, os, oa);
}

// A failure with a message of its own.
int32_t Refuses(const sluice_function_host* host, struct ArrowSchema* as, struct ArrowArray* aa,
                int64_t, struct ArrowSchema*, struct ArrowArray*) {
  Release(as, aa);
  const char message[] = "the value was not positive";
  host->set_error(host->ctx, message, sizeof(message) - 1);
  return SLUICE_FUNCTION_ERROR;
}

// An aggregate whose update forgets the new groups.
int32_t ShortUpdate(const sluice_function_host*, struct ArrowSchema* ss, struct ArrowArray* sa,
                    struct ArrowSchema* as, struct ArrowArray* aa, const uint32_t*, int64_t,
                    struct ArrowSchema* os, struct ArrowArray* oa) {
  Release(ss, sa);
  Release(as, aa);
  auto state = arrow::StructArray::Make({Doubles(0)}, std::vector<std::string>{"s"}).ValueOrDie();
  return Emit(state, os, oa);
}

int32_t MergeNothing(const sluice_function_host*, struct ArrowSchema* ss, struct ArrowArray* sa,
                     struct ArrowSchema* as, struct ArrowArray* aa, const uint32_t*, int64_t,
                     struct ArrowSchema*, struct ArrowArray*) {
  Release(ss, sa);
  Release(as, aa);
  return SLUICE_FUNCTION_ERROR;
}

int32_t FinalizeNothing(const sluice_function_host*, struct ArrowSchema* ss, struct ArrowArray* sa,
                        struct ArrowSchema*, struct ArrowArray*) {
  Release(ss, sa);
  return SLUICE_FUNCTION_ERROR;
}

// A window function that answers one row short of its partition.
int32_t ShortWindow(const sluice_function_host*, struct ArrowSchema* as, struct ArrowArray* aa,
                    const int64_t*, int64_t n, struct ArrowSchema* os, struct ArrowArray* oa) {
  Release(as, aa);
  return Emit(Doubles(n > 0 ? n - 1 : 0), os, oa);
}

const sluice_function_entry kEntries[] = {
    {"wrong_length", SLUICE_FUNCTION_SCALAR, WrongLength, nullptr, nullptr, nullptr, nullptr},
    {"wrong_type", SLUICE_FUNCTION_SCALAR, WrongType, nullptr, nullptr, nullptr, nullptr},
    {"no_array", SLUICE_FUNCTION_SCALAR, NoArray, nullptr, nullptr, nullptr, nullptr},
    {"bad_offsets", SLUICE_FUNCTION_SCALAR, BadOffsets, nullptr, nullptr, nullptr, nullptr},
    {"refuses", SLUICE_FUNCTION_SCALAR, Refuses, nullptr, nullptr, nullptr, nullptr},
    {"short_state", SLUICE_FUNCTION_AGGREGATE, nullptr, ShortUpdate, MergeNothing, FinalizeNothing,
     nullptr},
    {"short_window", SLUICE_FUNCTION_WINDOW, nullptr, nullptr, nullptr, nullptr, ShortWindow},
};
const sluice_function_table kTable = {SLUICE_FUNCTION_ABI_VERSION, sizeof(sluice_function_entry), 7,
                                      kEntries};

}  // namespace

extern "C" __attribute__((visibility("default"), used, section(SLUICE_FUNCTION_IDENTITY_SECTION)))
const char sluice_function_identity[] = SLUICE_FUNCTION_IDENTITY_MAGIC
    R"({"abi_version":1,"qualified_name":"garbage-functions","version":"1","functions":[)"
    R"({"name":"wrong_length","kind":"scalar","arguments":["g"],"returns":"g"},)"
    R"({"name":"wrong_type","kind":"scalar","arguments":["g"],"returns":"g"},)"
    R"({"name":"no_array","kind":"scalar","arguments":["g"],"returns":"g"},)"
    R"({"name":"bad_offsets","kind":"scalar","arguments":["g"],"returns":"u"},)"
    R"({"name":"refuses","kind":"scalar","arguments":["g"],"returns":"g"},)"
    R"({"name":"short_state","kind":"aggregate","arguments":["g"],"returns":"g",)"
    R"("state":[["s","g"]]},)"
    R"({"name":"short_window","kind":"window","arguments":["g"],"returns":"g"}]})";
extern "C" __attribute__((visibility("default"))) const uint32_t sluice_function_abi_version =
    SLUICE_FUNCTION_ABI_VERSION;
extern "C" __attribute__((visibility("default"))) const sluice_function_table* sluice_functions() {
  return &kTable;
}
