#pragma once
// Timeline: a recorder of spans for --timeline, written at the end of the
// run as a Chrome trace-event file (JSON; it opens in Chromium's
// about:tracing and in Perfetto; share/doc/timeline.md). One process is
// one track group (pid = its rank); each thread that records is a track of
// its own (tid: a small number per thread), and Track makes named tracks
// that are no thread (what a server read from one worker). A span is a
// complete event ("ph": "X") named by what it is, its key and its version
// ("push conv1.weight v12") with args {key, version, step, bytes}.
//
// Recording is cheap: a span is a small record appended under a mutex; no
// string is made until ToJson. Times are microseconds of the system (wall)
// clock, so every process on one host shares one clock.
// Thread-safe.

#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "util/status.h"

namespace pstrain::trace {

class Timeline {
 public:
  /// What a span is. `what` must be a string that outlives the Timeline
  /// (a literal); key -1: none; version and step -1: none.
  struct Span {
    const char* what;
    int key = -1;
    int64_t version = -1;
    int64_t step = -1;
    uint64_t bytes = 0;
  };

  /// `pid`: the rank; `process_name`: its track group's name
  /// ("rank 1 (worker)").
  Timeline(int pid, std::string process_name);
  Timeline(const Timeline&) = delete;
  Timeline& operator=(const Timeline&) = delete;

  /// Microseconds since the epoch, of the system clock.
  static int64_t Now();
  /// The calling thread's track id (a small number, the same in every
  /// Timeline).
  static int ThisThread();

  /// Key k's name in span names; keys without one are named "key k".
  void SetKeyNames(std::vector<std::string> names);
  /// Names the calling thread's track ("training", "io").
  void NameThread(std::string name);
  /// A named track that is not a thread; returns its id for Record.
  int Track(std::string name);

  /// A span from `begin` to `end` (Now()'s microseconds) on track `tid`
  /// (0: the calling thread's).
  void Record(const Span& span, int64_t begin, int64_t end, int tid = 0);
  /// Spans recorded so far.
  size_t size() const;

  /// The trace: {"traceEvents": [...], "displayTimeUnit": "ms"}, with
  /// metadata events naming the process and each track.
  nlohmann::json ToJson() const;
  /// Writes ToJson() to `path`; kIOError when it cannot.
  [[nodiscard]] Status WriteFile(const std::string& path) const;

 private:
  struct Event {
    const char* what;
    int32_t key;
    int32_t tid;
    int64_t version;
    int64_t step;
    uint64_t bytes;
    int64_t begin;
    int64_t dur;
  };
  std::string NameOf(const Event& e) const;

  const int pid_;
  const std::string process_name_;
  mutable std::mutex mu_;
  std::vector<Event> events_;
  std::vector<std::pair<int, std::string>> tracks_;  // tid, name
  std::vector<std::string> key_names_;
  int next_track_ = 1000;
};

/// Records one span from its construction to End() or its destruction on
/// the calling thread's track; with a null Timeline, nothing.
class Scope {
 public:
  Scope(Timeline* timeline, const Timeline::Span& span)
      : timeline_(timeline), span_(span) {
    if (timeline_ != nullptr)
      begin_ = Timeline::Now();
  }
  ~Scope() { End(); }
  Scope(const Scope&) = delete;
  Scope& operator=(const Scope&) = delete;
  /// Ends the span now (later calls do nothing).
  void End() {
    if (timeline_ != nullptr)
      timeline_->Record(span_, begin_, Timeline::Now());
    timeline_ = nullptr;
  }

 private:
  Timeline* timeline_;
  Timeline::Span span_;
  int64_t begin_ = 0;
};

/// Merges the trace files `inputs` (each one process's) into one trace at
/// `output`. A missing input is skipped (a rank that never started);
/// kCorruption for one that is not a trace, kIOError when writing fails.
[[nodiscard]] Status MergeFiles(const std::vector<std::string>& inputs,
                                const std::string& output);

}  // namespace pstrain::trace
