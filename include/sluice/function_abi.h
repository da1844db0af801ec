/* The function library C ABI, version 1.
 *
 * A function library is a shared library that gives SQL scalar and aggregate functions. Arrays
 * cross as the Arrow C Data Interface's ArrowSchema and ArrowArray, so no C++ type crosses and a
 * library built with another compiler or Arrow version still works.
 *
 * Rules that both sides keep:
 *   - Ownership follows the C Data Interface: an ArrowSchema or ArrowArray passed in is moved to
 *     the callee, which calls its release callback exactly once; the callback is the producer's,
 *     so neither side ever frees memory the other allocated. Outputs are moved to the host the
 *     same way: the library fills *out_schema and *out and the host releases them.
 *   - group_ids and mapping are borrowed: valid only during the call.
 *   - No C++ exception crosses. A library reports failure with set_error() and a non-zero return.
 *   - The host checks every array it receives (type, length, ValidateFull) before anything reads
 *     it, so a library that returns garbage is an error naming the function.
 *   - The ABI only grows: new fields go at the end of structs.
 *
 * Concurrency: the host may call any function from several threads at once, with distinct host
 * structs; a library must not keep mutable global state between calls.
 */
#ifndef SLUICE_FUNCTION_ABI_H
#define SLUICE_FUNCTION_ABI_H

#include <stddef.h>
#include <stdint.h>

#include "arrow_c_data.h"

