#include "proto/display_text.h"

#include "absl/strings/str_format.h"

namespace tensord {

int32_t NextCodePoint(absl::string_view text, size_t* pos) {
  const auto byte = [&](size_t i) {
    return static_cast<unsigned char>(text[i]);
  };
  const unsigned char lead = byte(*pos);
  int length;
  int32_t cp;
  if (lead < 0x80) {
    ++*pos;
    return lead;
  } else if (lead >= 0xc2 && lead <= 0xdf) {
    length = 2;
    cp = lead & 0x1f;
  } else if (lead >= 0xe0 && lead <= 0xef) {
    length = 3;
    cp = lead & 0x0f;
  } else if (lead >= 0xf0 && lead <= 0xf4) {
    length = 4;
    cp = lead & 0x07;
  } else {
    ++*pos;
    return -1;
  }
  if (*pos + length > text.size()) {
    ++*pos;
    return -1;
  }
  for (int i = 1; i < length; ++i) {
    const unsigned char c = byte(*pos + i);
    if ((c & 0xc0) != 0x80) {
      ++*pos;
      return -1;
    }
    cp = (cp << 6) | (c & 0x3f);
  }
  static constexpr int32_t kMin[] = {0, 0, 0x80, 0x800, 0x10000};
  if (cp < kMin[length] || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) {
    ++*pos;
    return -1;
  }
  *pos += length;
  return cp;
}

bool IsDisplayControl(int32_t cp) {
  return cp < 0x20 || (cp >= 0x7f && cp <= 0x9f) || cp == 0x2028 ||
         cp == 0x2029 || (cp >= 0x200e && cp <= 0x200f) ||
         (cp >= 0x202a && cp <= 0x202e) || (cp >= 0x2066 && cp <= 0x2069);
}

std::string EscapeClientText(absl::string_view text) {
  std::string out;
  out.reserve(text.size());
  size_t pos = 0;
  while (pos < text.size()) {
    const size_t start = pos;
    const int32_t cp = NextCodePoint(text, &pos);
    if (cp < 0) {
      absl::StrAppendFormat(&out, "\\x%02x",
                            static_cast<unsigned char>(text[start]));
    } else if (cp == '\\') {
      out += "\\\\";
    } else if (cp == '\n') {
      out += "\\n";
    } else if (cp == '\r') {
      out += "\\r";
    } else if (cp == '\t') {
      out += "\\t";
    } else if (cp < 0x80 && IsDisplayControl(cp)) {
      absl::StrAppendFormat(&out, "\\x%02x", cp);
    } else if (IsDisplayControl(cp)) {
      absl::StrAppendFormat(&out, "\\u{%04x}", cp);
    } else {
      out.append(text.data() + start, pos - start);
    }
  }
  return out;
}

}  // namespace tensord
