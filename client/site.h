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
