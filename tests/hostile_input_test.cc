// Hostile input against the real daemon: for every op in the Welcome
// catalog, calls with wrong arity, wrong dtypes, mismatched/empty/0-d
// shapes, attribute values that are negative or overflow 64 bits, unknown
// attributes, handles that do not exist or belong to another session; Put
// chunk sequences that lie; oversized frames and broken handshakes. Each is
// answered with a clear error (a user-error code, a message that names the
// op, handle or attribute), the daemon stays up, and memory returns to its
// baseline (Admin MemoryStats).
#include <cstdlib>
#include <fstream>
#include <limits>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "tests/daemon_process.h"
#include "tests/raw_session.h"

namespace tensord {
namespace {

using testing::RawSession;
constexpr char kAdmin[] = "admintoken";
constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
// Handle ids the victim holds and the attacker never creates.
constexpr uint64_t kVictimHandle = 5000000;
constexpr uint64_t kMissing = 987654321;

bool IsUserErrorCode(int code) {
  switch (static_cast<absl::StatusCode>(code)) {
    case absl::StatusCode::kInvalidArgument:
    case absl::StatusCode::kNotFound:
    case absl::StatusCode::kResourceExhausted:
    case absl::StatusCode::kUnimplemented:
    case absl::StatusCode::kFailedPrecondition:
    case absl::StatusCode::kOutOfRange:
      return true;
    default:
      return false;
  }
}

// A clear error: a user-error code, a message, and the op it came from.
void ExpectClearError(const v1::Status& s, const std::string& what) {
  EXPECT_TRUE(IsUserErrorCode(s.code())) << what << ": " << s.DebugString();
  EXPECT_FALSE(s.message().empty()) << what;
  EXPECT_FALSE(s.op().empty()) << what << ": " << s.DebugString();
}

class HostileInputTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    const std::string tokens =
        absl::StrCat(std::getenv("TEST_TMPDIR"), "/hostile_tokens");
    std::ofstream(tokens) << "attacker atoken quota=256MiB\n"
                          << "victim vtoken quota=256MiB\n"
                          << "ops " << kAdmin << " admin\n";
    auto d = testing::DaemonProcess::Start(
        {"--tokens_file=" + tokens, "--resume_grace=0s"});
    ASSERT_TRUE(d.ok()) << d.status();
    daemon_ = d->release();
  }
  static void TearDownTestSuite() {
    EXPECT_EQ(daemon_->Terminate(), 0);
    delete daemon_;
  }
  static const std::string& address() { return daemon_->address(); }
  static int64_t Allocated() {
    return testing::ReadCpuMemory(address(), kAdmin).allocated;
  }
  static int64_t SessionBytes(const RawSession& s) {
    return testing::ReadCpuMemory(address(), kAdmin)
        .sessions[s.welcome().session_id()];
  }
  static testing::DaemonProcess* daemon_;
};
testing::DaemonProcess* HostileInputTest::daemon_ = nullptr;

// One generated call and what must come of it.
struct Case {
  std::string what;
  std::vector<uint64_t> inputs;
  std::map<std::string, v1::AttrValue> attrs;
  int outputs = 1;
  int must_fail_with = 0;  // a code; 0: it may also succeed
  std::string must_mention;
};

v1::AttrValue Plausible(const v1::AttrSchema& a) {
  v1::AttrValue v;
  if (a.type() == "int") v.set_i(1);
  if (a.type() == "float") v.set_f(1.0);
  if (a.type() == "bool") v.set_b(false);
  if (a.type() == "string") v.set_s("");
  if (a.type() == "ints") v.mutable_ints()->add_values(2);
  if (a.type() == "floats") v.mutable_floats()->add_values(1.0);
  if (a.type() == "dtype") v.set_dtype(v1::FLOAT32);
  return v;
}

