// Several threads allocating and freeing at once, each as its own session on
// its own stream; afterwards every counter must balance. Run under
// --config=tsan as well to check the locking.
#include <atomic>
#include <cstring>
#include <memory>
#include <random>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "runtime/memory/caching_allocator.h"
#include "runtime/memory/limited_backend.h"

namespace tensord {
namespace {

constexpr size_t kMiB = 1024 * 1024;

TEST(ConcurrencyTest, ThreadsAllocateAndFreeAtOnce) {
  auto backend = std::make_unique<LimitedBackend>(1024 * kMiB);
  LimitedBackend* raw = backend.get();
  CachingAllocator alloc(std::move(backend));
  constexpr int kThreads = 8;
  constexpr int kIters = 2000;
  std::atomic<int> corrupt{0};
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      std::mt19937 rng(t);
      const uint64_t session = t + 1;
      const StreamHandle stream =
          reinterpret_cast<StreamHandle>(static_cast<uintptr_t>(t % 3));
      std::vector<std::pair<void*, size_t>> mine;
      for (int i = 0; i < kIters; ++i) {
        if (mine.size() < 16 && rng() % 3 != 0) {
          const size_t bytes =
              (rng() % 8 == 0) ? 1 + rng() % (4 * kMiB) : 1 + rng() % 65536;
          absl::StatusOr<void*> p =
              alloc.Allocate(bytes, AllocContext{session, stream});
          if (!p.ok()) {
            ++failures;
            continue;
          }
          const auto* b = static_cast<unsigned char*>(*p);
          for (size_t k = 0; k < std::min<size_t>(bytes, 256); ++k) {
            if (b[k] != 0 && b[k] != session) ++corrupt;
          }
          std::memset(*p, static_cast<int>(session),
                      std::min<size_t>(bytes, 256));
          mine.emplace_back(*p, bytes);
        } else if (!mine.empty()) {
          const size_t k = rng() % mine.size();
          const auto* b = static_cast<unsigned char*>(mine[k].first);
          for (size_t j = 0; j < std::min<size_t>(mine[k].second, 256); ++j) {
            if (b[j] != session) ++corrupt;
          }
          if (rng() % 4 == 0) {
            (void)alloc.RecordStream(mine[k].first,
                                     reinterpret_cast<StreamHandle>(7));
          }
          alloc.Free(mine[k].first);
          mine[k] = mine.back();
          mine.pop_back();
        }
        if (i % 100 == 0) {
          raw->CompleteAllEvents();
          (void)alloc.Stats();
          (void)alloc.SessionBytes(session);
        }
        if (t == 0 && i % 500 == 0) alloc.EmptyCache();
      }
      for (auto& [p, n] : mine) alloc.Free(p);
    });
  }
  for (std::thread& th : threads) th.join();
  EXPECT_EQ(corrupt.load(), 0);
  EXPECT_EQ(failures.load(), 0);
  raw->CompleteAllEvents();
  alloc.Free(*alloc.Allocate(1, AllocContext{}));  // polls events
  std::map<std::string, int64_t> st = alloc.Stats();
  EXPECT_EQ(st.at("allocation.all.current"), 0);
  EXPECT_EQ(st.at("allocated_bytes.all.current"), 0);
  EXPECT_EQ(st.at("active.all.current"), 0);
  EXPECT_EQ(st.at("requested_bytes.all.current"), 0);
  EXPECT_EQ(st.at("allocation.all.allocated"), st.at("allocation.all.freed"));
  for (int t = 0; t < kThreads; ++t) EXPECT_EQ(alloc.SessionBytes(t + 1), 0);
  EXPECT_EQ(st.at("reserved_bytes.all.current"),
            static_cast<int64_t>(raw->used_bytes()));
  alloc.EmptyCache();
  EXPECT_EQ(raw->used_bytes(), 0u);
}

}  // namespace
}  // namespace tensord
