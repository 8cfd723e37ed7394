// A bare gRPC ping-pong on the Tensord.Session stream, with no tensord code
// behind it: the floor under the sync round trip of tools/bench's tables.
// The server answers every ClientFrame with one empty Ack frame.
//
//   grpc_pingpong --serve=callback|sync --listen=127.0.0.1:0 --port_file=F
//   grpc_pingpong --address=127.0.0.1:PORT [--iters=5000]
//                 [--client=inline|reader]
//
// --client=inline reads the answer on the calling thread; reader hands it
// over from a reader thread (as client/session.cc does). Prints JSON.
#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <fstream>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/numbers.h"
#include "proto/tensord.grpc.pb.h"

namespace {

namespace v1 = tensord::v1;
using Clock = std::chrono::steady_clock;

class CallbackEcho final : public v1::Tensord::CallbackService {
  class Reactor
      : public grpc::ServerBidiReactor<v1::ClientFrame, v1::ServerFrame> {
   public:
    Reactor() { StartRead(&in_); }
    void OnReadDone(bool ok) override {
      if (!ok) return Finish(grpc::Status::OK);
      out_.mutable_ack()->set_last_seq(++seq_);
      StartWrite(&out_);
    }
    void OnWriteDone(bool ok) override {
      if (!ok) return Finish(grpc::Status::OK);
      StartRead(&in_);
    }
    void OnDone() override { delete this; }

   private:
    v1::ClientFrame in_;
    v1::ServerFrame out_;
    uint64_t seq_ = 0;
  };

 public:
  grpc::ServerBidiReactor<v1::ClientFrame, v1::ServerFrame>* Session(
      grpc::CallbackServerContext*) override {
    return new Reactor;
  }
};

class SyncEcho final : public v1::Tensord::Service {
 public:
  grpc::Status Session(
      grpc::ServerContext*,
      grpc::ServerReaderWriter<v1::ServerFrame, v1::ClientFrame>* stream)
      override {
    v1::ClientFrame in;
    v1::ServerFrame out;
    uint64_t seq = 0;
    while (stream->Read(&in)) {
      out.mutable_ack()->set_last_seq(++seq);
      if (!stream->Write(out)) break;
    }
    return grpc::Status::OK;
  }
};

int Serve(const std::string& kind, const std::string& listen,
          const std::string& port_file) {
  CallbackEcho callback;
  SyncEcho sync;
  grpc::ServerBuilder builder;
  int port = 0;
  builder.AddListeningPort(listen, grpc::InsecureServerCredentials(), &port);
  if (kind == "sync") {
    builder.RegisterService(&sync);
  } else {
    builder.RegisterService(&callback);
  }
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  if (server == nullptr) return 1;
  std::ofstream(port_file) << port << "\n";
  server->Wait();
  return 0;
}

int RunClient(const std::string& address, int iters, bool inline_read) {
  auto channel =
      grpc::CreateChannel(address, grpc::InsecureChannelCredentials());
  auto stub = v1::Tensord::NewStub(channel);
  grpc::ClientContext context;
  auto stream = stub->Session(&context);
  v1::ClientFrame frame;
  frame.mutable_batch();
  std::mutex mu;
  std::condition_variable cv;
  uint64_t received = 0;
  std::thread reader;
  if (!inline_read) {
    reader = std::thread([&] {
      v1::ServerFrame in;
      while (stream->Read(&in)) {
        std::lock_guard<std::mutex> lock(mu);
        ++received;
        cv.notify_one();
      }
    });
  }
  std::vector<double> us;
  v1::ServerFrame in;
  for (int i = 0; i < iters + iters / 10; ++i) {
    const auto start = Clock::now();
    if (!stream->Write(frame)) return 1;
    if (inline_read) {
      if (!stream->Read(&in)) return 1;
    } else {
      std::unique_lock<std::mutex> lock(mu);
      cv.wait(lock, [&] { return received == static_cast<uint64_t>(i + 1); });
    }
    if (i >= iters / 10) {
      us.push_back(
          std::chrono::duration<double, std::micro>(Clock::now() - start)
              .count());
    }
  }
  stream->WritesDone();
  if (reader.joinable()) reader.join();
  (void)stream->Finish();
  std::sort(us.begin(), us.end());
  std::printf("{\"p50_us\": %.2f, \"p99_us\": %.2f}\n", us[us.size() / 2],
              us[us.size() * 99 / 100]);
  return 0;
}

bool Flag(const char* arg, const char* name, std::string* value) {
  const std::string prefix = std::string("--") + name + "=";
  if (std::string(arg).rfind(prefix, 0) != 0) return false;
  *value = arg + prefix.size();
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  std::string serve, listen = "127.0.0.1:0", port_file, address, value;
  std::string client = "inline";
  int iters = 5000;
  for (int i = 1; i < argc; ++i) {
    if (Flag(argv[i], "serve", &value)) {
      serve = value;
    } else if (Flag(argv[i], "listen", &value)) {
      listen = value;
    } else if (Flag(argv[i], "port_file", &value)) {
      port_file = value;
    } else if (Flag(argv[i], "address", &value)) {
      address = value;
    } else if (Flag(argv[i], "client", &value)) {
      client = value;
    } else if (Flag(argv[i], "iters", &value)) {
      (void)absl::SimpleAtoi(value, &iters);
    } else {
      std::fprintf(stderr, "grpc_pingpong: unknown argument %s\n", argv[i]);
      return 2;
    }
  }
  if (!serve.empty()) return Serve(serve, listen, port_file);
  return RunClient(address, iters, client == "inline");
}
