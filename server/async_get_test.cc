// Note [Async downloads] on a fake device whose copies finish only when the
// test says so (the CUDA path itself runs in gpu-tagged tests): the executor
// goes on with later commands while a Get's copy is in flight, the data is
// the value at the Get's position, errors reach the Get's request id, Sync
// and session end wait for the data, and staging buffers are reused; an
// upload (Note [Async uploads]) is staged, the executor does not wait for
// its copy, and its staging buffer returns only once the copy completed.
// Ordering facts only: no timing, no sleeps.
#include <algorithm>
#include <cstring>
#include <memory>
#include <thread>
#include <utility>
#include <vector>

#include "gtest/gtest.h"
#include "runtime/core/mutex.h"
#include "runtime/cpu_device.h"
#include "runtime/testing/host_memory_gpu.h"
#include "server/session.h"

namespace tensord {
namespace {

// Host memory posing as a device with asynchronous downloads. A download's
// bytes are copied when it is enqueued (as stream order would read them);
// its completion is reported when the test calls Finish, from another thread
// (a device's completion thread).
class GatedDevice : public testing::HostMemoryGpu {
 public:
  GatedDevice()
      : HostMemoryGpu("gated:0", MakeHostCachingAllocator("gated:0"),
                      MakeHostCachingAllocator("gated_host")) {}
  CachingAllocator* staging() { return staging_allocator(); }
  void CopyToHostAsync(void* dst, const void* src, size_t bytes, StreamHandle,
                       std::function<void(absl::Status)> on_done) override {
    std::memcpy(dst, src, bytes);
    MutexLock lock(&mu_);
    pending_.push_back(std::move(on_done));
  }

  // Note [Async uploads]: the bytes land at once; with uploads held, the
  // copy reports completion (and the staging buffer goes back) only when the
  // test calls FinishUpload.
  absl::Status CopyFromHostAsync(
      void* dst, const void* src, size_t bytes, StreamHandle,
      std::function<void(absl::Status)> on_done) override {
    MutexLock lock(&mu_);
    if (!upload_error_.ok()) return upload_error_;
    std::memcpy(dst, src, bytes);
    if (!hold_uploads_) {
      on_done(absl::OkStatus());
    } else {
      uploads_.push_back(std::move(on_done));
    }
    return absl::OkStatus();
  }
  void HoldUploads() {
    MutexLock lock(&mu_);
    hold_uploads_ = true;
  }
  void FailUploads(absl::Status status) {
    MutexLock lock(&mu_);
    upload_error_ = std::move(status);
  }
  size_t uploads() {
    MutexLock lock(&mu_);
    return uploads_.size();
  }
  void FinishUpload(size_t i) {
    std::function<void(absl::Status)> done;
    {
      MutexLock lock(&mu_);
      done = std::move(uploads_.at(i));
    }
    std::thread([&] { done(absl::OkStatus()); }).join();
  }

  // Waits until `n` downloads were enqueued in all.
  void WaitEnqueued(size_t n) {
    MutexLock lock(&mu_);
    auto enough = [this, n]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
      return pending_.size() >= n;
    };
    mu_.Await(absl::Condition(&enough));
  }
  // Reports download `i` finished with `status`, from another thread.
  void Finish(size_t i, absl::Status status = absl::OkStatus()) {
    std::function<void(absl::Status)> done;
    {
      MutexLock lock(&mu_);
      done = std::move(pending_.at(i));
    }
    std::thread([&] { done(status); }).join();
  }

 private:
  Mutex mu_;
  std::vector<std::function<void(absl::Status)>> pending_ ABSL_GUARDED_BY(mu_);
  bool hold_uploads_ ABSL_GUARDED_BY(mu_) = false;
  absl::Status upload_error_ ABSL_GUARDED_BY(mu_);
  std::vector<std::function<void(absl::Status)>> uploads_ ABSL_GUARDED_BY(mu_);
};

class OrderedSink : public FrameSink {
 public:
  void Send(v1::ServerFrame frame) override {
    MutexLock lock(&mu_);
    frames_.push_back(std::move(frame));
  }
  void End(absl::Status) override {
    MutexLock lock(&mu_);
    ended_at_ = frames_.size();
  }
  // Index of the first frame matching `pred`, waiting for it.
  template <typename Pred>
  size_t WaitFor(Pred pred) {
    MutexLock lock(&mu_);
    size_t i = 0;
    while (true) {
      for (; i < frames_.size(); ++i) {
        if (pred(frames_[i])) return i;
      }
      const size_t seen = frames_.size();
      auto more = [this, seen]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
        return frames_.size() > seen;
      };
      mu_.Await(absl::Condition(&more));
    }
  }
  v1::ServerFrame frame(size_t i) {
    MutexLock lock(&mu_);
    return frames_.at(i);
  }
  size_t size() {
    MutexLock lock(&mu_);
    return frames_.size();
  }
  int64_t ended_at() {
    MutexLock lock(&mu_);
    return ended_at_;
  }

