// The fake daemon's protocol handling (client/fake_tensord.h): the Hello
// handshake, the Session stream's batches (packed runs unpacked with
// packed::Reader), acks, replies and the violations it records. The op math
// is in client/fake_ops.h, the advertised Welcome in client/fake_welcome.h.
#include "client/fake_tensord.h"

#include <algorithm>
#include <map>
#include <optional>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "client/fake_ops.h"
#include "client/fake_welcome.h"
#include "proto/packed_commands.h"

namespace tensord {
namespace testing {
namespace {

using fake::Compute;
using fake::FakeTensor;
using fake::ItemSize;
using fake::Load;
using fake::Numel;
using fake::Store;

v1::Status MakeStatus(absl::StatusCode code, std::string message,
                      const std::string& op, const std::string& site) {
  v1::Status s;
  s.set_code(static_cast<int>(code));
  s.set_message(std::move(message));
  s.set_op(op);
  s.set_site(site);
  return s;
}

}  // namespace

// One session's state; runs on the gRPC handler thread.
class FakeSession {
 public:
  FakeSession(FakeTensordService* service,
              grpc::ServerReaderWriter<v1::ServerFrame, v1::ClientFrame>* io)
      : service_(service), io_(io) {}

  void Run(const v1::Welcome& welcome) {
    welcome_ = welcome;
    v1::ClientFrame frame;
    while (io_->Read(&frame)) {
      if (!frame.has_batch()) {
        Violation("a non-batch frame after Hello");
        continue;
      }
      const std::vector<v1::Command> commands = Unpack(frame.batch());
      {
        MutexLock lock(&service_->mu_);
        FakeStats& s = service_->stats_;
        s.frames++;
        s.commands += static_cast<int64_t>(commands.size());
        s.max_frame_commands =
            std::max(s.max_frame_commands, static_cast<int>(commands.size()));
        s.max_frame_bytes = std::max(s.max_frame_bytes, frame.ByteSizeLong());
      }
      if (frame.ByteSizeLong() > service_->options_.max_frame_bytes) {
        Violation(absl::StrCat("frame of ", frame.ByteSizeLong(), " bytes"));
      }
      v1::ServerFrame ack_frame;
      v1::Ack* ack = ack_frame.mutable_ack();
      for (const v1::Command& command : commands) {
        if (command.seq() != last_seq_ + 1) {
          Violation(absl::StrCat("seq ", command.seq(), " after ", last_seq_));
        }
        last_seq_ = command.seq();
        if (put_handle_ != 0 && !command.has_put()) {
          Violation("a command between the chunks of an upload");
        }
        Run(command, ack);
      }
      ack->set_last_seq(last_seq_);
      io_->Write(ack_frame);
      for (v1::ServerFrame& reply : replies_) io_->Write(reply);
      replies_.clear();
    }
  }

 private:
  void Violation(std::string what) {
    MutexLock lock(&service_->mu_);
    service_->stats_.violations.push_back(std::move(what));
  }

  // The batch's commands with packed runs replaced by the Call and Release
  // messages their entries stand for.
  std::vector<v1::Command> Unpack(const v1::Batch& batch) {
    std::vector<v1::Command> out;
    for (const v1::Command& command : batch.commands()) {
      if (!command.has_packed()) {
        out.push_back(command);
        continue;
      }
      if (!service_->options_.packed_commands) {
        Violation("a packed run without Welcome.packed_commands");
      }
      packed::Reader reader(command.packed().entries());
      packed::Entry entry;
      uint64_t seq = command.seq();
      while (!reader.done()) {
        absl::Status status = reader.Next(&entry);
        if (!status.ok()) {
          Violation(std::string(status.message()));
          break;
        }
        v1::Command& c = out.emplace_back();
        c.set_seq(seq++);
        if (entry.kind == packed::Kind::kRelease) {
          c.mutable_release()->mutable_handles()->Add(entry.handles.begin(),
                                                      entry.handles.end());
          continue;
        }
        v1::Call* call = c.mutable_call();
        call->set_op_id(entry.op_id);
        call->set_site_id(entry.site_id);
        call->mutable_inputs()->Add(entry.inputs.begin(), entry.inputs.end());
        call->mutable_outputs()->Add(entry.outputs.begin(),
                                     entry.outputs.end());
      }
      if (seq != packed::LastSeq(command) + 1) {
        Violation(absl::StrCat("a packed run at seq ", command.seq(), " of ",
                               command.packed().count(), " commands holds ",
                               seq - command.seq()));
      }
      MutexLock lock(&service_->mu_);
      service_->stats_.packed += static_cast<int64_t>(seq - command.seq());
    }
    return out;
  }

