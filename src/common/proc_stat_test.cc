#include "common/proc_stat.h"

#include <gtest/gtest.h>
#include <sys/prctl.h>
#include <unistd.h>

namespace sluice {
namespace {

TEST(ProcStat, ReadsThisProcessEvenWithParenthesesInItsName) {
  char old_name[17] = {};
  prctl(PR_GET_NAME, old_name);
  // The command name is field 2 and may hold ") x (": fields count from the last ')'.
  prctl(PR_SET_NAME, "a) 1 2 (b)");
  auto stat = ReadProcStat(getpid());
  prctl(PR_SET_NAME, old_name);
  ASSERT_TRUE(stat.has_value());
  EXPECT_EQ(stat->ppid, getppid());
  EXPECT_EQ(stat->pgrp, getpgrp());
  EXPECT_EQ(stat->state, 'R');
  EXPECT_GT(stat->start_ticks, 0u);
  auto again = ReadProcStat(getpid());
  ASSERT_TRUE(again.has_value());
  EXPECT_EQ(again->start_ticks, stat->start_ticks);
}

TEST(ProcStat, NoSuchProcess) {
  EXPECT_FALSE(ReadProcStat(-1).has_value());
  EXPECT_FALSE(ReadProcStat(0).has_value());
  EXPECT_FALSE(ReadProcStat(1 << 30).has_value());
}

}  // namespace
}  // namespace sluice
