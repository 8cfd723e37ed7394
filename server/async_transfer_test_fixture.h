// The fixture of Note [Async downloads] and Note [Async uploads] in process
// (async_get_test.cc, async_put_test.cc): one session over a fake device
// whose copies finish only when the test says so (the CUDA path itself runs
// in gpu-tagged tests), and a sink that records the frames in order.
#ifndef TENSORD_SERVER_ASYNC_TRANSFER_TEST_FIXTURE_H_
#define TENSORD_SERVER_ASYNC_TRANSFER_TEST_FIXTURE_H_

#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "gtest/gtest.h"
#include "runtime/core/mutex.h"
#include "runtime/cpu_device.h"
#include "runtime/testing/host_memory_gpu.h"
#include "server/session.h"

namespace tensord {
namespace testing_util {

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
    put->mutable_payload()->set_data(v.data(), v.size() * sizeof(float));
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
      bytes += f.data().payload().data();
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

inline const std::vector<float> kValues = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10};

}  // namespace testing_util
}  // namespace tensord

#endif  // TENSORD_SERVER_ASYNC_TRANSFER_TEST_FIXTURE_H_
