/* A transform in plain C with the Arrow C data entry (transform_batch_arrow) and no Arrow
 * library: it ignores its input and emits one stream of one batch, a struct of one utf8 column
 * "s" with two rows, built from static data. With SLUICE_TEST_BAD_UTF8 its second string is not
 * UTF-8, which the host must refuse. The host tests also use
 * it to check that arrays the host keeps keep the library loaded: releasing them runs this code.
 * The Arrow C structures come with the ABI header (sluice/arrow_c_data.h). */
#include <stddef.h>
#include <stdint.h>
#include <sluice/arrow_c_data.h>
#include <sluice/transform_abi.h>

__attribute__((visibility("default"))) const uint32_t transform_batch_abi_version =
    SLUICE_TRANSFORM_ABI_VERSION;

__attribute__((visibility("default"), used, section(SLUICE_TRANSFORM_IDENTITY_SECTION)))
const char transform_batch_identity[] = SLUICE_TRANSFORM_IDENTITY_MAGIC
    "{\"abi_version\":1,\"qualified_name\":\"test-arrow-c\",\"version\":\"1.0.0\","
    "\"input_schema\":\"any\",\"output_schema\":\"any\"}";

#ifdef SLUICE_TEST_BAD_UTF8
static const char kChars[] = "abc\xff\xfe\xfd";
#else
static const char kChars[] = "abcdef";
#endif
static const int32_t kOffsets[] = {0, 3, 6};

/* Everything below is static: releasing only marks a struct released. */
static void ReleaseSchema(struct ArrowSchema* schema) { schema->release = NULL; }
static void ReleaseArray(struct ArrowArray* array) { array->release = NULL; }

static struct ArrowSchema column_schema = {"u", "s", NULL, 2, 0, NULL, NULL, ReleaseSchema, NULL};
static struct ArrowSchema* schema_children[] = {&column_schema};

static const void* column_buffers[] = {NULL, kOffsets, kChars};
static struct ArrowArray column_array = {2, 0, 0, 3, 0, column_buffers, NULL, NULL, ReleaseArray,
                                         NULL};
static struct ArrowArray* array_children[] = {&column_array};
static const void* struct_buffers[] = {NULL};

static int GetSchema(struct ArrowArrayStream* stream, struct ArrowSchema* out) {
  (void)stream;
  *out = (struct ArrowSchema){"+s", "", NULL, 0, 1, schema_children, NULL, ReleaseSchema, NULL};
  return 0;
}

static int GetNext(struct ArrowArrayStream* stream, struct ArrowArray* out) {
  int* calls = (int*)stream->private_data;
  if ((*calls)++ > 0) {
    out->release = NULL; /* the end */
    return 0;
  }
  *out = (struct ArrowArray){2, 0, 0, 1, 1, struct_buffers, array_children, NULL, ReleaseArray,
                             NULL};
  return 0;
}

static const char* LastError(struct ArrowArrayStream* stream) {
  (void)stream;
  return NULL;
}

static void ReleaseStream(struct ArrowArrayStream* stream) { stream->release = NULL; }

__attribute__((visibility("default"))) int32_t transform_batch(const uint8_t* input, size_t len,
                                                               const sluice_transform_host* host) {
  static const char kMessage[] = "test-arrow-c runs through transform_batch_arrow only";
  (void)input;
  (void)len;
  host->set_error(host->ctx, kMessage, sizeof(kMessage) - 1);
  return SLUICE_TRANSFORM_ERROR;
}

__attribute__((visibility("default"))) int32_t transform_batch_arrow(
    struct ArrowArrayStream* input, const sluice_transform_host* host) {
  int calls = 0;
  struct ArrowArrayStream out = {GetSchema, GetNext, LastError, ReleaseStream, &calls};
  if (input != NULL && input->release != NULL) input->release(input);
  if (host->emit_arrow(host->ctx, &out) != 0) return SLUICE_TRANSFORM_ERROR;
  if (out.release != NULL) out.release(&out);
  return SLUICE_TRANSFORM_OK;
}