  void Created(uint64_t handle, v1::Ack* ack) {
    const FakeTensor& t = tensors_[handle];
    v1::TensorMeta* meta = ack->add_created();
    meta->set_handle(handle);
    meta->set_dtype(t.dtype);
    meta->mutable_shape()->Add(t.shape.begin(), t.shape.end());
    meta->set_device("cpu");
    if (t.error.code() != 0) *meta->mutable_error() = t.error;
  }

  bool NewHandle(uint64_t handle) {
    if (handle <= last_handle_) {
      Violation(absl::StrCat("handle ", handle, " after ", last_handle_));
      return false;
    }
    last_handle_ = handle;
    return true;
  }

  void Poison(uint64_t handle, v1::Status status) {
    if (first_error_.code() == 0) first_error_ = status;
    tensors_[handle].error = std::move(status);
  }

  void Run(const v1::Command& command, v1::Ack* ack) {
    switch (command.kind_case()) {
      case v1::Command::kPut:
        return RunPut(command.put(), ack);
      case v1::Command::kCall:
        return RunCall(command.call(), ack);
      case v1::Command::kGet:
        return RunGet(command.get());
      case v1::Command::kRelease: {
        MutexLock lock(&service_->mu_);
        for (uint64_t h : command.release().handles()) {
          tensors_.erase(h);
          service_->stats_.released.insert(h);
        }
        return;
      }
      case v1::Command::kSync: {
        v1::ServerFrame reply;
        reply.mutable_sync_done()->set_request_id(command.sync().request_id());
        *reply.mutable_sync_done()->mutable_error() = first_error_;
        first_error_ = v1::Status();
        replies_.push_back(std::move(reply));
        return;
      }
      case v1::Command::kOptions: {
        MutexLock lock(&service_->mu_);
        service_->stats_.last_seed = command.options().seed();
        return;
      }
      default:
        Violation("a command with no kind");
    }
  }

  void RunPut(const v1::Put& put, v1::Ack* ack) {
    if (put.offset() == 0) {
      if (!NewHandle(put.handle())) return;
      put_handle_ = put.handle();
      FakeTensor& t = tensors_[put.handle()];
      t.dtype = put.dtype();
      t.shape.assign(put.shape().begin(), put.shape().end());
      put_bytes_.clear();
    } else if (put.handle() != put_handle_ ||
               put.offset() != put_bytes_.size()) {
      Violation(absl::StrCat("Put chunk for ", put.handle(), " at ",
                             put.offset(), " after ", put_bytes_.size()));
      return;
    }
    put_bytes_.append(put.payload().data());
    if (!put.last()) return;
    put_handle_ = 0;
    FakeTensor& t = tensors_[put.handle()];
    const size_t item = ItemSize(t.dtype);
    if (put_bytes_.size() != Numel(t.shape) * item) {
      Violation("Put total does not match its shape");
    }
    t.values.resize(put_bytes_.size() / item);
    for (size_t i = 0; i < t.values.size(); ++i) {
      t.values[i] = Load(t.dtype, put_bytes_.data() + i * item);
    }
    Created(put.handle(), ack);
  }

  void RunGet(const v1::Get& get) {
    v1::ServerFrame reply;
    auto it = tensors_.find(get.handle());
    if (it == tensors_.end() || it->second.error.code() != 0) {
      v1::Error* error = reply.mutable_error();
      error->set_request_id(get.request_id());
      *error->mutable_status() =
          it == tensors_.end()
              ? MakeStatus(absl::StatusCode::kNotFound,
                           absl::StrCat("handle ", get.handle(), " not found"),
                           "get", get.site())
              : it->second.error;
      replies_.push_back(std::move(reply));
      return;
    }
    const FakeTensor& t = it->second;
    const size_t item = ItemSize(t.dtype);
    std::string bytes(t.values.size() * item, '\0');
    for (size_t i = 0; i < t.values.size(); ++i) {
      Store(t.dtype, t.values[i], bytes.data() + i * item);
    }
    const uint64_t chunk = service_->options_.chunk_bytes;
    uint64_t offset = 0;
    do {
      v1::ServerFrame data_frame;
      v1::Data* data = data_frame.mutable_data();
      data->set_request_id(get.request_id());
      if (offset == 0) {
        data->mutable_meta()->set_handle(get.handle());
        data->mutable_meta()->set_dtype(t.dtype);
        data->mutable_meta()->mutable_shape()->Add(t.shape.begin(),
                                                   t.shape.end());
        data->mutable_meta()->set_device("cpu");
        data->set_total_bytes(bytes.size());
      }
      const uint64_t n = std::min<uint64_t>(chunk, bytes.size() - offset);
      data->set_offset(offset);
      data->mutable_payload()->set_data(bytes.substr(offset, n));
      offset += n;
      data->set_last(offset == bytes.size());
      replies_.push_back(std::move(data_frame));
    } while (offset < bytes.size());
  }

