// Error conventions shared by every layer.
//
// sluice uses Arrow's Status / Result idiom. There are two classes of error:
//   - user and data errors (Invalid, IOError, TypeError, KeyError, ...) name the object, line,
//     column, stage or function at fault, so a user can fix their input;
//   - internal errors are bugs. They come only from SLUICE_INTERNAL_CHECK, their message starts
//     with "internal:", and no user input may ever reach one.
// Internal checks return a Status instead of aborting: a bug in one query must not take a
// worker or a host process down with it.
#pragma once

#include <arrow/status.h>

#include <string_view>

namespace sluice {

/// Returns `status` with `context` put in front of its message, keeping its code and detail.
/// For example AddContext(st, "object 'a/b.parquet'") turns "IOError: short read" into
/// "IOError: object 'a/b.parquet': short read". An OK status is returned unchanged.
arrow::Status AddContext(const arrow::Status& status, std::string_view context);

/// Builds an internal error: "internal: <what> (<file>:<line>)".
arrow::Status InternalError(std::string_view what, const char* file, int line);

}  // namespace sluice

/// Checks an invariant that no input can break. On failure the enclosing function returns an
/// internal error naming the condition and the source position.
#define SLUICE_INTERNAL_CHECK(cond)                                               \
  do {                                                                            \
    if (!(cond)) [[unlikely]] {                                                   \
      return ::sluice::InternalError("check failed: " #cond, __FILE__, __LINE__); \
    }                                                                             \
  } while (false)

/// Like ARROW_RETURN_NOT_OK, but puts `context` in front of the error message.
#define SLUICE_RETURN_NOT_OK_CTX(expr, context)           \
  do {                                                    \
    ::arrow::Status _sluice_st = (expr);                  \
    if (!_sluice_st.ok()) [[unlikely]] {                  \
      return ::sluice::AddContext(_sluice_st, (context)); \
    }                                                     \
  } while (false)
