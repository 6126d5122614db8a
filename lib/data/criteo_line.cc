#include "data/criteo_line.h"

#include <charconv>
#include <cmath>

namespace pstrain::data {

namespace {

// The next tab-separated field of `*rest`, which loses it and its tab.
// Returns false when none is left.
bool NextField(std::string_view* rest, bool* more, std::string_view* field) {
  if (!*more)
    return false;
  const size_t tab = rest->find('\t');
  if (tab == std::string_view::npos) {
    *field = *rest;
    *more = false;
  } else {
    *field = rest->substr(0, tab);
    rest->remove_prefix(tab + 1);
  }
  return true;
}

bool ParseInteger(std::string_view field, float* out) {
  if (field.empty()) {
    *out = 0;  // missing: as the reference's loader, 0
    return true;
  }
  int64_t x = 0;
  const auto [end, ec] =
      std::from_chars(field.data(), field.data() + field.size(), x);
  if (ec != std::errc() || end != field.data() + field.size())
    return false;
  *out = static_cast<float>(std::log1p(static_cast<double>(x > 0 ? x : 0)));
  return true;
}

bool ParseHex(std::string_view field, uint64_t* out) {
  if (field.empty()) {
    *out = 0;
    return true;
  }
  if (field.size() > 16)
    return false;
  const auto [end, ec] =
      std::from_chars(field.data(), field.data() + field.size(), *out, 16);
  return ec == std::errc() && end == field.data() + field.size();
}

}  // namespace

const char* CriteoBadName(CriteoBad why) {
  switch (why) {
    case CriteoBad::kNone:
      return "";
    case CriteoBad::kFieldCount:
      return "field count";
    case CriteoBad::kLabel:
      return "label";
    case CriteoBad::kInteger:
      return "integer";
    case CriteoBad::kCategorical:
      return "categorical";
  }
  return "";
}

int64_t CriteoRow(uint64_t value, int table, int64_t rows) {
  uint64_t z = value + 0x9e3779b97f4a7c15ULL * static_cast<uint64_t>(table + 1);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  z ^= z >> 31;
  return static_cast<int64_t>(z % static_cast<uint64_t>(rows));
}

CriteoBad ParseCriteoLine(std::string_view line, const CriteoTableRows& rows,
                          CriteoSample* out) {
  if (!line.empty() && line.back() == '\r')
    line.remove_suffix(1);
  std::string_view rest = line, field;
  bool more = true;
  if (!NextField(&rest, &more, &field))
    return CriteoBad::kFieldCount;
  if (field != "0" && field != "1")
    return CriteoBad::kLabel;
  out->label = field == "1" ? 1.0f : 0.0f;
  for (int j = 0; j < kCriteoDense; ++j) {
    if (!NextField(&rest, &more, &field))
      return CriteoBad::kFieldCount;
    if (!ParseInteger(field, &out->dense[j]))
      return CriteoBad::kInteger;
  }
  for (int t = 0; t < kCriteoSparse; ++t) {
    if (!NextField(&rest, &more, &field))
      return CriteoBad::kFieldCount;
    uint64_t value = 0;
    if (!ParseHex(field, &value))
      return CriteoBad::kCategorical;
    out->rows[t] = CriteoRow(value, t, rows[t]);
  }
  return more ? CriteoBad::kFieldCount : CriteoBad::kNone;
}

}  // namespace pstrain::data