 private:
  Mutex mu_;
  std::vector<v1::ServerFrame> frames_ ABSL_GUARDED_BY(mu_);
  int64_t ended_at_ ABSL_GUARDED_BY(mu_) = -1;
};

class AsyncGetTest : public ::testing::Test {
 protected:
  AsyncGetTest() {
    auto gated = std::make_unique<GatedDevice>();
    gated_ = gated.get();
    std::vector<std::unique_ptr<Device>> devices;
    devices.push_back(MakeCpuDevice());
    devices.push_back(std::move(gated));
    devices_ = std::make_unique<DeviceRegistry>(std::move(devices));
    SessionParams params;
    params.id = "s";
    params.number = 7;
    params.devices = devices_.get();
    params.chunk_bytes = 16;  // several Data frames per Get
    session_ = std::make_unique<Session>(std::move(params));
    EXPECT_TRUE(session_->Attach(sink_, 0, v1::ServerFrame()).ok());
  }
  ~AsyncGetTest() override {
    session_->Close();
    // A test that leaves downloads in flight finishes them here.
    session_->WaitDone();
  }
  v1::Command* Add(v1::Batch* b) {
    v1::Command* c = b->add_commands();
    c->set_seq(++seq_);
    return c;
  }
  void Put(v1::Batch* b, uint64_t handle, const std::vector<float>& v) {
    v1::Put* put = Add(b)->mutable_put();
    put->set_handle(handle);
    put->set_dtype(v1::FLOAT32);
    put->add_shape(static_cast<int64_t>(v.size()));
    put->set_device("gated:0");
    put->set_data(v.data(), v.size() * sizeof(float));
    put->set_last(true);
  }
  void Get(v1::Batch* b, uint64_t handle, uint64_t request_id) {
    v1::Get* get = Add(b)->mutable_get();
    get->set_handle(handle);
    get->set_request_id(request_id);
  }
  // Waits for the Ack covering `seq`; returns its index.
  size_t WaitAck(uint64_t seq) {
    return sink_->WaitFor([seq](const v1::ServerFrame& f) {
      return f.has_ack() && f.ack().last_seq() >= seq;
    });
  }
  // Collects a Get's data frames; returns the floats and the index of the
  // last frame.
  std::vector<float> WaitData(uint64_t request_id, size_t* last_index) {
    std::string bytes;
    while (true) {
      const size_t i = sink_->WaitFor([&](const v1::ServerFrame& f) {
        return f.has_data() && f.data().request_id() == request_id &&
               f.data().offset() == bytes.size();
      });
      v1::ServerFrame f = sink_->frame(i);
      bytes += f.data().data();
      if (f.data().last()) {
        *last_index = i;
        break;
      }
    }
    std::vector<float> out(bytes.size() / sizeof(float));
    std::memcpy(out.data(), bytes.data(), bytes.size());
    return out;
  }
  int64_t Staged() {
    return gated_->staging()
        ->GetStats()
        .device.allocated_bytes[kAllPools]
        .current;
  }
  bool HasData(uint64_t request_id) {
    for (size_t i = 0, n = sink_->size(); i < n; ++i) {
      v1::ServerFrame f = sink_->frame(i);
      if (f.has_data() && f.data().request_id() == request_id) return true;
    }
    return false;
  }

  std::unique_ptr<DeviceRegistry> devices_;
  GatedDevice* gated_ = nullptr;
  std::shared_ptr<OrderedSink> sink_ = std::make_shared<OrderedSink>();
  std::unique_ptr<Session> session_;
  uint64_t seq_ = 0;
};

const std::vector<float> kValues = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10};

