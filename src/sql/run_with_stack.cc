#include "sql/run_with_stack.h"

#include <pthread.h>

#include <cstring>
#include <exception>

namespace sluice::sql {

namespace {

struct Call {
  const std::function<void()>* fn;
  std::exception_ptr thrown;
};

void* Run(void* arg) {
  auto* call = static_cast<Call*>(arg);
  try {
    (*call->fn)();
  } catch (...) {
    call->thrown = std::current_exception();
  }
  return nullptr;
}

}  // namespace

arrow::Status RunWithStack(size_t stack_bytes, const std::function<void()>& fn) {
  pthread_attr_t attr;
  int rc = pthread_attr_init(&attr);
  if (rc == 0) {
    rc = pthread_attr_setstacksize(&attr, stack_bytes);
    Call call{&fn, nullptr};
    pthread_t thread;
    if (rc == 0) rc = pthread_create(&thread, &attr, Run, &call);
    pthread_attr_destroy(&attr);
    if (rc == 0) {
      pthread_join(thread, nullptr);
      if (call.thrown) std::rethrow_exception(call.thrown);
      return arrow::Status::OK();
    }
  }
  return arrow::Status::IOError("cannot start a thread with a ", stack_bytes >> 20,
                                " MiB stack: ", std::strerror(rc));
}

}  // namespace sluice::sql
