// A recursive-descent JSON reader that writes pickle opcodes as it goes
// (no tree in between: a 10^5-block snapshot is tens of MB).
#include "tools/snapshot_pickle.h"

#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace tensord {
namespace tensorctl {
namespace {

// Pickle opcodes (Python's Lib/pickle.py names).
constexpr char kProto = '\x80';
constexpr char kStop = '.';
constexpr char kMark = '(';
constexpr char kEmptyDict = '}';
constexpr char kSetItems = 'u';
constexpr char kEmptyList = ']';
constexpr char kAppends = 'e';
constexpr char kBinInt = 'J';  // 4-byte signed
constexpr char kLong1 = '\x8a';
constexpr char kBinFloat = 'G';
constexpr char kBinUnicode = 'X';
constexpr char kNone = 'N';
constexpr char kNewTrue = '\x88';
constexpr char kNewFalse = '\x89';

constexpr int kMaxDepth = 64;
constexpr int kBatch = 1000;  // items per APPENDS/SETITEMS, as Python's

class Converter {
 public:
  explicit Converter(absl::string_view json) : in_(json) {}

  absl::StatusOr<std::string> Run() {
    out_ += kProto;
    out_ += '\x02';
    if (!Value(0)) return Error();
    SkipSpace();
    if (pos_ != in_.size()) {
      why_ = "text after the value";
      return Error();
    }
    out_ += kStop;
    return std::move(out_);
  }

 private:
  absl::Status Error() const {
    return absl::InvalidArgumentError(
        absl::StrCat("the snapshot is not valid JSON at byte ", pos_, ": ",
                     why_.empty() ? "unexpected input" : why_));
  }
  bool Fail(const char* why) {
    why_ = why;
    return false;
  }
  void SkipSpace() {
    while (pos_ < in_.size() && (in_[pos_] == ' ' || in_[pos_] == '\t' ||
                                 in_[pos_] == '\r' || in_[pos_] == '\n')) {
      ++pos_;
    }
  }
  bool Consume(absl::string_view word) {
    if (in_.substr(pos_, word.size()) != word) return false;
    pos_ += word.size();
    return true;
  }

  bool Value(int depth) {
    SkipSpace();
    if (pos_ >= in_.size()) return Fail("the text ends early");
    switch (in_[pos_]) {
      case '{':
        return Container(depth, '}', kEmptyDict, kSetItems);
      case '[':
        return Container(depth, ']', kEmptyList, kAppends);
      case '"': {
        std::string s;
        if (!String(&s)) return false;
        WriteString(s);
        return true;
      }
      default:
        break;
    }
    if (Consume("null")) return Put(kNone);
    if (Consume("true")) return Put(kNewTrue);
    if (Consume("false")) return Put(kNewFalse);
    return Number();
  }

  bool Put(char opcode) {
    out_ += opcode;
    return true;
  }

  // An object's members (key, value) or an array's items, kBatch a MARK.
  bool Container(int depth, char close, char empty, char fill) {
    if (depth >= kMaxDepth) return Fail("nested deeper than 64");
    ++pos_;
    out_ += empty;
    const bool object = close == '}';
    int in_batch = 0;
    SkipSpace();
    if (pos_ < in_.size() && in_[pos_] == close) {
      ++pos_;
      return true;
    }
    while (true) {
      if (in_batch == 0) out_ += kMark;
      if (object) {
        SkipSpace();
        std::string key;
        if (pos_ >= in_.size() || in_[pos_] != '"') {
          return Fail("an object key must be a string");
        }
        if (!String(&key)) return false;
        WriteString(key);
        SkipSpace();
        if (!Consume(":")) return Fail("':' expected after an object key");
      }
      if (!Value(depth + 1)) return false;
      if (++in_batch == kBatch) {
        out_ += fill;
        in_batch = 0;
      }
      SkipSpace();
      if (Consume(",")) continue;
      if (pos_ < in_.size() && in_[pos_] == close) {
        ++pos_;
        if (in_batch > 0) out_ += fill;
        return true;
      }
      return Fail(object ? "',' or '}' expected" : "',' or ']' expected");
    }
  }

  bool Number() {
    const size_t start = pos_;
    while (pos_ < in_.size() &&
           std::strchr("+-0123456789.eE", in_[pos_]) != nullptr &&
           in_[pos_] != '\0') {
      ++pos_;
    }
    const absl::string_view text = in_.substr(start, pos_ - start);
    if (text.empty()) return Fail("a value expected");
    int64_t i = 0;
    uint64_t u = 0;
    if (absl::SimpleAtoi(text, &i)) {
      WriteInt(i < 0,
               i < 0 ? 0 - static_cast<uint64_t>(i) : static_cast<uint64_t>(i));
      return true;
    }
    if (absl::SimpleAtoi(text, &u)) {
      WriteInt(false, u);
      return true;
    }
    double d = 0;
    if (!absl::SimpleAtod(text, &d)) return Fail("a malformed number");
    out_ += kBinFloat;
    uint64_t bits = 0;
    std::memcpy(&bits, &d, sizeof(d));
    for (int b = 7; b >= 0; --b) out_ += static_cast<char>(bits >> (8 * b));
    return true;
  }

