// LocalTransport (client/local_transport.h) against a fake session
// (client/fake_transport_host.h) that plays the daemon on regions made here:
// uploads and downloads through the staging buffer and the mailbox, shared
// buffers both ways, staging grown or refused, and answers that lie about
// where their bytes are. Against the real daemon: tests/shm_transfer_test.cc,
// tests/shared_buffer_test.cc.
#include "client/local_transport.h"

#include <fcntl.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "client/fake_transport_host.h"
#include "gtest/gtest.h"
#include "proto/mailbox.h"

namespace tensord {
inline namespace client {
namespace internal {
namespace {

constexpr size_t kPiece = 256 << 10;  // ClientOptions::staging_bytes here

// A file laid out as a daemon's region: the nonce and the mailbox in its
// first page, then `bytes`. The test's own mapping of it plays the daemon's.
struct Region {
  v1::ShmRegion desc;
  std::unique_ptr<RegionMapping> daemon;

  explicit Region(const std::string& name, size_t bytes) {
    const char* tmp = std::getenv("TEST_TMPDIR");
    desc.set_path(
        absl::StrCat(tmp != nullptr ? tmp : "/tmp", "/", name, ".", getpid()));
    desc.set_size(mailbox::kPageBytes + bytes);
    desc.set_data_offset(mailbox::kPageBytes);
    desc.set_nonce(absl::StrCat("nonce-", name));
    const int fd = open(desc.path().c_str(), O_RDWR | O_CREAT | O_TRUNC, 0600);
    EXPECT_GE(fd, 0);
    EXPECT_EQ(ftruncate(fd, desc.size()), 0);
    EXPECT_EQ(pwrite(fd, desc.nonce().data(), desc.nonce().size(), 0),
              static_cast<ssize_t>(desc.nonce().size()));
    close(fd);
    daemon = RegionMapping::Map(desc, /*populate=*/false);
    EXPECT_NE(daemon, nullptr);
  }
  ~Region() { unlink(desc.path().c_str()); }
  char* at(uint64_t offset) { return daemon->base() + offset; }
};

class LocalTransportTest : public ::testing::Test {
 protected:
  // The session region has no payload: its first page only.
  LocalTransportTest() : region_("session", 0) { Open(kPiece); }

  void Open(size_t staging_bytes) {
    ClientOptions options;
    options.staging_bytes = staging_bytes;
    options.sync_spin = absl::ZeroDuration();
    v1::Welcome welcome;
    *welcome.mutable_shm() = region_.desc;
    transport_ = LocalTransport::Open(options, welcome, &host_);
    // The fake daemon reads each Put's span as it is appended.
    host_.on_put = [this](const v1::Put& put) {
      std::string& stored = stored_[put.handle()];
      const v1::RegionSpan& span = put.payload().region();
      if (put.payload().has_data()) {
        stored += put.payload().data();
      } else if (buffers_.count(span.region())) {
        stored.append(buffers_[span.region()]->at(span.offset()), span.size());
      }
    };
    Answer();
  }

  // Makes shared buffers (none with `refuse`) and answers Gets into them
  // from what was stored, from byte_offset, a notify Get announced in the
  // mailbox as well; `wrong_offset` moves the answer's span.
  void Answer(uint64_t wrong_offset = 0, absl::Status refuse = {}) {
    host_.answer = [this, wrong_offset, refuse](
                       uint64_t id, const v1::Command& command,
                       DownloadTarget) -> std::optional<PendingDownload> {
      PendingDownload got;
      got.done = true;
      if (command.has_allocate_shared()) {
        got.status = refuse;
        if (!refuse.ok()) return got;
        const uint64_t region = next_region_++;
        buffers_[region] = std::make_unique<Region>(
            absl::StrCat("buffer", region), command.allocate_shared().bytes());
        got.shared = true;
        got.shared_reply.set_request_id(id);
        got.shared_reply.set_region(region);
        *got.shared_reply.mutable_shm() = buffers_[region]->desc;
        return got;
      }
      const v1::Get& get = command.get();
      const std::string& stored = stored_[get.handle()];
      const v1::RegionSpan& into = get.into().region();
      EXPECT_TRUE(buffers_.count(into.region())) << into.region();
      if (!buffers_.count(into.region())) return std::nullopt;
      const uint64_t n =
          std::min<uint64_t>(into.size(), stored.size() - get.byte_offset());
      std::memcpy(buffers_[into.region()]->at(into.offset()),
                  stored.data() + get.byte_offset(), n);
      got.shm = true;
      got.shm_reply =
          FakeTransportHost::DataFor(id, stored.size(), get.byte_offset(),
                                     get.byte_offset() + n == stored.size());
      v1::RegionSpan* span = got.shm_reply.mutable_payload()->mutable_region();
      *span = into;
      span->set_offset(into.offset() + wrong_offset);
      span->set_size(n);
      if (get.notify()) Announce(id, got.shm_reply);
      return got;
    };
  }

  void Announce(uint64_t id, const v1::Data& data) {
    const std::string announced = data.SerializeAsString();
    std::memcpy(region_.at(mailbox::kRequestOffset), &id, sizeof(id));
    const uint32_t length = announced.size();
    std::memcpy(region_.at(mailbox::kLengthOffset), &length, sizeof(length));
    std::memcpy(region_.at(mailbox::kPayloadOffset), announced.data(), length);
    mailbox::Word(region_.daemon->base())
        ->store(mailbox::WordFor(id), std::memory_order_release);
    ++notified_;
  }

  int Allocations() const {
    int n = 0;
    for (const v1::Command& c : host_.requests) n += c.has_allocate_shared();
    return n;
  }

  Region region_;
  FakeTransportHost host_;
  std::unique_ptr<LocalTransport> transport_;
  std::map<uint64_t, std::string> stored_;  // the fake daemon's tensors
  std::map<uint64_t, std::unique_ptr<Region>> buffers_;  // by region id
  uint64_t next_region_ = 7;
  int notified_ = 0;
};

TEST_F(LocalTransportTest, IsLocal) {
  ASSERT_NE(transport_, nullptr);
  EXPECT_TRUE(transport_->local());
  EXPECT_FALSE(transport_->cma_active());  // the Welcome offers none
  EXPECT_FALSE(transport_->bulk_active());
  v1::Hello hello;
  transport_->FillResumeHello(&hello);
  EXPECT_TRUE(hello.shm_transfer());
}

TEST(LocalTransportOpenTest, NoRegionMappedIsNoLocalTransport) {
  FakeTransportHost host;
  v1::Welcome welcome;
  welcome.mutable_shm()->set_path("/nonexistent/tensord-region");
  welcome.mutable_shm()->set_size(1 << 20);
  welcome.mutable_shm()->set_nonce("n");
  welcome.mutable_shm()->set_data_offset(4096);
  EXPECT_EQ(LocalTransport::Open(ClientOptions(), welcome, &host), nullptr);
  // Transport::Make then takes the remote one.
  std::unique_ptr<Transport> made =
      Transport::Make(ClientOptions(), welcome, &host);
  EXPECT_FALSE(made->local());
}

TEST_F(LocalTransportTest, SmallTensorsGoInTheStream) {
  const std::string bytes = Pattern(1000);
  ASSERT_TRUE(
      transport_->Upload(bytes.data(), 1000, FirstOf(1000), MetaOf(1000)).ok());
  ASSERT_EQ(host_.puts.size(), 1u);
  EXPECT_EQ(host_.puts[0].payload().data(), bytes);
  EXPECT_EQ(Allocations(), 0);
}

TEST_F(LocalTransportTest, UploadsThroughTheStagingBufferAndDownloadsBack) {
  const uint64_t n = 6 * kPiece + 123;  // 7 pieces of one buffer
  const std::string bytes = Pattern(n);
  absl::StatusOr<uint64_t> handle =
      transport_->Upload(bytes.data(), n, FirstOf(n), MetaOf(n));
  ASSERT_TRUE(handle.ok()) << handle.status();
  EXPECT_EQ(host_.uploads, 1);
  ASSERT_EQ(Allocations(), 1);
  EXPECT_EQ(host_.requests[0].allocate_shared().bytes(), kPiece);
  ASSERT_EQ(host_.puts.size(), 7u);
  for (size_t i = 0; i < host_.puts.size(); ++i) {
    const v1::Put& put = host_.puts[i];
    ASSERT_TRUE(put.payload().has_region());
    EXPECT_EQ(put.offset(), i * kPiece);
    EXPECT_EQ(put.payload().region().region(), 7u);
    EXPECT_EQ(put.payload().region().offset(), mailbox::kPageBytes);
    EXPECT_EQ(put.last(), i == 6);
  }
  EXPECT_EQ(stored_[*handle], bytes);
  EXPECT_GE(host_.flushes, 7);  // each piece sent at once

  // Size known: one Get per piece into the same buffer; the first is
  // announced in the mailbox (the daemon does so for any region) and taken
  // from there.
  absl::StatusOr<HostTensor> back = transport_->Download(*handle, "", {});
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->bytes, bytes);
  ASSERT_EQ(host_.requests.size(), 8u);
  EXPECT_TRUE(host_.requests[1].get().notify());
  EXPECT_EQ(host_.requests[1].get().into().region().region(), 7u);
  EXPECT_FALSE(host_.requests[2].get().notify());
  EXPECT_EQ(host_.requests[7].get().byte_offset(), 6 * kPiece);
  EXPECT_EQ(notified_, 1);
  EXPECT_EQ(transport_->mailbox_answers(), 1u);

  // Size unknown (no Ack yet): the first answer tells it; into the
  // caller's memory.
  host_.metas.erase(*handle);
  std::string into(n, '\0');
  back = transport_->Download(*handle, "", {into.data(), into.size()});
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(into, bytes);
  EXPECT_EQ(transport_->mailbox_answers(), 2u);
  EXPECT_EQ(Allocations(), 1);  // the one buffer throughout
}

TEST_F(LocalTransportTest, TheStagingBufferGrowsAndReleasesTheOldOne) {
  Open(/*staging_bytes=*/0);  // up to 64 MiB, 1 MiB first
  const uint64_t small = 300 << 10, big = 3 << 20;
  const std::string a = Pattern(small), b = Pattern(big);
  ASSERT_TRUE(
      transport_->Upload(a.data(), small, FirstOf(small), MetaOf(small)).ok());
  absl::StatusOr<uint64_t> handle =
      transport_->Upload(b.data(), big, FirstOf(big), MetaOf(big));
  ASSERT_TRUE(handle.ok()) << handle.status();
  ASSERT_EQ(Allocations(), 2);
  EXPECT_EQ(host_.requests[0].allocate_shared().bytes(), 1u << 20);
  EXPECT_EQ(host_.requests[1].allocate_shared().bytes(), 4u << 20);
  EXPECT_EQ(host_.released_shared, std::vector<uint64_t>{7});
  ASSERT_EQ(host_.puts.size(), 2u);  // each in one piece
  EXPECT_EQ(host_.puts[1].payload().region().region(), 8u);
  EXPECT_EQ(stored_[*handle], b);
}

TEST_F(LocalTransportTest, StagingRefusedTakesTheStream) {
  Answer(0, absl::FailedPreconditionError("shared buffers are off"));
  const uint64_t n = 2 * kPiece;
  const std::string bytes = Pattern(n);
  for (int i = 0; i < 2; ++i) {
    absl::StatusOr<uint64_t> handle =
        transport_->Upload(bytes.data(), n, FirstOf(n), MetaOf(n));
    ASSERT_TRUE(handle.ok()) << handle.status();
    EXPECT_EQ(stored_[*handle], bytes);
    EXPECT_TRUE(host_.puts.back().payload().has_data());
  }
  EXPECT_EQ(Allocations(), 1);  // not asked again: staging is off
}

TEST_F(LocalTransportTest, AnAnswerAtAnotherOffsetIsAnError) {
  const uint64_t n = 2 * kPiece;
  const std::string bytes = Pattern(n);
  absl::StatusOr<uint64_t> handle =
      transport_->Upload(bytes.data(), n, FirstOf(n), MetaOf(n));
  ASSERT_TRUE(handle.ok());
  Answer(/*wrong_offset=*/4096);
  absl::StatusOr<HostTensor> back = transport_->Download(*handle, "", {});
  EXPECT_EQ(back.status().code(), absl::StatusCode::kInternal);
  EXPECT_NE(back.status().message().find("not asked for"), std::string::npos)
      << back.status();
}

TEST_F(LocalTransportTest, SharedBuffersMoveInPlace) {
  absl::StatusOr<SharedAllocation> shared = transport_->AllocateShared(1 << 20);
  ASSERT_TRUE(shared.ok()) << shared.status();
  ASSERT_NE(shared->mapping, nullptr);
  ASSERT_EQ(shared->region, 7u);
  char* data = shared->mapping->base() + shared->mapping->data_offset();

  // An upload from inside it: one Put naming the buffer, acknowledged.
  const uint64_t n = 512 << 10;
  const uint64_t offset = 4096;
  const std::string bytes = Pattern(n);
  std::memcpy(data + offset, bytes.data(), n);
  absl::StatusOr<uint64_t> handle =
      transport_->Upload(data + offset, n, FirstOf(n), MetaOf(n));
  ASSERT_TRUE(handle.ok()) << handle.status();
  ASSERT_EQ(host_.puts.size(), 1u);
  const v1::RegionSpan& put = host_.puts[0].payload().region();
  EXPECT_EQ(put.region(), 7u);
  EXPECT_EQ(put.offset(), mailbox::kPageBytes + offset);
  EXPECT_EQ(put.size(), n);
  EXPECT_TRUE(host_.puts[0].last());
  EXPECT_EQ(stored_[*handle], bytes);

  // A download into it: one Get, the bytes written by the daemon.
  std::memset(data, 0, n);
  absl::StatusOr<HostTensor> back =
      transport_->Download(*handle, "", {data, n});
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(std::string(data, n), bytes);
  EXPECT_EQ(Allocations(), 1);  // no staging buffer

  transport_->FreeShared(7);
  EXPECT_EQ(host_.released_shared, std::vector<uint64_t>{7});
  // No longer shared: the same memory now goes through the staging buffer.
  ASSERT_TRUE(transport_->Upload(data, n, FirstOf(n), MetaOf(n)).ok());
  EXPECT_EQ(host_.puts.back().payload().region().region(), 8u);
}

}  // namespace
}  // namespace internal
}  // namespace client
}  // namespace tensord
