// Note [Client text]: anything a client chose (Hello.client_name, call
// sites, the session ids and names it sends, the peer string) is shown to
// operators in the daemon's log and in tensorctl's output. Raw, a newline in
// it forges a log line and an escape sequence reaches the admin's terminal.
// Everywhere such text is shown it goes through EscapeClientText (logs,
// tables) or a JSON encoder built on IsDisplayControl (tensorctl --json), so
// what is shown is one line of visible characters that cannot pass for
// anything the daemon wrote itself. Pure functions; thread-safe.
#ifndef TENSORD_PROTO_DISPLAY_TEXT_H_
#define TENSORD_PROTO_DISPLAY_TEXT_H_

#include <cstddef>
#include <cstdint>
#include <string>

#include "absl/strings/string_view.h"

namespace tensord {

// `text` with every control character escaped: \n \r \t and \\ as in C,
// other C0 bytes, DEL and bytes that are not UTF-8 as \xHH, and the code
// points of IsDisplayControl as \u{HHHH}. Printable ASCII and other UTF-8
// pass unchanged.
std::string EscapeClientText(absl::string_view text);

// The code point of the UTF-8 sequence at text[*pos], advancing *pos past
// it; for a byte that does not start a valid sequence, -1 (one byte
// consumed). Overlong forms and surrogates are invalid.
int32_t NextCodePoint(absl::string_view text, size_t* pos);

// Code points a terminal acts on instead of showing: C0 controls, DEL, C1
// controls (U+0080-U+009F: U+009B is a CSI on some terminals), line and
// paragraph separators, and the bidirectional overrides and isolates that
// can make text read as something else.
bool IsDisplayControl(int32_t code_point);

}  // namespace tensord

#endif  // TENSORD_PROTO_DISPLAY_TEXT_H_
