// Progress of a long command on stderr: on a terminal a bar redrawn in place;
// elsewhere (a log file, CI) one plain line per tenth of the work, so the log
// does not fill with carriage-return frames.
#pragma once

#include <unistd.h>

#include <cstddef>
#include <cstdio>

namespace needle::cli {

class ProgressLine {
 public:
  ProgressLine(const char* what, size_t total) : what_(what), total_(total), tty_(::isatty(2) != 0) {}

  // `done` of the total after `seconds`; `unit` names what is counted.
  void Update(size_t done, double seconds, const char* unit) {
    if (total_ == 0) return;
    const double eta = done ? seconds / double(done) * double(total_ - done) : 0.0;
    if (tty_) {
      const int width = 30, fill = int(width * done / total_);
      std::fprintf(stderr, "\r%s [%.*s%*s] %zu/%zu %s  %.0f s, ETA %.0f s ", what_, fill, "##############################",
                   width - fill, "", done, total_, unit, seconds, eta);
      return;
    }
    const size_t tenth = done * 10 / total_;
    if (tenth == last_tenth_) return;
    last_tenth_ = tenth;
    std::fprintf(stderr, "%s: %zu/%zu %s, %.0f s, ETA %.0f s\n", what_, done, total_, unit, seconds, eta);
  }
  // Ends the bar's line (nothing to end when the lines were plain).
  void Finish() const {
    if (tty_) std::fprintf(stderr, "\n");
  }

 private:
  const char* what_;
  size_t total_;
  bool tty_;
  size_t last_tenth_ = 0;
};

}  // namespace needle::cli
