// Shared buffers in raw protocol frames (docs/protocol.md "Shared buffers"):
// AllocateShared answers a region the test maps as a client would; Put and
// Get name it by id and move the bytes through it; bad ids, out-of-range
// offsets, oversized or empty requests and freed buffers are clear errors
// while the session goes on; a freed buffer or an ended session's is gone.
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>

#include "client/shm_mapping.h"
#include "gtest/gtest.h"
#include "tests/daemon_process.h"
#include "tests/raw_session.h"

namespace tensord {
namespace {

using ::tensord::testing::RawSession;

constexpr uint64_t kBytes = (1 << 20) + 5;  // not a multiple of pages

class SharedBufferProtocolTest : public testing::DaemonSuite {
 protected:
  static void SetUpTestSuite() {
    // At most 64 MiB of shared buffers per session.
    StartDaemon({"--insecure", "--shared_buffer_bytes=67108864"});
  }

  // Asks for a buffer of `bytes`; the answer or the error frame.
  static RawSession::Reply Allocate(RawSession& raw, uint64_t bytes,
                                    uint64_t* request_id) {
    *request_id = raw.NewRequest();
    v1::AllocateShared* a = raw.Add()->mutable_allocate_shared();
    a->set_request_id(*request_id);
    a->set_bytes(bytes);
    return raw.Flush();
  }
  // A Put of `n` uint8 bytes at `offset` of region `region`.
  static uint64_t PutFrom(RawSession& raw, uint64_t region, uint64_t offset,
                          uint64_t n) {
    const uint64_t id = raw.NewHandle();
    v1::Put* put = raw.Add()->mutable_put();
    put->set_handle(id);
    put->set_dtype(v1::UINT8);
    put->add_shape(static_cast<int64_t>(n));
    put->set_last(true);
    v1::RegionSpan* span = put->mutable_payload()->mutable_region();
    span->set_region(region);
    span->set_offset(offset);
    span->set_size(n);
    return id;
  }
  static uint64_t GetInto(RawSession& raw, uint64_t handle, uint64_t region,
                          uint64_t offset, uint64_t capacity) {
    const uint64_t request = raw.NewRequest();
    v1::Get* get = raw.Add()->mutable_get();
    get->set_handle(handle);
    get->set_request_id(request);
    v1::RegionSpan* span = get->mutable_into()->mutable_region();
    span->set_region(region);
    span->set_offset(offset);
    span->set_size(capacity);
    return request;
  }
  static std::string ErrorOf(const RawSession::Reply& reply, uint64_t handle) {
    auto it = reply.created.find(handle);
    return it == reply.created.end() ? "(not created)"
                                     : it->second.error().message();
  }
};

TEST_F(SharedBufferProtocolTest, PutAndGetMoveBytesThroughTheBuffer) {
  RawSession raw(address());
  ASSERT_TRUE(raw.ok());
  uint64_t request;
  RawSession::Reply made = Allocate(raw, 2 * kBytes, &request);
  ASSERT_TRUE(made.ok);
  ASSERT_EQ(made.shared.count(request), 1u) << made.errors.size();
  const v1::SharedBuffer& buffer = made.shared[request];
  EXPECT_NE(buffer.region(), 0u);
  EXPECT_GE(buffer.shm().size(), buffer.shm().data_offset() + 2 * kBytes);
  auto mapping = RegionMapping::Map(buffer.shm(), /*populate=*/true);
  ASSERT_NE(mapping, nullptr) << "the buffer must map on the same host";
  char* data = mapping->base() + mapping->data_offset();
  for (uint64_t i = 0; i < kBytes; ++i) data[i] = static_cast<char>(i * 13);
  const uint64_t base = buffer.shm().data_offset();
  const uint64_t h = PutFrom(raw, buffer.region(), base, kBytes);
  const uint64_t get = GetInto(raw, h, buffer.region(), base + kBytes, kBytes);
  RawSession::Reply moved = raw.Flush();
  ASSERT_TRUE(moved.ok);
  EXPECT_EQ(moved.sync_error.code(), 0) << moved.sync_error.message();
  EXPECT_FALSE(moved.created[h].has_error()) << ErrorOf(moved, h);
  ASSERT_EQ(moved.shm_data.count(get), 1u);
  const v1::Data& answer = moved.shm_data[get];
  ASSERT_TRUE(answer.payload().has_region());
  EXPECT_EQ(answer.payload().region().size(), kBytes);
  EXPECT_EQ(answer.total_bytes(), kBytes);
  EXPECT_TRUE(answer.last());
  EXPECT_EQ(std::memcmp(data, data + kBytes, kBytes), 0);
}

TEST_F(SharedBufferProtocolTest, BadRequestsAreClearErrorsAndTheSessionGoesOn) {
  RawSession raw(address());
  ASSERT_TRUE(raw.ok());
  uint64_t request;
  RawSession::Reply made = Allocate(raw, kBytes, &request);
  ASSERT_EQ(made.shared.count(request), 1u);
  const v1::SharedBuffer buffer = made.shared[request];
  const uint64_t base = buffer.shm().data_offset();
  // An id the session never had; a range past the end; one over the nonce.
  const uint64_t unknown = PutFrom(raw, buffer.region() + 1000, base, 16);
  const uint64_t past = PutFrom(raw, buffer.region(), base + kBytes - 8, 16);
  const uint64_t nonce = PutFrom(raw, buffer.region(), 0, 16);
  // Region 0 is the session's own region, which holds no payload (and this
  // session never asked for one).
  const uint64_t no_region = PutFrom(raw, 0, base, 16);
  const uint64_t good = PutFrom(raw, buffer.region(), base, 16);
  const uint64_t bad_get = GetInto(raw, good, 77, base, 16);
  const uint64_t far_get =
      GetInto(raw, good, buffer.region(), base + kBytes, 16);
  RawSession::Reply reply = raw.Flush();
  ASSERT_TRUE(reply.ok);
  for (uint64_t h : {unknown, past, nonce, no_region}) {
    ASSERT_TRUE(reply.created[h].has_error()) << h;
    EXPECT_EQ(reply.created[h].error().code(), 3) << ErrorOf(reply, h);
  }
  EXPECT_NE(ErrorOf(reply, unknown)
                .find(absl::StrCat("region ", buffer.region() + 1000,
                                   " is not a shared buffer of this session")),
            std::string::npos)
      << ErrorOf(reply, unknown);
  EXPECT_NE(ErrorOf(reply, past).find("outside the region's payload area"),
            std::string::npos)
      << ErrorOf(reply, past);
  EXPECT_NE(ErrorOf(reply, nonce).find("outside"), std::string::npos);
  EXPECT_NE(ErrorOf(reply, no_region).find("holds no payload"),
            std::string::npos)
      << ErrorOf(reply, no_region);
  EXPECT_FALSE(reply.created[good].has_error()) << ErrorOf(reply, good);
  int get_errors = 0;
  for (const v1::Error& e : reply.errors) {
    if (e.request_id() == bad_get) {
      ++get_errors;
      EXPECT_NE(e.status().message().find("region 77"), std::string::npos)
          << e.status().message();
    } else if (e.request_id() == far_get) {
      ++get_errors;
      EXPECT_NE(e.status().message().find("outside"), std::string::npos)
          << e.status().message();
    }
  }
  EXPECT_EQ(get_errors, 2);
  // Empty and oversized requests.
  uint64_t empty_request, huge_request;
  RawSession::Reply empty = Allocate(raw, 0, &empty_request);
  RawSession::Reply huge = Allocate(raw, uint64_t{65} << 20, &huge_request);
  ASSERT_EQ(empty.errors.size(), 1u);
  EXPECT_EQ(empty.errors[0].request_id(), empty_request);
  EXPECT_EQ(empty.errors[0].status().code(), 3);
  ASSERT_EQ(huge.errors.size(), 1u);
  EXPECT_EQ(huge.errors[0].request_id(), huge_request);
  EXPECT_EQ(huge.errors[0].status().code(), 8);  // RESOURCE_EXHAUSTED
  EXPECT_NE(huge.errors[0].status().message().find("a session may have"),
            std::string::npos)
      << huge.errors[0].status().message();
  // The session goes on.
  raw.PutFloats({4});
  RawSession::Reply after = raw.Flush();
  EXPECT_TRUE(after.ok);
  EXPECT_EQ(after.sync_error.code(), 0);
}

TEST_F(SharedBufferProtocolTest, FreedBuffersAndEndedSessionsAreGone) {
  v1::SharedBuffer kept;
  {
    RawSession raw(address());
    ASSERT_TRUE(raw.ok());
    uint64_t first_request, second_request;
    RawSession::Reply first = Allocate(raw, kBytes, &first_request);
    RawSession::Reply second = Allocate(raw, kBytes, &second_request);
    ASSERT_EQ(first.shared.count(first_request), 1u);
    ASSERT_EQ(second.shared.count(second_request), 1u);
    const v1::SharedBuffer freed = first.shared[first_request];
    kept = second.shared[second_request];
    auto mapping = RegionMapping::Map(freed.shm(), /*populate=*/false);
    ASSERT_NE(mapping, nullptr);
    raw.Add()->mutable_release()->add_shared_buffers(freed.region());
    raw.Add()->mutable_release()->add_shared_buffers(12345);  // ignored
    const uint64_t after_free =
        PutFrom(raw, freed.region(), freed.shm().data_offset(), 16);
    RawSession::Reply reply = raw.Flush();
    ASSERT_TRUE(reply.ok);
    ASSERT_TRUE(reply.created[after_free].has_error());
    EXPECT_NE(ErrorOf(reply, after_free).find("already freed"),
              std::string::npos)
        << ErrorOf(reply, after_free);
    // The daemon's side is gone; ours stays mapped until we unmap it.
    EXPECT_EQ(RegionMapping::Map(freed.shm(), false), nullptr);
    mapping->base()[mapping->data_offset()] = 1;
    EXPECT_NE(RegionMapping::Map(kept.shm(), false), nullptr);
  }  // the session ends
  EXPECT_EQ(RegionMapping::Map(kept.shm(), false), nullptr);
}

}  // namespace
}  // namespace tensord
