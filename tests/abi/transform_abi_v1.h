/* FROZEN copy of the v1 batch transform ABI (include/sluice/transform_abi.h at version 1).
 *
 * Never edit this file. A library compiled against it must keep loading and working in every
 * later host, the way ADBC keeps its 1.0 structs: tests compile a C library against this copy
 * and pin the field offsets of the live header against it. Names carry a _v1 suffix so that
 * both headers can be compared in one translation unit.
 */
#ifndef SLUICE_TRANSFORM_ABI_V1_FROZEN_H
#define SLUICE_TRANSFORM_ABI_V1_FROZEN_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct sluice_transform_host_v1 {
  uint32_t abi_version;
  uint32_t struct_size;
  void* ctx;
  int32_t (*emit)(void* ctx, const uint8_t* bytes, size_t len);
  void (*set_error)(void* ctx, const char* message, size_t len);
} sluice_transform_host_v1;

#define SLUICE_TRANSFORM_V1_OK 0
#define SLUICE_TRANSFORM_V1_ERROR 1
#define SLUICE_TRANSFORM_V1_IDENTITY_SECTION "sluice_identity"
#define SLUICE_TRANSFORM_V1_IDENTITY_MAGIC "sluice-transform-identity/1\n"

#ifdef __cplusplus
}
#endif

#endif