  // BININT when it fits 32 bits, else LONG1: little-endian two's
  // complement in as few bytes as keep the sign.
  void WriteInt(bool negative, uint64_t magnitude) {
    if (!negative && magnitude <= 0x7fffffffu) {
      AppendBinInt(static_cast<uint32_t>(magnitude));
      return;
    }
    if (negative && magnitude <= 0x80000000u) {
      AppendBinInt(static_cast<uint32_t>(0 - magnitude));
      return;
    }
    unsigned char bytes[9];
    uint64_t v = negative ? 0 - magnitude : magnitude;  // two's complement
    for (int b = 0; b < 8; ++b)
      bytes[b] = static_cast<unsigned char>(v >> (8 * b));
    bytes[8] = negative ? 0xff : 0x00;
    int n = 9;  // drop top bytes that only extend the sign of the next
    while (n > 1 && bytes[n - 1] == ((bytes[n - 2] & 0x80) ? 0xff : 0x00)) {
      --n;
    }
    out_ += kLong1;
    out_ += static_cast<char>(n);
    out_.append(reinterpret_cast<const char*>(bytes), n);
  }
  void AppendBinInt(uint32_t v) {
    out_ += kBinInt;
    for (int b = 0; b < 4; ++b) out_ += static_cast<char>(v >> (8 * b));
  }
  void WriteString(const std::string& s) {
    out_ += kBinUnicode;
    const auto n = static_cast<uint32_t>(s.size());
    for (int b = 0; b < 4; ++b) out_ += static_cast<char>(n >> (8 * b));
    out_ += s;
  }

  // A JSON string at pos_ into `s` as UTF-8.
  bool String(std::string* s) {
    ++pos_;  // the opening quote
    while (pos_ < in_.size()) {
      const char c = in_[pos_++];
      if (c == '"') return true;
      if (static_cast<unsigned char>(c) < 0x20) {
        return Fail("a control character in a string");
      }
      if (c != '\\') {
        *s += c;
        continue;
      }
      if (pos_ >= in_.size()) break;
      const char e = in_[pos_++];
      switch (e) {
        case '"':
        case '\\':
        case '/':
          *s += e;
          break;
        case 'b':
          *s += '\b';
          break;
        case 'f':
          *s += '\f';
          break;
        case 'n':
          *s += '\n';
          break;
        case 'r':
          *s += '\r';
          break;
        case 't':
          *s += '\t';
          break;
        case 'u':
          if (!Unicode(s)) return false;
          break;
        default:
          return Fail("an unknown escape in a string");
      }
    }
    return Fail("a string does not end");
  }

  bool Hex4(uint32_t* out) {
    if (pos_ + 4 > in_.size()) return Fail("a short \\u escape");
    uint32_t v = 0;
    for (int i = 0; i < 4; ++i) {
      const char h = in_[pos_++];
      v <<= 4;
      if (h >= '0' && h <= '9') {
        v |= h - '0';
      } else if (h >= 'a' && h <= 'f') {
        v |= h - 'a' + 10;
      } else if (h >= 'A' && h <= 'F') {
        v |= h - 'A' + 10;
      } else {
        return Fail("a malformed \\u escape");
      }
    }
    *out = v;
    return true;
  }

  bool Unicode(std::string* s) {
    uint32_t cp = 0;
    if (!Hex4(&cp)) return false;
    if (cp >= 0xd800 && cp < 0xdc00) {  // a surrogate pair's high half
      uint32_t low = 0;
      if (!Consume("\\u") || !Hex4(&low) || low < 0xdc00 || low >= 0xe000) {
        return Fail("a lone surrogate in a \\u escape");
      }
      cp = 0x10000 + ((cp - 0xd800) << 10) + (low - 0xdc00);
    } else if (cp >= 0xdc00 && cp < 0xe000) {
      return Fail("a lone surrogate in a \\u escape");
    }
    if (cp < 0x80) {
      *s += static_cast<char>(cp);
    } else if (cp < 0x800) {
      *s += static_cast<char>(0xc0 | (cp >> 6));
      *s += static_cast<char>(0x80 | (cp & 0x3f));
    } else if (cp < 0x10000) {
      *s += static_cast<char>(0xe0 | (cp >> 12));
      *s += static_cast<char>(0x80 | ((cp >> 6) & 0x3f));
      *s += static_cast<char>(0x80 | (cp & 0x3f));
    } else {
      *s += static_cast<char>(0xf0 | (cp >> 18));
      *s += static_cast<char>(0x80 | ((cp >> 12) & 0x3f));
      *s += static_cast<char>(0x80 | ((cp >> 6) & 0x3f));
      *s += static_cast<char>(0x80 | (cp & 0x3f));
    }
    return true;
  }

  absl::string_view in_;
  size_t pos_ = 0;
  std::string out_;
  std::string why_;
};

}  // namespace

absl::StatusOr<std::string> JsonToPickle(absl::string_view json) {
  return Converter(json).Run();
}

}  // namespace tensorctl
}  // namespace tensord
