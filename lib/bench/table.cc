#include "bench/table.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace pstrain::bench {

namespace {

void AppendLine(const TableRow& cells, const std::vector<size_t>& widths,
                std::string* out) {
  std::string line;
  for (size_t c = 0; c < widths.size(); ++c) {
    const std::string cell = c < cells.size() ? cells[c] : "";
    std::string pad(widths[c] - std::min(widths[c], cell.size()), ' ');
    if (c > 0)
      line += "  ";
    line += c == 0 ? cell + pad : pad + cell;
  }
  line.erase(line.find_last_not_of(' ') + 1);
  *out += line + "\n";
}

}  // namespace

std::string FormatTable(const TableRow& header,
                        const std::vector<TableRow>& rows) {
  std::vector<size_t> widths(header.size());
  for (size_t c = 0; c < header.size(); ++c)
    widths[c] = header[c].size();
  for (const TableRow& row : rows) {
    for (size_t c = 0; c < std::min(row.size(), widths.size()); ++c) {
      widths[c] = std::max(widths[c], row[c].size());
    }
  }
  std::string out;
  AppendLine(header, widths, &out);
  size_t rule = 0;
  for (size_t w : widths)
    rule += w;
  rule += widths.empty() ? 0 : 2 * (widths.size() - 1);
  out += std::string(rule, '-') + "\n";
  for (const TableRow& row : rows)
    AppendLine(row, widths, &out);
  return out;
}

std::string FixedDecimals(double value, int decimals) {
  if (std::isnan(value))
    return "-";
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.*f", decimals, value);
  return buf;
}

std::string FormatSize(uint64_t bytes) {
  static const char* const kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(bytes);
  int unit = 0;
  while (v >= 1024 && unit < 4) {
    v /= 1024;
    ++unit;
  }
  std::string text = FixedDecimals(v, unit == 0 ? 0 : 1);
  if (text.size() > 2 && text.compare(text.size() - 2, 2, ".0") == 0) {
    text.resize(text.size() - 2);
  }
  return text + " " + kUnits[unit];
}

}  // namespace pstrain::bench
