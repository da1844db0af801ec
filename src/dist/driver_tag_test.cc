#include "dist/driver_tag.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <string>

#include "common/proc_stat.h"

namespace sluice::dist {
namespace {

TEST(DriverTag, TellsALiveDriverFromAGoneOneOnThisHost) {
  const std::string& mine = DriverTag();
  EXPECT_EQ(OwnerOf(mine), TagOwner::kAlive);
  const std::string host = mine.substr(0, mine.find('.'));
  // A process that ran and is gone, with its real start time.
  const pid_t child = fork();
  if (child == 0) {
    pause();
    _exit(0);
  }
  auto stat = ReadProcStat(child);
  ASSERT_TRUE(stat.has_value());
  const std::string tag =
      host + "." + std::to_string(child) + "." + std::to_string(stat->start_ticks);
  EXPECT_EQ(OwnerOf(tag), TagOwner::kAlive);
  kill(child, SIGKILL);
  waitpid(child, nullptr, 0);
  EXPECT_EQ(OwnerOf(tag), TagOwner::kGone);
  // This pid with another start time is another process: the tagged one is gone.
  EXPECT_EQ(OwnerOf(host + "." + std::to_string(getpid()) + ".1"), TagOwner::kGone);
  EXPECT_EQ(OwnerOf("00000000." + std::to_string(getpid()) + ".1"), TagOwner::kElsewhere);
  EXPECT_EQ(OwnerOf("0123abcd"), TagOwner::kMalformed);
  EXPECT_EQ(OwnerOf(host + ".x.1"), TagOwner::kMalformed);
}

}  // namespace
}  // namespace sluice::dist
