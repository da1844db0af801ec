#include "storage/schema_message.h"

#include <arrow/api.h>
#include <gtest/gtest.h>

#include <cstring>

#include "storage/ipc_stream.h"

namespace sluice::storage {
namespace {

TEST(SchemaMessage, RoundTripsFieldsFlagsAndMetadata) {
  auto schema = arrow::schema(
      {arrow::field("a", arrow::int64(), false),
       arrow::field("b", arrow::list(arrow::struct_({arrow::field("c", arrow::utf8())})))},
      arrow::key_value_metadata({"k"}, {"v"}));
  auto bytes = SerializeSchemaMessage(*schema);
  ASSERT_TRUE(bytes.ok());
  auto back = ReadSchemaMessage(*bytes, "test");
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_TRUE((*back)->Equals(*schema, /*check_metadata=*/true));
}

TEST(SchemaMessage, RefusesWhatIsNotOneSchemaMessage) {
  auto bytes = SerializeSchemaMessage(*arrow::schema({arrow::field("a", arrow::int64())}));
  ASSERT_TRUE(bytes.ok());
  struct Case {
    std::string bytes, expected;
  };
  for (const Case& c : std::vector<Case>{
           {"", "lib.so: empty schema message"},
           {"not a message at all", "lib.so: not an Arrow IPC schema message"},
           {bytes->substr(0, bytes->size() / 2), "lib.so: not an Arrow IPC schema message"},
           {*bytes + "xxxxxxxx", "lib.so: 8 bytes after the schema message"}}) {
    auto schema = ReadSchemaMessage(c.bytes, "lib.so");
    ASSERT_FALSE(schema.ok()) << c.expected;
    EXPECT_NE(schema.status().message().find(c.expected), std::string::npos)
        << schema.status().message();
  }
}

TEST(SchemaMessage, RefusesARecordBatchMessage) {
  auto schema = arrow::schema({arrow::field("a", arrow::int64())});
  auto empty = arrow::MakeEmptyArray(arrow::int64()).ValueOrDie();
  auto stream = WriteIpcStream(schema, {arrow::RecordBatch::Make(schema, 0, {empty})});
  ASSERT_TRUE(stream.ok());
  // A stream is the schema message (8 bytes of framing and its metadata), the batch message
  // and an 8-byte end marker: keep the batch message alone.
  const std::string bytes = (*stream)->ToString();
  int32_t schema_length = 0;
  std::memcpy(&schema_length, bytes.data() + 4, 4);
  const std::string batch = bytes.substr(8 + static_cast<size_t>(schema_length));
  auto read = ReadSchemaMessage(batch.substr(0, batch.size() - 8), "lib.so");
  ASSERT_FALSE(read.ok());
  EXPECT_NE(read.status().message().find("lib.so: an Arrow IPC record batch message, not a "
                                         "schema message"),
            std::string::npos)
      << read.status().message();
}

}  // namespace
}  // namespace sluice::storage
