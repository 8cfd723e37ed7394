#include "tools/tensorctl_format.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "proto/display_text.h"

namespace tensord {
namespace tensorctl {

Table::Table(std::vector<std::string> headers) {
  for (std::string& h : headers) {
    const bool right = !h.empty() && h[0] == '>';
    right_.push_back(right);
    headers_.push_back(right ? h.substr(1) : std::move(h));
  }
}

void Table::AddRow(std::vector<std::string> cells) {
  cells.resize(headers_.size());
  // Note [Client text]: cells show what clients chose (names, call sites).
  for (std::string& cell : cells) cell = EscapeClientText(cell);
  rows_.push_back(std::move(cells));
}

std::string Table::ToString() const {
  std::vector<size_t> width(headers_.size());
  for (size_t c = 0; c < headers_.size(); ++c) width[c] = headers_[c].size();
  for (const auto& row : rows_) {
    for (size_t c = 0; c < row.size(); ++c) {
      width[c] = std::max(width[c], row[c].size());
    }
  }
  std::string out;
  auto emit = [&](const std::vector<std::string>& cells) {
    std::string line;
    for (size_t c = 0; c < cells.size(); ++c) {
      const bool last = c + 1 == cells.size();
      const std::string pad(width[c] - cells[c].size(), ' ');
      if (right_[c]) {
        absl::StrAppend(&line, pad, cells[c]);
      } else {
        absl::StrAppend(&line, cells[c], last ? "" : pad);
      }
      if (!last) line += "  ";
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    absl::StrAppend(&out, line, "\n");
  };
  emit(headers_);
  for (const auto& row : rows_) emit(row);
  return out;
}

std::string JsonString(absl::string_view s) {
  std::string out = "\"";
  size_t pos = 0;
  while (pos < s.size()) {
    const size_t start = pos;
    const int32_t c = NextCodePoint(s, &pos);
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      case '\b':
        out += "\\b";
        break;
      case '\f':
        out += "\\f";
        break;
      case -1:  // not UTF-8: JSON text must be
        out += "\\ufffd";
        break;
      default:
        // Note [Client text]: valid JSON, and nothing a terminal acts on.
        if (IsDisplayControl(c)) {
          absl::StrAppendFormat(&out, "\\u%04x", c);
        } else {
          out.append(s.data() + start, pos - start);
        }
    }
  }
  out += "\"";
  return out;
}

JsonObject& JsonObject::Add(absl::string_view key, absl::string_view value) {
  return AddRaw(key, JsonString(value));
}
JsonObject& JsonObject::Add(absl::string_view key, int64_t value) {
  return AddRaw(key, absl::StrCat(value));
}
JsonObject& JsonObject::Add(absl::string_view key, uint64_t value) {
  return AddRaw(key, absl::StrCat(value));
}
JsonObject& JsonObject::Add(absl::string_view key, double value) {
  // JSON has no NaN/Infinity.
  return AddRaw(key, std::isfinite(value) ? absl::StrFormat("%.6g", value)
                                          : std::string("null"));
}
JsonObject& JsonObject::Add(absl::string_view key, bool value) {
  return AddRaw(key, value ? "true" : "false");
}
JsonObject& JsonObject::AddRaw(absl::string_view key, absl::string_view json) {
  fields_.emplace_back(std::string(key), std::string(json));
  return *this;
}

std::string JsonObject::ToString() const {
  std::string out = "{";
  for (size_t i = 0; i < fields_.size(); ++i) {
    absl::StrAppend(&out, i == 0 ? "" : ",", JsonString(fields_[i].first), ":",
                    fields_[i].second);
  }
  return out + "}";
}

std::string JsonArray(const std::vector<std::string>& items) {
  std::string out = "[";
  for (size_t i = 0; i < items.size(); ++i) {
    absl::StrAppend(&out, i == 0 ? "" : ",", items[i]);
  }
  return out + "]";
}

std::string BlockBar(const std::vector<BarSpan>& spans, int width) {
  uint64_t total = 0;
  for (const BarSpan& span : spans) total += span.size;
  if (width <= 0 || total == 0) return "";
  const size_t n = spans.size();
  std::string out;
  out.reserve(width);
  if (n <= static_cast<size_t>(width)) {
    // Floors of the exact shares, at least 1 each; the characters left go to
    // the largest remainders, and any excess from the minimum comes back
    // from the widest spans.
    std::vector<int64_t> chars(n);
    std::vector<double> remainder(n);
    int64_t used = 0;
    for (size_t i = 0; i < n; ++i) {
      const double exact = static_cast<double>(spans[i].size) * width / total;
      const double floor = std::floor(exact);
      chars[i] = std::max<int64_t>(1, static_cast<int64_t>(floor));
      remainder[i] = floor >= 1 ? exact - floor : -1;  // bumped: no extra
      used += chars[i];
    }
    while (used < width) {
      const size_t best = std::max_element(remainder.begin(), remainder.end()) -
                          remainder.begin();
      if (remainder[best] < 0) break;  // cannot happen; see the comment
      ++chars[best];
      remainder[best] = -1;
      ++used;
    }
    while (used > width) {
      --*std::max_element(chars.begin(), chars.end());
      --used;
    }
    for (size_t i = 0; i < n; ++i) out.append(chars[i], spans[i].glyph);
    return out;
  }
  // More spans than characters: character c covers bytes
  // [c*total/width, (c+1)*total/width); 128-bit products cannot overflow.
  using u128 = unsigned __int128;
  size_t i = 0;
  uint64_t span_begin = 0;  // offset of spans[i]
  for (int c = 0; c < width; ++c) {
    const uint64_t lo = static_cast<uint64_t>(u128{total} * c / width);
    const uint64_t hi = static_cast<uint64_t>(u128{total} * (c + 1) / width);
    while (span_begin + spans[i].size <= lo) span_begin += spans[i++].size;
    uint64_t best_bytes = 0;
    char glyph = spans[i].glyph;
    uint64_t begin = span_begin;
    for (size_t j = i; j < n && begin < hi; begin += spans[j++].size) {
      const uint64_t overlap =
          std::min(hi, begin + spans[j].size) - std::max(lo, begin);
      if (overlap > best_bytes) {
        best_bytes = overlap;
        glyph = spans[j].glyph;
      }
    }
    out += glyph;
  }
  return out;
}

std::string Percent(double fraction) {
  return std::isfinite(fraction) ? absl::StrFormat("%.1f%%", fraction * 100)
                                 : std::string("-");
}

std::string HumanBytes(uint64_t bytes) {
  static constexpr const char* kUnits[] = {"B",   "KiB", "MiB",
                                           "GiB", "TiB", "PiB"};
  if (bytes < 1024) return absl::StrCat(bytes, " B");
  double value = static_cast<double>(bytes);
  int unit = 0;
  while (value >= 1024 && unit < 5) {
    value /= 1024;
    ++unit;
  }
  // Two calls: absl checks a format string at compile time, so it must be a
  // literal (clang refuses a conditional one).
  return value < 10 ? absl::StrFormat("%.1f %s", value, kUnits[unit])
                    : absl::StrFormat("%.0f %s", value, kUnits[unit]);
}

std::string HumanDuration(double seconds) {
  if (!(seconds >= 0)) return "-";
  const int64_t s = static_cast<int64_t>(seconds);
  if (s < 60) return absl::StrCat(s, "s");
  if (s < 3600) return absl::StrCat(s / 60, "m", s % 60, "s");
  if (s < 86400) return absl::StrCat(s / 3600, "h", (s % 3600) / 60, "m");
  return absl::StrCat(s / 86400, "d", (s % 86400) / 3600, "h");
}

}  // namespace tensorctl
}  // namespace tensord
