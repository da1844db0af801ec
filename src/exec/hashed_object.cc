#include "exec/hashed_object.h"

#include <arrow/io/buffered.h>
#include <arrow/memory_pool.h>

#include "artifact/blake3_digest.h"

namespace sluice::exec {

namespace {

// Big enough that hashing and write(2) see large runs, small enough to stay in cache.
constexpr int64_t kBufferBytes = 1 << 20;

}  // namespace

// Hashes and counts what passes to the pending object's stream. Closing it does not close the
// target: the pending object does that on Commit, which also publishes it.
class HashedObjectWriter::HashingStream : public arrow::io::OutputStream {
 public:
  explicit HashingStream(arrow::io::OutputStream* target) : target_(target) {}

  arrow::Status Write(const void* data, int64_t nbytes) override {
    if (closed_) return arrow::Status::Invalid("write to a closed stream");
    hasher_.Update(data, static_cast<size_t>(nbytes));
    position_ += nbytes;
    return target_->Write(data, nbytes);
  }
  arrow::Status Write(const std::shared_ptr<arrow::Buffer>& data) override {
    return Write(data->data(), data->size());
  }
  arrow::Status Flush() override { return target_->Flush(); }
  arrow::Status Close() override {
    closed_ = true;
    return arrow::Status::OK();
  }
  bool closed() const override { return closed_; }
  arrow::Result<int64_t> Tell() const override { return position_; }

  int64_t size() const { return position_; }
  std::string Blake3Hex() const { return hasher_.Finalize().ToHex(); }

 private:
  arrow::io::OutputStream* target_;
  artifact::Blake3Hasher hasher_;
  int64_t position_ = 0;
  bool closed_ = false;
};

HashedObjectWriter::~HashedObjectWriter() = default;

arrow::Result<std::unique_ptr<HashedObjectWriter>> HashedObjectWriter::Open(
    storage::ObjectStore* store, const std::string& key) {
  std::unique_ptr<HashedObjectWriter> out(new HashedObjectWriter());
  ARROW_ASSIGN_OR_RAISE(out->pending_, store->Create(key));
  out->hashing_ = std::make_shared<HashingStream>(out->pending_->stream());
  ARROW_ASSIGN_OR_RAISE(out->stream_,
                        arrow::io::BufferedOutputStream::Create(
                            kBufferBytes, arrow::default_memory_pool(), out->hashing_));
  return out;
}

arrow::Result<OutputFile> HashedObjectWriter::Commit() {
  arrow::Status st = stream_->Close();  // flushes the buffer through the hash
  if (!st.ok()) {
    (void)pending_->Abort();
    return st;
  }
  ARROW_RETURN_NOT_OK(pending_->Commit());
  OutputFile file;
  file.key = pending_->key();
  file.bytes = hashing_->size();
  file.blake3 = hashing_->Blake3Hex();
  return file;
}

}  // namespace sluice::exec
