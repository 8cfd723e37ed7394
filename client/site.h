// The client call site of an op, echoed by the daemon in errors
// ("matmul at train.cc:42: ..."). Taken with GCC/Clang's __builtin_FILE and
// __builtin_LINE as a default argument, so it names the caller's line.
#ifndef TENSORD_CLIENT_SITE_H_
#define TENSORD_CLIENT_SITE_H_

#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"

namespace tensord {
inline namespace client {

struct Site {
  constexpr Site() = default;
  constexpr Site(const char* file, int line) : file(file), line(line) {}

  const char* file = nullptr;
  int line = 0;

  // Use as a default argument: `Site site = Site::Current()`.
  static Site Current(const char* file = __builtin_FILE(),
                      int line = __builtin_LINE()) {
    return Site{file, line};
  }

  // ToString() of this site, cached per thread for the last site asked
  // about: a loop calling ops from one line formats its site once, not once
  // per op. Valid until this thread's next Text() call.
  const std::string& Text() const {
    thread_local const char* cached_file = nullptr;
    thread_local int cached_line = -1;
    thread_local std::string cached;
    if (file != cached_file || line != cached_line) {
      cached = ToString();
      cached_file = file;
      cached_line = line;
    }
    return cached;
  }

  // "dir/file.cc:42" -> "file.cc:42"; empty when unknown.
  std::string ToString() const {
    if (file == nullptr || *file == '\0') return "";
    absl::string_view path(file);
    size_t slash = path.rfind('/');
    if (slash != absl::string_view::npos) path.remove_prefix(slash + 1);
    return absl::StrCat(path, ":", line);
  }
};

}  // namespace client
}  // namespace tensord

#endif  // TENSORD_CLIENT_SITE_H_
