// LocalTransport (client/local_transport.h) against a fake session
// (client/fake_transport_host.h) that plays the daemon on a region made
// here: uploads through the slots, downloads through them and the mailbox,
// shared buffers both ways, and answers that lie about where their bytes
// are. Against the real daemon: tests/shm_transfer_test.cc,
// tests/shared_buffer_test.cc.
#include "client/local_transport.h"

#include <fcntl.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
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

constexpr size_t kSlot = 256 << 10;

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
  LocalTransportTest() : region_("session", 4 * kSlot) {
    ClientOptions options;
    options.shm_slot_bytes = kSlot;
    options.sync_spin = absl::ZeroDuration();
    v1::Welcome welcome;
    *welcome.mutable_shm() = region_.desc;
    transport_ = LocalTransport::Open(options, welcome, &host_);
    // The fake daemon reads each Put's slot as it is appended.
    host_.on_put = [this](const v1::Put& put) {
      std::string& stored = stored_[put.handle()];
      if (put.payload().has_data()) {
        stored += put.payload().data();
      } else if (put.payload().region().region() == 0) {
        stored.append(region_.at(put.payload().region().offset()),
                      put.payload().region().size());
      }
    };
  }

  // Answers region Gets from what was stored: the slot filled from
  // byte_offset, the first notify Get announced in the mailbox as well.
  void AnswerThroughSlots(uint64_t wrong_offset = 0) {
    host_.answer = [this, wrong_offset](uint64_t id, const v1::Command& command,
                                        DownloadTarget) {
      const v1::Get& get = command.get();
      const std::string& stored = stored_[get.handle()];
      EXPECT_TRUE(get.into().has_region());
      const v1::RegionSpan& slot = get.into().region();
      const uint64_t n =
          std::min<uint64_t>(slot.size(), stored.size() - get.byte_offset());
      std::memcpy(region_.at(slot.offset()), stored.data() + get.byte_offset(),
                  n);
      PendingDownload got;
      got.done = got.shm = true;
      got.shm_reply =
          FakeTransportHost::DataFor(id, stored.size(), get.byte_offset(),
                                     get.byte_offset() + n == stored.size());
      v1::RegionSpan* span = got.shm_reply.mutable_payload()->mutable_region();
      span->set_offset(slot.offset() + wrong_offset);
      span->set_size(n);
      if (get.notify()) {
        const std::string announced = got.shm_reply.SerializeAsString();
        std::memcpy(region_.at(mailbox::kRequestOffset), &id, sizeof(id));
        const uint32_t length = announced.size();
        std::memcpy(region_.at(mailbox::kLengthOffset), &length,
                    sizeof(length));
        std::memcpy(region_.at(mailbox::kPayloadOffset), announced.data(),
                    length);
        mailbox::Word(region_.daemon->base())
            ->store(mailbox::WordFor(id), std::memory_order_release);
        ++notified_;
      }
      return got;
    };
  }

  Region region_;
  FakeTransportHost host_;
  std::unique_ptr<LocalTransport> transport_;
  std::map<uint64_t, std::string> stored_;  // the fake daemon's tensors
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
}

TEST_F(LocalTransportTest, UploadsThroughTheSlotsAndDownloadsBack) {
  const uint64_t n = 6 * kSlot + 123;  // wraps around the 4 slots
  const std::string bytes = Pattern(n);
  absl::StatusOr<uint64_t> handle =
      transport_->Upload(bytes.data(), n, FirstOf(n), MetaOf(n));
  ASSERT_TRUE(handle.ok()) << handle.status();
  EXPECT_EQ(host_.uploads, 1);
  ASSERT_EQ(host_.puts.size(), 7u);
  for (size_t i = 0; i < host_.puts.size(); ++i) {
    const v1::Put& put = host_.puts[i];
    ASSERT_TRUE(put.payload().has_region());
    EXPECT_EQ(put.offset(), i * kSlot);
    EXPECT_EQ(put.payload().region().offset(),
              mailbox::kPageBytes + (i % 4) * kSlot);
    EXPECT_EQ(put.last(), i == 6);
  }
  EXPECT_EQ(stored_[*handle], bytes);
  EXPECT_GE(host_.flushes, 7);  // each chunk sent at once

  // Size known: the Gets fill up to three slots ahead; the first is
  // announced in the mailbox and taken from there.
  AnswerThroughSlots();
  absl::StatusOr<HostTensor> back = transport_->Download(*handle, "", {});
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->bytes, bytes);
  EXPECT_EQ(host_.requests.size(), 7u);
  EXPECT_TRUE(host_.requests[0].get().notify());
  EXPECT_FALSE(host_.requests[1].get().notify());
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
}

