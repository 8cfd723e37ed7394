// Limits on what a client may make the daemon keep or copy: every string and
// list of the wire that the daemon stores, echoes or copies per op (call
// sites, names, attributes, handle lists), and the bounds on the memory a
// session holds outside its user's quota. One place, so that
// docs/reliability.md "What one user can make the daemon hold" can cite it.
//
// Note [Wire limits]: a tenant is hostile by assumption (docs/DESIGN.md). A
// string the daemon keeps is copied into every profiler record, autograd
// node and poisoned handle that names it, so a 1 MiB call site bound once
// and then named by 12-byte packed calls grew the daemon by gigabytes. So:
// each field is checked here, once, before the command runs (CheckCommand,
// from CommandRunner::Run, which every transport's batches pass through)
// or before a session opens (CheckHello); an over-long one is refused with
// INVALID_ARGUMENT naming the field and its limit, never truncated
// silently. The limits are far above what the clients send (a call site is
// "file.py:42"; an op's attributes are a few dims).
#ifndef TENSORD_SERVER_WIRE_LIMITS_H_
#define TENSORD_SERVER_WIRE_LIMITS_H_

#include <cstddef>
#include <string>

#include "absl/status/status.h"
#include "proto/tensord.pb.h"

namespace tensord {

// Text fields.
inline constexpr size_t kMaxSiteBytes = 1024;        // Call/Put/Get/... .site
inline constexpr size_t kMaxClientNameBytes = 256;   // Hello.client_name
inline constexpr size_t kMaxNameBytes = 128;         // attribute, device names
inline constexpr size_t kMaxAttrStringBytes = 1024;  // AttrValue.s
// Lists. A Call's attributes together (names, strings, 8 bytes per list
// element) are at most kMaxCallAttrBytes: an autograd node keeps a copy.
inline constexpr size_t kMaxCallAttrs = 64;
inline constexpr size_t kMaxCallAttrBytes = 64 << 10;
inline constexpr size_t kMaxCallHandles = 1 << 16;  // inputs, and outputs
inline constexpr size_t kMaxShapeDims = 64;  // Put.shape (kMaxDims is lower)
// NoteFallbacks (Note [Client fallbacks]): entries per command; each op
// name is 1 to kMaxNameBytes bytes.
inline constexpr size_t kMaxFallbacksPerCommand = 64;
// Bound call sites (Note [Site ids]): per session, at most this many ids and
// this many bytes of text in all; each text is kept once (shared by every
// record, node and error that names it).
inline constexpr size_t kMaxBoundSites = 1 << 16;
inline constexpr size_t kMaxBoundSiteBytes = 4 << 20;
// Error texts the daemon sends (v1::Status.message): longer ones are cut
// (they are the daemon's own words, quoting client text at most in part).
inline constexpr size_t kMaxErrorMessageBytes = 2048;
// One Ack carries at most this much error text in full; the poisoned
// handles after it carry their error's code, op and the message's first
// kShortErrorBytes (the daemon's handle table keeps the whole error).
inline constexpr size_t kMaxAckErrorBytes = 1 << 20;
inline constexpr size_t kShortErrorBytes = 128;
// Live handles per session: kMaxSessionHandles (server/handle_table.h).

// OK, or INVALID_ARGUMENT naming the first field over its limit.
absl::Status CheckHello(const v1::Hello& hello);
absl::Status CheckCommand(const v1::Command& cmd);

// Cuts `text` to at most `limit` bytes at a UTF-8 character boundary (the
// wire's strings must stay valid UTF-8), marking the cut with "...".
void CutText(std::string* text, size_t limit);

}  // namespace tensord

#endif  // TENSORD_SERVER_WIRE_LIMITS_H_
