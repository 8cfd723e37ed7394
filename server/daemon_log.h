// The daemon's log format: every message's text goes through
// EscapeClientText (Note [Client text], proto/display_text.h), so client
// names, call sites and statuses that quote client text cannot forge log
// lines or send escape sequences to whoever reads the log. One place, so no
// log call can forget it.
#ifndef TENSORD_SERVER_DAEMON_LOG_H_
#define TENSORD_SERVER_DAEMON_LOG_H_

#include <memory>

#include "spdlog/formatter.h"

namespace tensord {

// "[2024-01-02 03:04:05.678] [info] TEXT", TEXT escaped.
std::unique_ptr<spdlog::formatter> EscapingLogFormatter();

}  // namespace tensord

#endif  // TENSORD_SERVER_DAEMON_LOG_H_
