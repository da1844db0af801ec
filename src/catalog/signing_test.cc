#include "catalog/signing.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "catalog/pipeline_spec.h"

namespace sluice::catalog {
namespace {

namespace fs = std::filesystem;

fs::path TempDir(const std::string& name) {
  fs::path dir = fs::temp_directory_path() / ("sluice-keys-" + std::to_string(getpid()) + name);
  fs::remove_all(dir);
  return dir;
}

TEST(Signing, SaveLoadAndRefuseOverwrite) {
  const fs::path dir = TempDir("a");
  auto id = SigningIdentity::Generate();
  ASSERT_TRUE(id.ok());
  ASSERT_TRUE(id->Save(dir.string(), false).ok());
  struct stat st {};
  ASSERT_EQ(stat((dir / "signing.key").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);

  auto loaded = SigningIdentity::Load(dir.string());
  ASSERT_TRUE(loaded.ok()) << loaded.status().ToString();
  EXPECT_EQ(loaded->publisher_id(), id->publisher_id());
  EXPECT_EQ(loaded->publisher_id().rfind("ed25519:", 0), 0u);

  auto other = SigningIdentity::Generate();
  auto refused = other->Save(dir.string(), false);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.message().find("pass --force"), std::string::npos);
  EXPECT_EQ(SigningIdentity::Load(dir.string())->publisher_id(), id->publisher_id());
  ASSERT_TRUE(other->Save(dir.string(), true).ok());
  EXPECT_EQ(SigningIdentity::Load(dir.string())->publisher_id(), other->publisher_id());
  fs::remove_all(dir);
}

TEST(Signing, MissingIdentitySaysHowToCreateOne) {
  auto missing = SigningIdentity::Load(TempDir("none").string());
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("sluice auth keygen"), std::string::npos);
}

TEST(Signing, SignAndVerify) {
  auto id = SigningIdentity::Generate();
  std::vector<uint8_t> message = {1, 2, 3};
  auto sig = id->Sign(message);
  std::vector<uint8_t> pk(id->public_key().begin(), id->public_key().end());
  EXPECT_TRUE(VerifySignature(pk, message, sig));
  message[0] = 9;
  EXPECT_FALSE(VerifySignature(pk, message, sig));
  EXPECT_FALSE(VerifySignature(pk, message, {}));
}

TEST(PipelineSpec, CanonicalBytesAreStableAndAgreeWithCbor2) {
  PipelineSpec spec{"p", "[pipeline]\nname = \"p\"\n", "t", std::string(64, 'f')};
  auto a = EncodePipelineSpec(spec);
  EXPECT_EQ(a, EncodePipelineSpec(spec));
  auto back = DecodePipelineSpec(a);
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(*back, spec);
  // cbor2's canonical encoder must produce exactly our bytes.
  const fs::path file = TempDir("spec.cbor");
  std::ofstream(file, std::ios::binary)
      .write(reinterpret_cast<const char*>(a.data()), static_cast<std::streamsize>(a.size()));
  const std::string cmd =
      std::string(SLUICE_VENV_BIN) +
      "/python -c \"import cbor2,sys; b=open(sys.argv[1],'rb').read(); "
      "sys.exit(0 if cbor2.dumps(cbor2.loads(b), canonical=True)==b else 1)\" " +
      file.string();
  EXPECT_EQ(std::system(cmd.c_str()), 0) << cmd;
  fs::remove(file);
}

TEST(PipelineSpec, DecodingUntrustedBytesFailsCleanly) {
  EXPECT_FALSE(DecodePipelineSpec({0xff, 0x00}).ok());
  auto wrong = EncodePipelineSpec({"p", "m", "t", "d"});
  wrong[wrong.size() - 1] ^= 0x01;  // still CBOR, different digest text
  auto decoded = DecodePipelineSpec(wrong);
  EXPECT_TRUE(decoded.ok());
  std::vector<uint8_t> not_spec = {0xa1, 0x61, 0x61, 0x01};  // {"a": 1}
  auto st = DecodePipelineSpec(not_spec);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.status().message().find("'format'"), std::string::npos);
  // 200,000 nested arrays: refused before the recursive decoder could overflow the stack.
  std::vector<uint8_t> deep(200000, 0x81);
  deep.push_back(0x01);
  auto too_deep = DecodePipelineSpec(deep);
  ASSERT_FALSE(too_deep.ok());
  EXPECT_NE(too_deep.status().message().find("pipeline spec: nested deeper than"),
            std::string::npos)
      << too_deep.status().message();
}

}  // namespace
}  // namespace sluice::catalog