TEST_F(LocalTransportTest, AnAnswerInAnotherSlotIsAnError) {
  const uint64_t n = 2 * kSlot;
  const std::string bytes = Pattern(n);
  absl::StatusOr<uint64_t> handle =
      transport_->Upload(bytes.data(), n, FirstOf(n), MetaOf(n));
  ASSERT_TRUE(handle.ok());
  AnswerThroughSlots(/*wrong_offset=*/4096);
  absl::StatusOr<HostTensor> back = transport_->Download(*handle, "", {});
  EXPECT_EQ(back.status().code(), absl::StatusCode::kInternal);
  EXPECT_NE(back.status().message().find("not asked for"), std::string::npos)
      << back.status();
}

TEST_F(LocalTransportTest, SharedBuffersMoveInPlace) {
  Region buffer("buffer", 1 << 20);
  host_.answer = [&](uint64_t id, const v1::Command& command,
                     DownloadTarget) -> std::optional<PendingDownload> {
    PendingDownload got;
    got.done = true;
    if (command.has_allocate_shared()) {
      got.shared = true;
      got.shared_reply.set_request_id(id);
      got.shared_reply.set_region(7);
      *got.shared_reply.mutable_shm() = buffer.desc;
      return got;
    }
    // A Get into the buffer: the daemon writes it in place.
    const v1::RegionSpan& span = command.get().into().region();
    EXPECT_EQ(span.region(), 7u);
    std::memset(buffer.at(span.offset()), 0x5a, span.size());
    got.shm = true;
    got.shm_reply = FakeTransportHost::DataFor(id, span.size(), 0, true);
    *got.shm_reply.mutable_payload()->mutable_region() = span;
    return got;
  };
  absl::StatusOr<SharedAllocation> shared = transport_->AllocateShared(1 << 20);
  ASSERT_TRUE(shared.ok()) << shared.status();
  ASSERT_NE(shared->mapping, nullptr);
  char* data = shared->mapping->base() + shared->mapping->data_offset();

  // An upload from inside it: one Put naming the buffer, acknowledged.
  const uint64_t n = 512 << 10;
  const uint64_t offset = 4096;
  absl::StatusOr<uint64_t> handle =
      transport_->Upload(data + offset, n, FirstOf(n), MetaOf(n));
  ASSERT_TRUE(handle.ok()) << handle.status();
  ASSERT_EQ(host_.puts.size(), 1u);
  const v1::RegionSpan& put = host_.puts[0].payload().region();
  EXPECT_EQ(put.region(), 7u);
  EXPECT_EQ(put.offset(), buffer.desc.data_offset() + offset);
  EXPECT_EQ(put.size(), n);
  EXPECT_TRUE(host_.puts[0].last());

  // A download into it: one Get, the bytes written by the daemon.
  absl::StatusOr<HostTensor> back =
      transport_->Download(*handle, "", {data, n});
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(data[0], 0x5a);
  EXPECT_EQ(data[n - 1], 0x5a);

  transport_->FreeShared(7);
  EXPECT_EQ(host_.released_shared, std::vector<uint64_t>{7});
  // No longer shared: the same memory now goes through the slots.
  ASSERT_TRUE(transport_->Upload(data, n, FirstOf(n), MetaOf(n)).ok());
  EXPECT_EQ(host_.puts.back().payload().region().region(), 0u);
}

}  // namespace
}  // namespace internal
}  // namespace client
}  // namespace tensord
