#include "catalog/libpq_library.h"

#include <dlfcn.h>

#include <mutex>

namespace sluice::catalog {

namespace {

template <typename F>
arrow::Status Resolve(void* handle, const std::string& soname, const char* name, F* out) {
  dlerror();
  void* symbol = dlsym(handle, name);
  if (symbol == nullptr) {
    const char* why = dlerror();
    return arrow::Status::IOError("PostgreSQL client library ", soname, " has no ", name, ": ",
                                  why != nullptr ? why : "null symbol");
  }
  *out = reinterpret_cast<F>(symbol);
  return arrow::Status::OK();
}

}  // namespace

arrow::Result<LibPq> LoadLibPqFrom(const std::string& soname) {
  // Never closed: PGconn objects and their callbacks live in the library until exit.
  void* handle = dlopen(soname.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* why = dlerror();
    return arrow::Status::IOError("cannot load ", soname,
                                  ", PostgreSQL's client library, which a postgresql:// registry "
                                  "needs (Debian package libpq5): ",
                                  why != nullptr ? why : "unknown reason");
  }
  LibPq pq;
  auto resolve_all = [&]() -> arrow::Status {
    ARROW_RETURN_NOT_OK(Resolve(handle, soname, "PQconnectdb", &pq.connectdb));
    ARROW_RETURN_NOT_OK(Resolve(handle, soname, "PQstatus", &pq.status));
    ARROW_RETURN_NOT_OK(Resolve(handle, soname, "PQerrorMessage", &pq.error_message));
    ARROW_RETURN_NOT_OK(Resolve(handle, soname, "PQfinish", &pq.finish));
    ARROW_RETURN_NOT_OK(Resolve(handle, soname, "PQsetNoticeProcessor", &pq.set_notice_processor));
    ARROW_RETURN_NOT_OK(Resolve(handle, soname, "PQexec", &pq.exec));
    ARROW_RETURN_NOT_OK(Resolve(handle, soname, "PQexecParams", &pq.exec_params));
    ARROW_RETURN_NOT_OK(Resolve(handle, soname, "PQresultStatus", &pq.result_status));
    ARROW_RETURN_NOT_OK(Resolve(handle, soname, "PQresultErrorMessage", &pq.result_error_message));
    ARROW_RETURN_NOT_OK(Resolve(handle, soname, "PQclear", &pq.clear));
    ARROW_RETURN_NOT_OK(Resolve(handle, soname, "PQntuples", &pq.ntuples));
    ARROW_RETURN_NOT_OK(Resolve(handle, soname, "PQnfields", &pq.nfields));
    ARROW_RETURN_NOT_OK(Resolve(handle, soname, "PQgetisnull", &pq.getisnull));
    ARROW_RETURN_NOT_OK(Resolve(handle, soname, "PQgetvalue", &pq.getvalue));
    ARROW_RETURN_NOT_OK(Resolve(handle, soname, "PQgetlength", &pq.getlength));
    ARROW_RETURN_NOT_OK(Resolve(handle, soname, "PQftype", &pq.ftype));
    return arrow::Status::OK();
  };
  if (auto status = resolve_all(); !status.ok()) {
    dlclose(handle);  // not the library we need: nothing of it is in use
    return status;
  }
  return pq;
}

arrow::Result<const LibPq*> LoadLibPq() {
  static std::once_flag once;
  static arrow::Result<LibPq> loaded = arrow::Status::IOError("internal: libpq not loaded");
  std::call_once(once, [] { loaded = LoadLibPqFrom(kLibPqSoname); });
  ARROW_RETURN_NOT_OK(loaded.status());
  return &loaded.ValueUnsafe();
}

}  // namespace sluice::catalog
