#include "storage/snappy_codec.h"

#include <arrow/result.h>
#include <arrow/status.h>
#include <arrow/util/compression.h>
#include <dlfcn.h>
#include <snappy.h>

#include <atomic>
#include <memory>
#include <utility>

#include "common/status.h"

namespace sluice::storage {
namespace {

std::atomic<int64_t> decompressions{0};

// Arrow's snappy codec with Decompress done by libsnappy; everything else is Arrow's.
class LibsnappyCodec : public arrow::util::Codec {
 public:
  explicit LibsnappyCodec(std::unique_ptr<arrow::util::Codec> arrow_codec)
      : arrow_(std::move(arrow_codec)) {}

  // Untrusted bytes: libsnappy reads the length a buffer declares, checks it against the space
  // given, and refuses (without writing past it) a buffer that does not decode to that length.
  arrow::Result<int64_t> Decompress(int64_t input_len, const uint8_t* input,
                                    int64_t output_buffer_len, uint8_t* output_buffer) override {
    const char* in = reinterpret_cast<const char*>(input);
    const size_t in_len = static_cast<size_t>(input_len);
    size_t length = 0;
    if (input_len < 0 || !snappy::GetUncompressedLength(in, in_len, &length)) {
      return arrow::Status::IOError("corrupt snappy data: ", input_len,
                                    " bytes without a valid length");
    }
    if (output_buffer_len < 0 || length > static_cast<size_t>(output_buffer_len)) {
      return arrow::Status::IOError("snappy data decompresses to ", length,
                                    " bytes, more than the ", output_buffer_len, " expected");
    }
    if (!snappy::RawUncompress(in, in_len, reinterpret_cast<char*>(output_buffer))) {
      return arrow::Status::IOError("corrupt snappy data: ", input_len,
                                    " bytes that do not decompress to the ", length,
                                    " they declare");
    }
    decompressions.fetch_add(1, std::memory_order_relaxed);
    return static_cast<int64_t>(length);
  }

  arrow::Result<int64_t> Compress(int64_t input_len, const uint8_t* input,
                                  int64_t output_buffer_len, uint8_t* output_buffer) override {
    return arrow_->Compress(input_len, input, output_buffer_len, output_buffer);
  }
  int64_t MaxCompressedLen(int64_t input_len, const uint8_t* input) override {
    return arrow_->MaxCompressedLen(input_len, input);
  }
  arrow::Result<std::shared_ptr<arrow::util::Compressor>> MakeCompressor() override {
    return arrow_->MakeCompressor();
  }
  arrow::Result<std::shared_ptr<arrow::util::Decompressor>> MakeDecompressor() override {
    return arrow_->MakeDecompressor();
  }
  arrow::Compression::type compression_type() const override { return arrow_->compression_type(); }
  int minimum_compression_level() const override { return arrow_->minimum_compression_level(); }
  int maximum_compression_level() const override { return arrow_->maximum_compression_level(); }
  int default_compression_level() const override { return arrow_->default_compression_level(); }
  int compression_level() const override { return arrow_->compression_level(); }

 private:
  std::unique_ptr<arrow::util::Codec> arrow_;
};

using CreateFn = arrow::Result<std::unique_ptr<arrow::util::Codec>> (*)(
    arrow::Compression::type, const arrow::util::CodecOptions&);

// libarrow's Codec::Create: the next definition after this executable's in lookup order.
CreateFn ArrowCreate() {
  static const CreateFn create = reinterpret_cast<CreateFn>(
      dlsym(RTLD_NEXT, "_ZN5arrow4util5Codec6CreateENS_11Compression4typeERKNS0_12CodecOptionsE"));
  return create;
}

}  // namespace

int64_t LibsnappyDecompressions() { return decompressions.load(std::memory_order_relaxed); }

}  // namespace sluice::storage

// The definition that replaces libarrow's for every caller bound through a PLT (see the header).
arrow::Result<std::unique_ptr<arrow::util::Codec>> arrow::util::Codec::Create(
    arrow::Compression::type codec, const arrow::util::CodecOptions& options) {
  const sluice::storage::CreateFn create = sluice::storage::ArrowCreate();
  SLUICE_INTERNAL_CHECK(create != nullptr);  // libarrow defines it: the wheel links it in
  ARROW_ASSIGN_OR_RAISE(std::unique_ptr<arrow::util::Codec> made, create(codec, options));
  if (codec != arrow::Compression::SNAPPY) return made;
  return std::unique_ptr<arrow::util::Codec>(new sluice::storage::LibsnappyCodec(std::move(made)));
}