std::vector<v1::AttrValue> HostileValues(const std::string& type) {
  std::vector<v1::AttrValue> out;
  auto ints = [&](std::vector<int64_t> values) {
    for (int64_t v : values) out.emplace_back().set_i(v);
  };
  auto lists = [&](std::vector<std::vector<int64_t>> lists) {
    for (const auto& l : lists) {
      auto* list = out.emplace_back().mutable_ints();
      for (int64_t v : l) list->add_values(v);
    }
  };
  if (type == "int") ints({-1, -7, kMax, kMin, int64_t{1} << 40});
  if (type == "ints") {
    lists({{},
           {-1},
           {-5, 3},
           {kMax, kMax},
           {kMin},
           {1LL << 32, 1LL << 32, 1LL << 32},
           {0, kMax, kMax},
           {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
            1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1}});
  }
  if (type == "float") {
    for (double v : {std::numeric_limits<double>::quiet_NaN(),
                     std::numeric_limits<double>::infinity(), -1e308, 1e300})
      out.emplace_back().set_f(v);
  }
  if (type == "floats") out.emplace_back().mutable_floats();
  if (type == "string") {
    out.emplace_back().set_s("");
    out.emplace_back().set_s("no-such-mode");
  }
  if (type == "dtype") {
    out.emplace_back().set_dtype(v1::DTYPE_UNSPECIFIED);
    out.emplace_back().set_dtype(static_cast<v1::DType>(99));
  }
  return out;
}

// Every way to call `op` wrongly, over the attacker's standing tensors.
std::vector<Case> CasesFor(const v1::OpSchema& op,
                           const std::map<std::string, uint64_t>& t) {
  std::vector<Case> cases;
  const int arity = std::max(op.min_inputs(), 1);
  const int outputs = op.num_outputs() >= 0 ? op.num_outputs() : 1;
  auto repeat = [](uint64_t id, int n) { return std::vector<uint64_t>(n, id); };
  std::map<std::string, v1::AttrValue> required;
  for (const auto& a : op.attrs()) {
    if (a.required()) required[a.name()] = Plausible(a);
  }
  auto add = [&](std::string what, std::vector<uint64_t> inputs, int code = 0,
                 std::string mention = "") {
    Case c;
    c.what = std::move(what);
    c.inputs = std::move(inputs);
    c.attrs = required;
    c.outputs = outputs;
    c.must_fail_with = code;
    c.must_mention = std::move(mention);
    cases.push_back(std::move(c));
  };
  const int kInvalid = static_cast<int>(absl::StatusCode::kInvalidArgument);
  const int kNotFound = static_cast<int>(absl::StatusCode::kNotFound);
  if (op.min_inputs() > 0) {
    add("too few inputs", repeat(t.at("f"), op.min_inputs() - 1), kInvalid);
  }
  if (op.max_inputs() >= 0) {
    add("too many inputs", repeat(t.at("f"), op.max_inputs() + 1), kInvalid);
  }
  if (op.num_outputs() >= 0) {
    add("too many outputs", repeat(t.at("f"), arity), kInvalid);
    cases.back().outputs = outputs + 1;
  }
  if (op.min_inputs() > 0) {
    add("missing handle", repeat(kMissing, arity), kNotFound,
        std::to_string(kMissing));
    add("another session's handle", repeat(kVictimHandle, arity), kNotFound,
        std::to_string(kVictimHandle));
    for (const char* name : {"b", "i", "h", "e", "s", "big"}) {
      add(absl::StrCat("inputs of kind ", name), repeat(t.at(name), arity));
    }
    std::vector<uint64_t> mixed;
    for (int i = 0; i < arity; ++i) mixed.push_back(t.at(i % 2 ? "g" : "f"));
    add("mismatched shapes", mixed);
    mixed.clear();
    for (int i = 0; i < arity; ++i) mixed.push_back(t.at(i % 2 ? "i" : "f"));
    add("mixed dtypes", mixed);
  }
  add("unknown attribute", repeat(t.at("f"), op.min_inputs()), kInvalid,
      "no_such_attr");
  cases.back().attrs["no_such_attr"].set_i(1);
  for (const auto& a : op.attrs()) {
    for (const v1::AttrValue& v : HostileValues(a.type())) {
      add(absl::StrCat("attribute ", a.name(), " = ", v.ShortDebugString()),
          repeat(t.at("f"), op.min_inputs()));
      cases.back().attrs[a.name()] = v;
    }
    v1::AttrValue wrong;  // a type no schema entry has as-is
    wrong.mutable_floats()->add_values(1.5);
    if (a.type() == "floats") wrong.set_s("x");
    add(absl::StrCat("attribute ", a.name(), " of the wrong type"),
        repeat(t.at("f"), op.min_inputs()), kInvalid, a.name());
    cases.back().attrs[a.name()] = wrong;
  }
  return cases;
}

