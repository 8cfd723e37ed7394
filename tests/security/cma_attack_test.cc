// Attacks on cross-memory attach (issue 24: the daemon read and wrote any
// process a client named, the daemon itself included, and its refusals were
// an oracle of other processes' memory maps, existence and owners). The
// daemon now copies only from and to the process the kernel says bound the
// session (docs/protocol.md "Cross-memory attach"; server/cma.h). Each test
// attacks the real daemon and checks that nothing was copied, that the
// refusal says nothing about any other process, and that the daemon and the
// victim tenant go on:
// - no field names a process any more: a Hello still carrying the old
//   cma_pid/cma_probe_address fields, naming the daemon, one of its threads
//   or another process, gets an unbound session, and Put/Get at an address
//   mapped in the daemon, one mapped nowhere and one of this process fail
//   with one identical text;
// - a process of another uid presenting a ticket (stolen or its own) is
//   refused by the kernel's word (SO_PEERCRED), and the ticket is spent;
// - session A's ticket binds A, never B;
// - once the bound process has exited, nothing is copied (no pid reuse).
#include <dirent.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "gtest/gtest.h"
#include "proto/cma_bind.h"
#include "tests/cma_frames.h"
#include "tests/daemon_process.h"
#include "tests/raw_session.h"

namespace tensord {
namespace {

using testing::BindingChild;
using testing::ErrorOf;
using testing::ExpectSessionWorks;
using testing::GetByCma;
using testing::PutByCma;
using testing::RawSession;
using testing::RequestErrorOf;
using testing::ShmHello;

constexpr char kNotBound[] =
    "cross-memory attach is not bound for this session";
constexpr int kNobody = 65534;

// The text after a command's "put of handle N: " / "get of handle N: ".
std::string Reason(const std::string& error) {
  const size_t colon = error.find(": ");
  return colon == std::string::npos ? error : error.substr(colon + 2);
}

// The start of a private writable mapping of process `pid`.
uint64_t WritableAddressOf(pid_t pid) {
  std::ifstream maps("/proc/" + std::to_string(pid) + "/maps");
  std::string line;
  while (std::getline(maps, line)) {
    std::vector<std::string> fields = absl::StrSplit(line, ' ');
    if (fields.size() < 2 || fields[1] != "rw-p") continue;
    const uint64_t start = std::strtoull(fields[0].c_str(), nullptr, 16);
    if (start != 0) return start;
  }
  return 0;
}

// A thread of process `pid` other than its main thread.
pid_t ThreadOf(pid_t pid) {
  DIR* dir = opendir(("/proc/" + std::to_string(pid) + "/task").c_str());
  pid_t found = 0;
  while (dir != nullptr && found == 0) {
    dirent* e = readdir(dir);
    if (e == nullptr) break;
    int tid = 0;
    if (absl::SimpleAtoi(e->d_name, &tid) && tid != pid) found = tid;
  }
  if (dir != nullptr) closedir(dir);
  return found;
}

class CmaAttackTest : public testing::DaemonSuite {
 protected:
  static void SetUpTestSuite() {
    const std::string path = ::testing::TempDir() + "/cma_tokens";
    std::ofstream(path) << "alice tok-alice\nmallory tok-mallory\n";
    StartDaemon({"--tokens_file=" + path});
  }

  // Alice, the victim: a session holding [1, 2, 3, 4] uploaded on the
  // stream, checked unchanged by ExpectVictimIntact.
  void SetUp() override {
    victim_ = std::make_unique<RawSession>(address(), "tok-alice", "victim",
                                           ShmHello());
    ASSERT_TRUE(victim_->ok());
    kept_ = victim_->NewHandle();
    v1::Put* put = victim_->Add()->mutable_put();
    put->set_handle(kept_);
    put->set_dtype(v1::FLOAT32);
    put->add_shape(4);
    put->set_last(true);
    const float values[4] = {1, 2, 3, 4};
    put->mutable_payload()->set_data(values, sizeof(values));
    ASSERT_TRUE(victim_->Flush().ok);
  }

  void ExpectVictimIntact() {
    const uint64_t request = victim_->NewRequest();
    v1::Get* get = victim_->Add()->mutable_get();
    get->set_handle(kept_);
    get->set_request_id(request);
    RawSession::Reply reply = victim_->Flush();
    ASSERT_TRUE(reply.ok) << "the victim's session stopped answering";
    const float values[4] = {1, 2, 3, 4};
    EXPECT_EQ(reply.data[request],
              std::string(reinterpret_cast<const char*>(values), 16));
  }

