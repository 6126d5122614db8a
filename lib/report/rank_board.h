#pragma once
// RankBoard: `pstrain launch`'s live display on a terminal. One row per rank
// is redrawn in place from the children's JSON events (a progress bar with
// steps, samples/s, loss and ETA while training, then the summary), and any
// other line is printed above the rows, so that output from several ranks
// never garbles. Not thread-safe: one thread feeds it.

#include <functional>
#include <ostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace pstrain::report {

struct RankBoardOptions {
  /// The terminal. Borrowed: must outlive the board. REQUIRES: non-null.
  std::ostream* out = nullptr;
  /// Columns of the terminal; rows are cut to width - 1 so that none wraps
  /// (a wrapped row would break the redraw). Default: 80.
  int width = 80;
  /// Seconds on a monotonic clock, for the ETA. Default: steady_clock.
  std::function<double()> now;
};

class RankBoard {
 public:
  /// One row per label ("rank 0", "rank 1", ...), in this order.
  RankBoard(RankBoardOptions options, std::vector<std::string> labels);
  RankBoard(const RankBoard&) = delete;
  RankBoard& operator=(const RankBoard&) = delete;

  /// An event of row `row`, as a JSON Lines object with "event". A `step`
  /// ({step, total_steps, loss, samples_per_second}) sets the row to a bar;
  /// a `summary` or `error` sets it to its human line; any other event is
  /// printed above the rows, and shown in the row until its first step.
  /// Human lines leave out fields whose values are objects or arrays.
  /// REQUIRES: row < the number of labels.
  void Event(size_t row, const nlohmann::json& event);

  /// Prints "[label] line" above the rows (a child's stderr); `row` may be
  /// the number of labels, for a line of launch's own (printed as is).
  void Line(size_t row, const std::string& line);

  /// The row's text now, without the label (for tests).
  const std::string& RowText(size_t row) const { return rows_[row].text; }

  /// "[#####-----] 120/300 loss 0.4123 1234 samples/s ETA 0:12".
  static std::string Bar(double step, double total, double loss,
                         double samples_per_second, double eta_seconds);

 private:
  struct Row {
    std::string label;
    std::string text = "starting";
    bool stepped = false;
    double first_step = -1, first_time = 0;
  };
  std::string StepText(Row& row, const nlohmann::json& event);
  std::string Fit(const std::string& line) const;
  void Redraw(const std::string& above);

  RankBoardOptions options_;
  std::vector<Row> rows_;
  bool drawn_ = false;
};

}  // namespace pstrain::report