TEST_F(HostileInputTest, EveryCatalogOpAnswersHostileCallsWithClearErrors) {
  RawSession victim(address(), "vtoken", "victim");
  ASSERT_TRUE(victim.ok());
  {
    v1::Put* put = victim.Add()->mutable_put();
    put->set_handle(kVictimHandle);
    put->set_dtype(v1::FLOAT32);
    put->add_shape(4);
    put->mutable_payload()->set_data(std::string(16, '\x11'));
    put->set_last(true);
    ASSERT_TRUE(victim.Flush().ok);
  }
  const int64_t baseline = Allocated();
  RawSession attacker(address(), "atoken", "attacker");
  ASSERT_TRUE(attacker.ok());
  std::map<std::string, uint64_t> t;  // the attacker's standing tensors
  t["f"] = attacker.PutFloats({2, 3});
  t["g"] = attacker.PutFloats({4, 5});
  t["e"] = attacker.PutFloats({0});
  t["s"] = attacker.PutFloats({});
  t["big"] = attacker.PutFloats({3, 1, 4, 1, 5});
  for (auto [name, dtype, item] :
       {std::make_tuple("b", v1::BOOL, 1), std::make_tuple("i", v1::INT64, 8),
        std::make_tuple("h", v1::FLOAT16, 2)}) {
    t[name] = attacker.NewHandle();
    v1::Put* put = attacker.Add()->mutable_put();
    put->set_handle(t[name]);
    put->set_dtype(dtype);
    put->add_shape(2);
    put->add_shape(3);
    put->mutable_payload()->set_data(std::string(6 * item, '\0'));
    put->set_last(true);
  }
  ASSERT_TRUE(attacker.Flush().ok);
  const int64_t standing = SessionBytes(attacker);
  int total = 0, errors = 0;
  for (const v1::OpSchema& op : attacker.welcome().ops()) {
    std::vector<std::pair<const Case*, std::vector<uint64_t>>> sent;
    std::map<uint64_t, v1::TensorMeta> created;
    const std::vector<Case> cases = CasesFor(op, t);
    for (const Case& c : cases) {
      v1::Call* call = attacker.Add()->mutable_call();
      call->set_op_id(op.id());
      call->set_site(absl::StrCat("hostile.py:", op.name()));
      for (uint64_t id : c.inputs) call->add_inputs(id);
      for (const auto& [name, v] : c.attrs) (*call->mutable_attrs())[name] = v;
      std::vector<uint64_t> outs;
      for (int i = 0; i < c.outputs; ++i) {
        outs.push_back(attacker.NewHandle());
        call->add_outputs(outs.back());
      }
      sent.emplace_back(&c, outs);
      if (std::getenv("TENSORD_HOSTILE_ONE_BY_ONE") != nullptr) {  // bisect
        std::printf("%s: %s\n", op.name().c_str(), c.what.c_str());
        std::fflush(stdout);
        RawSession::Reply one = attacker.Flush();
        ASSERT_TRUE(one.ok) << op.name() << ": " << c.what;
        created.insert(one.created.begin(), one.created.end());
      }
    }
    RawSession::Reply reply = attacker.Flush();
    ASSERT_TRUE(reply.ok) << op.name() << ": the daemon stopped answering";
    EXPECT_TRUE(reply.errors.empty()) << op.name();
    created.insert(reply.created.begin(), reply.created.end());
    v1::Command* release = attacker.Add();
    for (const auto& [c, outs] : sent) {
      const std::string what = absl::StrCat(op.name(), ": ", c->what);
      ++total;
      for (uint64_t id : outs) {
        release->mutable_release()->add_handles(id);
        auto it = created.find(id);
        ASSERT_NE(it, created.end()) << what << ": no meta for " << id;
        const v1::Status& e = it->second.error();
        if (c->must_fail_with != 0) {
          EXPECT_EQ(e.code(), c->must_fail_with)
              << what << ": " << e.DebugString();
          EXPECT_TRUE(absl::StrContains(e.message(), c->must_mention))
              << what << ": " << e.message();
        }
        if (e.code() != 0) ExpectClearError(e, what);
      }
      if (!outs.empty() && created[outs[0]].error().code() != 0) ++errors;
    }
    ASSERT_TRUE(attacker.Flush().ok);
    EXPECT_EQ(SessionBytes(attacker), standing)
        << op.name() << ": memory not returned after its outputs were released";
  }
  std::printf("hostile calls: %d over %d ops, %d rejected\n", total,
              attacker.welcome().ops_size(), errors);
  EXPECT_GT(errors, total / 2);
  EXPECT_TRUE(attacker.Close().ok());
  EXPECT_EQ(Allocated(), baseline);
  EXPECT_TRUE(victim.Close().ok());
}

}  // namespace
}  // namespace tensord
