#include "runtime/memory/snapshot.h"

#include "gtest/gtest.h"

namespace tensord {
namespace {

TEST(JsonQuoteTest, EscapesSpecialCharacters) {
  EXPECT_EQ(JsonQuote("cpu"), "\"cpu\"");
  EXPECT_EQ(JsonQuote("a\"b\\c"), "\"a\\\"b\\\\c\"");
  EXPECT_EQ(JsonQuote("x\ny\tz\r"), "\"x\\ny\\tz\\r\"");
  EXPECT_EQ(JsonQuote(std::string("\x01\x1f", 2)), "\"\\u0001\\u001f\"");
  EXPECT_EQ(JsonQuote("caf\xc3\xa9"), "\"caf\xc3\xa9\"");  // UTF-8 passes
}

TEST(SnapshotToJsonTest, ExactShape) {
  MemorySnapshot snap;
  SegmentSnapshot seg;
  seg.device = 1;
  seg.device_name = "cuda:1";
  seg.address = 4096;
  seg.total_size = 2048;
  seg.allocated_size = 512;
  seg.active_size = 1024;
  seg.requested_size = 700;
  seg.stream = 5;
  seg.is_small = true;
  seg.blocks.push_back({4096, 512, 500, BlockState::kActiveAllocated, 3});
  seg.blocks.push_back({4608, 512, 200, BlockState::kActivePendingFree, 4});
  seg.blocks.push_back({5120, 1024, 0, BlockState::kInactive, std::nullopt});
  snap.segments.push_back(seg);
  snap.device = 1;
  snap.trace.push_back({TraceAction::kAlloc, 4096, 500, 5, 3, 17,
                        std::make_shared<const std::string>("a.py:9")});
  EXPECT_EQ(
      SnapshotToJson(snap),
      "{\"segments\":[{\"device\":1,\"device_name\":\"cuda:1\","
      "\"address\":4096,\"total_size\":2048,\"allocated_size\":512,"
      "\"active_size\":1024,\"requested_size\":700,\"stream\":5,"
      "\"segment_type\":\"small\",\"blocks\":["
      "{\"address\":4096,\"size\":512,\"requested_size\":500,"
      "\"state\":\"active_allocated\",\"owner_session\":3},"
      "{\"address\":4608,\"size\":512,\"requested_size\":200,"
      "\"state\":\"active_pending_free\",\"owner_session\":4},"
      "{\"address\":5120,\"size\":1024,\"requested_size\":0,"
      "\"state\":\"inactive\",\"owner_session\":null}]}],"
      "\"device_traces\":[[],[{\"action\":\"alloc\",\"addr\":4096,"
      "\"size\":500,\"stream\":5,\"time_us\":17,\"session\":3,"
      "\"category\":\"session 3\",\"frames\":[{\"filename\":\"a.py\","
      "\"line\":9,\"name\":\"session 3\"}]}]]}");
}

TEST(SnapshotToJsonTest, Empty) {
  EXPECT_EQ(SnapshotToJson(MemorySnapshot{}),
            "{\"segments\":[],\"device_traces\":[[]]}");
}

}  // namespace
}  // namespace tensord
