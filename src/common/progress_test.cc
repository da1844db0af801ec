#include "common/progress.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

namespace sluice {
namespace {

// Captures what a Progress writes, through a real FILE*.
class Captured {
 public:
  Captured() : file_(open_memstream(&buf_, &size_)) {}
  ~Captured() {
    if (file_ != nullptr) std::fclose(file_);
    std::free(buf_);
  }
  FILE* file() { return file_; }
  std::string Text() {
    std::fflush(file_);
    return std::string(buf_, size_);
  }

 private:
  char* buf_ = nullptr;
  size_t size_ = 0;
  FILE* file_;
};

TEST(Progress, PlainLinesWithoutATerminal) {
  Captured out;
  {
    Progress::Options opts;
    opts.out = out.file();
    opts.total = 4;
    opts.unit = "objects";
    opts.tty = false;
    opts.line_interval = std::chrono::milliseconds(0);
    Progress p("submit", opts);
    p.Advance(1);
    p.Advance(3);
    EXPECT_EQ(p.done(), 4);
  }
  const std::string text = out.Text();
  EXPECT_EQ(text.find('\r'), std::string::npos) << text;
  EXPECT_NE(text.find("submit: 1/4 objects (25%)"), std::string::npos) << text;
  EXPECT_NE(text.find("submit: 4/4 objects (100%)"), std::string::npos) << text;
  EXPECT_NE(text.find(", done\n"), std::string::npos) << text;
}

TEST(Progress, PlainLinesAreThrottled) {
  Captured out;
  {
    Progress::Options opts;
    opts.out = out.file();
    opts.tty = false;
    opts.line_interval = std::chrono::hours(1);
    Progress p("hash", opts);
    for (int i = 0; i < 1000; ++i) p.Advance(1);
  }
  const std::string text = out.Text();
  // Only the final line: nothing was due within the hour.
  EXPECT_EQ(text, text.substr(0, text.find('\n') + 1)) << text;
  EXPECT_NE(text.find("hash: 1000 items"), std::string::npos) << text;
}

TEST(Progress, ShowsTheSecondRate) {
  Captured out;
  {
    Progress::Options opts;
    opts.out = out.file();
    opts.unit = "objects";
    opts.secondary_unit = "rows";
    opts.tty = false;
    Progress p("run", opts);
    p.Advance(2, 5000);
  }
  const std::string text = out.Text();
  EXPECT_NE(text.find("run: 2 objects, "), std::string::npos) << text;
  EXPECT_NE(text.find(" objects/s, "), std::string::npos) << text;
  EXPECT_NE(text.find(" rows/s, done"), std::string::npos) << text;
}

TEST(Progress, BarOnATerminal) {
  Captured out;
  {
    Progress::Options opts;
    opts.out = out.file();
    opts.total = 10;
    opts.tty = true;
    opts.redraw_interval = std::chrono::milliseconds(0);
    Progress p("run", opts);
    p.Advance(5);
  }
  const std::string text = out.Text();
  EXPECT_NE(text.find("\r\033[Krun [###############               ] 5/10"), std::string::npos)
      << text;
  EXPECT_EQ(text.back(), '\n');
}

}  // namespace
}  // namespace sluice
