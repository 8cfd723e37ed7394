#include "server/session.h"

#include <algorithm>

#include "proto/packed_commands.h"
#include "runtime/core/transfer_buffers.h"
#include "server/session_paths.h"
#include "spdlog/spdlog.h"

namespace tensord {

Session::Session(SessionParams params)
    : params_(std::move(params)),
      outbox_(params_.replay_bytes, SessionHostQuota(params_), params_.number),
      shm_charge_(ChargeSessionRegion(params_)),
      shm_(MakeSessionRegion(params_, shm_charge_.get())),
      cma_(MakeSessionCmaPeer(params_, shm_.get())),
      bulk_(MakeSessionBulk(params_)),
      runner_(RunnerConfig{params_.number, params_.devices, params_.chunk_bytes,
                           shm_.get(), params_.shared_buffer_bytes, cma_.get(),
                           bulk_.get(), params_.packed_acks, params_.counters,
                           params_.user_counters, params_.graph_replay},
              &outbox_),
      executor_([this] { ExecutorLoop(); }) {
  if (shm_ == nullptr) shm_charge_.reset();
  // Note [Async downloads]: a finished download wakes an idle executor.
  runner_.SetDownloadWake([this] {
    MutexLock lock(&mu_);
    downloads_finished_ = true;
  });
  if (shm_ != nullptr && shm_->ring_bytes() != 0) {
    ring_ = std::make_unique<CommandRing>(shm_.get(), RingHooks(),
                                          params_.ring_spin_us);
    outbox_.HoldAcksFrom(ring_->reader_id());  // Note [Held acks]
  }
}

CommandRing::Hooks Session::RingHooks() {
  CommandRing::Hooks hooks;
  hooks.submit = [this](std::unique_ptr<google::protobuf::Arena> arena,
                        v1::Batch* batch) {
    // Its own thread: replies it sends may wait for the stream's writes.
    return SubmitParsed(std::move(arena), batch, /*may_run_inline=*/true,
                        /*from_ring=*/true);
  };
  hooks.wait_for_room = [this] {
    MutexLock lock(&mu_);
    mu_.Await(absl::Condition(
        +[](Session* s) ABSL_EXCLUSIVE_LOCKS_REQUIRED(s->mu_) {
          return !s->ring_paused_ || s->closing_;
        },
        this));
  };
  hooks.fail = [this](absl::Status status) {
    spdlog::warn("session {} ({}): {}", params_.id, params_.user,
                 status.ToString());
    Kill(std::move(status));
  };
  hooks.flush_acks = [this](uint64_t ack_wanted) {
    return outbox_.FlushDueAcks(ack_wanted);
  };
  hooks.drained = [this] {
    absl::Status status;
    {
      MutexLock lock(&mu_);
      status = drain_status_;
    }
    CloseQueue(std::move(status));
  };
  return hooks;
}

Session::~Session() {
  Kill(absl::CancelledError("session destroyed"));
  ring_.reset();  // joins its reader, which uses everything below
  // The last reference can be dropped by a callback the executor itself
  // triggered (FrameSink::End); it must not join itself then.
  if (std::this_thread::get_id() == executor_.get_id()) {
    executor_.detach();
  } else {
    executor_.join();
  }
}

bool Session::Submit(v1::Batch batch, bool may_run_inline) {
  if (may_run_inline && TryRunInline(&batch, PhaseClockNs())) return true;
  auto owned = std::make_unique<v1::Batch>(std::move(batch));
  v1::Batch* raw = owned.get();
  // Its wire size: Submit without an arena is the tests' path (and
  // SpaceUsedLong crashed in the TSan build, in Call's attrs MapField).
  const size_t bytes = owned->ByteSizeLong();
  return Enqueue(Queued{nullptr, raw, std::move(owned), PhaseClockNs(), bytes});
}

bool Session::Submit(std::unique_ptr<google::protobuf::Arena> arena,
                     v1::Batch* batch, bool may_run_inline) {
  return SubmitParsed(std::move(arena), batch, may_run_inline,
                      /*from_ring=*/false);
}

bool Session::SubmitParsed(std::unique_ptr<google::protobuf::Arena> arena,
                           v1::Batch* batch, bool may_run_inline,
                           bool from_ring) {
  const uint64_t arrived_ns = PhaseClockNs();
  if (may_run_inline && TryRunInline(batch, arrived_ns)) return true;
  const size_t bytes = arena->SpaceAllocated();
  return Enqueue(Queued{std::move(arena), batch, nullptr, arrived_ns, bytes},
                 from_ring);
}

bool Session::TryRunInline(v1::Batch* batch, uint64_t arrived_ns) {
  // Tiny-op streams arrive as batches no client waits for: no lock taken for
  // them here.
  if (batch->commands_size() > CommandRunner::kInlineMaxCommands ||
      !CommandRunner::HasSyncPoint(*batch)) {
    return false;
  }
  {
    MutexLock lock(&mu_);
    if (!queue_.empty() || executor_busy_ || inline_running_ || closing_ ||
        downloads_finished_) {
      return false;
    }
    inline_running_ = true;
  }
  // Holding the role: nothing else uses runner_ until it is given back.
  const bool cheap = runner_.CheapToRunInline(*batch);
  if (cheap) RunQueued(*batch, arrived_ns);
  MutexLock lock(&mu_);
  inline_running_ = false;  // the executor's wait condition reads it
  return cheap;
}

bool Session::Enqueue(Queued queued, bool from_ring) {
  MutexLock lock(&mu_);
  if (closing_) return true;  // late frames after Close/Kill are dropped
  queued_bytes_ += queued.bytes;
  queue_.push_back(std::move(queued));
  if (params_.counters != nullptr) params_.counters->Queued(queue_.size());
  if (queue_.size() > params_.max_queued_batches ||
      queued_bytes_ > params_.max_queued_bytes) {
    (from_ring ? ring_paused_ : paused_) = true;
    return false;
  }
  return true;
}

void Session::SetOnDrain(std::function<void()> on_drain) {
  MutexLock lock(&mu_);
  on_drain_ = std::move(on_drain);
}

void Session::Close(absl::Status status) {
  if (ring_ != nullptr) {
    {
      MutexLock lock(&mu_);
      if (closing_ || ring_draining_) return;
      ring_draining_ = true;
      drain_status_ = std::move(status);
    }
    ring_->Drain();  // its reader calls CloseQueue when done
    return;
  }
  CloseQueue(std::move(status));
}

void Session::CloseQueue(absl::Status status) {
  MutexLock lock(&mu_);
  if (closing_) return;
  closing_ = true;
  end_status_ = std::move(status);
}

void Session::Kill(absl::Status reason) {
  if (ring_ != nullptr) ring_->Stop();
  // An executor inside a bulk transfer gives up at once.
  if (bulk_ != nullptr) bulk_->Shutdown();
  MutexLock lock(&mu_);
  queue_.clear();
  queued_bytes_ = 0;
  if (!closing_) end_status_ = std::move(reason);
  closing_ = true;
}

void Session::WaitDone() {
  MutexLock lock(&mu_);
  mu_.Await(absl::Condition(&done_));
}

void Session::WaitUntilIdle() {
  MutexLock lock(&mu_);
  mu_.Await(absl::Condition(
      +[](Session* s) ABSL_EXCLUSIVE_LOCKS_REQUIRED(s->mu_) {
        return s->done_ ||
               (s->queue_.empty() && !s->executor_busy_ && !s->inline_running_);
      },
      this));
}

void Session::ExecutorLoop() {
  while (true) {
    Queued queued;
    std::function<void()> drained;
    bool run_downloads = false;
    {
      MutexLock lock(&mu_);
      executor_busy_ = false;
      // Note [Inline batches]: a batch running inline holds the role.
      mu_.Await(absl::Condition(
          +[](Session* s) ABSL_EXCLUSIVE_LOCKS_REQUIRED(s->mu_) {
            return (!s->queue_.empty() || s->closing_ ||
                    s->downloads_finished_) &&
                   !s->inline_running_;
          },
          this));
      executor_busy_ = true;
      run_downloads = downloads_finished_;
      downloads_finished_ = false;
      if (queue_.empty() && !closing_) {
        // Only woken by a download: send its data, then wait again.
      } else if (queue_.empty()) {
        break;  // closing and drained (ReleaseAll sends what is in flight)
      } else {
        queued = std::move(queue_.front());
        queue_.pop_front();
        queued_bytes_ -= queued.bytes;
        if ((paused_ || ring_paused_) &&
            queue_.size() <= params_.max_queued_batches / 2 &&
            queued_bytes_ <= params_.max_queued_bytes / 2) {
          if (paused_) drained = on_drain_;
          paused_ = ring_paused_ = false;
        }
      }
    }
    if (run_downloads) runner_.RunFinishedDownloads();
    if (queued.batch == nullptr) continue;
    if (drained) drained();  // outside the lock: the transport resumes reading
    RunQueued(*queued.batch, queued.arrived_ns);
  }
  runner_.ReleaseAll();
  absl::Status status;
  {
    MutexLock lock(&mu_);
    status = end_status_;
  }
  spdlog::info("session {} ({}) ended: {}", params_.id, params_.user,
               status.ok() ? "closed by client" : status.ToString());
  ReturnFreeHeapMemory();  // what its batches and replies held
  outbox_.End(status);
  MutexLock lock(&mu_);
  done_ = true;
}

void Session::RunQueued(v1::Batch& batch, uint64_t arrived_ns) {
  // A resumed client resends what it did not see acknowledged; commands
  // already applied are dropped here, so nothing runs twice.
  if (batch.received_seq() != 0) outbox_.Confirm(batch.received_seq());
  const uint64_t applied = applied_seq_.load();
  auto* commands = batch.mutable_commands();
  commands->erase(std::remove_if(commands->begin(), commands->end(),
                                 [applied](const v1::Command& c) {
                                   return packed::LastSeq(c) <= applied;
                                 }),
                  commands->end());
  if (batch.commands_size() == 0) return;
  const uint64_t last =
      packed::LastSeq(batch.commands(batch.commands_size() - 1));
  outbox_.SetSeq(last);
  runner_.RunBatch(batch, arrived_ns, applied);
  applied_seq_.store(last);
}

absl::Status Session::Attach(std::shared_ptr<FrameSink> sink,
                             uint64_t received_seq, v1::ServerFrame welcome) {
  absl::Status attached =
      outbox_.Attach(std::move(sink), received_seq, std::move(welcome));
  if (attached.ok()) {
    MutexLock lock(&mu_);
    detached_ = false;
  }
  return attached;
}

bool Session::Detach(const FrameSink* sink) {
  if (!outbox_.Detach(sink)) return false;
  MutexLock lock(&mu_);
  detached_ = true;
  return true;
}

void Session::DetachAny() {
  outbox_.DetachAny();
  MutexLock lock(&mu_);
  detached_ = true;
}

bool Session::detached() const {
  MutexLock lock(&mu_);
  return detached_;
}

bool Session::ending() const {
  MutexLock lock(&mu_);
  return closing_;
}

v1::SessionInfo Session::Info() const {
  v1::SessionInfo info;
  info.set_session_id(params_.id);
  info.set_user(params_.user);
  info.set_client_name(params_.client_name);
  info.set_peer(params_.peer);
  info.set_age_seconds(absl::ToDoubleSeconds(absl::Now() - created_));
  {
    MutexLock lock(&mu_);
    info.set_state(done_       ? "closed"
                   : closing_  ? "closing"
                   : detached_ ? "detached"
                               : "active");
    info.set_queue_depth(queue_.size());
  }
  info.set_live_handles(runner_.live_handles());
  info.set_ops_run(runner_.ops_run());
  const SharedBufferUsage shared = runner_.shared_buffer_usage();
  info.set_shared_buffers(shared.count);
  info.set_shared_buffer_bytes(shared.bytes);
  if (shm_ != nullptr) {
    info.add_paths("shm");
    info.set_shm_region_bytes(shm_->size());
  }
  if (ring_ != nullptr) info.add_paths("ring");
  if (cma_ != nullptr) info.add_paths("cma");
  if (bulk_ != nullptr && bulk_->attached()) {
    info.add_paths("bulk");
    info.set_bulk_lanes(bulk_->lanes_attached());
  }
  for (const auto& device : params_.devices->devices()) {
    (*info.mutable_memory_bytes())[device->name()] =
        device->allocator()->SessionBytes(params_.number);
  }
  for (const auto& [op, count] : runner_.fallbacks().Counts()) {
    (*info.mutable_fallbacks())[op] = count;
  }
  return info;
}

}  // namespace tensord
