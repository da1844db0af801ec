/* One transform, many builds: every build has the same qualified name, its own version
 * (1.0.<SLUICE_TEST_BUILD>), and code that reports which build ran. The loader tests load many
 * of them into one process and check that each pin runs its own bytes. */
#include <sluice/transform_abi.h>

#define SLUICE_STR2(x) #x
#define SLUICE_STR(x) SLUICE_STR2(x)

__attribute__((visibility("default"))) const uint32_t transform_batch_abi_version =
    SLUICE_TRANSFORM_ABI_VERSION;

__attribute__((visibility("default"), used, section(SLUICE_TRANSFORM_IDENTITY_SECTION)))
const char transform_batch_identity[] = SLUICE_TRANSFORM_IDENTITY_MAGIC
    "{\"abi_version\":1,\"qualified_name\":\"test-versioned\",\"version\":\"1.0." SLUICE_STR(
        SLUICE_TEST_BUILD) "\",\"input_schema\":\"any\",\"output_schema\":\"any\"}";

__attribute__((visibility("default"))) int32_t transform_batch(const uint8_t* input, size_t len,
                                                               const sluice_transform_host* host) {
  static const char kMessage[] = "test-versioned build " SLUICE_STR(SLUICE_TEST_BUILD);
  (void)input;
  (void)len;
  host->set_error(host->ctx, kMessage, sizeof(kMessage) - 1);
  return SLUICE_TRANSFORM_ERROR;
}
