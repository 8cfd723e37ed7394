#include "server/auth.h"

#include <sys/stat.h>

#include <fstream>
#include <limits>
#include <sstream>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "spdlog/spdlog.h"

namespace tensord {
namespace {

absl::StatusOr<int64_t> ParseBytes(absl::string_view text) {
  int64_t scale = 1;
  for (auto [suffix, factor] :
       {std::pair<absl::string_view, int64_t>{"GiB", 1LL << 30},
        {"MiB", 1LL << 20},
        {"KiB", 1LL << 10}}) {
    if (absl::ConsumeSuffix(&text, suffix)) {
      scale = factor;
      break;
    }
  }
  int64_t value;
  if (!absl::SimpleAtoi(text, &value) || value < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("bad byte count '", text, "'"));
  }
  // 8589934592GiB must not wrap around into "no quota" (or any other).
  if (value > std::numeric_limits<int64_t>::max() / scale) {
    return absl::InvalidArgumentError(
        absl::StrCat("byte count '", text, "' is too large"));
  }
  return value * scale;
}

}  // namespace

bool ConstantTimeEquals(absl::string_view a, absl::string_view b) {
  unsigned char diff = a.size() == b.size() ? 0 : 1;
  const size_t n = std::max(a.size(), b.size());
  for (size_t i = 0; i < n; ++i) {
    const unsigned char x = i < a.size() ? a[i] : 0;
    const unsigned char y = i < b.size() ? b[i] : 0;
    diff |= x ^ y;
  }
  return diff == 0;
}

std::unique_ptr<Authenticator> Authenticator::Insecure() {
  return std::unique_ptr<Authenticator>(new Authenticator(""));
}

absl::StatusOr<std::unique_ptr<Authenticator>> Authenticator::FromFile(
    std::string path) {
  std::unique_ptr<Authenticator> auth(new Authenticator(std::move(path)));
  absl::Status loaded = auth->Reload();
  if (!loaded.ok()) return loaded;
  return auth;
}

absl::StatusOr<std::vector<std::pair<std::string, User>>> Authenticator::Parse(
    absl::string_view contents) {
  std::vector<std::pair<std::string, User>> tokens;
  int line_no = 0;
  for (absl::string_view line : absl::StrSplit(contents, '\n')) {
    ++line_no;
    line = line.substr(0, line.find('#'));
    std::vector<absl::string_view> fields =
        absl::StrSplit(line, absl::ByAnyChar(" \t\r"), absl::SkipEmpty());
    if (fields.empty()) continue;
    if (fields.size() < 2) {
      return absl::InvalidArgumentError(absl::StrCat(
          "tokens file line ", line_no, ": expected 'USER TOKEN [options]'"));
    }
    User user;
    user.name = std::string(fields[0]);
    for (size_t i = 2; i < fields.size(); ++i) {
      absl::string_view f = fields[i];
      if (f == "admin") {
        user.admin = true;
      } else if (absl::ConsumePrefix(&f, "quota=")) {
        auto bytes = ParseBytes(f);
        if (!bytes.ok()) {
          return absl::InvalidArgumentError(absl::StrCat(
              "tokens file line ", line_no, ": ", bytes.status().message()));
        }
        user.quota_bytes = *bytes;
      } else if (absl::ConsumePrefix(&f, "priority=")) {
        if (!absl::SimpleAtoi(f, &user.priority)) {
          return absl::InvalidArgumentError(
              absl::StrCat("tokens file line ", line_no, ": bad priority"));
        }
      } else {
        return absl::InvalidArgumentError(absl::StrCat(
            "tokens file line ", line_no, ": unknown option '", f, "'"));
      }
    }
    tokens.emplace_back(std::string(fields[1]), std::move(user));
  }
  return tokens;
}

absl::Status Authenticator::Reload() {
  if (path_.empty()) return absl::OkStatus();
  std::ifstream in(path_);
  if (!in) {
    return absl::NotFoundError(absl::StrCat("cannot read tokens file ", path_));
  }
  std::stringstream contents;
  contents << in.rdbuf();
  auto parsed = Parse(contents.str());
  if (!parsed.ok()) return parsed.status();
  struct stat st;
  if (stat(path_.c_str(), &st) == 0 && (st.st_mode & (S_IRWXG | S_IRWXO))) {
    spdlog::warn(
        "tokens file {} is accessible by group or others (mode {:04o}): "
        "anyone who can read it can act as its users; chmod 600 it",
        path_, st.st_mode & 07777);
  }
  MutexLock lock(&mu_);
  tokens_ = *std::move(parsed);
  return absl::OkStatus();
}

absl::StatusOr<User> Authenticator::Authenticate(
    absl::string_view token) const {
  if (insecure()) return User{"anonymous", 0, 0, true};
  MutexLock lock(&mu_);
  const User* found = nullptr;
  for (const auto& [known, user] : tokens_) {  // no early exit: constant time
    if (ConstantTimeEquals(known, token) && found == nullptr) found = &user;
  }
  if (found == nullptr) {
    return absl::UnauthenticatedError(
        token.empty() ? "no token given: pass token= (or TENSORD_TOKEN)"
                      : "invalid or revoked token");
  }
  return *found;
}

std::optional<User> Authenticator::FindUser(absl::string_view name) const {
  if (insecure()) return User{"anonymous", 0, 0, true};
  MutexLock lock(&mu_);
  for (const auto& [token, user] : tokens_) {
    if (user.name == name) return user;
  }
  return std::nullopt;
}

absl::StatusOr<User> Authenticator::AuthenticateAdmin(
    absl::string_view token) const {
  auto user = Authenticate(token);
  if (!user.ok()) return user.status();
  if (!user->admin) {
    return absl::PermissionDeniedError(
        absl::StrCat("user '", user->name, "' is not an admin"));
  }
  return user;
}

}  // namespace tensord
