#pragma once
// One line of Criteo's click logs (the Display Advertising Challenge's
// "Kaggle" set and the Terabyte set): a label (0 or 1), 13 integer
// features and 26 categorical features written as hexadecimal, separated
// by tabs, any feature empty when missing. As the DLRM reference's data
// loader does (Naumov et al., 2019, arXiv:1906.00091, section 5;
// facebookresearch/dlrm), an integer x becomes log(1 + max(x, 0)) and a
// categorical value (0 when missing) becomes a row of its feature's own
// table, here by a hash modulo the table's rows.
//
// Stateless functions; thread-safe.

#include <array>
#include <cstdint>
#include <string_view>

namespace pstrain::data {

constexpr int kCriteoDense = 13;
constexpr int kCriteoSparse = 26;
constexpr int kCriteoFields = 1 + kCriteoDense + kCriteoSparse;

/// Rows of each of the 26 tables, in the features' order.
using CriteoTableRows = std::array<int64_t, kCriteoSparse>;

/// One parsed line.
struct CriteoSample {
  float label = 0;                            // 0 or 1
  std::array<float, kCriteoDense> dense{};    // log(1 + max(x, 0))
  std::array<int64_t, kCriteoSparse> rows{};  // row t in [0, rows[t])
};

/// Why a line was skipped (kNone: it was not).
enum class CriteoBad : uint8_t {
  kNone,
  kFieldCount,   // not 40 tab-separated fields
  kLabel,        // the label is not 0 or 1
  kInteger,      // an integer feature is not a decimal integer
  kCategorical,  // a categorical feature is not 1 to 16 hex digits
};
constexpr int kCriteoBadKinds = 5;

/// "field count", "label", "integer", "categorical" ("" for kNone).
const char* CriteoBadName(CriteoBad why);

/// The row of categorical value `value` of feature `table` (0..25) in a
/// table of `rows` rows (>= 1): a 64-bit mix (splitmix64's finalizer,
/// Steele et al., OOPSLA 2014) of the value and the feature, modulo rows,
/// so equal values of two features fall on unrelated rows.
int64_t CriteoRow(uint64_t value, int table, int64_t rows);

/// Parses `line` (without its newline; a trailing '\r' is ignored) into
/// `*out`, with table t's rows `rows[t]` (each >= 1). Returns kNone, or
/// why the line is bad, leaving `*out` unspecified.
CriteoBad ParseCriteoLine(std::string_view line, const CriteoTableRows& rows,
                          CriteoSample* out);

}  // namespace pstrain::data
