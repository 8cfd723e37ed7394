// A session spoken in raw protocol frames (no client library), for tests
// that must send what a well-behaved client never would, and an Admin stub
// that reads the daemon's memory counters.
//
// Thread-compatible: one thread per RawSession.
#ifndef TENSORD_TESTS_RAW_SESSION_H_
#define TENSORD_TESTS_RAW_SESSION_H_

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "grpcpp/grpcpp.h"
#include "proto/admin.grpc.pb.h"
#include "proto/tensord.grpc.pb.h"

namespace tensord {
namespace testing {

class RawSession {
 public:
  // What the daemon said about one flushed batch.
  struct Reply {
    std::map<uint64_t, v1::TensorMeta> created;  // from the Acks
    std::vector<v1::Error> errors;               // Error frames
    std::map<uint64_t, std::string> data;        // Get request id -> bytes
    std::map<uint64_t, v1::Data> shm_data;  // region and bulk answers, by id
    std::map<uint64_t, v1::SharedBuffer> shared;  // AllocateShared answers
    v1::Status sync_error;                        // the SyncDone's
    bool ok = false;  // the SyncDone arrived (the stream is alive)
  };

  // Opens a session (Hello with `token`, and `hello`'s other fields);
  // check ok() after.
  RawSession(const std::string& address, const std::string& token = "",
             const std::string& name = "raw", v1::Hello hello = v1::Hello());
  ~RawSession();  // closes the stream cleanly if it is still open

  bool ok() const { return ok_; }
  const v1::Welcome& welcome() const { return welcome_; }
  // The catalog id of `name` (fails the test if absent).
  uint32_t OpId(const std::string& name) const;

  // Appends a command to the pending batch (its seq set).
  v1::Command* Add();
  uint64_t NewHandle() { return ++handle_; }
  uint64_t NewRequest() { return ++request_; }
  // Adds a one-chunk Put of `shape` float32 zeros; returns its handle.
  uint64_t PutFloats(const std::vector<int64_t>& shape);
  // Sends the pending batch followed by a Sync and reads up to its SyncDone.
  Reply Flush();
  // Writes the pending batch without a Sync and without reading anything
  // back (a client that stops reading); false if the stream is broken.
  bool SendPending();
  // Writes one frame as is (e.g. an oversized one); false if the stream is
  // already broken.
  bool WriteRaw(const v1::ClientFrame& frame);
  // Ends the stream: WritesDone, drains replies, returns the final status.
  grpc::Status Close();
  // Waits for the daemon to end the stream (without closing our side).
  grpc::Status AwaitEnd();
  // Breaks the stream as a dropped connection would (the daemon detaches
  // the session for its resume grace period).
  void Cancel();

 private:
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<v1::Tensord::Stub> stub_;
  grpc::ClientContext context_;
  std::unique_ptr<grpc::ClientReaderWriter<v1::ClientFrame, v1::ServerFrame>>
      stream_;
  v1::Welcome welcome_;
  v1::ClientFrame pending_;
  uint64_t seq_ = 0, handle_ = 0, request_ = 0;
  bool ok_ = false, closed_ = false;
};

// Admin.MemoryStats figures for the cpu device.
struct CpuMemory {
  int64_t allocated = 0;                    // allocated_bytes.all.current
  std::map<std::string, int64_t> sessions;  // session id -> bytes
};
CpuMemory ReadCpuMemory(const std::string& address,
                        const std::string& admin_token = "");
// Admin.ListSessions: the number of sessions the daemon holds.
int CountSessions(const std::string& address,
                  const std::string& admin_token = "");

}  // namespace testing
}  // namespace tensord

#endif  // TENSORD_TESTS_RAW_SESSION_H_
