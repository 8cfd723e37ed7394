#include "server/grpc_stream.h"

#include <atomic>
#include <deque>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "google/protobuf/arena.h"
#include "proto/frame_buffer.h"
#include "proto/packed_commands.h"
#include "runtime/core/block_cache.h"
#include "spdlog/spdlog.h"

namespace tensord {
namespace {

// Frames above this many queued bytes make Send wait (download flow control).
// Also what a client that stops reading makes its session hold outside the
// quota on the way out (docs/reliability.md "What one user can make the
// daemon hold"): 16 chunks of 1 MiB keep a download's writes going.
constexpr size_t kMaxQueuedBytes = 16 << 20;
// Batches run inline only behind fewer queued bytes than this: what a cheap
// batch sends (a few hundred KiB at most) then fits below kMaxQueuedBytes.
constexpr size_t kMaxInlineBacklog = 8 << 20;

class SessionReactor;

}  // namespace

namespace {

// The FrameSink of one stream: queues frames and writes them one at a time.
// Shared between the reactor (gRPC threads) and the session's executor.
class StreamSink : public FrameSink {
 public:
  explicit StreamSink(SessionReactor* reactor) : reactor_(reactor) {}
  void Send(v1::ServerFrame frame) override;
  void SendShared(std::shared_ptr<const v1::ServerFrame> frame) override;
  void End(absl::Status status) override;
  // From OnWriteDone: the previous write finished (ok=false: peer gone).
  void WriteDone(bool ok);
  // The peer is gone or the reactor is done: drop everything, wake senders.
  void MarkDead();
  // Waits for any in-flight ResumeReading, then forgets the reactor.
  void Detach();
  // The session drained its queue: read the next client frame.
  void ResumeReading();
  // Bytes of frames waiting for their write.
  size_t queued_bytes() {
    MutexLock lock(&mu_);
    return queued_bytes_;
  }

 private:
  // Starts the next write if none is in flight; call without mu_ held.
  void Pump();

