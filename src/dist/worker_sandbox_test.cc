#include "dist/worker_sandbox.h"

#include <gtest/gtest.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

namespace sluice::dist {
namespace {

namespace fs = std::filesystem;

constexpr int kNoNamespaces = 2;

std::string Slurp(const fs::path& path) {
  std::ifstream in(path);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

// Forks a child that (as `nobody` when `drop`) hides `keys` and `db`, then checks what it can
// still read. Returns its exit status: 0 when both are hidden.
int HideInChild(const fs::path& keys, const fs::path& db, bool drop) {
  const pid_t pid = fork();
  if (pid == 0) {
    if (drop && (setgid(65534) != 0 || setuid(65534) != 0)) _exit(3);
    // setuid() made us non-dumpable, which hides /proc/self/uid_map from us; an exec'd worker
    // is dumpable.
    if (drop) prctl(PR_SET_DUMPABLE, 1);
    if (!HidePaths({keys.string(), db.string(), "/nonexistent/is/skipped"}).ok()) {
      _exit(kNoNamespaces);
    }
    const bool key_hidden = !std::ifstream(keys / "signing.key").good();
    const bool db_hidden = Slurp(db).empty();
    _exit(key_hidden && db_hidden ? 0 : 1);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

TEST(HidePaths, CoversTheKeysAndTheRegistryInThisProcessOnly) {
  const fs::path dir = fs::temp_directory_path() / ("sluice-hide-" + std::to_string(getpid()));
  fs::create_directories(dir / "keys");
  std::ofstream(dir / "keys" / "signing.key") << "secret";
  std::ofstream(dir / "registry.db") << "rows";
  // Readable by anyone, so only the hiding can stop `nobody`.
  fs::permissions(dir, fs::perms::all & ~fs::perms::others_write & ~fs::perms::group_write);
  fs::permissions(dir / "keys", fs::perms::owner_all | fs::perms::group_read |
                                    fs::perms::group_exec | fs::perms::others_read |
                                    fs::perms::others_exec);
  // Privileged (a plain mount namespace) when we are root, and unprivileged (a user namespace)
  // as `nobody`; an unprivileged run covers the second case only.
  for (bool drop : {false, true}) {
    if (drop && getuid() != 0) continue;
    const int status = HideInChild(dir / "keys", dir / "registry.db", drop);
    if (status == kNoNamespaces) {
      GTEST_SKIP() << "this kernel or container refuses mount namespaces"
                   << (drop ? " to unprivileged users" : "");
    }
    EXPECT_EQ(status, 0) << (drop ? "as nobody" : "as ourselves");
  }
  EXPECT_EQ(Slurp(dir / "keys" / "signing.key"), "secret");
  EXPECT_EQ(Slurp(dir / "registry.db"), "rows");
  fs::remove_all(dir);
}

}  // namespace
}  // namespace sluice::dist
