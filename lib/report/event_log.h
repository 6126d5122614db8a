#pragma once
// EventLog: the run's output. Each event becomes one JSON Lines object on
// `out` (with --json) and one human line on `err` (unless quiet). Thread-safe:
// one mutex orders all lines, and each line is written whole and flushed, so
// lines from concurrent callers never interleave.

#include <functional>
#include <iostream>
#include <memory>
#include <mutex>
#include <ostream>
#include <string>

#include <nlohmann/json.hpp>

namespace pstrain::report {

class RankBoard;

struct EventLogOptions {
  /// Write one JSON object per event to `out`. Default: false.
  bool json = false;
  /// Write no human lines except errors. Default: false.
  bool quiet = false;
  /// This process's rank, copied into every JSON event. Default: 0.
  int rank = 0;
  /// "server", "worker" or "launch"; empty for a command without a role
  /// (the human prefix is then just "pstrain: "). Default: empty.
  std::string role;
  /// Start human lines with "pstrain rank 1 (worker): ". Off when a parent
  /// (pstrain launch) prefixes each line itself. Default: true.
  bool prefix = true;
  /// JSON Lines sink. Borrowed: must outlive the EventLog. Default: std::cout.
  std::ostream* out = &std::cout;
  /// Human lines sink. Borrowed: must outlive the EventLog. Default: std::cerr.
  std::ostream* err = &std::cerr;
  /// > 0: `err` is a terminal this many columns wide, and the human output
  /// is a one-row live board (report/rank_board.h): step events redraw a
  /// progress bar in place, other lines print above it. 0 (default): plain
  /// lines. Ignored when quiet.
  int live_width = 0;
  /// Also hands every event, as the JSON object --json would write, to
  /// this (rank 0's live dashboard keeps them: report/event_history.h).
  /// Called on the emitting thread, outside the log's lock. Default: none.
  std::function<void(const nlohmann::json& event)> tap;
};

class EventLog {
 public:
  explicit EventLog(EventLogOptions options);
  ~EventLog();
  EventLog(const EventLog&) = delete;
  EventLog& operator=(const EventLog&) = delete;

  /// Emits `event` ("step", "eval", "epoch", "summary", "error", "listen",
  /// ...). With json: one line on out, {"event", "rank", "role", "time" (unix
  /// seconds, double), then the fields}. Unless quiet (errors always): one
  /// human line on err, "pstrain rank 1 (worker): " + FormatHuman(...);
  /// an "error" event reads "pstrain: error: <message>".
  /// REQUIRES: `fields` is an object (or null) without the keys event, rank,
  /// role or time. Strings that are not UTF-8 are written with U+FFFD.
  void Emit(const std::string& event, const nlohmann::json& fields);

  /// Human line only, unless quiet: "pstrain rank 1 (worker): message".
  void Info(const std::string& message);

  /// Emits an "error" event with fields "message" and "exit_status" (the
  /// process's exit code); the human line "pstrain: error: message" is
  /// written even when quiet.
  void Error(const std::string& message, int exit_status);

 private:
  std::string Prefix() const;
  // {event, rank, role, time, fields...}.
  template <typename Json>
  Json Object(const std::string& event, const nlohmann::json& fields) const;
  nlohmann::json EventObject(const std::string& event,
                             const nlohmann::json& fields) const;
  std::string JsonLine(const std::string& event,
                       const nlohmann::json& fields) const;
  // Writes `line` and a newline to `stream`, then flushes. REQUIRES: mu_ held.
  static void WriteLine(std::ostream* stream, const std::string& line);

  const EventLogOptions options_;
  std::mutex mu_;
  std::unique_ptr<RankBoard> board_;  // live_width > 0; guarded by mu_
};

}  // namespace pstrain::report
