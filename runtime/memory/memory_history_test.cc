// MemoryHistory: off records nothing, order, wrap keeps the newest, resize,
// and a chunked copy racing recorders stays one contiguous run.
#include "runtime/memory/memory_history.h"

#include <atomic>
#include <thread>
#include <vector>

#include "gtest/gtest.h"

namespace tensord {
namespace {

TraceEntry Event(uintptr_t addr) {
  TraceEntry e;
  e.action = TraceAction::kAlloc;
  e.addr = addr;
  e.size = 512;
  e.session = 3;
  return e;
}

std::vector<uintptr_t> Addrs(const std::vector<TraceEntry>& events) {
  std::vector<uintptr_t> out;
  for (const TraceEntry& e : events) out.push_back(e.addr);
  return out;
}

TEST(MemoryHistoryTest, OffRecordsNothing) {
  MemoryHistory h;
  EXPECT_FALSE(h.enabled());
  h.Record(Event(1));
  EXPECT_EQ(h.size(), 0u);
  EXPECT_EQ(h.end(), 0u);
  EXPECT_TRUE(h.EventsBefore(h.end()).empty());
}

TEST(MemoryHistoryTest, KeepsEventsInOrderWithTimes) {
  MemoryHistory h;
  h.SetCapacity(10);
  EXPECT_TRUE(h.enabled());
  for (uintptr_t a = 1; a <= 5; ++a) h.Record(Event(a));
  const std::vector<TraceEntry> events = h.EventsBefore(h.end());
  EXPECT_EQ(Addrs(events), (std::vector<uintptr_t>{1, 2, 3, 4, 5}));
  for (size_t i = 1; i < events.size(); ++i) {
    EXPECT_GE(events[i].time_us, events[i - 1].time_us);
  }
  EXPECT_GT(events[0].time_us, 1600000000LL * 1000000);  // since the epoch
  EXPECT_EQ(Addrs(h.EventsBefore(3)), (std::vector<uintptr_t>{1, 2, 3}));
}

TEST(MemoryHistoryTest, WrapKeepsTheNewest) {
  MemoryHistory h;
  h.SetCapacity(4);
  for (uintptr_t a = 1; a <= 11; ++a) h.Record(Event(a));
  EXPECT_EQ(h.size(), 4u);
  EXPECT_EQ(h.end(), 11u);
  EXPECT_EQ(Addrs(h.EventsBefore(h.end())),
            (std::vector<uintptr_t>{8, 9, 10, 11}));
  // Before seq 9: only what is still kept.
  EXPECT_EQ(Addrs(h.EventsBefore(9)), (std::vector<uintptr_t>{8, 9}));
}

TEST(MemoryHistoryTest, ResizeKeepsTheNewestAndOffForgets) {
  MemoryHistory h;
  h.SetCapacity(8);
  for (uintptr_t a = 1; a <= 6; ++a) h.Record(Event(a));
  h.SetCapacity(3);
  EXPECT_EQ(Addrs(h.EventsBefore(h.end())), (std::vector<uintptr_t>{4, 5, 6}));
  h.Record(Event(7));
  EXPECT_EQ(Addrs(h.EventsBefore(h.end())), (std::vector<uintptr_t>{5, 6, 7}));
  h.SetCapacity(5);  // growing keeps all and fills up before wrapping
  h.Record(Event(8));
  h.Record(Event(9));
  h.Record(Event(10));
  EXPECT_EQ(Addrs(h.EventsBefore(h.end())),
            (std::vector<uintptr_t>{6, 7, 8, 9, 10}));
  h.SetCapacity(0);
  EXPECT_FALSE(h.enabled());
  EXPECT_EQ(h.size(), 0u);
  h.Record(Event(11));
  h.SetCapacity(2);  // on again: nothing from before
  EXPECT_TRUE(h.EventsBefore(h.end()).empty());
}

TEST(MemoryHistoryTest, SitesAreSharedNotCopied) {
  MemoryHistory h;
  h.SetCapacity(2);
  auto site = std::make_shared<const std::string>("train.py:42");
  TraceEntry e = Event(1);
  e.site = site;
  h.Record(std::move(e));
  std::vector<TraceEntry> events = h.EventsBefore(h.end());
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].site.get(), site.get());
  events.clear();
  h.Record(Event(2));
  h.Record(Event(3));  // overwrites it: the ring lets go of the text
  EXPECT_EQ(site.use_count(), 1);
}

// A copy of more than one chunk while a thread records: the events come out
// contiguous (consecutive addrs), oldest first, ending at the seq noted.
TEST(MemoryHistoryTest, ChunkedCopyRacingRecordersIsContiguous) {
  MemoryHistory h;
  const size_t capacity = 3 * MemoryHistory::kCopyChunk + 17;
  h.SetCapacity(capacity);
  uintptr_t next_addr = 1;
  for (size_t i = 0; i < capacity + 100; ++i) h.Record(Event(next_addr++));
  std::atomic<bool> stop{false};
  std::thread recorder([&] {
    uintptr_t a = next_addr;  // addr == seq + 1 throughout
    while (!stop.load()) h.Record(Event(a++));
  });
  for (int round = 0; round < 20; ++round) {
    const uint64_t end = h.end();
    const std::vector<TraceEntry> events = h.EventsBefore(end);
    ASSERT_FALSE(events.empty());
    ASSERT_LE(events.size(), capacity);
    ASSERT_EQ(events.back().addr, end);  // ends at the seq noted
    for (size_t i = 1; i < events.size(); ++i) {
      ASSERT_EQ(events[i].addr, events[i - 1].addr + 1) << "gap at " << i;
    }
  }
  stop.store(true);
  recorder.join();
}

}  // namespace
}  // namespace tensord
