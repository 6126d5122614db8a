#pragma once
// Registry: a process's Prometheus metrics, and their text exposition
// (Prometheus's text format 0.0.4,
// https://prometheus.io/docs/instrumenting/exposition_formats/). Counters,
// gauges and histograms are lock-free to update, so the training thread
// and the server's io thread record without waiting for a scrape; Render
// runs on the HTTP server's thread and reads them as they are.
//
// Every series carries the registry's labels (rank, role, job); a metric's
// name follows Prometheus's conventions (a pstrain_ prefix, base units,
// _total on counters), which the caller chooses. The metrics are owned by
// the Registry, and the pointers it hands out live as long as it does.
// Thread-safe.

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace pstrain::metrics {

/// A value that only grows (samples, bytes, seconds).
class Counter {
 public:
  /// REQUIRES: v >= 0 (a counter never goes down).
  void Add(double v);
  /// Raises the value to `v` when it is below it: a counter that mirrors a
  /// total kept elsewhere (a server's bytes).
  void RaiseTo(double v);
  double value() const { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<double> value_{0};
};

/// A value that goes up and down (version, loss, live workers).
class Gauge {
 public:
  void Set(double v) { value_.store(v, std::memory_order_relaxed); }
  double value() const { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<double> value_{0};
};

/// Observations counted into buckets by upper bound (Prometheus's `le`),
/// with their sum and count.
class Histogram {
 public:
  /// `bounds`: the buckets' upper bounds, ascending; +Inf is implicit.
  explicit Histogram(std::vector<double> bounds);
  void Observe(double v);
  /// Replaces every count: a histogram that mirrors counts kept elsewhere
  /// (the server's staleness by version). `counts[i]` is the number of
  /// observations equal to value i; sum and count follow from them.
  void SetFromValueCounts(const std::vector<uint64_t>& counts);
  const std::vector<double>& bounds() const { return bounds_; }
  /// Observations at or below each bound (cumulative), then the count.
  std::vector<uint64_t> Cumulative() const;
  double sum() const { return sum_.load(std::memory_order_relaxed); }

 private:
  const std::vector<double> bounds_;
  std::unique_ptr<std::atomic<uint64_t>[]> buckets_;  // bounds_.size() + 1
  std::atomic<double> sum_{0};
};

class Registry {
 public:
  Registry();
  ~Registry();
  Registry(const Registry&) = delete;
  Registry& operator=(const Registry&) = delete;

  /// Sets label `name` to `value` on every series (e.g. "job" once the job
  /// is known). Label values are escaped when rendered.
  void SetLabel(const std::string& name, const std::string& value);

  /// A new metric. `name` must match [a-zA-Z_:][a-zA-Z0-9_:]* and be new;
  /// `help` is one line. The pointer lives as long as the Registry.
  Counter* AddCounter(const std::string& name, const std::string& help);
  Gauge* AddGauge(const std::string& name, const std::string& help);
  Histogram* AddHistogram(const std::string& name, const std::string& help,
                          std::vector<double> bounds);

  /// Every metric, in the order added, in the text format: # HELP, # TYPE,
  /// then its series with the labels.
  std::string Render() const;

 private:
  struct Entry;
  Entry& Add(const std::string& name, const std::string& help,
             const char* type);

  mutable std::mutex mu_;  // guards labels_ and entries_ (not the values)
  std::map<std::string, std::string> labels_;
  std::vector<std::unique_ptr<Entry>> entries_;
};

/// `s` escaped for a label value: backslash, double quote and newline.
std::string EscapeLabelValue(const std::string& s);
/// A number as Prometheus reads it: "+Inf", "-Inf", "NaN", or the shortest
/// decimal that reads back as `v`.
std::string FormatValue(double v);

}  // namespace pstrain::metrics