  void RunCall(const v1::Call& call, v1::Ack* ack) {
    if (call.outputs_size() != 1 || !NewHandle(call.outputs(0))) return;
    const uint64_t out = call.outputs(0);
    const v1::OpSchema* op = nullptr;
    for (const v1::OpSchema& o : welcome_.ops()) {
      if (o.id() == call.op_id()) op = &o;
    }
    const std::string name = op ? op->name() : "?";
    auto fail = [&](absl::StatusCode code, std::string message) {
      Poison(out, MakeStatus(code, std::move(message), name, call.site()));
      Created(out, ack);
    };
    std::vector<const FakeTensor*> in;
    for (uint64_t h : call.inputs()) {
      auto it = tensors_.find(h);
      if (it == tensors_.end()) {
        return fail(absl::StatusCode::kNotFound,
                    absl::StrCat("handle ", h, " not found"));
      }
      if (it->second.error.code() != 0) {
        tensors_[out].error = it->second.error;  // same original error
        Created(out, ack);
        return;
      }
      in.push_back(&it->second);
    }
    FakeTensor result;
    absl::Status status = Compute(name, call, in, &result);
    if (!status.ok()) {
      return fail(status.code(), std::string(status.message()));
    }
    tensors_[out] = std::move(result);
    Created(out, ack);
  }

  FakeTensordService* service_;
  grpc::ServerReaderWriter<v1::ServerFrame, v1::ClientFrame>* io_;
  v1::Welcome welcome_;
  std::map<uint64_t, FakeTensor> tensors_;
  std::vector<v1::ServerFrame> replies_;
  uint64_t last_seq_ = 0;
  uint64_t last_handle_ = 0;
  uint64_t put_handle_ = 0;
  std::string put_bytes_;
  v1::Status first_error_;
};

grpc::Status FakeTensordService::Session(
    grpc::ServerContext* context,
    grpc::ServerReaderWriter<v1::ServerFrame, v1::ClientFrame>* stream) {
  v1::ClientFrame hello;
  if (!stream->Read(&hello) || !hello.has_hello()) {
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                        "the first frame must be Hello");
  }
  if (options_.silent) {
    while (stream->Read(&hello)) {
    }
    return grpc::Status(grpc::StatusCode::CANCELLED, "silent fake");
  }
  if (hello.hello().protocol_version() != v1::PROTOCOL_VERSION_CURRENT) {
    return grpc::Status(
        grpc::StatusCode::FAILED_PRECONDITION,
        absl::StrCat("client speaks protocol version ",
                     hello.hello().protocol_version(), ", daemon speaks ",
                     v1::PROTOCOL_VERSION_CURRENT));
  }
  if (!options_.token.empty()) {
    auto auth = context->client_metadata().find("authorization");
    const std::string want = "Bearer " + options_.token;
    if (hello.hello().token() != options_.token ||
        auth == context->client_metadata().end() ||
        std::string(auth->second.data(), auth->second.size()) != want) {
      return grpc::Status(grpc::StatusCode::UNAUTHENTICATED, "invalid token");
    }
  }
  v1::ServerFrame welcome_frame;
  *welcome_frame.mutable_welcome() = fake::FakeWelcome(options_);
  stream->Write(welcome_frame);
  FakeSession session(this, stream);
  session.Run(welcome_frame.welcome());
  return grpc::Status::OK;
}

FakeStats FakeTensordService::stats() const {
  MutexLock lock(&mu_);
  return stats_;
}

FakeTensord::FakeTensord(FakeOptions options) : service_(options) {
  grpc::ServerBuilder builder;
  int port = 0;
  builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(),
                           &port);
  builder.SetMaxReceiveMessageSize(static_cast<int>(options.max_frame_bytes));
  builder.RegisterService(&service_);
  server_ = builder.BuildAndStart();
  address_ = absl::StrCat("127.0.0.1:", port);
}

FakeTensord::~FakeTensord() { server_->Shutdown(); }

}  // namespace testing
}  // namespace tensord
