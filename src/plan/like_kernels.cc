#include "plan/like_kernels.h"

#include <arrow/compute/api.h>
#include <arrow/compute/kernel.h>
#include <arrow/util/binary_view_util.h>
#include <arrow/util/bit_util.h>
#include <arrow/util/bitmap_generate.h>

#include <cstring>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace sluice::plan {

namespace {

namespace cp = arrow::compute;

// Whether kLikeFunction takes `options`: only literal text and '%'.
bool Takes(const cp::MatchSubstringOptions& options) {
  return !options.ignore_case && options.pattern.find_first_of("_\\") == std::string::npos;
}

// A pattern of literal pieces between '%'s: a prefix, pieces found in order, a suffix.
class LikeMatcher : public cp::KernelState {
 public:
  explicit LikeMatcher(const std::string& pattern) {
    std::vector<std::string> pieces;
    size_t start = 0;
    for (;;) {
      const size_t percent = pattern.find('%', start);
      pieces.push_back(pattern.substr(start, percent - start));
      if (percent == std::string::npos) break;
      start = percent + 1;
    }
    exact_ = pieces.size() == 1;
    prefix_ = pieces.front();
    if (exact_) return;
    suffix_ = pieces.back();
    for (size_t i = 1; i + 1 < pieces.size(); ++i) {
      if (!pieces[i].empty()) middle_.push_back(pieces[i]);
    }
  }

  bool Match(std::string_view s) const {
    if (exact_) return s == prefix_;
    if (s.size() < prefix_.size() + suffix_.size()) return false;
    if (s.substr(0, prefix_.size()) != prefix_) return false;
    if (s.substr(s.size() - suffix_.size()) != suffix_) return false;
    // Leftmost matches in order: a later piece then has the most room left.
    const char* at = s.data() + prefix_.size();
    const char* end = s.data() + s.size() - suffix_.size();
    for (const auto& piece : middle_) {
      const char* found = Find(at, end, piece);
      if (found == nullptr) return false;
      at = found + piece.size();
    }
    return true;
  }

  // The first `piece` in [at, end), or null. A short piece is found by its first byte (memchr)
  // and a compare, with no setup per row: on TPC-H Q13's comments (49 bytes on average) that
  // took two thirds of memmem's time, whose two-way search prepares each call. A long piece
  // keeps memmem, which stays linear where a first-byte search could compare at every byte.
  static const char* Find(const char* at, const char* end, const std::string& piece) {
    const size_t n = static_cast<size_t>(end - at);
    if (piece.size() > kShortPiece) {
      return static_cast<const char*>(memmem(at, n, piece.data(), piece.size()));
    }
    const size_t i = std::string_view(at, n).find(piece);
    return i == std::string_view::npos ? nullptr : at + i;
  }

  static constexpr size_t kShortPiece = 16;

