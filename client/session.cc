// Session setup, command batching and sending. Frame handling and the
// waiting sync points are in session_reader.cc, uploads in session_upload.cc.
#include "client/session.h"

#include <chrono>
#include <cstdlib>
#include <utility>

#include "absl/base/call_once.h"
#include "absl/container/inlined_vector.h"
#include "absl/strings/str_cat.h"
#include "client/channel.h"
#include "client/status.h"
#include "proto/frame_buffer.h"
#include "proto/packed_commands.h"
#include "runtime/core/transfer_buffers.h"

namespace tensord {
inline namespace client {
namespace internal {

Session::Session(const ClientOptions& options,
                 std::shared_ptr<grpc::Channel> channel)
    : options_(options),
      address_(options.address),
      policy_{options.batch_max_bytes, options.batch_max_commands,
              size_t{8} << 20},
      batch_delay_(options.batch_delay),
      opener_(std::move(channel), options.token, options.address) {}

Session::~Session() { Close(); }

absl::StatusOr<std::shared_ptr<Session>> Session::Open(
    const ClientOptions& raw_options) {
  const ClientOptions options = ResolveOptions(raw_options);
  absl::StatusOr<std::shared_ptr<grpc::Channel>> channel =
      ConnectChannel(options);
  if (!channel.ok()) return channel.status();
  std::shared_ptr<Session> session(new Session(options, *std::move(channel)));
  absl::Status status = session->Handshake();
  if (!status.ok()) return status;
  if (options.tune_malloc && !session->transport_->local()) {
    static absl::once_flag tuned;
    absl::call_once(tuned, [] {
      KeepTransferBuffersMapped(/*mmap_threshold=*/8 << 20,
                                /*trim_threshold=*/32 << 20);
    });
  }
  session->started_ = true;
  session->reader_ = std::thread(&Session::ReadLoop, session.get());
  session->flusher_ = std::thread(&Session::FlushLoop, session.get());
  return session;
}

absl::Status Session::Handshake() {
  v1::Hello hello;
  hello.set_protocol_version(v1::PROTOCOL_VERSION_CURRENT);
  hello.set_token(options_.token);
  hello.set_client_name(options_.client_name);
  Transport::FillHello(options_, &hello);
  // Note [Packed commands]: always read; the daemon says whether it reads
  // them (Welcome.packed_commands).
  hello.set_packed_acks(true);
  absl::StatusOr<StreamOpener::Opened> opened =
      OpenStream(hello, options_.connect_timeout);
  if (!opened.ok()) return opened.status();
  context_ = std::move(opened->context);
  stream_ = std::move(opened->stream);
  welcome_ = std::move(opened->welcome);
  for (int i = 0; i < welcome_.ops_size(); ++i) {
    op_index_[welcome_.ops(i).name()] = i;
  }
  if (welcome_.max_frame_bytes() != 0) {
    policy_.max_frame_bytes = welcome_.max_frame_bytes();
  }
  transport_ = Transport::Make(options_, welcome_, this);
  MutexLock lock(&mu_);
  default_device_ = welcome_.default_device();
  batch_.set_packed(welcome_.packed_commands());
  return absl::OkStatus();
}

void Session::Close() {
  {
    MutexLock lock(&mu_);
    if (closed_) return;
    if (!started_) {
      closed_ = true;
      return;
    }
  }
  {
    // Last commands (typically releases) go out before the half-close.
    MutexLock enqueue_lock(&enqueue_mu_);
    Flush().IgnoreError();
    MutexLock lock(&mu_);
    closed_ = true;
  }
  {
    MutexLock write_lock(&write_mu_);
    if (!writes_done_) {
      writes_done_ = true;
      if (stream_live_) stream_->WritesDone();
    }
  }
  {
    MutexLock lock(&mu_);
    closing_ = true;
    flush_cv_.Signal();
    if (attempt_context_ != nullptr) attempt_context_->TryCancel();
    // The daemon ends the stream once it has seen WritesDone; don't hang on
    // one that doesn't.
    if (!mu_.AwaitWithTimeout(absl::Condition(&reader_done_),
                              absl::Seconds(5))) {
      context_->TryCancel();
    }
  }
  reader_.join();
  flusher_.join();
  transport_->Close();
}

const v1::OpSchema* Session::FindOp(absl::string_view name) const {
  auto it = op_index_.find(name);
  return it == op_index_.end() ? nullptr : &welcome_.ops(it->second);
}

absl::Status Session::CheckOpenLocked() const {
  if (closed_) {
    return absl::FailedPreconditionError(
        "the tensord session is closed (its Client was destroyed)");
  }
  return stream_error_;
}

absl::StatusOr<uint64_t> Session::ReserveHandles(int count, HandleMeta* meta) {
  MutexLock lock(&mu_);
  absl::Status open = CheckOpenLocked();
  if (!open.ok()) return open;
  if (meta != nullptr && meta->device.empty()) meta->device = default_device_;
  return handles_.Reserve(count);
}

absl::Status Session::Append(v1::Command command,
                             absl::Span<const uint64_t> creates,
                             const HandleMeta* known, uint64_t* seq) {
  // + seq field and the repeated-field framing.
  const size_t size = command.ByteSizeLong() + 16;
  return AppendWith(
      size, [&](v1::Command* slot) { *slot = std::move(command); }, creates,
      known, seq);
}

bool Session::AppendLocked(size_t size,
                           absl::FunctionRef<void(v1::Command*)> fill,
                           absl::Span<const uint64_t> creates,
                           const HandleMeta* known, uint64_t* seq,
                           const PackFn* pack) {
  // Releases queued by destructors go before this command, so memory
  // freed on the client side is free for it on the daemon (as in eager
  // PyTorch), not only at the end of the batch (a broken stream drops them).
  if (stream_error_.ok()) batch_.MoveReleasesIn();
  const bool opens = batch_.empty();
  const uint64_t command_seq = batch_.Add(size, fill, pack);
  if (seq != nullptr) *seq = command_seq;
  for (uint64_t handle : creates) handles_.Created(handle, command_seq, known);
  if (opens && flusher_parked_) flush_cv_.Signal();
  return policy_.FlushAfter(batch_.size(), batch_.bytes());
}

absl::Status Session::AppendWith(size_t size,
                                 absl::FunctionRef<void(v1::Command*)> fill,
                                 absl::Span<const uint64_t> creates,
                                 const HandleMeta* known, uint64_t* seq,
                                 const PackFn* pack) {
  if (!policy_.Fits(size)) {
    return absl::InvalidArgumentError(
        absl::StrCat("a command of ", size,
                     " bytes exceeds tensord's frame "
                     "limit of ",
                     policy_.max_frame_bytes, " bytes"));
  }
  // The common case, room in the batch, takes the lock once.
  bool flush_before = false;
  bool flush_after = false;
  {
    MutexLock lock(&mu_);
    absl::Status open = CheckOpenLocked();
    if (!open.ok()) return open;
    flush_before = policy_.FlushBefore(batch_.size(), batch_.bytes(), size);
    if (!flush_before) {
      flush_after = AppendLocked(size, fill, creates, known, seq, pack);
    }
  }
  if (flush_before) {
    absl::Status status = Flush();
    if (!status.ok()) return status;
    MutexLock lock(&mu_);
    absl::Status open = CheckOpenLocked();
    if (!open.ok()) return open;
    flush_after = AppendLocked(size, fill, creates, known, seq, pack);
  }
  return flush_after ? Flush() : absl::OkStatus();
}

absl::StatusOr<uint64_t> Session::EnqueueRequest(
    RequestTable::Kind kind, DownloadTarget target,
    absl::FunctionRef<void(uint64_t, v1::Command*)> fill) {
  uint64_t request_id;
  {
    MutexLock lock(&mu_);
    absl::Status open = CheckOpenLocked();
    if (!open.ok()) return open;
    request_id = requests_.Add(kind, target);
  }
  v1::Command command;
  fill(request_id, &command);
  uint64_t seq = 0;
  absl::Status status = Append(std::move(command), {}, nullptr, &seq);
  MutexLock lock(&mu_);
  if (!status.ok()) {
    requests_.Forget(request_id);
    return status;
  }
  requests_.Queued(request_id, seq);
  return request_id;
}

absl::StatusOr<uint64_t> Session::EnqueueCall(
    const v1::OpSchema& op, absl::Span<const uint64_t> inputs,
    const google::protobuf::Map<std::string, v1::AttrValue>& attrs,
    int num_outputs, const Site& site) {
  MutexLock enqueue_lock(&enqueue_mu_);
  const SiteIds::Choice choice = site_ids_.Choose(site);
  const uint32_t site_id = choice.site_id;
  // Formatted only when bound (once per source line and session) or past
  // the cap.
  const std::string site_text = choice.text ? site.ToString() : std::string();
  absl::StatusOr<uint64_t> first = ReserveHandles(num_outputs);
  if (!first.ok()) return first.status();
  absl::InlinedVector<uint64_t, 4> outputs;
  for (int i = 0; i < num_outputs; ++i) outputs.push_back(*first + i);
  // An upper bound of the Call's encoding: tags, lengths and 10-byte varints.
  size_t size = 48 + site_text.size() + 11 * (inputs.size() + outputs.size());
  for (const auto& [name, value] : attrs) {
    size += 16 + name.size() + value.ByteSizeLong();
  }
  // Note [Packed commands]: the usual op has neither attributes nor a site
  // to bind.
  auto write_packed = [&](std::string* out) {
    packed::AppendCall(op.id(), site_id, inputs, outputs, out);
  };
  const PackFn pack = write_packed;  // a reference: write_packed outlives it
  const bool packable = attrs.empty() && site_text.empty();
  absl::Status status = AppendWith(
      size,
      [&](v1::Command* command) {
        v1::Call* call = command->mutable_call();
        call->set_op_id(op.id());
        call->mutable_inputs()->Add(inputs.begin(), inputs.end());
        if (!attrs.empty()) *call->mutable_attrs() = attrs;
        call->mutable_outputs()->Add(outputs.begin(), outputs.end());
        if (!site_text.empty()) call->set_site(site_text);
        if (site_id != 0) call->set_site_id(site_id);
      },
      outputs, nullptr, nullptr, packable ? &pack : nullptr);
  if (!status.ok()) return status;
  if (choice.bind) site_ids_.Bound(site, site_id);
  return outputs.empty() ? 0 : outputs.front();
}

absl::Status Session::EnqueueOptions(const v1::SetOptions& options) {
  MutexLock enqueue_lock(&enqueue_mu_);
  v1::Command command;
  *command.mutable_options() = options;
  absl::Status status = Append(std::move(command), {}, nullptr);
  if (status.ok() && options.option_case() == v1::SetOptions::kDefaultDevice) {
    MutexLock lock(&mu_);
    default_device_ = options.default_device();
  }
  if (status.ok() && options.option_case() == v1::SetOptions::kGradEnabled) {
    MutexLock lock(&mu_);
    grad_enabled_ = options.grad_enabled();
  }
  if (status.ok() && options.option_case() == v1::SetOptions::kStream) {
    MutexLock lock(&mu_);
    stream_id_ = options.stream();
  }
  return status;
}

bool Session::grad_enabled() const {
  MutexLock lock(&mu_);
  return grad_enabled_;
}

void Session::QueueRelease(uint64_t handle) {
  MutexLock lock(&mu_);
  handles_.Erase(handle);
  // A closed or broken session's handles are released by the daemon.
  if (closed_ || !stream_error_.ok()) return;
  if (batch_.empty() && flusher_parked_) flush_cv_.Signal();
  batch_.QueueRelease(handle);
}

absl::Status Session::Flush() {
  MutexLock write_lock(&write_mu_);
  std::shared_ptr<const v1::ClientFrame> frame;
  bool resuming;
  {
    MutexLock lock(&mu_);
    if (stream_error_.ok()) batch_.MoveReleasesIn();
    if (batch_.size() == 0) return stream_error_;
    sent_seq_ = batch_.last_seq();
    frame = batch_.Take(acked_seq_);
    if (!stream_error_.ok()) return stream_error_;  // dropped: stream is over
    // Kept until acknowledged: a resume resends it.
    if (options_.resume) replay_.Sent(sent_seq_, frame);
    resuming = resuming_;
  }
  if (writes_done_) {
    return absl::FailedPreconditionError("the tensord session is closed");
  }
  // While the reader resumes, the batch waits in replay_ for the new stream.
  if (options_.resume && (resuming || !stream_live_)) return absl::OkStatus();
  if (!stream_live_ || !stream_->Write(SerializeAliased(frame))) {
    // With resume on, the reader sees the break too and resumes or fails.
    if (options_.resume) return absl::OkStatus();
    MutexLock lock(&mu_);
    if (stream_error_.ok()) {
      stream_error_ = absl::UnavailableError(absl::StrCat(
          "the session stream to tensord at ", address_, " broke"));
      transport_->Answered(0);
    }
    return stream_error_;
  }
  return absl::OkStatus();
}

void Session::FlushLoop() {
  // Note [Flusher waits]: the flusher waits on flush_cv_, not with an
  // absl::Condition on mu_: a Condition is evaluated by every thread that
  // unlocks mu_ while it waits, and the calling thread locks mu_ several
  // times per op. Whoever makes work for it signals flush_cv_ (the first
  // command or release of a batch, Close, a resume's resend).
  //
  // Only a parked flusher is signalled for a new batch (flusher_parked_):
  // while it waits out one batch's delay, batches opened after a sync point
  // sent the previous one wake nobody, since the wait re-reads
  // first_pending_. A loop of a few ops and an item() then costs the
  // flusher one wake-up per batch_delay, not two thread switches per
  // batch (on a 2-core VM, ~10% of an item() round trip).
  while (true) {
    {
      MutexLock lock(&mu_);
      while (!(closing_ || replay_.resend_pending() || batch_.ready())) {
        flusher_parked_ = true;
        flush_cv_.Wait(&mu_);
        flusher_parked_ = false;
      }
      if (closing_) return;
      // A timed wait, not a sleep: Close() and a resume wake it at once.
      while (!closing_ && !replay_.resend_pending()) {
        const absl::Duration left =
            batch_.opened() + batch_delay_ - absl::Now();
        if (left <= absl::ZeroDuration()) break;
        flush_cv_.WaitWithTimeout(&mu_, left);
      }
      if (closing_) return;
    }
    ResendUnacked();  // after a resume (no-op otherwise)
    Flush().IgnoreError();
  }
}

}  // namespace internal
}  // namespace client
}  // namespace tensord