#ifdef __cplusplus
extern "C" {
#endif

#define SLUICE_FUNCTION_ABI_VERSION 1u
#define SLUICE_FUNCTION_ABI_VERSION_TEXT "1"

#define SLUICE_FUNCTION_OK 0
#define SLUICE_FUNCTION_ERROR 1

/* What a function is. */
#define SLUICE_FUNCTION_SCALAR 1u
#define SLUICE_FUNCTION_AGGREGATE 2u
#define SLUICE_FUNCTION_WINDOW 3u

/* What the host passes to every call. */
typedef struct sluice_function_host {
  /* The ABI version the host speaks. */
  uint32_t abi_version;
  /* sizeof(sluice_function_host) as the host knows it. */
  uint32_t struct_size;
  /* Opaque host state, passed back to every callback. */
  void* ctx;
  /* Records an error message (UTF-8, not NUL-terminated); the last call wins. */
  void (*set_error)(void* ctx, const char* message, size_t len);
} sluice_function_host;

/* A scalar function: `args` is a struct array with one child per argument, of the types the
 * identity declares, and `num_rows` rows (also when every argument is a literal). The result is
 * an array of the declared return type and num_rows rows. */
typedef int32_t (*sluice_scalar_fn)(const sluice_function_host* host,
                                    struct ArrowSchema* args_schema, struct ArrowArray* args,
                                    int64_t num_rows, struct ArrowSchema* out_schema,
                                    struct ArrowArray* out);

/* An aggregate keeps one row of state per group, in a struct array of the identity's state type,
 * so that a partial state can cross a shuffle and be merged on another worker.
 *
 * update: `state` has at most num_groups rows; groups at and beyond its length are new and start
 * empty. Row i of `args` (a struct array, one child per argument) belongs to group group_ids[i].
 * The result is the new state, num_groups rows. */
typedef int32_t (*sluice_aggregate_update_fn)(
    const sluice_function_host* host, struct ArrowSchema* state_schema, struct ArrowArray* state,
    struct ArrowSchema* args_schema, struct ArrowArray* args, const uint32_t* group_ids,
    int64_t num_groups, struct ArrowSchema* out_schema, struct ArrowArray* out);

/* merge: row i of `other` (partial states) goes into group mapping[i] of `state`, which has at
 * most num_groups rows as in update. The result is the merged state, num_groups rows. */
typedef int32_t (*sluice_aggregate_merge_fn)(
    const sluice_function_host* host, struct ArrowSchema* state_schema, struct ArrowArray* state,
    struct ArrowSchema* other_schema, struct ArrowArray* other, const uint32_t* mapping,
    int64_t num_groups, struct ArrowSchema* out_schema, struct ArrowArray* out);

/* finalize: one result per state row, of the declared return type. */
typedef int32_t (*sluice_aggregate_finalize_fn)(const sluice_function_host* host,
                                                struct ArrowSchema* state_schema,
                                                struct ArrowArray* state,
                                                struct ArrowSchema* out_schema,
                                                struct ArrowArray* out);

/* A window function: one partition's rows at a time, in the window's ORDER BY order. `args` is
 * a struct array with one child per argument and num_rows rows; peer_groups[i] numbers row i's
 * peer group (rows equal on the ORDER BY keys share one; 0, 1, 2, ... in order; all 0 without
 * an ORDER BY). The result is one value per row, of the declared return type. */
typedef int32_t (*sluice_window_fn)(const sluice_function_host* host,
                                    struct ArrowSchema* args_schema, struct ArrowArray* args,
                                    const int64_t* peer_groups, int64_t num_rows,
                                    struct ArrowSchema* out_schema, struct ArrowArray* out);

/* One function. Its name and kind must match the identity's entry of the same position. */
typedef struct sluice_function_entry {
  const char* name;
  uint32_t kind;
  sluice_scalar_fn scalar;               /* SLUICE_FUNCTION_SCALAR */
  sluice_aggregate_update_fn update;     /* SLUICE_FUNCTION_AGGREGATE */
  sluice_aggregate_merge_fn merge;       /* SLUICE_FUNCTION_AGGREGATE */
  sluice_aggregate_finalize_fn finalize; /* SLUICE_FUNCTION_AGGREGATE */
  sluice_window_fn window;               /* SLUICE_FUNCTION_WINDOW */
} sluice_function_entry;

typedef struct sluice_function_table {
  uint32_t abi_version;
  /* sizeof(sluice_function_entry) as the library knows it. */
  uint32_t entry_size;
  int64_t num_functions;
  const sluice_function_entry* functions;
} sluice_function_table;

/* Table providers. A library can also expose tables: a provider turns `options` (UTF-8 text
 * from CREATE EXTERNAL TABLE ... STORED AS PROVIDER lib.name LOCATION 'options', such as a store
 * prefix) into a schema, a sorted list of partitions, and a scan of one partition. The host
 * keeps what the provider said (the schema, the partitions and the options) in the plan, so a
 * worker scans its partitions with nothing from the driver's process.
 *
 * What the host offers a provider: the session's object store, read-only. Keys and bytes passed
 * to the callbacks are valid only during the call. */
typedef struct sluice_table_host {
  uint32_t abi_version;
  uint32_t struct_size;
  void* ctx;
  void (*set_error)(void* ctx, const char* message, size_t len);
  /* Calls each(each_ctx, key, len) for every object under `prefix`, sorted by key. Non-zero when
   * the store cannot be listed (the host records why). */
  int32_t (*list)(void* ctx, const char* prefix, size_t prefix_len,
                  void (*each)(void* each_ctx, const char* key, size_t key_len), void* each_ctx);
  /* Calls into(into_ctx, bytes, len) once with the whole object `key`. Non-zero when it cannot be
   * read. */
  int32_t (*read)(void* ctx, const char* key, size_t key_len,
                  void (*into)(void* into_ctx, const uint8_t* bytes, size_t len), void* into_ctx);
} sluice_table_host;

typedef struct sluice_table_provider_entry {
  const char* name;
  /* The table's columns, as a struct schema (one child per column). */
  int32_t (*schema)(const sluice_table_host* host, const char* options, size_t options_len,
                    struct ArrowSchema* out);
  /* The partitions, in a deterministic sorted order: each(each_ctx, partition, len) once per
   * partition. A partition is text the provider understands, such as an object key. */
  int32_t (*partitions)(const sluice_table_host* host, const char* options, size_t options_len,
                        void (*each)(void* each_ctx, const char* partition, size_t len),
                        void* each_ctx);
  /* A stream of the partition's rows with the columns `columns` (indexes into the schema, in
   * that order) and no others. */
  int32_t (*scan)(const sluice_table_host* host, const char* options, size_t options_len,
                  const char* partition, size_t partition_len, const int32_t* columns,
                  int64_t num_columns, struct ArrowArrayStream* out);
} sluice_table_provider_entry;

typedef struct sluice_table_provider_table {
  uint32_t abi_version;
  uint32_t entry_size;
  int64_t num_providers;
  const sluice_table_provider_entry* providers;
} sluice_table_provider_table;

/* The symbols every function library exports. */
#define SLUICE_FUNCTION_ABI_VERSION_SYMBOL "sluice_function_abi_version"
#define SLUICE_FUNCTION_TABLE_SYMBOL "sluice_functions"
typedef const sluice_function_table* (*sluice_function_table_fn)(void);
/* Exported only by a library with table providers. */
#define SLUICE_TABLE_PROVIDERS_SYMBOL "sluice_table_providers"
typedef const sluice_table_provider_table* (*sluice_table_providers_fn)(void);

/* The identity: static data that tools read from the ELF file without loading it, in its own
 * section and exported as a symbol. Its bytes are the magic line, one JSON object and a NUL
 * ("kind" is "scalar", "aggregate" or "window"):
 *   sluice-function-identity/1\n
 *   {"abi_version":1,"qualified_name":"...","version":"...","functions":[
 *     {"name":"net_revenue","kind":"scalar","arguments":["g","g"],"returns":"g"},
 *     {"name":"weighted_avg","kind":"aggregate","arguments":["g","g"],"returns":"g",
 *      "state":[["weighted_sum","g"],["weight","g"]]}]}
 * A library with table providers adds "tables":[{"name":"gateway_objects"}]; one with only
 * tables may list no functions.
 * Types are C Data Interface format strings ("g" float64, "l" int64, "u" utf8, "d:15,2"
 * decimal128(15, 2), "tdD" date32, "b" boolean). An aggregate's state is a struct whose fields
 * are the listed (name, format) pairs.
 */
#define SLUICE_FUNCTION_IDENTITY_SECTION "sluice_function_identity_section"
#define SLUICE_FUNCTION_IDENTITY_SYMBOL "sluice_function_identity"
#define SLUICE_FUNCTION_IDENTITY_MAGIC "sluice-function-identity/1\n"

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* SLUICE_FUNCTION_ABI_H */
