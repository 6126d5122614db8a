#include "metrics/registry.h"

#include <cmath>
#include <cstdio>
#include <regex>

#include "util/check.h"

namespace pstrain::metrics {

namespace {

// C++17 has no fetch_add on atomic<double>.
void AtomicAdd(std::atomic<double>* a, double v) {
  double old = a->load(std::memory_order_relaxed);
  while (!a->compare_exchange_weak(old, old + v, std::memory_order_relaxed)) {
  }
}

bool ValidName(const std::string& name) {
  static const std::regex re("[a-zA-Z_:][a-zA-Z0-9_:]*");
  return std::regex_match(name, re);
}

}  // namespace

void Counter::Add(double v) {
  AtomicAdd(&value_, v);
}

void Counter::RaiseTo(double v) {
  double old = value_.load(std::memory_order_relaxed);
  while (old < v &&
         !value_.compare_exchange_weak(old, v, std::memory_order_relaxed)) {
  }
}

Histogram::Histogram(std::vector<double> bounds)
    : bounds_(std::move(bounds)),
      buckets_(new std::atomic<uint64_t>[bounds_.size() + 1]) {
  for (size_t i = 0; i <= bounds_.size(); ++i)
    buckets_[i].store(0, std::memory_order_relaxed);
}

void Histogram::Observe(double v) {
  size_t i = 0;
  while (i < bounds_.size() && v > bounds_[i])
    ++i;
  buckets_[i].fetch_add(1, std::memory_order_relaxed);
  AtomicAdd(&sum_, v);
}

void Histogram::SetFromValueCounts(const std::vector<uint64_t>& counts) {
  std::vector<uint64_t> by_bucket(bounds_.size() + 1, 0);
  double sum = 0;
  size_t i = 0;
  for (size_t v = 0; v < counts.size(); ++v) {
    while (i < bounds_.size() && static_cast<double>(v) > bounds_[i])
      ++i;
    by_bucket[i] += counts[v];
    sum += static_cast<double>(v) * static_cast<double>(counts[v]);
  }
  for (size_t b = 0; b < by_bucket.size(); ++b)
    buckets_[b].store(by_bucket[b], std::memory_order_relaxed);
  sum_.store(sum, std::memory_order_relaxed);
}

std::vector<uint64_t> Histogram::Cumulative() const {
  std::vector<uint64_t> out(bounds_.size() + 1);
  uint64_t total = 0;
  for (size_t i = 0; i <= bounds_.size(); ++i) {
    total += buckets_[i].load(std::memory_order_relaxed);
    out[i] = total;
  }
  return out;
}

struct Registry::Entry {
  std::string name;
  std::string help;
  const char* type = "";
  std::unique_ptr<Counter> counter;
  std::unique_ptr<Gauge> gauge;
  std::unique_ptr<Histogram> histogram;
};

Registry::Registry() = default;
Registry::~Registry() = default;

void Registry::SetLabel(const std::string& name, const std::string& value) {
  PS_CHECK(ValidName(name)) << "label name " << name;
  std::lock_guard<std::mutex> lock(mu_);
  labels_[name] = value;
}

Registry::Entry& Registry::Add(const std::string& name, const std::string& help,
                               const char* type) {
  PS_CHECK(ValidName(name)) << "metric name " << name;
  std::lock_guard<std::mutex> lock(mu_);
  for (const auto& e : entries_)
    PS_CHECK(e->name != name) << "metric " << name << " added twice";
  entries_.push_back(std::make_unique<Entry>());
  Entry& e = *entries_.back();
  e.name = name;
  e.help = help;
  e.type = type;
  return e;
}

Counter* Registry::AddCounter(const std::string& name,
                              const std::string& help) {
  Entry& e = Add(name, help, "counter");
  e.counter = std::make_unique<Counter>();
  return e.counter.get();
}

Gauge* Registry::AddGauge(const std::string& name, const std::string& help) {
  Entry& e = Add(name, help, "gauge");
  e.gauge = std::make_unique<Gauge>();
  return e.gauge.get();
}

Histogram* Registry::AddHistogram(const std::string& name,
                                  const std::string& help,
                                  std::vector<double> bounds) {
  Entry& e = Add(name, help, "histogram");
  e.histogram = std::make_unique<Histogram>(std::move(bounds));
  return e.histogram.get();
}

std::string EscapeLabelValue(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '\\' || c == '"')
      out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out;
}

std::string FormatValue(double v) {
  if (std::isnan(v))
    return "NaN";
  if (std::isinf(v))
    return v > 0 ? "+Inf" : "-Inf";
  char buf[32];
  if (v == std::floor(v) && std::fabs(v) < 1e15) {  // counts: no exponent
    std::snprintf(buf, sizeof(buf), "%.0f", v);
    return buf;
  }
  for (int precision = 1; precision <= 17; ++precision) {
    std::snprintf(buf, sizeof(buf), "%.*g", precision, v);
    if (std::strtod(buf, nullptr) == v)
      break;
  }
  return buf;
}

namespace {

// {a="1",b="2"} with `extra` (le="...") last; "" when there are none.
std::string LabelSet(const std::map<std::string, std::string>& labels,
                     const std::string& extra) {
  std::string out;
  for (const auto& [k, v] : labels) {
    out += out.empty() ? "{" : ",";
    out += k + "=\"" + EscapeLabelValue(v) + "\"";
  }
  if (!extra.empty())
    out += (out.empty() ? "{" : ",") + extra;
  return out.empty() ? out : out + "}";
}

// HELP text escapes backslash and newline only.
std::string EscapeHelp(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '\\')
      out += "\\\\";
    else if (c == '\n')
      out += "\\n";
    else
      out += c;
  }
  return out;
}

}  // namespace

std::string Registry::Render() const {
  std::lock_guard<std::mutex> lock(mu_);
  const std::string plain = LabelSet(labels_, "");
  std::string out;
  for (const auto& e : entries_) {
    out += "# HELP " + e->name + " " + EscapeHelp(e->help) + "\n";
    out += "# TYPE " + e->name + " " + e->type + "\n";
    if (e->counter)
      out += e->name + plain + " " + FormatValue(e->counter->value()) + "\n";
    if (e->gauge)
      out += e->name + plain + " " + FormatValue(e->gauge->value()) + "\n";
    if (!e->histogram)
      continue;
    const Histogram& h = *e->histogram;
    const std::vector<uint64_t> cumulative = h.Cumulative();
    for (size_t i = 0; i <= h.bounds().size(); ++i) {
      const std::string le =
          i < h.bounds().size() ? FormatValue(h.bounds()[i]) : "+Inf";
      out += e->name + "_bucket" + LabelSet(labels_, "le=\"" + le + "\"") +
             " " + std::to_string(cumulative[i]) + "\n";
    }
    out += e->name + "_sum" + plain + " " + FormatValue(h.sum()) + "\n";
    out += e->name + "_count" + plain + " " +
           std::to_string(cumulative.back()) + "\n";
  }
  return out;
}

}  // namespace pstrain::metrics
