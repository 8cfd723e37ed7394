// The allocator's memory history (Note [Memory history]) on the fake
// backend: events in order with their sessions and call sites, a free names
// the session whose block it was, wrapping keeps the newest, off records
// nothing and takes no reference, the events match the segments of the same
// snapshot while threads allocate, and a snapshot of 10^5 blocks.
#include <atomic>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "runtime/memory/caching_allocator.h"
#include "runtime/memory/host_backend.h"
#include "runtime/memory/limited_backend.h"

namespace tensord {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

constexpr size_t kMiB = 1024 * 1024;
const StreamHandle kS1 = reinterpret_cast<StreamHandle>(1);

using Site = std::shared_ptr<const std::string>;

std::vector<TraceAction> Actions(const MemorySnapshot& snap) {
  std::vector<TraceAction> out;
  for (const TraceEntry& t : snap.trace) out.push_back(t.action);
  return out;
}

int Count(const std::string& haystack, const std::string& needle) {
  int n = 0;
  for (size_t pos = haystack.find(needle); pos != std::string::npos;
       pos = haystack.find(needle, pos + 1)) {
    ++n;
  }
  return n;
}

TEST(HistoryTest, EventsInOrderWithSessionsAndSites) {
  CachingAllocator alloc(std::make_unique<LimitedBackend>(256 * kMiB));
  alloc.RecordHistory(100);
  const Site site = std::make_shared<const std::string>("train.py:42");
  void* a = *alloc.Allocate(100, AllocContext{7, kS1, &site});
  void* b = *alloc.Allocate(1000, AllocContext{8, kS1, &site});
  alloc.Free(a);  // merges with nothing: b is its neighbour
  alloc.Free(b);  // merges with a's block and the rest
  alloc.EmptyCache();
  const MemorySnapshot snap = alloc.Snapshot();
  using A = TraceAction;
  EXPECT_THAT(
      Actions(snap),
      ElementsAre(A::kSegmentAlloc, A::kAlloc, A::kAlloc, A::kFreeRequested,
                  A::kFreeCompleted, A::kFreeRequested, A::kFreeCompleted,
                  A::kSegmentFree, A::kEmptyCache, A::kSnapshot));
  const std::vector<TraceEntry>& t = snap.trace;
  EXPECT_EQ(t[0].size, 2 * kMiB);
  EXPECT_EQ(t[0].session, 7u);
  EXPECT_EQ(t[1].addr, reinterpret_cast<uintptr_t>(a));
  EXPECT_EQ(t[1].size, 100u);  // bytes requested, as PyTorch's trace
  EXPECT_EQ(t[1].stream, 1u);
  EXPECT_EQ(t[1].session, 7u);
  EXPECT_EQ(t[1].site.get(), site.get());  // the session's text, shared
  EXPECT_EQ(t[2].session, 8u);
  // Each free names the block as freed and the session that held it, even
  // when the block then merges into a neighbour.
  EXPECT_EQ(t[3].addr, reinterpret_cast<uintptr_t>(a));
  EXPECT_EQ(t[3].session, 7u);
  EXPECT_EQ(t[4].addr, reinterpret_cast<uintptr_t>(a));
  EXPECT_EQ(t[4].size, 100u);
  EXPECT_EQ(t[4].session, 7u);
  EXPECT_EQ(t[5].addr, reinterpret_cast<uintptr_t>(b));
  EXPECT_EQ(t[5].session, 8u);
  EXPECT_EQ(t[6].addr, reinterpret_cast<uintptr_t>(b));
  EXPECT_EQ(t[6].size, 1000u);
  EXPECT_EQ(t[6].session, 8u);
  EXPECT_EQ(t[7].session, 0u);
  for (size_t i = 1; i < t.size(); ++i) {
    EXPECT_GE(t[i].time_us, t[i - 1].time_us);
  }

  const std::string json =
      SnapshotToJson(snap, [](uint64_t n) { return "s-" + std::to_string(n); });
  EXPECT_THAT(json, HasSubstr("\"device_traces\":[[{\"action\":"
                              "\"segment_alloc\""));
  EXPECT_THAT(json,
              HasSubstr(",\"session\":7,\"category\":\"session s-7\","
                        "\"frames\":[{\"filename\":\"train.py\",\"line\":42,"
                        "\"name\":\"session s-7\"}]}"));
  EXPECT_EQ(Count(json, "\"category\":\"session s-8\""), 3);
  EXPECT_THAT(json, HasSubstr("{\"action\":\"snapshot\",\"addr\":0,"));
  EXPECT_THAT(json, HasSubstr("\"category\":\"unknown\",\"frames\":[{"
                              "\"filename\":\"<no call site>\",\"line\":0,"
                              "\"name\":\"tensord\"}]}"));
}

TEST(HistoryTest, PendingFreeCompletesLaterWithItsSession) {
  auto backend = std::make_unique<LimitedBackend>(256 * kMiB);
  LimitedBackend* fake = backend.get();
  CachingAllocator alloc(std::move(backend));
  alloc.RecordHistory(100);
  const StreamHandle s2 = reinterpret_cast<StreamHandle>(2);
  void* p = *alloc.Allocate(512, AllocContext{5, kS1});
  ASSERT_TRUE(alloc.RecordStream(p, s2).ok());
  alloc.Free(p);
  EXPECT_EQ(alloc.Snapshot().trace.back().action, TraceAction::kSnapshot);
  EXPECT_EQ(alloc.Snapshot().trace[2].action, TraceAction::kFreeRequested);
  fake->CompleteAllEvents();
  void* q = *alloc.Allocate(512, AllocContext{6, kS1});  // polls the events
  const MemorySnapshot snap = alloc.Snapshot();
  ASSERT_EQ(snap.trace[3].action, TraceAction::kFreeCompleted);
  EXPECT_EQ(snap.trace[3].session, 5u);
  EXPECT_EQ(snap.trace[3].addr, reinterpret_cast<uintptr_t>(p));
  alloc.Free(q);
}

TEST(HistoryTest, OomCarriesTheDeviceFreeBytes) {
  CachingAllocator alloc(std::make_unique<LimitedBackend>(8 * kMiB));
  alloc.RecordHistory(10);
  EXPECT_FALSE(alloc.Allocate(64 * kMiB, AllocContext{4, kS1}).ok());
  const MemorySnapshot snap = alloc.Snapshot();
  ASSERT_EQ(snap.trace.size(), 2u);
  EXPECT_EQ(snap.trace[0].action, TraceAction::kOom);
  EXPECT_EQ(snap.trace[0].addr, 8 * kMiB);  // nothing reserved yet
  EXPECT_THAT(SnapshotToJson(snap),
              HasSubstr("{\"action\":\"oom\",\"device_free\":8388608,"));
}

TEST(HistoryTest, WrapKeepsTheNewestEvents) {
  CachingAllocator alloc(std::make_unique<LimitedBackend>(256 * kMiB));
  alloc.RecordHistory(8);
  void* last = nullptr;
  for (int i = 0; i < 100; ++i) {
    last = *alloc.Allocate(512 + i, AllocContext{static_cast<uint64_t>(i)});
    alloc.Free(last);
  }
  EXPECT_EQ(alloc.history().size(), 8u);
  const MemorySnapshot snap = alloc.Snapshot();
  ASSERT_EQ(snap.trace.size(), 9u);  // the ring, then "snapshot"
  // Newest first from the end: the last pair's three events.
  EXPECT_EQ(snap.trace[7].action, TraceAction::kFreeCompleted);
  EXPECT_EQ(snap.trace[7].session, 99u);
  EXPECT_EQ(snap.trace[7].size, 512u + 99);
  EXPECT_EQ(snap.trace[6].action, TraceAction::kFreeRequested);
  EXPECT_EQ(snap.trace[5].action, TraceAction::kAlloc);
  EXPECT_EQ(snap.trace[5].session, 99u);
  EXPECT_EQ(snap.trace[0].session, 97u);
}

// Off (the default): nothing recorded, no reference taken on the site; and
// turning it off forgets what was kept.
TEST(HistoryTest, OffRecordsNothing) {
  CachingAllocator alloc(std::make_unique<LimitedBackend>(256 * kMiB));
  const Site site = std::make_shared<const std::string>("train.py:1");
  void* p = *alloc.Allocate(100, AllocContext{1, kS1, &site});
  EXPECT_EQ(site.use_count(), 1);
  alloc.Free(p);
  alloc.EmptyCache();
  EXPECT_FALSE(alloc.history().enabled());
  EXPECT_TRUE(alloc.Snapshot().trace.empty());
  EXPECT_THAT(alloc.SnapshotJson(), HasSubstr("\"device_traces\":[[]]}"));

  alloc.RecordHistory(10);
  p = *alloc.Allocate(100, AllocContext{1, kS1, &site});
  alloc.Free(p);
  EXPECT_EQ(alloc.history().size(), 4u);
  alloc.RecordHistory(0);
  EXPECT_TRUE(alloc.Snapshot().trace.empty());
  EXPECT_EQ(site.use_count(), 1);  // the forgotten events let go of it
}

TEST(HistoryTest, TracesSitAtTheirDeviceIndex) {
  CachingAllocator alloc(std::make_unique<LimitedBackend>(
      64 * kMiB, std::make_unique<HostBackend>("cuda:2")));
  alloc.RecordHistory(10);
  void* p = *alloc.Allocate(1, AllocContext{});
  const std::string json = alloc.SnapshotJson();
  EXPECT_THAT(json, HasSubstr("\"device_traces\":[[],[],[{\"action\":"));
  EXPECT_THAT(json, HasSubstr("{\"device\":2,"));
  alloc.Free(p);
}

// The events of a snapshot lead exactly to its segments, while two threads
// allocate and free: replaying alloc/free_requested gives the set of
// allocated blocks the snapshot shows (PyTorch's viewer relies on it).
TEST(HistoryTest, EventsMatchTheSegmentsOfTheSameSnapshot) {
  CachingAllocator alloc(std::make_unique<LimitedBackend>(1024 * kMiB));
  alloc.RecordHistory(1 << 20);  // never wraps here: 2 x 3 x 20000 events
  std::atomic<int> running{2};
  auto work = [&](uint64_t session) {
    std::vector<void*> held;
    for (int i = 0; i < 20000; ++i) {
      held.push_back(*alloc.Allocate(512 * (1 + i % 7), AllocContext{session}));
      if (held.size() > 50) {
        alloc.Free(held.front());
        held.erase(held.begin());
      }
    }
    for (void* p : held) alloc.Free(p);
    running.fetch_sub(1);
  };
  std::thread t1(work, 1), t2(work, 2);
  for (int round = 0; round < 3 || running.load() > 0; ++round) {
    const MemorySnapshot snap = alloc.Snapshot();
    std::set<uintptr_t> replayed;
    for (const TraceEntry& e : snap.trace) {
      if (e.action == TraceAction::kAlloc) replayed.insert(e.addr);
      if (e.action == TraceAction::kFreeRequested) replayed.erase(e.addr);
    }
    std::set<uintptr_t> shown;
    for (const SegmentSnapshot& s : snap.segments) {
      for (const BlockSnapshot& b : s.blocks) {
        if (b.state == BlockState::kActiveAllocated) shown.insert(b.address);
      }
    }
    ASSERT_EQ(replayed, shown) << "round " << round;
  }
  t1.join();
  t2.join();
}

// A snapshot of 10^5 live blocks with 10^5 events kept (the Bad input of
// issue 29): complete, and its JSON names every block and event.
TEST(HistoryTest, SnapshotOfAHundredThousandBlocks) {
  constexpr int kBlocks = 100000;
  CachingAllocator alloc(std::make_unique<LimitedBackend>(1024 * kMiB));
  alloc.RecordHistory(kBlocks);
  const Site site = std::make_shared<const std::string>("big.py:7");
  std::vector<void*> blocks;
  blocks.reserve(kBlocks);
  for (int i = 0; i < kBlocks; ++i) {
    blocks.push_back(*alloc.Allocate(512, AllocContext{3, kS1, &site}));
  }
  const MemorySnapshot snap = alloc.Snapshot();
  size_t allocated = 0;
  for (const SegmentSnapshot& s : snap.segments) {
    for (const BlockSnapshot& b : s.blocks) {
      allocated += b.state == BlockState::kActiveAllocated;
    }
  }
  EXPECT_EQ(allocated, static_cast<size_t>(kBlocks));
  ASSERT_EQ(snap.trace.size(), static_cast<size_t>(kBlocks) + 1);
  EXPECT_EQ(snap.trace.front().action, TraceAction::kAlloc);  // wrapped
  EXPECT_EQ(snap.trace[kBlocks - 1].addr,
            reinterpret_cast<uintptr_t>(blocks.back()));
  const std::string json = SnapshotToJson(snap);
  EXPECT_EQ(Count(json, "\"state\":\"active_allocated\""), kBlocks);
  EXPECT_EQ(Count(json, "\"filename\":\"big.py\",\"line\":7"), kBlocks);
  for (void* p : blocks) alloc.Free(p);
}

}  // namespace
}  // namespace tensord
