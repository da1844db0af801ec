/* A transform written in plain C against the frozen v1 ABI copy, with no SDK and no Arrow: it
 * hands its input stream back unchanged. It proves that a v1 library keeps loading. */
#include "../abi/transform_abi_v1.h"

__attribute__((visibility("default"))) const uint32_t transform_batch_abi_version = 1;

__attribute__((visibility("default"), used, section(SLUICE_TRANSFORM_V1_IDENTITY_SECTION)))
const char transform_batch_identity[] = SLUICE_TRANSFORM_V1_IDENTITY_MAGIC
    "{\"abi_version\":1,\"qualified_name\":\"test-frozen-v1\",\"version\":\"1.0.0\","
    "\"input_schema\":\"any\",\"output_schema\":\"any\"}";

__attribute__((visibility("default"))) int32_t transform_batch(
    const uint8_t* input, size_t len, const sluice_transform_host_v1* host) {
  if (host->abi_version < 1) {
    static const char msg[] = "host too old";
    host->set_error(host->ctx, msg, sizeof(msg) - 1);
    return SLUICE_TRANSFORM_V1_ERROR;
  }
  return host->emit(host->ctx, input, len) == 0 ? SLUICE_TRANSFORM_V1_OK
                                                : SLUICE_TRANSFORM_V1_ERROR;
}
