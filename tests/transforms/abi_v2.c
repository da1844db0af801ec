/* A library from the future: it claims ABI version 2, which this host must refuse by name. */
#include <stdint.h>
#include <stddef.h>

__attribute__((visibility("default"))) const uint32_t transform_batch_abi_version = 2;

__attribute__((visibility("default"))) int32_t transform_batch(const uint8_t* input, size_t len,
                                                               const void* host) {
  (void)input;
  (void)len;
  (void)host;
  return 0;
}