 private:
  bool exact_ = false;
  std::string prefix_;
  std::string suffix_;
  std::vector<std::string> middle_;
};

arrow::Result<std::unique_ptr<cp::KernelState>> InitLike(cp::KernelContext*,
                                                         const cp::KernelInitArgs& args) {
  if (args.options == nullptr) {
    return arrow::Status::Invalid("internal: ", kLikeFunction, " needs MatchSubstringOptions");
  }
  const auto& options = static_cast<const cp::MatchSubstringOptions&>(*args.options);
  if (!Takes(options)) {
    return arrow::Status::Invalid("internal: ", kLikeFunction, " cannot match the pattern '",
                                  options.pattern, "'");
  }
  return std::make_unique<LikeMatcher>(options.pattern);
}

// Each row's answer into the output's bits, `value(i)` giving row i's string; a NULL row's bit
// is not read (the executor sets validity), so its bytes are not looked at.
template <typename Value>
void MatchRows(const LikeMatcher& matcher, const arrow::ArraySpan& in, arrow::ArraySpan* out,
               Value&& value) {
  int64_t i = 0;
  const bool nulls = in.GetNullCount() != 0;
  arrow::internal::GenerateBitsUnrolled(out->buffers[1].data, out->offset, in.length, [&] {
    const int64_t row = i++;
    return (!nulls || in.IsValid(row)) && matcher.Match(value(row));
  });
}

// MatchRows over a string column of `Offset` offsets (utf8, large_utf8).
template <typename Offset>
void MatchOffsetRows(const LikeMatcher& matcher, const arrow::ArraySpan& in,
                     arrow::ArraySpan* out) {
  const Offset* offsets = in.GetValues<Offset>(1);
  const char* data = reinterpret_cast<const char*>(in.buffers[2].data);
  MatchRows(matcher, in, out, [&](int64_t row) {
    return std::string_view(data + offsets[row],
                            static_cast<size_t>(offsets[row + 1] - offsets[row]));
  });
}

arrow::Status ExecLike(cp::KernelContext* ctx, const cp::ExecSpan& batch, cp::ExecResult* out) {
  const auto& matcher = *static_cast<const LikeMatcher*>(ctx->state());
  arrow::ArraySpan* result = out->array_span_mutable();
  if (batch[0].is_scalar()) {
    const auto& scalar = *batch[0].scalar;
    bool answer = false;
    if (scalar.is_valid) {
      const auto& binary = static_cast<const arrow::BaseBinaryScalar&>(scalar);
      answer = matcher.Match(std::string_view(*binary.value));
    }
    arrow::bit_util::SetBitsTo(result->buffers[1].data, result->offset, result->length, answer);
    return arrow::Status::OK();
  }
  const arrow::ArraySpan& in = batch[0].array;
  switch (in.type->id()) {
    case arrow::Type::STRING:
      MatchOffsetRows<int32_t>(matcher, in, result);
      return arrow::Status::OK();
    case arrow::Type::LARGE_STRING:
      MatchOffsetRows<int64_t>(matcher, in, result);
      return arrow::Status::OK();
    case arrow::Type::STRING_VIEW: {
      const auto* views = in.GetValues<arrow::BinaryViewType::c_type>(1);
      const auto buffers = in.GetVariadicBuffers();
      MatchRows(matcher, in, result, [&](int64_t row) {
        return arrow::util::FromBinaryView(views[row], buffers.data());
      });
      return arrow::Status::OK();
    }
    default:
      return arrow::Status::TypeError("internal: ", kLikeFunction, " of ", in.type->ToString());
  }
}

}  // namespace

arrow::Status RegisterLikeKernels(cp::FunctionRegistry* registry) {
  static const cp::FunctionDoc kDoc("LIKE of a pattern of literal text and '%'",
                                    "As match_like, by searching for the pieces.", {"strings"},
                                    "MatchSubstringOptions", /*options_required=*/true);
  auto function = std::make_shared<cp::ScalarFunction>(kLikeFunction, cp::Arity::Unary(), kDoc);
  for (const auto& type : {arrow::utf8(), arrow::large_utf8(), arrow::utf8_view()}) {
    cp::ScalarKernel kernel({cp::InputType(type->id())}, arrow::boolean(), ExecLike, InitLike);
    kernel.null_handling = cp::NullHandling::INTERSECTION;
    kernel.mem_allocation = cp::MemAllocation::PREALLOCATE;
    ARROW_RETURN_NOT_OK(function->AddKernel(std::move(kernel)));
  }
  return registry->AddFunction(std::move(function), /*allow_overwrite=*/true);
}

cp::Expression WithLikeKernels(const cp::Expression& expression) {
  const cp::Expression::Call* call = expression.call();
  if (call == nullptr) return expression;
  std::vector<cp::Expression> args;
  args.reserve(call->arguments.size());
  for (const auto& a : call->arguments) args.push_back(WithLikeKernels(a));
  std::string name = call->function_name;
  if (name == "match_like" && call->options != nullptr &&
      Takes(static_cast<const cp::MatchSubstringOptions&>(*call->options))) {
    name = kLikeFunction;
  }
  return cp::call(std::move(name), std::move(args), call->options);
}

}  // namespace sluice::plan
