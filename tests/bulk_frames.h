// Raw frames and values shared by the bulk socket's daemon tests
// (tests/bulk_socket_test.cc, tests/bulk_lanes_test.cc): the Hello that asks
// for a bulk socket, bulk Puts and Gets, and float patterns with their
// bytes.
#ifndef TENSORD_TESTS_BULK_FRAMES_H_
#define TENSORD_TESTS_BULK_FRAMES_H_

#include <cstdint>
#include <string>
#include <vector>

#include "proto/tensord.pb.h"
#include "tests/raw_session.h"

namespace tensord {
namespace testing {

inline v1::Hello BulkHello() {
  v1::Hello hello;
  hello.set_bulk(true);
  return hello;
}

// n floats that repeat every 1013, times `scale`.
inline std::vector<float> Pattern(size_t n, float scale) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = scale * static_cast<float>(i % 1013);
  return v;
}

inline std::string Bytes(const std::vector<float>& v) {
  return std::string(reinterpret_cast<const char*>(v.data()),
                     v.size() * sizeof(float));
}

// A Put of `n` float32 whose `bulk_size` bytes follow on the socket, striped
// over `lanes` lanes (0: lane 0 alone).
inline uint64_t AddBulkPut(RawSession& raw, int64_t n, uint64_t bulk_size,
                           uint32_t lanes = 0) {
  const uint64_t handle = raw.NewHandle();
  v1::Put* put = raw.Add()->mutable_put();
  put->set_handle(handle);
  put->set_dtype(v1::FLOAT32);
  put->add_shape(n);
  put->set_last(true);
  v1::BulkSpan* span = put->mutable_payload()->mutable_bulk();
  span->set_size(bulk_size);
  span->set_lanes(lanes);
  return handle;
}

inline uint64_t AddGet(RawSession& raw, uint64_t handle, bool bulk,
                       uint32_t lanes = 0) {
  const uint64_t request = raw.NewRequest();
  v1::Get* get = raw.Add()->mutable_get();
  get->set_handle(handle);
  get->set_request_id(request);
  if (bulk) get->mutable_into()->mutable_bulk()->set_lanes(lanes);
  return request;
}

// The error the Ack gave `handle` ("" when none, "(no Ack)" without one).
inline std::string ErrorOf(const RawSession::Reply& reply, uint64_t handle) {
  auto it = reply.created.find(handle);
  return it == reply.created.end() ? "(no Ack)" : it->second.error().message();
}

}  // namespace testing
}  // namespace tensord

#endif  // TENSORD_TESTS_BULK_FRAMES_H_
