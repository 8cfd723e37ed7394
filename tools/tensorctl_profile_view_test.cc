#include "tools/tensorctl_profile_view.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tensord {
namespace tensorctl {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

v1::OpRecord Record(const char* op, uint64_t start, uint64_t wall,
                    uint64_t decode, uint64_t infer, uint64_t alloc,
                    uint64_t kernel, uint64_t wait) {
  v1::OpRecord r;
  r.set_op(op);
  r.set_device("cpu");
  r.set_start_ns(start);
  r.set_wall_ns(wall);
  r.set_decode_ns(decode);
  r.set_infer_ns(infer);
  r.set_alloc_ns(alloc);
  r.set_kernel_ns(kernel);
  r.set_wait_ns(wait);
  r.set_bytes_allocated(256);
  r.set_site("train.py:7");
  return r;
}

v1::Profile Sample() {
  v1::Profile p;
  *p.add_ops() = Record("add", 1000, 5000, 1000, 500, 500, 2000, 300);
  *p.add_ops() = Record("matmul", 7000, 90000, 2000, 1000, 3000, 80000, 0);
  *p.add_ops() = Record("add", 98000, 3000, 1000, 500, 500, 1000, 700);
  return p;
}

TEST(SummarizeProfileTest, GroupsByOpAndSortsByTime) {
  const std::vector<OpSummary> ops = SummarizeProfile(Sample());
  ASSERT_EQ(ops.size(), 2u);
  EXPECT_EQ(ops[0].op, "matmul");
  EXPECT_EQ(ops[1].op, "add");
  EXPECT_EQ(ops[1].calls, 2u);
  EXPECT_EQ(ops[1].wall_ns, 8000u);
  EXPECT_EQ(ops[1].wait_ns, 1000u);
  EXPECT_EQ(ops[1].kernel_ns, 3000u);
  EXPECT_EQ(ops[1].bytes_allocated, 512u);
  // 8000 - (2000 + 1000 + 1000 + 3000)
  EXPECT_EQ(ops[1].other_ns(), 1000u);
  EXPECT_EQ(ops[0].other_ns(), 4000u);
}

TEST(SummarizeProfileTest, OtherTimeNeverUnderflows) {
  v1::Profile p;
  *p.add_ops() = Record("view", 0, 100, 100, 0, 0, 50, 0);
  EXPECT_EQ(SummarizeProfile(p)[0].other_ns(), 0u);
}

TEST(FormatProfileTest, TableHasAveragesAndShares) {
  const std::string text = FormatProfile(Sample(), 0);
  EXPECT_THAT(text, HasSubstr("KERNEL"));
  EXPECT_THAT(text, HasSubstr("matmul"));
  // add: 8000 ns over 2 calls.
  EXPECT_THAT(text, HasSubstr("4.0us"));
  // kernel share: 83000 of 98000 ns.
  EXPECT_THAT(text, HasSubstr("kernel 84.7%"));
  EXPECT_THAT(text, HasSubstr("3 op(s) in 2 row(s)"));
  EXPECT_THAT(text, Not(HasSubstr("dropped")));
}

TEST(FormatProfileTest, LimitAndDropped) {
  v1::Profile p = Sample();
  p.set_dropped(4);
  const std::string text = FormatProfile(p, 1);
  EXPECT_THAT(text, HasSubstr("(1 shown)"));
  EXPECT_THAT(text, Not(HasSubstr("\nadd ")));
  EXPECT_THAT(text, HasSubstr("4 record(s) dropped"));
  EXPECT_THAT(FormatProfile(v1::Profile(), 0), HasSubstr("no ops recorded"));
}

TEST(ProfileJsonTest, SummedPhases) {
  const std::string json = ProfileJson(Sample());
  EXPECT_THAT(json, HasSubstr("{\"op\":\"matmul\",\"device\":\"cpu\","
                              "\"calls\":1,\"wall_ns\":90000"));
  EXPECT_THAT(json, HasSubstr("\"other_ns\":1000"));
  EXPECT_THAT(json, HasSubstr("\"dropped\":0"));
}

// Note [Client fallbacks]: the ops the client reported running on its CPU,
// client text, escaped in the table and the JSON alike.
TEST(ProfileFallbacksTest, TableAndJsonShowTheClientsFallbacks) {
  v1::Profile p = Sample();
  v1::FallbackCount* f = p.add_fallbacks();
  f->set_op("aten.cummax.default");
  f->set_count(3);
  f = p.add_fallbacks();
  f->set_op("evil\x1b[2J");
  f->set_count(1);
  const std::string text = FormatProfile(p, 0);
  EXPECT_THAT(text, HasSubstr("CLIENT CPU FALLBACK"));
  EXPECT_THAT(text, HasSubstr("aten.cummax.default  "));
  EXPECT_THAT(text, HasSubstr("4 op call(s) ran on the client's CPU"));
  EXPECT_THAT(text, Not(HasSubstr("\x1b[2J")));
  const std::string json = ProfileJson(p);
  EXPECT_THAT(json, HasSubstr("\"fallbacks\":{\"aten.cummax.default\":3,"
                              "\"evil\\u001b[2J\":1}"));
  // Fallbacks alone (a session whose only work ran on the client) show too.
  v1::Profile only;
  *only.add_fallbacks() = p.fallbacks(0);
  EXPECT_THAT(FormatProfile(only, 0), HasSubstr("aten.cummax.default"));
  EXPECT_THAT(ProfileJson(Sample()), HasSubstr("\"fallbacks\":{}"));
}

TEST(ProfileTraceJsonTest, PhasesNestInsideTheOp) {
  v1::Profile p;
  *p.add_ops() = Record("add", 1000, 5000, 1000, 500, 500, 2000, 300);
  const std::string json = ProfileTraceJson(p, "s1");
  EXPECT_THAT(json,
              HasSubstr("\"name\":\"add\",\"cat\":\"op\",\"ph\":\"X\","
                        "\"ts\":1.000,\"dur\":5.000,"
                        "\"pid\":\"tensord session s1\",\"tid\":\"cpu\""));
  EXPECT_THAT(json, HasSubstr("\"name\":\"decode\",\"cat\":\"phase\",\"ph\":"
                              "\"X\",\"ts\":1.000,\"dur\":1.000"));
  EXPECT_THAT(json, HasSubstr("\"name\":\"infer\",\"cat\":\"phase\",\"ph\":"
                              "\"X\",\"ts\":2.000,\"dur\":0.500"));
  EXPECT_THAT(json, HasSubstr("\"name\":\"alloc\",\"cat\":\"phase\",\"ph\":"
                              "\"X\",\"ts\":2.500,\"dur\":0.500"));
  EXPECT_THAT(json, HasSubstr("\"name\":\"kernel\",\"cat\":\"phase\",\"ph\":"
                              "\"X\",\"ts\":3.000,\"dur\":2.000"));
  EXPECT_THAT(json, HasSubstr("\"wait_us\":0.3"));
}

TEST(ProfileTraceJsonTest, ZeroPhasesAreLeftOut) {
  v1::Profile p;
  *p.add_ops() = Record("reshape", 0, 800, 800, 0, 0, 0, 0);
  const std::string json = ProfileTraceJson(p, "s1");
  EXPECT_THAT(json, HasSubstr("\"name\":\"decode\""));
  EXPECT_THAT(json, Not(HasSubstr("\"name\":\"kernel\"")));
}

TEST(ProfileNodesTest, BackwardNodesAreTracedAndTabled) {
  v1::Profile p;
  v1::OpRecord r = Record("backward", 10000, 9000, 500, 100, 400, 7000, 0);
  const std::pair<const char*, uint64_t> nodes[] = {
      {"SumBackward0", 1000}, {"MmBackward0", 5000}, {"SumBackward0", 2000}};
  uint64_t at = 10500;
  for (const auto& [name, wall] : nodes) {
    v1::OpSpan* n = r.add_nodes();
    n->set_name(name);
    n->set_start_ns(at);
    n->set_wall_ns(wall);
    at += wall;
  }
  *p.add_ops() = r;
  const std::vector<NodeSummary> sums = SummarizeNodes(p);
  ASSERT_EQ(sums.size(), 2u);
  EXPECT_EQ(sums[0].name, "MmBackward0");
  EXPECT_EQ(sums[1].name, "SumBackward0");
  EXPECT_EQ(sums[1].calls, 2u);
  EXPECT_EQ(sums[1].wall_ns, 3000u);
  EXPECT_THAT(FormatProfile(p, 0), HasSubstr("BACKWARD NODE"));
  const std::string json = ProfileTraceJson(p, "s");
  EXPECT_THAT(json, HasSubstr("\"name\":\"MmBackward0\",\"cat\":\"node\","
                              "\"ph\":\"X\",\"ts\":11.500,\"dur\":5.000"));
  // Its summed phases would not line up with the nodes: no phase slices.
  EXPECT_THAT(json, Not(HasSubstr("\"cat\":\"phase\"")));
}

}  // namespace
}  // namespace tensorctl
}  // namespace tensord
