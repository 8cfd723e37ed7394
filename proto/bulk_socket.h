// The bulk socket's hello and lanes (docs/protocol.md "Bulk socket"), shared
// by the daemon (server/bulk_socket.h) and the C++ client
// (client/bulk_connection.cc). A client connects to Welcome.bulk_port and
// sends a hello; the daemon answers one byte, kBulkAccepted, or closes the
// connection. After that the connection carries only the bytes of bulk Puts
// and Gets, in command order.
//
// A session's token admits Welcome.bulk_lanes connections ("lanes"), each
// once: lane 0's hello is kBulkMagic and the 32-character token, lane i's
// kBulkLaneMagic, the token and the byte i. A transfer of n bytes striped
// over `lanes` lanes moves BulkLaneSpan(n, lanes, i) on lane i, all lanes at
// once: one loopback TCP stream keeps one core busy with its sender's
// copy and protocol work while the receiver's core copies, so several
// balance both ends' cores (BENCHMARKS.md "Session 13").
#ifndef TENSORD_PROTO_BULK_SOCKET_H_
#define TENSORD_PROTO_BULK_SOCKET_H_

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <system_error>
#include <thread>
#include <vector>

namespace tensord {

inline constexpr char kBulkMagic[] = "TDBULK01";
inline constexpr char kBulkLaneMagic[] = "TDBULK02";
inline constexpr size_t kBulkMagicBytes = 8;
inline constexpr size_t kBulkTokenBytes = 32;
inline constexpr char kBulkAccepted = 'Y';

// The most lanes a daemon offers.
inline constexpr uint32_t kBulkMaxLanes = 8;
// Lanes' spans start at multiples of this.
inline constexpr uint64_t kBulkLaneAlign = 64 << 10;

// How many of `available` lanes an n-byte transfer is striped over: each
// carries kBulkMinLaneBytes or more (a thread hand-off per lane costs more
// than a smaller span gains).
inline constexpr uint64_t kBulkMinLaneBytes = 4 << 20;
inline uint32_t BulkLanesFor(uint64_t n, uint32_t available) {
  const uint64_t most = std::max<uint64_t>(1, n / kBulkMinLaneBytes);
  return static_cast<uint32_t>(
      std::min<uint64_t>(most, std::max<uint32_t>(available, 1)));
}

// Bytes [begin, end) of an n-byte transfer that lane `lane` of `lanes`
// carries: spans of ceil(n / lanes) rounded up to kBulkLaneAlign, in lane
// order, the last ones shorter or empty. `lanes` 0 is 1.
struct BulkLaneSpan {
  uint64_t begin;
  uint64_t end;
};
inline BulkLaneSpan BulkLane(uint64_t n, uint32_t lanes, uint32_t lane) {
  if (lanes <= 1) return lane == 0 ? BulkLaneSpan{0, n} : BulkLaneSpan{n, n};
  uint64_t part = n / lanes + (n % lanes != 0 ? 1 : 0);
  part = (part + kBulkLaneAlign - 1) / kBulkLaneAlign * kBulkLaneAlign;
  const uint64_t begin = std::min<uint64_t>(n, part * lane);
  return {begin, std::min<uint64_t>(n, begin + part)};
}

// Runs `move(lane)` for each lane of an n-byte transfer over `lanes` whose
// span is not empty, all at once: lane 0 on the calling thread, the others
// on threads of their own (a lane whose thread cannot start runs after lane
// 0, in lane order: the order a peer moving its lanes one by one uses).
// Returns once every lane is done. Both ends' striped transfers use it.
template <typename Move>
void MoveLanesAtOnce(uint64_t n, uint32_t lanes, Move move) {
  std::vector<std::thread> helpers;
  std::vector<uint32_t> later;
  for (uint32_t lane = 1; lane < lanes; ++lane) {
    if (BulkLane(n, lanes, lane).begin == n) break;  // empty from here on
    try {
      helpers.emplace_back(move, lane);
    } catch (const std::system_error&) {
      later.push_back(lane);
    }
  }
  move(0);
  for (uint32_t lane : later) move(lane);
  for (std::thread& t : helpers) t.join();
}

}  // namespace tensord

#endif  // TENSORD_PROTO_BULK_SOCKET_H_
