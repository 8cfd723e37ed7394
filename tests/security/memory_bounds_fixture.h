// The fixture of the "memory outside the quota" tests (Issue 24;
// docs/reliability.md "What one user can make the daemon hold"): one daemon
// per suite where mallory (the attacker) has a 64 MiB quota and a 4 MiB
// shared-memory region budget and alice (the other tenant) has no quota, and
// the daemon's resident memory to measure the attacks by.
#ifndef TENSORD_TESTS_SECURITY_MEMORY_BOUNDS_FIXTURE_H_
#define TENSORD_TESTS_SECURITY_MEMORY_BOUNDS_FIXTURE_H_

#include <sys/types.h>

#include <cstdint>
#include <fstream>
#include <sstream>
#include <string>

#include "absl/strings/match.h"
#include "gtest/gtest.h"
#include "tests/daemon_process.h"
#include "tests/raw_session.h"

namespace tensord {
namespace testing {

inline constexpr int64_t kMiB = 1 << 20;

// Under AddressSanitizer (the daemon is built with the same config) every
// allocation carries redzones and freed blocks wait in a quarantine, so the
// daemon's RSS overstates what it holds by up to this much.
#if defined(__has_feature)  // clang's test; gcc defines __SANITIZE_ADDRESS__
#if __has_feature(address_sanitizer)
#define TENSORD_TEST_ASAN 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__) || defined(TENSORD_TEST_ASAN)
inline constexpr int64_t kSanitizerSlack = 64 * kMiB;
#else
inline constexpr int64_t kSanitizerSlack = 0;
#endif

// The daemon's resident memory, from its /proc/PID/status.
inline int64_t ResidentBytes(pid_t pid) {
  std::ifstream status("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(status, line)) {
    if (absl::StartsWith(line, "VmRSS:")) {
      std::istringstream fields(line.substr(6));
      int64_t kib = 0;
      fields >> kib;
      return kib * 1024;
    }
  }
  ADD_FAILURE() << "no VmRSS for pid " << pid;
  return 0;
}

class MemoryBoundsTest : public testing::DaemonSuite {
 protected:
  static void SetUpTestSuite() {
    const std::string path = ::testing::TempDir() + "/memory_bounds_tokens";
    std::ofstream(path) << "mallory tok-mallory quota=64MiB\n"
                           "alice tok-alice\n";
    // Mallory's region budget is 4 MiB (a sixteenth of the quota, under
    // the daemon's 16 MiB): regions with a ring of 256 KiB, no payload.
    StartDaemon({"--tokens_file=" + path, "--shm_bytes=16777216",
                 "--max_sessions_per_user=20"});
  }

  // The other tenant's session computes and answers.
  static void ExpectAliceGoesOn() {
    testing::RawSession alice(address(), "tok-alice", "victim");
    ASSERT_TRUE(alice.ok());
    const uint64_t x = alice.PutFloats({256});
    const uint64_t request = alice.NewRequest();
    v1::Get* get = alice.Add()->mutable_get();
    get->set_handle(x);
    get->set_request_id(request);
    testing::RawSession::Reply reply = alice.Flush();
    ASSERT_TRUE(reply.ok) << "the other tenant's session stopped answering";
    EXPECT_EQ(reply.data[request].size(), 256u * 4);
  }

  // A Call of `op` on `input` into `outputs` fresh handles.
  static v1::Call* AddCall(testing::RawSession* s, const std::string& op,
                           uint64_t input, int outputs) {
    v1::Call* call = s->Add()->mutable_call();
    call->set_op_id(s->OpId(op));
    call->add_inputs(input);
    for (int i = 0; i < outputs; ++i) call->add_outputs(s->NewHandle());
    return call;
  }
};

}  // namespace testing
}  // namespace tensord

#endif  // TENSORD_TESTS_SECURITY_MEMORY_BOUNDS_FIXTURE_H_
