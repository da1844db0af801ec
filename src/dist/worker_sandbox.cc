#include "dist/worker_sandbox.h"

#include <fcntl.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace sluice::dist {

namespace {

arrow::Status WriteProcFile(const char* path, const std::string& text) {
  const int fd = open(path, O_WRONLY | O_CLOEXEC);
  if (fd < 0) return arrow::Status::IOError("open ", path, ": ", strerror(errno));
  const ssize_t n = write(fd, text.data(), text.size());
  const int err = errno;
  close(fd);
  if (n != static_cast<ssize_t>(text.size())) {
    return arrow::Status::IOError("write ", path, ": ", strerror(err));
  }
  return arrow::Status::OK();
}

// A mount namespace of our own: directly when privileged, else in a user namespace that maps
// only our own uid and gid (so files we write keep their real owner).
arrow::Status EnterMountNamespace() {
  if (unshare(CLONE_NEWNS) == 0) return arrow::Status::OK();
  const uid_t uid = getuid();
  const gid_t gid = getgid();
  if (unshare(CLONE_NEWUSER | CLONE_NEWNS) != 0) {
    return arrow::Status::IOError("unshare(CLONE_NEWUSER | CLONE_NEWNS): ", strerror(errno));
  }
  ARROW_RETURN_NOT_OK(WriteProcFile("/proc/self/setgroups", "deny"));
  ARROW_RETURN_NOT_OK(
      WriteProcFile("/proc/self/uid_map", std::to_string(uid) + " " + std::to_string(uid) + " 1"));
  return WriteProcFile("/proc/self/gid_map",
                       std::to_string(gid) + " " + std::to_string(gid) + " 1");
}

}  // namespace

arrow::Status HidePaths(const std::vector<std::string>& paths) {
  if (paths.empty()) return arrow::Status::OK();
  ARROW_RETURN_NOT_OK(EnterMountNamespace());
  // Nothing we mount may propagate back to the host's namespace.
  if (mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) {
    return arrow::Status::IOError("making / private: ", strerror(errno));
  }
  for (const std::string& path : paths) {
    struct stat st {};
    if (stat(path.c_str(), &st) != 0) continue;  // nothing there to hide
    const int rc = S_ISDIR(st.st_mode)
                       ? mount("sluice-hidden", path.c_str(), "tmpfs",
                               MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC, "size=4k,mode=0500")
                       : mount("/dev/null", path.c_str(), nullptr, MS_BIND, nullptr);
    if (rc != 0) return arrow::Status::IOError("hiding '", path, "': ", strerror(errno));
  }
  return arrow::Status::OK();
}

}  // namespace sluice::dist
