// A client that streams uploads, computations (some through autograd) and
// downloads forever, writing one '.' to stdout after every frame it sends,
// so fault_test can SIGKILL it at a chosen point mid-stream.
//
//   fault_client ADDRESS SEED
#include <unistd.h>

#include <cstdlib>
#include <string>

#include "grpcpp/grpcpp.h"
#include "proto/tensord.grpc.pb.h"

namespace {

using tensord::v1::ClientFrame;
using tensord::v1::ServerFrame;

uint32_t OpId(const tensord::v1::Welcome& w, const std::string& name) {
  for (const auto& op : w.ops()) {
    if (op.name() == name) return op.id();
  }
  std::abort();
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) return 2;
  const uint64_t seed = std::strtoull(argv[2], nullptr, 10);
  auto stub = tensord::v1::Tensord::NewStub(
      grpc::CreateChannel(argv[1], grpc::InsecureChannelCredentials()));
  grpc::ClientContext ctx;
  auto stream = stub->Session(&ctx);
  ClientFrame hello;
  hello.mutable_hello()->set_protocol_version(
      tensord::v1::PROTOCOL_VERSION_CURRENT);
  hello.mutable_hello()->set_client_name("fault_client");
  ServerFrame frame;
  if (!stream->Write(hello) || !stream->Read(&frame)) return 1;
  const tensord::v1::Welcome welcome = frame.welcome();
  const uint32_t mul = OpId(welcome, "mul"), sum = OpId(welcome, "sum");
  uint64_t seq = 0, handle = 0;
  auto send = [&](const ClientFrame& f) {
    if (!stream->Write(f)) std::exit(1);
    if (write(STDOUT_FILENO, ".", 1) != 1) std::exit(1);
  };
  constexpr int64_t kChunkFloats = 64 << 10;  // 256 KiB chunks
  for (uint64_t round = 0;; ++round) {
    const bool grad = (round + seed) % 2 == 0;
    const uint64_t x = ++handle;
    for (int chunk = 0; chunk < 3; ++chunk) {  // one chunk per frame
      ClientFrame f;
      auto* c = f.mutable_batch()->add_commands();
      c->set_seq(++seq);
      auto* put = c->mutable_put();
      put->set_handle(x);
      if (chunk == 0) {
        put->set_dtype(tensord::v1::FLOAT32);
        put->add_shape(3 * kChunkFloats);
        put->set_requires_grad(grad);
      }
      put->set_offset(chunk * kChunkFloats * 4);
      put->mutable_payload()->set_data(
          std::string(kChunkFloats * 4, static_cast<char>(seed)));
      put->set_last(chunk == 2);
      send(f);
    }
    ClientFrame f;
    auto add = [&] {
      auto* c = f.mutable_batch()->add_commands();
      c->set_seq(++seq);
      return c;
    };
    const uint64_t y = ++handle, z = ++handle;
    auto* m = add()->mutable_call();
    m->set_op_id(mul);
    m->add_inputs(x);
    m->add_inputs(x);
    m->add_outputs(y);
    auto* s = add()->mutable_call();
    s->set_op_id(sum);
    s->add_inputs(y);
    s->add_outputs(z);
    if (grad) {
      add()->mutable_backward()->add_roots(z);
      auto* g = add()->mutable_get_grad();
      g->set_handle(x);
      g->set_output(++handle);
    }
    auto* get = add()->mutable_get();
    get->set_handle(y);
    get->set_request_id(seq);
    auto* sync = add();
    const uint64_t sync_id = sync->seq();
    sync->mutable_sync()->set_request_id(sync_id);
    if (round % 4 == 3) {  // keep some handles, drop others
      auto* r = add()->mutable_release();
      for (uint64_t h = handle - 8; h < handle - 2; ++h) r->add_handles(h);
    }
    send(f);
    while (stream->Read(&frame)) {  // downloads, Acks, up to the SyncDone
      if (frame.has_sync_done() && frame.sync_done().request_id() == sync_id)
        break;
    }
  }
}
