#include "common/progress.h"

#include <unistd.h>

#include <algorithm>
#include <cinttypes>

namespace sluice {

namespace {

bool DetectTty(FILE* out) { return out != nullptr && isatty(fileno(out)) == 1; }

// Formats a rate with a k/M suffix, e.g. "12.3k".
std::string HumanRate(double per_second) {
  char buf[32];
  if (per_second >= 1e6) {
    std::snprintf(buf, sizeof(buf), "%.1fM", per_second / 1e6);
  } else if (per_second >= 1e3) {
    std::snprintf(buf, sizeof(buf), "%.1fk", per_second / 1e3);
  } else {
    std::snprintf(buf, sizeof(buf), "%.0f", per_second);
  }
  return buf;
}

}  // namespace

Progress::Progress(std::string label, Options options)
    : label_(std::move(label)),
      options_(std::move(options)),
      tty_(options_.tty.value_or(DetectTty(options_.out))),
      start_(std::chrono::steady_clock::now()),
      last_draw_(start_) {}

Progress::~Progress() { Finish(); }

void Progress::Advance(int64_t n, int64_t secondary) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (finished_) return;
  done_ += n;
  secondary_ += secondary;
  const auto now = std::chrono::steady_clock::now();
  const auto interval = tty_ ? options_.redraw_interval : options_.line_interval;
  if (now - last_draw_ >= interval) {
    last_draw_ = now;
    DrawLocked(false);
  }
}

void Progress::Finish() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (finished_) return;
  finished_ = true;
  DrawLocked(true);
}

int64_t Progress::done() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return done_;
}

void Progress::DrawLocked(bool final_line) {
  if (options_.out == nullptr) return;
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  std::string rate = HumanRate(seconds > 0 ? done_ / seconds : 0.0) + " " + options_.unit + "/s";
  if (!options_.secondary_unit.empty()) {
    rate += ", " + HumanRate(seconds > 0 ? secondary_ / seconds : 0.0) + " " +
            options_.secondary_unit + "/s";
  }
  std::string counts = std::to_string(done_);
  if (options_.total >= 0) counts += "/" + std::to_string(options_.total);

  if (tty_) {
    std::string bar;
    if (options_.total > 0) {
      constexpr int kWidth = 30;
      const double frac = std::clamp(static_cast<double>(done_) / options_.total, 0.0, 1.0);
      const int filled = static_cast<int>(frac * kWidth);
      bar = "[" + std::string(filled, '#') + std::string(kWidth - filled, ' ') + "] ";
    }
    std::fprintf(options_.out, "\r\033[K%s %s%s %s, %s", label_.c_str(), bar.c_str(),
                 counts.c_str(), options_.unit.c_str(), rate.c_str());
    if (final_line) std::fprintf(options_.out, " %.1fs\n", seconds);
  } else {
    std::string pct;
    if (options_.total > 0) {
      pct = " (" + std::to_string(done_ * 100 / options_.total) + "%)";
    }
    std::fprintf(options_.out, "%s: %s %s%s, %s%s\n", label_.c_str(), counts.c_str(),
                 options_.unit.c_str(), pct.c_str(), rate.c_str(), final_line ? ", done" : "");
  }
  std::fflush(options_.out);
}

}  // namespace sluice
