#include "proto/packed_commands.h"

#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "proto/tensord.pb.h"

namespace tensord {
namespace packed {
namespace {

using ::testing::ElementsAreArray;
using ::testing::HasSubstr;

std::vector<uint64_t> Vec(absl::Span<const uint64_t> s) {
  return std::vector<uint64_t>(s.begin(), s.end());
}

// protobuf's own encoding of packed uint64s is the reference for ours.
std::string ProtobufPacked(const std::vector<uint64_t>& values) {
  v1::Release release;
  release.mutable_handles()->Add(values.begin(), values.end());
  std::string wire = release.SerializeAsString();
  if (values.empty()) return std::string();
  // Tag byte, then the payload's length as a varint, then the payload.
  size_t pos = 1;
  while (static_cast<uint8_t>(wire[pos]) & 0x80) ++pos;
  return wire.substr(pos + 1);
}

TEST(PackedCommandsTest, ReleaseEncodesHandlesAsProtobufDoes) {
  const std::vector<uint64_t> handles = {0,
                                         1,
                                         127,
                                         128,
                                         300,
                                         uint64_t{1} << 35,
                                         std::numeric_limits<uint64_t>::max()};
  std::string out;
  AppendRelease(handles, &out);
  // Kind 2, count 7 (one byte each), then the packed payload.
  ASSERT_GE(out.size(), 2u);
  EXPECT_EQ(out[0], 2);
  EXPECT_EQ(out[1], 7);
  EXPECT_EQ(out.substr(2), ProtobufPacked(handles));
  EXPECT_LE(out.size(), ReleaseBytes(handles.size()));
}

TEST(PackedCommandsTest, RoundTripsRandomRuns) {
  std::mt19937_64 rng(7);
  struct Want {
    Kind kind;
    uint32_t op_id, site_id;
    std::vector<uint64_t> a, b;
  };
  auto value = [&] {
    // Every varint length, not only small ones.
    return rng() >> (rng() % 64);
  };
  for (int round = 0; round < 50; ++round) {
    std::vector<Want> want;
    std::string run;
    size_t bound = 0;
    const int entries = 1 + static_cast<int>(rng() % 20);
    for (int e = 0; e < entries; ++e) {
      Want w;
      w.kind = rng() % 3 == 0 ? Kind::kRelease : Kind::kCall;
      w.op_id = static_cast<uint32_t>(rng());
      w.site_id = static_cast<uint32_t>(rng() % 5);
      for (uint64_t i = rng() % 6; i > 0; --i) w.a.push_back(value());
      for (uint64_t i = rng() % 3; i > 0; --i) w.b.push_back(value());
      if (w.kind == Kind::kCall) {
        AppendCall(w.op_id, w.site_id, w.a, w.b, &run);
        bound += CallBytes(w.a.size(), w.b.size());
      } else {
        AppendRelease(w.a, &run);
        bound += ReleaseBytes(w.a.size());
      }
      want.push_back(std::move(w));
    }
    EXPECT_LE(run.size(), bound);
    Reader reader(run);
    for (const Want& w : want) {
      ASSERT_FALSE(reader.done());
      Entry entry;
      ASSERT_TRUE(reader.Next(&entry).ok());
      ASSERT_EQ(entry.kind, w.kind);
      if (w.kind == Kind::kCall) {
        EXPECT_EQ(entry.op_id, w.op_id);
        EXPECT_EQ(entry.site_id, w.site_id);
        EXPECT_THAT(Vec(entry.inputs), ElementsAreArray(w.a));
        EXPECT_THAT(Vec(entry.outputs), ElementsAreArray(w.b));
      } else {
        EXPECT_THAT(Vec(entry.handles), ElementsAreArray(w.a));
      }
    }
    EXPECT_TRUE(reader.done());
    EXPECT_EQ(reader.offset(), run.size());
  }
}

TEST(PackedCommandsTest, EveryTruncationIsAnErrorNamingAByte) {
  std::string run;
  AppendCall(5, 1, std::vector<uint64_t>{1000, 2}, std::vector<uint64_t>{300},
             &run);
  const size_t first = run.size();
  AppendRelease(std::vector<uint64_t>{70000}, &run);
  for (size_t cut = 1; cut < run.size(); ++cut) {
    if (cut == first) continue;  // a whole entry: valid
    Reader reader(absl::string_view(run).substr(0, cut));
    Entry entry;
    absl::Status status = reader.Next(&entry);
    if (cut > first) {
      ASSERT_TRUE(status.ok());
      status = reader.Next(&entry);
    }
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << cut;
    EXPECT_THAT(status.message(), HasSubstr("at byte")) << cut;
    // Stuck at the entry that failed.
    EXPECT_EQ(reader.offset(), cut > first ? first : 0u) << cut;
  }
}

TEST(PackedCommandsTest, RejectsKindsCountsAndRangesItCannotHold) {
  Entry entry;
  {
    const std::string run("\x03\x00", 2);  // the Reader keeps a view
    Reader reader(run);
    absl::Status s = reader.Next(&entry);
    EXPECT_THAT(s.message(), HasSubstr("unknown entry kind 3 at byte 0"));
  }
  {
    // A Release claiming 100 handles with 2 bytes left.
    const std::string run("\x02\x64\x01\x01", 4);
    Reader reader(run);
    absl::Status s = reader.Next(&entry);
    EXPECT_THAT(s.message(),
                HasSubstr("100 handles at byte 1, but only 2 bytes follow"));
  }
  {
    // An op id over 32 bits: 2^32 as a varint.
    std::string run = "\x01";
    run += std::string("\x80\x80\x80\x80\x10", 5);
    run += std::string("\x00\x00\x00", 3);
    Reader reader(run);
    EXPECT_THAT(reader.Next(&entry).message(),
                HasSubstr("bad op_id at byte 1"));
  }
  {
    // An eleven-byte varint for a handle.
    std::string run = "\x02\x01";
    run += std::string(10, '\xff');
    run += '\x01';
    Reader reader(run);
    EXPECT_THAT(reader.Next(&entry).message(),
                HasSubstr("bad varint for handles #0 at byte 2"));
  }
}

TEST(PackedCommandsTest, MetasRoundTripAndRejectWhatTheyCannotHold) {
  std::mt19937_64 rng(11);
  std::string run;
  struct Want {
    Meta meta;
    std::vector<int64_t> shape;
  };
  std::vector<Want> want(30);
  for (Want& w : want) {
    w.meta.handle = rng() >> (rng() % 64);
    w.meta.dtype = static_cast<uint32_t>(rng() % 12);
    w.meta.device = static_cast<uint32_t>(rng() % 3);
    w.meta.flags = static_cast<uint32_t>(rng() % 4);
    for (uint64_t i = rng() % 7; i > 0; --i) {
      w.shape.push_back(static_cast<int64_t>(rng() >> (1 + rng() % 63)));
    }
    w.meta.shape = w.shape;
    AppendMeta(w.meta, &run);
  }
  Reader reader(run);
  for (const Want& w : want) {
    Meta got;
    ASSERT_TRUE(reader.NextMeta(&got).ok());
    EXPECT_EQ(got.handle, w.meta.handle);
    EXPECT_EQ(got.dtype, w.meta.dtype);
    EXPECT_EQ(got.device, w.meta.device);
    EXPECT_EQ(got.flags, w.meta.flags);
    EXPECT_EQ(std::vector<int64_t>(got.shape.begin(), got.shape.end()),
              w.shape);
  }
  EXPECT_TRUE(reader.done());

  Meta meta;
  // A dim of 2^63: handle 1, dtype 1, device 0, flags 2, one dim.
  std::string big("\x01\x01\x00\x02\x01", 5);
  big += std::string(9, '\x80');
  big += '\x01';
  Reader big_reader(big);
  EXPECT_THAT(std::string(big_reader.NextMeta(&meta).message()),
              HasSubstr("dim #0 of the entry at byte 0 is over 2^63"));
  // A dtype over 32 bits.
  std::string wide("\x01\x80\x80\x80\x80\x10\x00\x00\x00", 9);
  Reader wide_reader(wide);
  EXPECT_THAT(std::string(wide_reader.NextMeta(&meta).message()),
              HasSubstr("bad dtype at byte 1"));
  // Cut short after the flags.
  const std::string cut("\x01\x01\x00\x02", 4);
  Reader cut_reader(cut);
  EXPECT_THAT(std::string(cut_reader.NextMeta(&meta).message()),
              HasSubstr("bad varint for the count of dims at byte 4"));
}

}  // namespace
}  // namespace packed
}  // namespace tensord
