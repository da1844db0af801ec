// libpq, PostgreSQL's client library, opened with dlopen the first time a PostgreSQL registry
// is opened rather than linked into sluice. Linking it made every sluice process (the driver and
// each worker) load libpq's ~20 dependencies (Kerberos, LDAP, SASL, GnuTLS, ...) at start:
// measured at 5.5 ms of a 16 ms process start, on every query, job and worker, although only a
// driver with a postgresql:// registry ever calls it.
//
// Thread-safety: LoadLibPq may be called from any thread; it loads once.
#pragma once

#include <arrow/result.h>
#include <libpq-fe.h>

#include <string>

namespace sluice::catalog {

/// The libpq functions the PostgreSQL registry calls, with libpq-fe.h's own signatures.
struct LibPq {
  decltype(&PQconnectdb) connectdb = nullptr;
  decltype(&PQstatus) status = nullptr;
  decltype(&PQerrorMessage) error_message = nullptr;
  decltype(&PQfinish) finish = nullptr;
  decltype(&PQsetNoticeProcessor) set_notice_processor = nullptr;
  decltype(&PQexec) exec = nullptr;
  decltype(&PQexecParams) exec_params = nullptr;
  decltype(&PQresultStatus) result_status = nullptr;
  decltype(&PQresultErrorMessage) result_error_message = nullptr;
  decltype(&PQclear) clear = nullptr;
  decltype(&PQntuples) ntuples = nullptr;
  decltype(&PQnfields) nfields = nullptr;
  decltype(&PQgetisnull) getisnull = nullptr;
  decltype(&PQgetvalue) getvalue = nullptr;
  decltype(&PQgetlength) getlength = nullptr;
  decltype(&PQftype) ftype = nullptr;
};

/// The library's soname: the one the Debian package libpq5 installs, as the linker would have
/// recorded it.
inline constexpr char kLibPqSoname[] = "libpq.so.5";

/// libpq's functions, loading the library on the first call. An IOError names the library, how
/// to install it, and the loader's reason when it cannot be opened or lacks a function.
arrow::Result<const LibPq*> LoadLibPq();

/// The same from `soname`, each call loading anew (for tests of the error).
arrow::Result<LibPq> LoadLibPqFrom(const std::string& soname);

}  // namespace sluice::catalog
