#include "artifact/transform_identity.h"

#include <gtest/gtest.h>

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

TEST(TransformIdentity, Identifiers) {
  EXPECT_TRUE(IsValidIdentifier("sluice.examples.conversation.ConversationMessageGateway"));
  EXPECT_TRUE(IsValidIdentifier("conversation-message-extract"));
  EXPECT_FALSE(IsValidIdentifier(""));
  EXPECT_FALSE(IsValidIdentifier("quote\"inside"));
  EXPECT_FALSE(IsValidIdentifier(std::string(201, 'a')));
}

}  // namespace
}  // namespace sluice::artifact
