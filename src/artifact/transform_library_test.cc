// Loading real transform libraries (built by tests/transforms) and reading them as ELF files.
#include "artifact/transform_library.h"

#include <gtest/gtest.h>

#include <fstream>

#include "../../tests/abi/transform_abi_v1.h"
#include "artifact/elf_file.h"

namespace sluice::artifact {
namespace {

// The live header may only grow at the end: every v1 field keeps its offset.
static_assert(offsetof(sluice_transform_host, abi_version) ==
              offsetof(sluice_transform_host_v1, abi_version));
static_assert(offsetof(sluice_transform_host, struct_size) ==
              offsetof(sluice_transform_host_v1, struct_size));
static_assert(offsetof(sluice_transform_host, ctx) == offsetof(sluice_transform_host_v1, ctx));
static_assert(offsetof(sluice_transform_host, emit) == offsetof(sluice_transform_host_v1, emit));
static_assert(offsetof(sluice_transform_host, set_error) ==
              offsetof(sluice_transform_host_v1, set_error));
static_assert(sizeof(sluice_transform_host) >= sizeof(sluice_transform_host_v1));

TEST(TransformLibrary, OpensAnSdkLibrary) {
  auto lib = TransformLibrary::Open(TEST_IDENTITY_SO);
  ASSERT_TRUE(lib.ok()) << lib.status().ToString();
  EXPECT_EQ((*lib)->abi_version(), 1u);
  EXPECT_EQ((*lib)->identity().qualified_name, "test-identity");
  EXPECT_EQ((*lib)->identity().version, "1.0.0");
  EXPECT_NE((*lib)->function(), nullptr);
}

TEST(TransformLibrary, OpensAFrozenV1Library) {
  auto lib = TransformLibrary::Open(TEST_FROZEN_V1_SO);
  ASSERT_TRUE(lib.ok()) << lib.status().ToString();
  EXPECT_EQ((*lib)->identity().qualified_name, "test-frozen-v1");
}

TEST(TransformLibrary, RefusesAnUnknownAbiVersionByName) {
  auto lib = TransformLibrary::Open(TEST_ABI_V2_SO);
  ASSERT_FALSE(lib.ok());
  EXPECT_NE(lib.status().message().find("speaks transform ABI version 2; this host speaks "
                                        "version 1"),
            std::string::npos)
      << lib.status().message();
  EXPECT_NE(lib.status().message().find(TEST_ABI_V2_SO), std::string::npos);
}

TEST(TransformLibrary, MissingFileIsNamed) {
  auto lib = TransformLibrary::Open("/nonexistent/libnothing.so");
  ASSERT_FALSE(lib.ok());
  EXPECT_NE(lib.status().message().find("transform library '/nonexistent/libnothing.so'"),
            std::string::npos);
}

TEST(ElfFile, ReadsSymbolsAndIdentityWithoutLoading) {
  auto elf = ElfFile::Read(TEST_IDENTITY_SO, SLUICE_TRANSFORM_IDENTITY_SECTION);
  ASSERT_TRUE(elf.ok()) << elf.status().ToString();
  EXPECT_TRUE(elf->is_shared_object);
  for (const char* sym :
       {"transform_batch", "transform_batch_abi_version", "transform_batch_identity"}) {
    EXPECT_TRUE(elf->exported_symbols.count(sym)) << sym;
  }
  // Hidden visibility keeps the SDK's internals out of the dynamic symbol table.
  for (const auto& sym : elf->exported_symbols) {
    EXPECT_EQ(sym.find("RunTransform"), std::string::npos) << sym;
  }
  ASSERT_TRUE(elf->section.has_value());
  auto from_elf = TransformIdentity::Parse(*elf->section, TEST_IDENTITY_SO);
  ASSERT_TRUE(from_elf.ok()) << from_elf.status().ToString();
  auto lib = TransformLibrary::Open(TEST_IDENTITY_SO);
  ASSERT_TRUE(lib.ok());
  EXPECT_EQ(*from_elf, (*lib)->identity());
}

TEST(ElfFile, LibraryWithoutIdentityHasNoSection) {
  auto elf = ElfFile::Read(TEST_ABI_V2_SO, SLUICE_TRANSFORM_IDENTITY_SECTION);
  ASSERT_TRUE(elf.ok()) << elf.status().ToString();
  EXPECT_FALSE(elf->section.has_value());
  EXPECT_TRUE(elf->exported_symbols.count("transform_batch"));
}

TEST(ElfFile, NonElfIsInvalidAndNamed) {
  const std::string path = ::testing::TempDir() + "/not-elf.so";
  std::ofstream(path) << "#!/bin/sh\necho not a library\n";
  auto elf = ElfFile::Read(path, SLUICE_TRANSFORM_IDENTITY_SECTION);
  ASSERT_FALSE(elf.ok());
  EXPECT_TRUE(elf.status().IsInvalid());
  EXPECT_NE(elf.status().message().find("'" + path + "' is not a readable ELF"), std::string::npos);
}

}  // namespace
}  // namespace sluice::artifact
