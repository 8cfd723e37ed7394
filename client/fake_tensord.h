// A tiny in-process tensord for the client's tests: speaks the session
// protocol (docs/protocol.md) over real gRPC with a handful of float ops
// computed in double, and records every protocol violation it sees (seq
// gaps, non-increasing handles, split Put chunks, oversized frames) so tests
// can assert the client never commits one. Test-only; not the daemon.
#ifndef TENSORD_CLIENT_FAKE_TENSORD_H_
#define TENSORD_CLIENT_FAKE_TENSORD_H_

#include <grpcpp/grpcpp.h>

#include <cstdint>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "proto/tensord.grpc.pb.h"
#include "runtime/core/mutex.h"

namespace tensord {
namespace testing {

struct FakeOptions {
  std::string token;  // empty: any token is accepted
  uint64_t chunk_bytes = uint64_t{1} << 20;
  uint64_t max_frame_bytes = uint64_t{8} << 20;
  bool silent = false;  // never answer Hello (tests Connect's timeout)
  // Welcome.packed_commands: the client may send packed runs, which the
  // fake unpacks into the Calls and Releases they stand for.
  bool packed_commands = true;
};

struct FakeStats {
  int frames = 0;              // batch frames received
  int max_frame_commands = 0;  // most commands in one frame
  int64_t packed = 0;          // commands that came as packed entries
  size_t max_frame_bytes = 0;  // largest frame received
  int64_t commands = 0;
  std::set<uint64_t> released;
  std::vector<std::string> violations;  // must stay empty
  uint64_t last_seed = 0;
};

class FakeTensordService final : public v1::Tensord::Service {
 public:
  explicit FakeTensordService(FakeOptions options) : options_(options) {}
  grpc::Status Session(
      grpc::ServerContext* context,
      grpc::ServerReaderWriter<v1::ServerFrame, v1::ClientFrame>* stream)
      override;
  FakeStats stats() const;

 private:
  friend class FakeSession;
  const FakeOptions options_;
  mutable Mutex mu_;
  FakeStats stats_ ABSL_GUARDED_BY(mu_);
};

// Owns a server listening on 127.0.0.1 with a free port.
class FakeTensord {
 public:
  explicit FakeTensord(FakeOptions options = {});
  ~FakeTensord();
  const std::string& address() const { return address_; }
  FakeStats stats() const { return service_.stats(); }

 private:
  FakeTensordService service_;
  std::unique_ptr<grpc::Server> server_;
  std::string address_;
};

}  // namespace testing
}  // namespace tensord

#endif  // TENSORD_CLIENT_FAKE_TENSORD_H_
