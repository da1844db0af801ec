#include "common/cbor_shape.h"

#include <vector>

namespace sluice {

arrow::Status CheckCborShape(const uint8_t* data, size_t size, int max_depth,
                             std::string_view what) {
  auto invalid = [what](auto&&... why) {
    return arrow::Status::Invalid(what, ": body is not valid CBOR (", why..., ")");
  };
  // Items still expected by each open array or map (a map's pairs count twice); -1 for an
  // indefinite-length container, which a break byte closes. Never deeper than max_depth.
  std::vector<int64_t> open;
  size_t pos = 0;
  for (;;) {
    if (pos >= size) return invalid("truncated at byte ", pos);
    const size_t start = pos;
    const uint8_t initial = data[pos++];
    const int major = initial >> 5;
    const int info = initial & 0x1f;
    bool complete = true;  // whether this header finishes an item
    if (initial == 0xff) {
      if (open.empty() || open.back() != -1) return invalid("a stray break at byte ", start);
      open.pop_back();  // the indefinite container is complete
    } else {
      uint64_t arg = static_cast<uint64_t>(info);
      if (info >= 24 && info <= 27) {
        const size_t width = size_t{1} << (info - 24);
        if (size - pos < width) return invalid("truncated at byte ", pos);
        arg = 0;
        for (size_t i = 0; i < width; ++i) arg = (arg << 8) | data[pos++];
      } else if (info >= 28 && info <= 30) {
        return invalid("a reserved header at byte ", start);
      }
      const bool indefinite = info == 31;
      if (indefinite && (major == 0 || major == 1 || major == 6)) {
        return invalid("an indefinite length on a number or tag at byte ", start);
      }
      const uint64_t remaining = size - pos;
      const bool container = major == 4 || major == 5 || (indefinite && major <= 3);
      if (container && open.size() >= static_cast<size_t>(max_depth)) {
        return arrow::Status::Invalid(what, ": nested deeper than ", max_depth, " levels (at byte ",
                                      start, ")");
      }
      switch (major) {
        case 2:
        case 3:  // byte or text string
          if (indefinite) {
            open.push_back(-1);
            complete = false;
          } else if (arg > remaining) {
            return invalid("a string at byte ", start, " declares ", arg, " bytes, but ", remaining,
                           " remain");
          } else {
            pos += static_cast<size_t>(arg);
          }
          break;
        case 4:
        case 5:  // array or map: every item takes at least one byte
          if (indefinite) {
            open.push_back(-1);
            complete = false;
          } else if (arg > remaining || (major == 5 && 2 * arg > remaining)) {
            return invalid(major == 4 ? "an array" : "a map", " at byte ", start, " declares ", arg,
                           major == 4 ? " items" : " pairs", ", but ", remaining, " bytes remain");
          } else if (arg > 0) {
            open.push_back(static_cast<int64_t>(major == 5 ? 2 * arg : arg));
            complete = false;
          }
          break;
        case 6:  // a tag qualifies the item after it
          complete = false;
          break;
        default:  // integers, simple values and floats: the argument was the whole payload
          break;
      }
    }
    if (!complete) continue;
    // The item is done: count it against its container, which may complete in turn.
    while (!open.empty() && open.back() > 0 && --open.back() == 0) open.pop_back();
    if (open.empty()) return arrow::Status::OK();  // trailing bytes are left to the decoder
  }
}

}  // namespace sluice
