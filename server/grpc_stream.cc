#include "server/grpc_stream.h"

#include <atomic>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "google/protobuf/arena.h"
#include "proto/frame_buffer.h"
#include "proto/packed_commands.h"
#include "runtime/core/block_cache.h"
#include "server/stream_sink.h"
#include "spdlog/spdlog.h"

namespace tensord {
namespace {

// Batches run inline only behind fewer queued bytes than this: what a cheap
// batch sends (a few hundred KiB at most) then fits below kMaxQueuedBytes.
constexpr size_t kMaxInlineBacklog = 8 << 20;

class SessionReactor
    : public grpc::ServerBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer>,
      public StreamWriter {
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

  void DoFinish(const absl::Status& status) override {
    Finish(ToGrpcStatus(status));
  }
  // One write in flight (StreamSink's rule), so one buffer suffices; the
  // frame's payload is not copied into it (Note [Aliased payloads]).
  void DoWrite(std::shared_ptr<const v1::ServerFrame> frame) override {
    out_ = SerializeAliased(std::move(frame));
    StartWrite(&out_);
  }
  void DoRead() override { Read(); }

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
