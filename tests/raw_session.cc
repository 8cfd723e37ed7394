#include "tests/raw_session.h"

#include "gtest/gtest.h"

namespace tensord {
namespace testing {

RawSession::RawSession(const std::string& address, const std::string& token,
                       const std::string& name, v1::Hello hello_fields) {
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(64 << 20);
  args.SetMaxSendMessageSize(64 << 20);  // lets tests send oversized frames
  channel_ = grpc::CreateCustomChannel(
      address, grpc::InsecureChannelCredentials(), args);
  stub_ = v1::Tensord::NewStub(channel_);
  if (!token.empty()) {
    context_.AddMetadata("authorization", "Bearer " + token);
  }
  stream_ = stub_->Session(&context_);
  v1::ClientFrame hello;
  *hello.mutable_hello() = std::move(hello_fields);
  hello.mutable_hello()->set_protocol_version(v1::PROTOCOL_VERSION_CURRENT);
  hello.mutable_hello()->set_client_name(name);
  v1::ServerFrame frame;
  ok_ = stream_->Write(hello) && stream_->Read(&frame) && frame.has_welcome();
  if (ok_) welcome_ = frame.welcome();
}

RawSession::~RawSession() {
  if (!closed_) Close();
}

uint32_t RawSession::OpId(const std::string& name) const {
  for (const auto& op : welcome_.ops()) {
    if (op.name() == name) return op.id();
  }
  ADD_FAILURE() << "no op " << name << " in the catalog";
  return 0;
}

v1::Command* RawSession::Add() {
  v1::Command* c = pending_.mutable_batch()->add_commands();
  c->set_seq(++seq_);
  return c;
}

uint64_t RawSession::PutFloats(const std::vector<int64_t>& shape) {
  const uint64_t id = NewHandle();
  int64_t n = 1;
  v1::Put* put = Add()->mutable_put();
  put->set_handle(id);
  put->set_dtype(v1::FLOAT32);
  for (int64_t s : shape) {
    put->add_shape(s);
    n *= s;
  }
  put->mutable_payload()->set_data(std::string(n * 4, '\0'));
  put->set_last(true);
  return id;
}

bool RawSession::WriteRaw(const v1::ClientFrame& frame) {
  return stream_->Write(frame);
}

bool RawSession::SendPending() {
  const bool written = stream_->Write(pending_);
  pending_.Clear();
  return written;
}

RawSession::Reply RawSession::Flush() {
  Reply reply;
  const uint64_t sync_id = NewRequest();
  v1::Command* sync = Add();
  sync->mutable_sync()->set_request_id(sync_id);
  const uint64_t sync_seq = sync->seq();
  const bool written = stream_->Write(pending_);
  pending_.Clear();
  if (!written) return reply;
  // The SyncDone is sent when the Sync runs, the batch's Ack after the
  // batch's last command: wait for both.
  bool acked = false, synced = false;
  v1::ServerFrame frame;
  while (!(acked && synced) && stream_->Read(&frame)) {
    if (frame.has_ack()) {
      acked = frame.ack().last_seq() >= sync_seq;
      for (const auto& meta : frame.ack().created()) {
        reply.created[meta.handle()] = meta;
      }
    } else if (frame.has_error()) {
      reply.errors.push_back(frame.error());
    } else if (frame.has_data() && (frame.data().payload().has_region() ||
                                    frame.data().payload().has_bulk())) {
      reply.shm_data[frame.data().request_id()] = frame.data();
    } else if (frame.has_data()) {
      reply.data[frame.data().request_id()] += frame.data().payload().data();
    } else if (frame.has_shared_buffer()) {
      reply.shared[frame.shared_buffer().request_id()] = frame.shared_buffer();
    } else if (frame.has_sync_done() &&
               frame.sync_done().request_id() == sync_id) {
      reply.sync_error = frame.sync_done().error();
      synced = true;
    }
  }
  reply.ok = acked && synced;
  return reply;
}

grpc::Status RawSession::Close() {
  closed_ = true;
  stream_->WritesDone();
  v1::ServerFrame frame;
  while (stream_->Read(&frame)) {
  }
  return stream_->Finish();
}

void RawSession::Cancel() {
  context_.TryCancel();
  AwaitEnd();
}

grpc::Status RawSession::AwaitEnd() {
  closed_ = true;
  v1::ServerFrame frame;
  while (stream_->Read(&frame)) {
  }
  return stream_->Finish();
}

CpuMemory ReadCpuMemory(const std::string& address,
                        const std::string& admin_token) {
  auto stub = v1::Admin::NewStub(
      grpc::CreateChannel(address, grpc::InsecureChannelCredentials()));
  grpc::ClientContext ctx;
  if (!admin_token.empty()) {
    ctx.AddMetadata("authorization", "Bearer " + admin_token);
  }
  v1::MemoryStatsRequest request;
  request.set_device("cpu");
  v1::MemoryStatsResponse response;
  CpuMemory out;
  const grpc::Status s = stub->MemoryStats(&ctx, request, &response);
  EXPECT_TRUE(s.ok()) << s.error_message();
  if (!s.ok() || response.devices_size() == 0) return out;
  const auto& stats = response.devices(0).stats();
  auto it = stats.find("allocated_bytes.all.current");
  if (it != stats.end()) out.allocated = it->second;
  for (const auto& [id, bytes] : response.devices(0).session_bytes()) {
    out.sessions[id] = bytes;
  }
  return out;
}

int CountSessions(const std::string& address, const std::string& admin_token) {
  auto stub = v1::Admin::NewStub(
      grpc::CreateChannel(address, grpc::InsecureChannelCredentials()));
  grpc::ClientContext ctx;
  if (!admin_token.empty()) {
    ctx.AddMetadata("authorization", "Bearer " + admin_token);
  }
  v1::ListSessionsResponse response;
  const grpc::Status s =
      stub->ListSessions(&ctx, v1::ListSessionsRequest(), &response);
  EXPECT_TRUE(s.ok()) << s.error_message();
  return response.sessions_size();
}

}  // namespace testing
}  // namespace tensord
