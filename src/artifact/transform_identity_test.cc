#include "artifact/transform_identity.h"

#include <arrow/api.h>
#include <gtest/gtest.h>

#include <cctype>

#include "common/hex.h"
#include "storage/schema_message.h"

namespace sluice::artifact {
namespace {

const std::string kGood =
    "sluice-transform-identity/1\n{\"abi_version\":1,\"qualified_name\":\"conv-extract\","
    "\"version\":\"0.1.0\",\"input_schema\":\"a.In\",\"output_schema\":\"a.Out\"}";

TEST(TransformIdentity, ParsesWithOrWithoutTrailingNul) {
  for (std::string bytes : {kGood, kGood + std::string(1, '\0') + "junk after"}) {
    auto id = TransformIdentity::Parse(bytes, "lib.so");
    ASSERT_TRUE(id.ok()) << id.status().ToString();
    EXPECT_EQ(id->abi_version, 1u);
    EXPECT_EQ(id->qualified_name, "conv-extract");
    EXPECT_EQ(id->version, "0.1.0");
    EXPECT_EQ(id->input_schema, "a.In");
    EXPECT_EQ(id->output_schema, "a.Out");
  }
}

TEST(TransformIdentity, ErrorsNameTheLibraryAndField) {
  struct Case {
    std::string bytes, expect;
  };
  for (const Case& c : std::vector<Case>{
           {"nope", "lib.so: identity does not start with 'sluice-transform-identity/1'"},
           {"sluice-transform-identity/1\n[1]", "lib.so: identity is not a JSON object"},
           {"sluice-transform-identity/1\n{\"abi_version\":\"1\"}", "'abi_version' is missing"},
           {"sluice-transform-identity/1\n{\"abi_version\":1,\"qualified_name\":\"x\"}",
            "field 'version' is missing"},
           {"sluice-transform-identity/1\n{\"abi_version\":1,\"qualified_name\":\"a b\","
            "\"version\":\"1\",\"input_schema\":\"i\",\"output_schema\":\"o\"}",
            "field 'qualified_name' value 'a b' is not a valid identifier"}}) {
    auto id = TransformIdentity::Parse(c.bytes, "lib.so");
    ASSERT_FALSE(id.ok()) << c.bytes;
    EXPECT_NE(id.status().message().find(c.expect), std::string::npos) << id.status().message();
  }
}

std::string SchemaHex(const arrow::Schema& schema) {
  std::string bytes = storage::SerializeSchemaMessage(schema).ValueOrDie();
  return HexEncode(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
}

std::string WithSchemas(const std::string& input_id, const std::string& extra) {
  return "sluice-transform-identity/1\n{\"abi_version\":1,\"qualified_name\":\"t\","
         "\"version\":\"1\",\"input_schema\":\"" +
         input_id + "\",\"output_schema\":\"any\"" + extra + "}";
}

TEST(TransformIdentity, CarriesArrowSchemasAsIpcHex) {
  auto in = arrow::schema({arrow::field("id", arrow::int64(), false),
                           arrow::field("tags", arrow::list(arrow::utf8()))});
  auto id = TransformIdentity::Parse(
      WithSchemas("my.In", ",\"input_arrow_schema\":\"" + SchemaHex(*in) + "\""), "lib.so");
  ASSERT_TRUE(id.ok()) << id.status().ToString();
  ASSERT_NE(id->input_arrow_schema, nullptr);
  EXPECT_TRUE(id->input_arrow_schema->Equals(*in, /*check_metadata=*/true));
  EXPECT_EQ(id->input_schema_ipc, storage::SerializeSchemaMessage(*in).ValueOrDie());
  EXPECT_EQ(id->output_arrow_schema, nullptr);  // `any`
  EXPECT_TRUE(id->output_schema_ipc.empty());

  // Upper-case hex reads the same.
  std::string upper = SchemaHex(*in);
  for (char& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  auto id2 = TransformIdentity::Parse(
      WithSchemas("my.In", ",\"input_arrow_schema\":\"" + upper + "\""), "lib.so");
  ASSERT_TRUE(id2.ok()) << id2.status().ToString();
  EXPECT_EQ(*id, *id2);
}

TEST(TransformIdentity, WithoutArrowSchemasAsAbiV1LibrariesAre) {
  auto id = TransformIdentity::Parse(kGood, "lib.so");
  ASSERT_TRUE(id.ok()) << id.status().ToString();
  EXPECT_EQ(id->input_arrow_schema, nullptr);
  EXPECT_EQ(id->output_arrow_schema, nullptr);
}

TEST(TransformIdentity, BadArrowSchemasAreRefusedByName) {
  const std::string good_hex = SchemaHex(*arrow::schema({arrow::field("a", arrow::int8())}));
  struct Case {
    std::string input_id, extra, expect;
  };
  for (const Case& c : std::vector<Case>{
           {"my.In", ",\"input_arrow_schema\":\"abc\"",
            "lib.so: identity field 'input_arrow_schema' is not hex: odd length"},
           {"my.In", ",\"input_arrow_schema\":\"zz\"",
            "lib.so: identity field 'input_arrow_schema' is not hex: a character outside"},
           {"my.In", ",\"input_arrow_schema\":7",
            "lib.so: identity field 'input_arrow_schema' is not a string"},
           {"my.In", ",\"input_arrow_schema\":\"00112233\"",
            "lib.so: identity field 'input_arrow_schema': not an Arrow IPC schema message"},
           {"my.In", ",\"input_arrow_schema\":\"" + good_hex.substr(0, 40) + "\"",
            "lib.so: identity field 'input_arrow_schema': not an Arrow IPC schema message"},
           {"any", ",\"input_arrow_schema\":\"" + good_hex + "\"",
            "lib.so: identity field 'input_arrow_schema' is set, but input_schema is 'any'"},
           {"my.In", ",\"output_arrow_schema\":\"" + good_hex + "\"",
            "lib.so: identity field 'output_arrow_schema' is set, but output_schema is 'any'"}}) {
    auto id = TransformIdentity::Parse(WithSchemas(c.input_id, c.extra), "lib.so");
    ASSERT_FALSE(id.ok()) << c.extra;
    EXPECT_NE(id.status().message().find(c.expect), std::string::npos) << id.status().message();
  }
}

TEST(TransformIdentity, Identifiers) {
  EXPECT_TRUE(IsValidIdentifier("sluice.examples.conversation.ConversationMessageGateway"));
  EXPECT_TRUE(IsValidIdentifier("conversation-message-extract"));
  EXPECT_FALSE(IsValidIdentifier(""));
  EXPECT_FALSE(IsValidIdentifier("quote\"inside"));
  EXPECT_FALSE(IsValidIdentifier(std::string(201, 'a')));
}

}  // namespace
}  // namespace sluice::artifact
