// Snapshot contents and their JSON export (torch.cuda.memory._snapshot()
// shape), checked structurally without a JSON parser.
#include <memory>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "runtime/memory/caching_allocator.h"
#include "runtime/memory/host_backend.h"
#include "runtime/memory/limited_backend.h"

namespace tensord {
namespace {

using ::testing::HasSubstr;

constexpr size_t kMiB = 1024 * 1024;
const StreamHandle kS1 = reinterpret_cast<StreamHandle>(1);
const StreamHandle kS2 = reinterpret_cast<StreamHandle>(2);

int Count(const std::string& haystack, const std::string& needle) {
  int n = 0;
  for (size_t pos = haystack.find(needle); pos != std::string::npos;
       pos = haystack.find(needle, pos + 1)) {
    ++n;
  }
  return n;
}

// Brackets and braces balance and nest correctly outside string literals,
// and string literals end.
bool WellNested(const std::string& json) {
  std::string stack;
  bool in_string = false;
  for (size_t i = 0; i < json.size(); ++i) {
    const char c = json[i];
    if (in_string) {
      if (c == '\\') {
        ++i;
      } else if (c == '"') {
        in_string = false;
      } else if (static_cast<unsigned char>(c) < 0x20) {
        return false;
      }
      continue;
    }
    if (c == '"') in_string = true;
    if (c == '{' || c == '[') stack.push_back(c);
    if (c == '}' || c == ']') {
      if (stack.empty() || stack.back() != (c == '}' ? '{' : '[')) {
        return false;
      }
      stack.pop_back();
    }
  }
  return stack.empty() && !in_string;
}

TEST(SnapshotTest, SegmentsBlocksStatesAndOwners) {
  auto backend = std::make_unique<LimitedBackend>(256 * kMiB);
  CachingAllocator alloc(std::move(backend));
  void* a = *alloc.Allocate(1000, AllocContext{3, kS1});
  void* pending = *alloc.Allocate(512, AllocContext{4, kS1});
  void* big = *alloc.Allocate(3 * kMiB, AllocContext{4, kS2});
  ASSERT_TRUE(alloc.RecordStream(pending, kS2).ok());
  alloc.Free(pending);

  MemorySnapshot snap = alloc.Snapshot();
  ASSERT_EQ(snap.segments.size(), 2u);
  const SegmentSnapshot* small = &snap.segments[0];
  const SegmentSnapshot* large = &snap.segments[1];
  if (!small->is_small) std::swap(small, large);
  ASSERT_TRUE(small->is_small);
  ASSERT_FALSE(large->is_small);

  EXPECT_EQ(small->address, reinterpret_cast<uintptr_t>(a));
  EXPECT_EQ(small->total_size, 2 * kMiB);
  EXPECT_EQ(small->allocated_size, 1024u);
  EXPECT_EQ(small->active_size, 1024u + 512u);
  EXPECT_EQ(small->requested_size, 1000u + 512u);
  EXPECT_EQ(small->stream, 1u);
  ASSERT_EQ(small->blocks.size(), 3u);
  EXPECT_EQ(small->blocks[0].state, BlockState::kActiveAllocated);
  EXPECT_EQ(small->blocks[0].requested_size, 1000u);
  EXPECT_EQ(small->blocks[0].owner_session, 3u);
  EXPECT_EQ(small->blocks[1].state, BlockState::kActivePendingFree);
  EXPECT_EQ(small->blocks[1].owner_session, 4u);
  EXPECT_EQ(small->blocks[2].state, BlockState::kInactive);
  EXPECT_EQ(small->blocks[2].owner_session, std::nullopt);
  size_t offset = small->address;
  for (const BlockSnapshot& b : small->blocks) {  // contiguous, in order
    EXPECT_EQ(b.address, offset);
    offset += b.size;
  }
  EXPECT_EQ(offset, small->address + small->total_size);

  EXPECT_EQ(large->address, reinterpret_cast<uintptr_t>(big));
  EXPECT_EQ(large->total_size, 20 * kMiB);
  EXPECT_EQ(large->stream, 2u);
  EXPECT_EQ(large->blocks.size(), 2u);

  const std::string json = alloc.SnapshotJson();
  EXPECT_TRUE(WellNested(json)) << json;
  EXPECT_EQ(json.rfind("{\"segments\":[{", 0), 0u) << json;
  EXPECT_THAT(json, HasSubstr("],\"device_traces\":[[]]}"));
  EXPECT_EQ(Count(json, "\"segment_type\":\"small\""), 1);
  EXPECT_EQ(Count(json, "\"segment_type\":\"large\""), 1);
  EXPECT_EQ(Count(json, "\"address\":"), 2 + 5);  // segments + blocks
  EXPECT_EQ(Count(json, "\"state\":\"active_allocated\""), 2);
  EXPECT_EQ(Count(json, "\"state\":\"active_pending_free\""), 1);
  EXPECT_EQ(Count(json, "\"state\":\"inactive\""), 2);
  EXPECT_EQ(Count(json, "\"owner_session\":null"), 2);
  EXPECT_EQ(Count(json, "\"owner_session\":4"), 2);
  EXPECT_THAT(json, HasSubstr("\"address\":" +
                              std::to_string(reinterpret_cast<uintptr_t>(a)) +
                              ",\"size\":1024,\"requested_size\":1000,"
                              "\"state\":\"active_allocated\","
                              "\"owner_session\":3}"));
  EXPECT_THAT(json, HasSubstr("\"total_size\":2097152,\"allocated_size\":1024,"
                              "\"active_size\":1536,\"requested_size\":1512,"
                              "\"stream\":1,"));
  alloc.Free(a);
  alloc.Free(big);
}

TEST(SnapshotTest, TraceRecordsActionsInOrder) {
  CachingAllocator alloc(std::make_unique<LimitedBackend>(256 * kMiB));
  alloc.RecordHistory(100);
  void* p = *alloc.Allocate(100, AllocContext{9, kS1});
  alloc.Free(p);
  alloc.EmptyCache();
  MemorySnapshot snap = alloc.Snapshot();
  std::vector<std::string> actions;
  for (const TraceEntry& t : snap.trace) {
    actions.push_back(TraceActionName(t.action));
  }
  EXPECT_EQ(actions,
            (std::vector<std::string>{
                "segment_alloc", "alloc", "free_requested", "free_completed",
                "segment_free", "empty_cache", "snapshot"}));
  EXPECT_EQ(snap.trace[1].session, 9u);
  EXPECT_EQ(snap.trace[1].size, 100u);  // requested, as PyTorch's
  EXPECT_EQ(snap.trace[1].stream, 1u);
  const std::string json = SnapshotToJson(snap);
  EXPECT_TRUE(WellNested(json));
  EXPECT_THAT(json, HasSubstr("{\"segments\":[],\"device_traces\":[[{"
                              "\"action\":\"segment_alloc\""));
  alloc.RecordHistory(2);  // keeps the newest entries
  snap = alloc.Snapshot();
  ASSERT_EQ(snap.trace.size(), 3u);
  EXPECT_EQ(snap.trace[1].action, TraceAction::kEmptyCache);
}

TEST(SnapshotTest, DeviceNameIsEscaped) {
  CachingAllocator alloc(std::make_unique<LimitedBackend>(
      64 * kMiB, std::make_unique<HostBackend>("we\"ird\\dev:2")));
  EXPECT_EQ(alloc.device_index(), 2);
  void* p = *alloc.Allocate(1, AllocContext{});
  const std::string json = alloc.SnapshotJson();
  EXPECT_THAT(json, HasSubstr("\"device\":2,\"device_name\":"
                              "\"we\\\"ird\\\\dev:2\""));
  EXPECT_TRUE(WellNested(json));
  alloc.Free(p);
}

}  // namespace
}  // namespace tensord