TEST_F(AsyncGetTest, LaterCommandsRunWhileTheCopyIsInFlight) {
  v1::Batch b1;
  Put(&b1, 1, kValues);
  Get(&b1, 1, 100);
  session_->Submit(b1);
  gated_->WaitEnqueued(1);
  // The next batch releases the handle (the download keeps the storage)
  // and overwrites nothing the Get reads; its Ack arrives before the data.
  v1::Batch b2;
  Add(&b2)->mutable_release()->add_handles(1);
  Put(&b2, 2, {42});
  session_->Submit(b2);
  const size_t ack2 = WaitAck(seq_);
  EXPECT_FALSE(HasData(100));
  // 1's storage is held by the download: two 512-byte blocks.
  EXPECT_EQ(gated_->allocator()->SessionBytes(7), 1024);
  gated_->Finish(0);
  size_t last = 0;
  EXPECT_EQ(WaitData(100, &last), kValues);
  EXPECT_GT(last, ack2);
  // Sent after Ack 2: stamped past it, so a resume that saw Ack 2 replays
  // the data (Note [Resume]).
  EXPECT_GT(sink_->frame(last).seq(), sink_->frame(ack2).ack().last_seq());
  // The meta describes the tensor as it was at the Get.
  const size_t first = sink_->WaitFor([](const v1::ServerFrame& f) {
    return f.has_data() && f.data().request_id() == 100 &&
           f.data().offset() == 0;
  });
  EXPECT_EQ(sink_->frame(first).data().meta().device(), "gated:0");
  EXPECT_EQ(sink_->frame(first).data().total_bytes(), 40u);
  // Once sent, the download lets go of it.
  v1::Batch sync;
  Add(&sync)->mutable_sync()->set_request_id(1);
  session_->Submit(sync);
  sink_->WaitFor([](const v1::ServerFrame& f) { return f.has_sync_done(); });
  EXPECT_EQ(gated_->allocator()->SessionBytes(7), 512);
}

TEST_F(AsyncGetTest, StagingBuffersAreReturnedAndReused) {
  v1::Batch b1;
  Put(&b1, 1, kValues);
  Get(&b1, 1, 100);
  session_->Submit(b1);
  gated_->WaitEnqueued(1);
  EXPECT_GT(Staged(), 0);
  gated_->Finish(0);
  size_t last = 0;
  WaitData(100, &last);
  // Returned by the time its data is out; the cache keeps the segment.
  v1::Batch sync;
  Add(&sync)->mutable_sync()->set_request_id(1);
  session_->Submit(sync);
  sink_->WaitFor([](const v1::ServerFrame& f) { return f.has_sync_done(); });
  EXPECT_EQ(Staged(), 0);
  const int64_t segments =
      gated_->staging()->GetStats().device.num_device_alloc;
  EXPECT_EQ(segments, 1);
  v1::Batch b2;
  Get(&b2, 1, 101);
  session_->Submit(b2);
  gated_->WaitEnqueued(2);
  gated_->Finish(1);
  EXPECT_EQ(WaitData(101, &last), kValues);
  EXPECT_EQ(gated_->staging()->GetStats().device.num_device_alloc, segments);
}

TEST_F(AsyncGetTest, AFailedCopyIsTheGetsError) {
  v1::Batch b;
  Put(&b, 1, kValues);
  Get(&b, 1, 100);
  session_->Submit(b);
  gated_->WaitEnqueued(1);
  gated_->Finish(0, absl::InternalError("an illegal memory access"));
  const size_t i = sink_->WaitFor([](const v1::ServerFrame& f) {
    return f.has_error() && f.error().request_id() == 100;
  });
  const v1::Status status = sink_->frame(i).error().status();
  EXPECT_EQ(status.op(), "get");
  EXPECT_NE(status.message().find("illegal memory access"), std::string::npos)
      << status.message();
  EXPECT_FALSE(HasData(100));
}

TEST_F(AsyncGetTest, SyncDoneFollowsTheDataOfEarlierGets) {
  v1::Batch b;
  Put(&b, 1, kValues);
  Get(&b, 1, 100);
  Add(&b)->mutable_sync()->set_request_id(5);
  session_->Submit(b);
  gated_->WaitEnqueued(1);
  gated_->Finish(0);
  const size_t done = sink_->WaitFor(
      [](const v1::ServerFrame& f) { return f.has_sync_done(); });
  size_t last = 0;
  EXPECT_EQ(WaitData(100, &last), kValues);
  EXPECT_LT(last, done);
}