  static bool BindHere(const RawSession& raw) {
    return CmaBindThisProcess(raw.welcome().cma_socket(),
                              raw.welcome().cma_ticket(), 5000);
  }

  std::unique_ptr<RawSession> victim_;
  uint64_t kept_ = 0;
};

TEST_F(CmaAttackTest, NoPidAndNoAddressReachesAnotherProcess) {
  const pid_t daemon = daemon_->pid();
  const pid_t thread = ThreadOf(daemon);
  ASSERT_NE(thread, 0);
  const uint64_t in_daemon = WritableAddressOf(daemon);
  ASSERT_NE(in_daemon, 0u);
  std::vector<float> mine(256, 9.0f);
  const uint64_t in_me = reinterpret_cast<uint64_t>(mine.data());
  const uint64_t nowhere = 0x1000;  // below mmap_min_addr: never mapped
  std::string reason;
  for (pid_t named : {daemon, thread, getpid(), pid_t{1}}) {
    // The old Hello fields, spelled as the unknown fields they now are.
    v1::Hello hello = ShmHello();
    auto* unknown = hello.GetReflection()->MutableUnknownFields(&hello);
    unknown->AddVarint(8, static_cast<uint64_t>(named));  // was cma_pid
    unknown->AddVarint(9, in_daemon);  // was cma_probe_address
    RawSession attacker(address(), "tok-mallory", "attacker", hello);
    ASSERT_TRUE(attacker.ok());
    ASSERT_TRUE(attacker.welcome().cma());  // offered, never bound
    const uint64_t target = attacker.PutFloats({256});
    for (uint64_t address : {in_daemon, nowhere, in_me}) {
      const uint64_t put = PutByCma(attacker, address, 1024);
      const uint64_t get = GetByCma(attacker, target, address, 1024);
      RawSession::Reply reply = attacker.Flush();
      ASSERT_TRUE(reply.ok);
      // One text whatever the process and the address: no oracle.
      const std::string put_reason = Reason(ErrorOf(reply, put));
      const std::string get_reason = Reason(RequestErrorOf(reply, get));
      EXPECT_NE(put_reason.find(kNotBound), std::string::npos) << put_reason;
      if (reason.empty()) reason = put_reason;
      EXPECT_EQ(put_reason, reason) << "pid " << named << " at " << address;
      EXPECT_EQ(get_reason, reason) << "pid " << named << " at " << address;
      EXPECT_EQ(put_reason.find(std::to_string(daemon)), std::string::npos);
    }
    ExpectSessionWorks(attacker);
  }
  EXPECT_EQ(mine, std::vector<float>(256, 9.0f));  // nothing written here
  ExpectVictimIntact();
  EXPECT_EQ(kill(daemon, 0), 0);
}

TEST_F(CmaAttackTest, AnotherUidCannotBindWithAStolenOrItsOwnTicket) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root to become uid 65534";
  RawSession attacker(address(), "tok-mallory", "attacker", ShmHello());
  ASSERT_TRUE(attacker.ok());
  // The victim's ticket, stolen, and the attacker's own, presented from a
  // process of another uid: refused, with the same answer as nonsense.
  for (const RawSession* session : {victim_.get(), &attacker}) {
    BindingChild nobody(session->welcome().cma_socket(),
                        session->welcome().cma_ticket(), kNobody);
    EXPECT_EQ(nobody.answer(), 0) << "2: the child could not become nobody";
  }
  BindingChild nonsense(attacker.welcome().cma_socket(),
                        std::string(kCmaTicketBytes, 'x'), kNobody);
  EXPECT_EQ(nonsense.answer(), 0);
  // Neither session was bound.
  const std::vector<float> values(64, 1.0f);
  for (RawSession* session : {victim_.get(), &attacker}) {
    const uint64_t put = PutByCma(*session, values);
    RawSession::Reply reply = session->Flush();
    ASSERT_TRUE(reply.ok);
    EXPECT_NE(ErrorOf(reply, put).find(kNotBound), std::string::npos)
        << ErrorOf(reply, put);
  }
  // A ticket admits one try: the thief spent the victim's, whose session
  // goes on (on its region and stream).
  EXPECT_FALSE(BindHere(*victim_));
  ExpectVictimIntact();
  ExpectSessionWorks(attacker);
}

TEST_F(CmaAttackTest, OneSessionsTicketNeverBindsAnother) {
  RawSession attacker(address(), "tok-mallory", "attacker", ShmHello());
  ASSERT_TRUE(attacker.ok());
  // The attacker's ticket binds the attacker's session to this process...
  ASSERT_TRUE(BindHere(attacker));
  std::vector<float> values(64, 5.0f);
  uint64_t put = PutByCma(attacker, values);
  RawSession::Reply reply = attacker.Flush();
  ASSERT_TRUE(reply.ok);
  EXPECT_EQ(ErrorOf(reply, put), "");
  // ...and never the victim's, nor a second time.
  put = PutByCma(*victim_, values);
  reply = victim_->Flush();
  ASSERT_TRUE(reply.ok);
  EXPECT_NE(ErrorOf(reply, put).find(kNotBound), std::string::npos)
      << ErrorOf(reply, put);
  EXPECT_FALSE(BindHere(attacker));
  // The victim's own ticket binds the victim.
  ASSERT_TRUE(BindHere(*victim_));
  put = PutByCma(*victim_, values);
  reply = victim_->Flush();
  ASSERT_TRUE(reply.ok);
  EXPECT_EQ(ErrorOf(reply, put), "");
  ExpectVictimIntact();
}

// Anyone on the host may connect to the binding socket, so a flood of
// made-up tickets must not flood the daemon's log: refusals are logged at
// most 10 times a minute (Note [Rate-limited logs]). None binds, and the
// victim's own ticket still does.
TEST_F(CmaAttackTest, AFloodOfRefusedBindingsIsLoggedRateLimited) {
  const std::string socket = victim_->welcome().cma_socket();
  ASSERT_FALSE(socket.empty());
  const auto count = [](const std::string& log) {
    size_t lines = 0;
    for (size_t at = log.find("a binding refused"); at != std::string::npos;
         at = log.find("a binding refused", at + 1)) {
      ++lines;
    }
    return lines;
  };
  const size_t before = count(daemon_->log());
  for (int i = 0; i < 200; ++i) {
    const std::string ticket(kCmaTicketBytes, static_cast<char>('a' + i % 26));
    EXPECT_FALSE(CmaBindThisProcess(socket, ticket, 5000)) << i;
  }
  // The last refusal has been answered, so its line (if any) is written.
  EXPECT_LE(count(daemon_->log()) - before, 10u);
  ASSERT_TRUE(BindHere(*victim_));
  ExpectVictimIntact();
}

TEST_F(CmaAttackTest, AnExitedClientsPidIsNeverUsed) {
  BindingChild client(victim_->welcome().cma_socket(),
                      victim_->welcome().cma_ticket());
  ASSERT_EQ(client.answer(), 1);
  // This process's copy of the values changes; the child's stays 0.25.
  std::vector<float>& values = client.values;
  std::fill(values.begin(), values.end(), 0.75f);
  const uint64_t handle = PutByCma(*victim_, values);
  const uint64_t request = victim_->NewRequest();
  v1::Get* get = victim_->Add()->mutable_get();
  get->set_handle(handle);
  get->set_request_id(request);
  RawSession::Reply reply = victim_->Flush();
  ASSERT_TRUE(reply.ok);
  ASSERT_EQ(ErrorOf(reply, handle), "");
  const std::vector<float> child_values(values.size(), 0.25f);
  EXPECT_EQ(reply.data[request],
            std::string(reinterpret_cast<const char*>(child_values.data()),
                        child_values.size() * sizeof(float)));
  // The client exits (reaped: its pid is free): nothing is copied from or
  // to that pid any more, whoever holds it now.
  client.Exit();
  const uint64_t after = PutByCma(*victim_, values);
  const uint64_t written = GetByCma(*victim_, handle, &values);
  reply = victim_->Flush();
  ASSERT_TRUE(reply.ok);
  EXPECT_NE(ErrorOf(reply, after).find(kNotBound), std::string::npos)
      << ErrorOf(reply, after);
  EXPECT_NE(RequestErrorOf(reply, written).find(kNotBound), std::string::npos)
      << RequestErrorOf(reply, written);
  EXPECT_EQ(values, std::vector<float>(values.size(), 0.75f));
  ExpectVictimIntact();
}

}  // namespace
}  // namespace tensord
