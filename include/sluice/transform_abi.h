/* The batch transform C ABI, version 1.
 *
 * A batch transform is a shared library that takes one Arrow IPC stream and emits zero or more
 * Arrow IPC streams. Only plain C crosses this boundary: bytes, lengths and function pointers
 * (and, through the optional Arrow C data entry below, the Arrow C stream interface's structs),
 * never Arrow or C++ types, so a library built with another compiler or Arrow version still
 * works, and the same bytes can cross a pipe (a sandboxed subprocess) or WASM memory later.
 *
 * Rules that both sides keep:
 *   - No pointer crosses for the other side to free. The input bytes belong to the host and are
 *     valid only during the call; emit() copies the output bytes before it returns. (Through the
 *     Arrow C data entry, ownership follows the C data interface instead: each side calls the
 *     release callbacks of what it was given, and the host keeps the library loaded while it
 *     holds arrays the library made. Buffer sizes do not cross that interface: a library must
 *     not emit offsets past its own buffers, which the host cannot see.)
 *   - No C++ exception crosses. A library reports failure with set_error() and a non-zero return.
 *   - Zero outputs is a valid result.
 *   - The ABI only grows: new fields go at the end of structs, and v1 offsets never change
 *     (a frozen copy of v1 is compiled and loaded by the tests).
 *
 * Concurrency: the host may call transform_batch from several threads at once with distinct host
 * structs; a library must not keep mutable global state between calls. Callbacks of one host
 * struct are called only from the thread that called transform_batch.
 */
#ifndef SLUICE_TRANSFORM_ABI_H
#define SLUICE_TRANSFORM_ABI_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The ABI version this header describes. */
#define SLUICE_TRANSFORM_ABI_VERSION 1u
/* The same, as text, for the identity (see below). */
#define SLUICE_TRANSFORM_ABI_VERSION_TEXT "1"

/* Arrow's C stream interface, used by the optional Arrow C data entry below. Declared only, so
 * that this header stands alone: a library that implements the entry includes the definition
 * (sluice/arrow_c_data.h, or Arrow's arrow/c/abi.h). */
struct ArrowArrayStream;

/* Return values of transform_batch. */
#define SLUICE_TRANSFORM_OK 0
#define SLUICE_TRANSFORM_ERROR 1

/* What the host passes to a transform. */
typedef struct sluice_transform_host {
  /* The ABI version the host speaks (SLUICE_TRANSFORM_ABI_VERSION when it was built). */
  uint32_t abi_version;
  /* sizeof(sluice_transform_host) as the host knows it; later versions append fields. */
  uint32_t struct_size;
  /* Opaque host state, passed back to every callback. */
  void* ctx;
  /* Hands one complete Arrow IPC stream to the host, which copies it before returning.
   * Returns 0 when accepted; non-zero means the host refuses more output, and the transform
   * should stop and return SLUICE_TRANSFORM_ERROR. */
  int32_t (*emit)(void* ctx, const uint8_t* bytes, size_t len);
  /* Records an error message (UTF-8, not NUL-terminated); the last call wins. */
  void (*set_error)(void* ctx, const char* message, size_t len);
  /* --- Appended (Arrow C data): present when struct_size covers it. --- */
  /* Hands one output stream to the host as Arrow C stream (struct ArrowArrayStream of Arrow's C
   * stream interface, arrow/c/abi.h). The host takes the stream (moves it), reads every batch
   * before it returns, validates each one, and releases the stream. The arrays it keeps are
   * released later, possibly after the transform returned; the library stays loaded until then.
   * Returns 0 when accepted; non-zero as for emit. Outputs of emit and emit_arrow keep the order
   * in which they were emitted. */
  int32_t (*emit_arrow)(void* ctx, struct ArrowArrayStream* stream);
} sluice_transform_host;

/* The two symbols every transform library exports. */
#define SLUICE_TRANSFORM_ABI_VERSION_SYMBOL "transform_batch_abi_version"
#define SLUICE_TRANSFORM_BATCH_SYMBOL "transform_batch"

typedef int32_t (*sluice_transform_batch_fn)(const uint8_t* input, size_t len,
                                             const sluice_transform_host* host);

/* Optional, appended to version 1: the same transform over Arrow's C data interface, for a host
 * that runs the library in its own process. Nothing is encoded or copied on the way in or out.
 * The library takes the input stream (moves it, releases it); its arrays were validated by the
 * host, which is the process the library runs in. The host passes a host struct whose
 * struct_size covers emit_arrow, and may still receive outputs through emit. A host calls
 * transform_batch (bytes) for a library without this symbol, and whenever the input must cross
 * a process boundary. */
#define SLUICE_TRANSFORM_BATCH_ARROW_SYMBOL "transform_batch_arrow"
typedef int32_t (*sluice_transform_batch_arrow_fn)(struct ArrowArrayStream* input,
                                                   const sluice_transform_host* host);

/* The identity: static data that tools read from the ELF file without loading it.
 * It lives in its own section and is also exported as a symbol. Its bytes are the magic line
 * followed by one JSON object and a NUL:
 *   sluice-transform-identity/1\n
 *   {"abi_version":1,"qualified_name":"...","version":"...",
 *    "input_schema":"...","output_schema":"...",
 *    "input_arrow_schema":"<hex>","output_arrow_schema":"<hex>"}
 * input_schema and output_schema are schema ids ([A-Za-z0-9._-]), or "any" for whatever
 * arrives. input_arrow_schema and output_arrow_schema are the Arrow schemas of typed ids, as
 * the hex of an Arrow IPC schema message (what arrow::ipc::SerializeSchema and pyarrow's
 * Schema.serialize() write). They are optional, so libraries built before they existed still
 * load, but a source can only be parsed for a stage whose input_arrow_schema is present, and
 * the host checks every output stream against output_arrow_schema. "any" has neither.
 */
#define SLUICE_TRANSFORM_IDENTITY_SECTION "sluice_identity"
#define SLUICE_TRANSFORM_IDENTITY_SYMBOL "transform_batch_identity"
#define SLUICE_TRANSFORM_IDENTITY_MAGIC "sluice-transform-identity/1\n"

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* SLUICE_TRANSFORM_ABI_H */