TEST_F(AsyncGetTest, SessionEndSendsTheDataOfDownloadsInFlight) {
  v1::Batch b;
  Put(&b, 1, kValues);
  Get(&b, 1, 100);
  session_->Submit(b);
  gated_->WaitEnqueued(1);
  session_->Close();
  gated_->Finish(0);
  session_->WaitDone();
  size_t last = 0;
  EXPECT_EQ(WaitData(100, &last), kValues);
  EXPECT_GT(sink_->ended_at(), static_cast<int64_t>(last));
  EXPECT_EQ(gated_->allocator()->SessionBytes(7), 0);
}

TEST_F(AsyncGetTest, UploadsAreStagedAndTheExecutorDoesNotWait) {
  gated_->HoldUploads();
  v1::Batch b1;
  Put(&b1, 1, kValues);
  session_->Submit(b1);
  WaitAck(seq_);
  ASSERT_EQ(gated_->uploads(), 1u);
  // The copy has not completed: its buffer stays out of the staging cache.
  EXPECT_GT(Staged(), 0);
  // Later commands run meanwhile; a second upload gets another buffer.
  v1::Batch b2;
  Put(&b2, 2, {42});
  session_->Submit(b2);
  WaitAck(seq_);
  ASSERT_EQ(gated_->uploads(), 2u);
  const int64_t both = Staged();
  EXPECT_GT(both, 0);
  gated_->FinishUpload(0);
  EXPECT_LT(Staged(), both);
  gated_->FinishUpload(1);
  EXPECT_EQ(Staged(), 0);
  // Returned buffers are reused, not pinned again.
  const int64_t segments =
      gated_->staging()->GetStats().device.num_device_alloc;
  v1::Batch b3;
  Put(&b3, 3, kValues);
  session_->Submit(b3);
  WaitAck(seq_);
  gated_->FinishUpload(2);
  EXPECT_EQ(gated_->staging()->GetStats().device.num_device_alloc, segments);
  v1::Batch b4;
  Get(&b4, 1, 100);
  Get(&b4, 2, 101);
  session_->Submit(b4);
  gated_->WaitEnqueued(2);
  gated_->Finish(0);
  gated_->Finish(1);
  size_t last = 0;
  EXPECT_EQ(WaitData(100, &last), kValues);
  EXPECT_EQ(WaitData(101, &last), std::vector<float>{42});
}

TEST_F(AsyncGetTest, ChunkedUploadsStageEveryChunk) {
  gated_->HoldUploads();
  std::vector<float> values(40);
  for (size_t i = 0; i < values.size(); ++i) values[i] = 0.5f * i;
  v1::Batch b;
  const size_t chunk = 48;  // bytes: 12 floats, the last chunk shorter
  const char* bytes = reinterpret_cast<const char*>(values.data());
  const size_t total = values.size() * sizeof(float);
  for (size_t offset = 0; offset < total; offset += chunk) {
    v1::Put* put = Add(&b)->mutable_put();
    put->set_handle(1);
    if (offset == 0) {
      put->set_dtype(v1::FLOAT32);
      put->add_shape(static_cast<int64_t>(values.size()));
      put->set_device("gated:0");
    }
    put->set_offset(offset);
    put->set_data(bytes + offset, std::min(chunk, total - offset));
    put->set_last(offset + chunk >= total);
  }
  Get(&b, 1, 100);
  session_->Submit(b);
  gated_->WaitEnqueued(1);
  EXPECT_EQ(gated_->uploads(), 4u);
  for (size_t i = 0; i < 4; ++i) gated_->FinishUpload(i);
  EXPECT_EQ(Staged() > 0, true);  // the Get's buffer only
  gated_->Finish(0);
  size_t last = 0;
  EXPECT_EQ(WaitData(100, &last), values);
}

TEST_F(AsyncGetTest, AnUploadThatCannotBeQueuedPoisonsItsHandle) {
  gated_->FailUploads(absl::InternalError("cudaMemcpyAsync: launch failure"));
  v1::Batch b;
  Put(&b, 1, kValues);
  session_->Submit(b);
  const v1::Ack ack = sink_->frame(WaitAck(seq_)).ack();
  ASSERT_EQ(ack.created_size(), 1);
  EXPECT_EQ(ack.created(0).error().op(), "put");
  EXPECT_NE(ack.created(0).error().message().find("launch failure"),
            std::string::npos);
  EXPECT_EQ(Staged(), 0);  // the buffer went back at once
}

}  // namespace
}  // namespace tensord
