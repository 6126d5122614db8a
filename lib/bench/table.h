#pragma once
// A tiny column-aligned text table for `pstrain bench`'s human output, and
// the number formats its cells use. Pure functions; thread-safe.

#include <cstdint>
#include <string>
#include <vector>

namespace pstrain::bench {

using TableRow = std::vector<std::string>;

/// The header, a rule of '-' under it, then one line per row, each ending in
/// '\n'. Columns are separated by two spaces and as wide as their widest
/// cell (in bytes); the first column is left-aligned, the others
/// right-aligned. Trailing spaces are not written. A row shorter than the
/// header gets empty cells; cells beyond the header's count are dropped.
std::string FormatTable(const TableRow& header,
                        const std::vector<TableRow>& rows);

/// `value` with `decimals` digits after the point ("12.35"); "-" for a NaN.
std::string FixedDecimals(double value, int decimals);

/// A byte count in binary units, as `--sizes` takes them: "512 B", "4 KiB",
/// "4.8 MiB", "64 MiB", "1 GiB" (one decimal, dropped when it is 0).
std::string FormatSize(uint64_t bytes);

}  // namespace pstrain::bench
