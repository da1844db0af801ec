// Progress reporting for long work (runs, uploads, data generation).
//
// On a terminal it redraws one bar in place; anywhere else (CI logs, pipes, files) it prints
// plain lines at most once per `line_interval`, plus a final line, so logs stay readable and
// small. All methods are thread-safe: worker threads may Advance one reporter concurrently.
#pragma once

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <mutex>
#include <optional>
#include <string>

namespace sluice {

class Progress {
 public:
  struct Options {
    /// Where to draw; stderr keeps stdout clean for results.
    FILE* out = stderr;
    /// Total units, or -1 when unknown (then no percentage is shown).
    int64_t total = -1;
    /// Unit name shown after counts, e.g. "objects" or "rows".
    std::string unit = "items";
    /// A second quantity whose rate is shown too, e.g. "rows" while counting objects; empty for
    /// none.
    std::string secondary_unit;
    /// Forces TTY or plain mode; by default it is detected with isatty().
    std::optional<bool> tty;
    /// Minimum time between two plain lines.
    std::chrono::milliseconds line_interval{5000};
    /// Minimum time between two redraws of the bar.
    std::chrono::milliseconds redraw_interval{100};
  };

  Progress(std::string label, Options options);
  ~Progress();

  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;

  /// Adds `n` done units (and `secondary` of the second quantity) and redraws if enough time
  /// has passed.
  void Advance(int64_t n, int64_t secondary = 0);
  /// Draws the final state once; later calls do nothing. The destructor calls it.
  void Finish();

  int64_t done() const;

 private:
  void DrawLocked(bool final_line);

  const std::string label_;
  const Options options_;
  const bool tty_;
  const std::chrono::steady_clock::time_point start_;
  mutable std::mutex mutex_;
  int64_t done_ = 0;
  int64_t secondary_ = 0;
  bool finished_ = false;
  std::chrono::steady_clock::time_point last_draw_;
};

}  // namespace sluice