  Mutex mu_;
  SessionReactor* reactor_ ABSL_GUARDED_BY(mu_);  // nullptr after OnDone
  // Frames are shared with the session's replay buffer (Note [Resume]).
  std::deque<std::shared_ptr<const v1::ServerFrame>> queue_
      ABSL_GUARDED_BY(mu_);
  size_t queued_bytes_ ABSL_GUARDED_BY(mu_) = 0;
  // The frame being written (kept alive until OnWriteDone).
  std::shared_ptr<const v1::ServerFrame> current_;
  bool writing_ ABSL_GUARDED_BY(mu_) = false;
  int resuming_ ABSL_GUARDED_BY(mu_) = 0;
  bool dead_ ABSL_GUARDED_BY(mu_) = false;
  bool ended_ ABSL_GUARDED_BY(mu_) = false;
  bool finished_ ABSL_GUARDED_BY(mu_) = false;
  absl::Status end_status_ ABSL_GUARDED_BY(mu_);
};

class SessionReactor
    : public grpc::ServerBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer> {
 public:
  SessionReactor(grpc::CallbackServerContext* context, SessionManager* sessions,
                 AuthGate* gate)
      : context_(context),
        sessions_(sessions),
        gate_(gate),
        peer_(context->peer()),
        sink_(std::make_shared<StreamSink>(this)) {
    if (absl::Status admitted = gate_->Admit(peer_); !admitted.ok()) {
      sink_->End(std::move(admitted));
      return;
    }
    counted_ = true;
    // Note [Unauthenticated streams]: no Hello in time ends the stream.
    const absl::Duration timeout = gate_->guards().hello_timeout;
    std::weak_ptr<StreamSink> sink = sink_;
    auto state = hello_state_;
    hello_timer_ =
        gate_->timers().Schedule(absl::Now() + timeout, [sink, state, timeout] {
          int waiting = kAwaitingHello;
          if (!state->compare_exchange_strong(waiting, kHelloTimedOut)) return;
          if (auto s = sink.lock()) {
            s->End(absl::DeadlineExceededError(absl::StrCat(
                "no Hello within ", absl::FormatDuration(timeout),
                " of opening the stream (tensord --hello_timeout)")));
          }
        });
    Read();
  }

  void OnReadDone(bool ok) override {
    if (!session_) {  // the first frame, or the end before it
      int waiting = kAwaitingHello;
      if (!hello_state_->compare_exchange_strong(waiting, kHelloArrived)) {
        return;  // the deadline passed first: the stream is ending
      }
      gate_->timers().Cancel(hello_timer_);
    }
    if (ok && !Parse()) {
      const absl::Status bad = absl::InvalidArgumentError(
          "a frame could not be parsed as a tensord.v1.ClientFrame "
          "(malformed protobuf, or a string field that is not UTF-8); the "
          "session is ended");
      spdlog::warn("{}: {}", context_->peer(), bad.ToString());
      if (session_) {
        session_->Kill(bad);
      } else {
        sink_->End(bad);
      }
      return;
    }
    if (!ok) {  // the client closed its side, or the stream broke
      if (session_ && context_->IsCancelled()) {
        sessions_->StreamEnded(session_, sink_.get(), /*dropped=*/true);
      } else if (session_) {
        session_->Close();
      } else {
        sink_->End(absl::InvalidArgumentError(
            "the stream ended before a Hello frame"));
      }
      return;
    }
    if (!session_) return OnHello();
    if (!in_->has_batch()) {
      v1::ServerFrame frame;
      frame.mutable_error()->mutable_status()->set_code(
          static_cast<int>(absl::StatusCode::kInvalidArgument));
      frame.mutable_error()->mutable_status()->set_message(
          in_->has_hello() ? "unexpected second Hello in a session"
                           : "empty ClientFrame (neither hello nor batch)");
      sink_->Send(std::move(frame));
      Read();
      return;
    }
    // The batch stays on the frame's arena until it has run.
    // Note [Inline batches]: a cheap batch may run right here, its replies
    // queued behind a short outbound queue only (Send must not block on
    // this thread, which gRPC needs to finish writes).
    // Its last seq, for a command ring's ordering (read before Submit,
    // which may run the batch and free its arena).
    const auto& commands = in_->batch().commands();
    const uint64_t last_seq =
        commands.empty() ? 0 : packed::LastSeq(commands[commands.size() - 1]);
    const bool room = session_->Submit(
        std::move(arena_), in_->mutable_batch(),
        /*may_run_inline=*/sink_->queued_bytes() < kMaxInlineBacklog);
    if (last_seq != 0) session_->NoteStreamBatch(last_seq);
    if (room) Read();
    // else: the session's on_drain callback resumes reading.
  }

  void OnWriteDone(bool ok) override { sink_->WriteDone(ok); }

  void OnCancel() override {
    sink_->MarkDead();
    if (session_)
      sessions_->StreamEnded(session_, sink_.get(), /*dropped=*/true);
  }

  void OnDone() override {
    LeaveGate();
    sink_->Detach();
    if (session_)
      sessions_->StreamEnded(session_, sink_.get(), /*dropped=*/false);
    delete this;
  }

  void DoFinish(const absl::Status& status) { Finish(ToGrpcStatus(status)); }
  // One write in flight (StreamSink's rule), so one buffer suffices; the
  // frame's payload is not copied into it (Note [Aliased payloads]).
  void DoWrite(std::shared_ptr<const v1::ServerFrame> frame) {
    out_ = SerializeAliased(std::move(frame));
    StartWrite(&out_);
  }
  void DoRead() { Read(); }

 private:
  void Read() { StartRead(&in_buffer_); }
  // Parses the frame just read into in_. Note [Frame arenas]: each frame is
  // parsed on its own arena, which the session frees after running the
  // batch; a Hello or bad frame reuses it.
  bool Parse() {
    if (arena_ == nullptr) {
      arena_ = std::make_unique<google::protobuf::Arena>(
          FrameArenaOptions());  // Note [Frame block cache]
    } else {
      arena_->Reset();
    }
    in_ = google::protobuf::Arena::CreateMessage<v1::ClientFrame>(arena_.get());
    return ParseFromByteBuffer(&in_buffer_, in_);
  }

  void OnHello() {
    if (!in_->has_hello()) {
      sink_->End(absl::InvalidArgumentError(
          "the first frame of a session must be a Hello"));
      return;
    }
    auto session = sessions_->Open(in_->hello(), BearerToken(*context_),
                                   context_->peer(), sink_);
    if (!session.ok() &&
        session.status().code() == absl::StatusCode::kUnauthenticated) {
      return RefuseLater(session.status());
    }
    if (!session.ok()) {
      spdlog::warn("session refused for {}: {}", context_->peer(),
                   session.status().ToString());
      sink_->End(session.status());
      return;
    }
    LeaveGate();  // authenticated
    session_ = *std::move(session);
    std::weak_ptr<StreamSink> sink = sink_;
    session_->SetOnDrain([sink] {
      if (auto s = sink.lock()) s->ResumeReading();
    });
    Read();
  }

  // Note [Failed authentications]: logged (rate limited) and answered after
  // the peer's delay; the stream stays counted as unauthenticated till then.
  void RefuseLater(const absl::Status& refusal) {
    std::weak_ptr<StreamSink> sink = sink_;
    gate_->RefuseLater("authentication", peer_, refusal, [sink, refusal] {
      if (auto s = sink.lock()) s->End(refusal);
    });
  }

  void LeaveGate() {
    if (counted_) gate_->Leave(peer_);
    counted_ = false;
  }

  static constexpr int kAwaitingHello = 0;
  static constexpr int kHelloArrived = 1;
  static constexpr int kHelloTimedOut = 2;

  grpc::CallbackServerContext* context_;
  SessionManager* sessions_;
  AuthGate* const gate_;
  const std::string peer_;  // gRPC's peer string, for the gate
  bool counted_ = false;    // among the gate's unauthenticated streams
  // Shared with the Hello deadline's timer, which may outlive the reactor.
  std::shared_ptr<std::atomic<int>> hello_state_ =
      std::make_shared<std::atomic<int>>(kAwaitingHello);
  uint64_t hello_timer_ = 0;
  std::shared_ptr<StreamSink> sink_;
  std::shared_ptr<tensord::Session> session_;
  grpc::ByteBuffer in_buffer_;  // the frame being read
  std::unique_ptr<google::protobuf::Arena> arena_;
  v1::ClientFrame* in_ = nullptr;  // on arena_, parsed from in_buffer_
  grpc::ByteBuffer out_;           // the frame being written
};

void StreamSink::Send(v1::ServerFrame frame) {
  SendShared(std::make_shared<const v1::ServerFrame>(std::move(frame)));
}

void StreamSink::SendShared(std::shared_ptr<const v1::ServerFrame> frame) {
  {
    MutexLock lock(&mu_);
    mu_.Await(absl::Condition(
        +[](StreamSink* s) ABSL_EXCLUSIVE_LOCKS_REQUIRED(s->mu_) {
          return s->dead_ || s->queued_bytes_ < kMaxQueuedBytes;
        },
        this));
    if (dead_ || ended_) return;
    queued_bytes_ += frame->ByteSizeLong();
    queue_.push_back(std::move(frame));
  }
  Pump();
}

void StreamSink::End(absl::Status status) {
  {
    MutexLock lock(&mu_);
    if (ended_) return;
    ended_ = true;
    end_status_ = std::move(status);
  }
  Pump();
}

void StreamSink::Pump() {
  SessionReactor* reactor = nullptr;
  bool finish = false;
  absl::Status status;
  {
    MutexLock lock(&mu_);
    if (writing_ || reactor_ == nullptr || finished_) return;
    if (!queue_.empty() && !dead_) {
      current_ = std::move(queue_.front());
      queue_.pop_front();
      queued_bytes_ -= std::min(queued_bytes_,
                                static_cast<size_t>(current_->GetCachedSize()));
      writing_ = true;
      reactor = reactor_;
    } else if (ended_ || dead_) {
      finished_ = true;
      finish = true;
      status = dead_ && end_status_.ok() ? absl::CancelledError("peer gone")
                                         : end_status_;
      reactor = reactor_;
    }
  }
  if (reactor == nullptr) return;
  // gRPC allows one outstanding write; StartWrite/Finish are called outside
  // mu_ because the library may run reactions on this thread.
  if (finish) {
    reactor->DoFinish(status);
  } else {
    reactor->DoWrite(current_);
  }
}

void StreamSink::WriteDone(bool ok) {
  {
    MutexLock lock(&mu_);
    writing_ = false;
    if (!ok) {
      dead_ = true;
      queue_.clear();
      queued_bytes_ = 0;
    }
  }
  Pump();
}

void StreamSink::MarkDead() {
  {
    MutexLock lock(&mu_);
    dead_ = true;
    queue_.clear();
    queued_bytes_ = 0;
  }
  Pump();
}

void StreamSink::ResumeReading() {
  SessionReactor* reactor;
  {
    MutexLock lock(&mu_);
    reactor = reactor_;
    if (reactor == nullptr || dead_) return;
    ++resuming_;
  }
  reactor->DoRead();
  MutexLock lock(&mu_);
  --resuming_;
}

void StreamSink::Detach() {
  MutexLock lock(&mu_);
  mu_.Await(absl::Condition(
      +[](StreamSink* s)
           ABSL_EXCLUSIVE_LOCKS_REQUIRED(s->mu_) { return s->resuming_ == 0; },
      this));
  reactor_ = nullptr;
  dead_ = true;
  queue_.clear();
  queued_bytes_ = 0;
}

}  // namespace

grpc::ServerBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer>*
TensordService::Session(grpc::CallbackServerContext* context) {
  return new SessionReactor(context, sessions_, gate_);
}

grpc::Status ToGrpcStatus(const absl::Status& status) {
  if (status.ok()) return grpc::Status::OK;
  return grpc::Status(static_cast<grpc::StatusCode>(status.code()),
                      std::string(status.message()));
}

std::string BearerToken(const grpc::ServerContextBase& context) {
  const auto& md = context.client_metadata();
  auto it = md.find("authorization");
  if (it == md.end()) return "";
  absl::string_view value(it->second.data(), it->second.size());
  if (!absl::ConsumePrefix(&value, "Bearer ")) return "";
  return std::string(value);
}

}  // namespace tensord
