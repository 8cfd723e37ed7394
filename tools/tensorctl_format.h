// Output helpers for tensorctl: aligned text tables, hand-written JSON and
// human-readable sizes and durations. Pure functions; no I/O.
#ifndef TENSORD_TOOLS_TENSORCTL_FORMAT_H_
#define TENSORD_TOOLS_TENSORCTL_FORMAT_H_

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/string_view.h"

namespace tensord {
namespace tensorctl {

// A table printed with every column padded to its widest cell, two spaces
// between columns. Columns whose header starts with '>' are right-aligned
// (the '>' is not printed).
class Table {
 public:
  explicit Table(std::vector<std::string> headers);
  void AddRow(std::vector<std::string> cells);
  bool empty() const { return rows_.empty(); }
  std::string ToString() const;

 private:
  std::vector<std::string> headers_;
  std::vector<bool> right_;
  std::vector<std::vector<std::string>> rows_;
};

// `s` as a JSON string literal, quotes included: RFC 8259 escaping, and
// \uXXXX for every code point of IsDisplayControl (Note [Client text],
// proto/display_text.h) and U+FFFD for bytes that are not UTF-8, so the
// output is valid JSON that cannot drive the terminal showing it.
std::string JsonString(absl::string_view s);

// Builds one JSON object, keys in insertion order.
class JsonObject {
 public:
  JsonObject& Add(absl::string_view key, absl::string_view value);
  JsonObject& Add(absl::string_view key, const char* value) {
    return Add(key, absl::string_view(value));
  }
  JsonObject& Add(absl::string_view key, int64_t value);
  JsonObject& Add(absl::string_view key, uint64_t value);
  JsonObject& Add(absl::string_view key, int value) {
    return Add(key, static_cast<int64_t>(value));
  }
  JsonObject& Add(absl::string_view key, double value);
  JsonObject& Add(absl::string_view key, bool value);
  // `json` must already be valid JSON (an object, array, ...).
  JsonObject& AddRaw(absl::string_view key, absl::string_view json);
  std::string ToString() const;

 private:
  std::vector<std::pair<std::string, std::string>> fields_;
};

// "[a,b]" from already-encoded JSON values.
std::string JsonArray(const std::vector<std::string>& items);

// One run of bytes in a bar: `size` bytes drawn with `glyph`.
struct BarSpan {
  uint64_t size;
  char glyph;
};

// Draws `spans`, in order, as exactly `width` characters, each span's share
// proportional to its size. While there are no more spans than characters
// every span gets at least one character, so a 512-byte block in a 20 MiB
// segment stays visible (the widest spans give the characters back);
// otherwise each character shows the span covering most of its bytes.
// Empty when `width` <= 0 or the spans hold no bytes.
std::string BlockBar(const std::vector<BarSpan>& spans, int width);

// 0.125 -> "12.5%".
std::string Percent(double fraction);

// 1536 -> "1.5 KiB"; 0 -> "0 B".
std::string HumanBytes(uint64_t bytes);
// 3725.2 -> "1h2m"; 42.5 -> "42s".
std::string HumanDuration(double seconds);

}  // namespace tensorctl
}  // namespace tensord

#endif  // TENSORD_TOOLS_TENSORCTL_FORMAT_H_
