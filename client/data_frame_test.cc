#include "client/data_frame.h"

#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "proto/frame_buffer.h"

namespace tensord {
namespace {

// `bytes` as a buffer of `piece`-byte slices (how the transport may split
// a frame).
grpc::ByteBuffer Buffer(const std::string& bytes, size_t piece) {
  std::vector<grpc::Slice> slices;
  for (size_t at = 0; at < bytes.size(); at += piece) {
    slices.emplace_back(bytes.data() + at, std::min(piece, bytes.size() - at));
  }
  return grpc::ByteBuffer(slices.data(), slices.size());
}

std::string Joined(const DataFrame& frame) {
  std::string out;
  for (absl::string_view piece : frame.payload) {
    out.append(piece.data(), piece.size());
  }
  return out;
}

v1::ServerFrame Chunk(size_t bytes) {
  v1::ServerFrame frame;
  frame.set_seq(41);
  v1::Data* data = frame.mutable_data();
  data->set_request_id(5);
  data->mutable_meta()->set_handle(9);
  data->mutable_meta()->set_dtype(v1::FLOAT32);
  data->mutable_meta()->add_shape(static_cast<int64_t>(bytes / 4));
  data->mutable_meta()->set_device("cpu");
  data->set_total_bytes(bytes);
  std::string payload(bytes, '\0');
  for (size_t i = 0; i < bytes; ++i) payload[i] = static_cast<char>(i * 13);
  data->mutable_payload()->set_data(std::move(payload));
  data->set_last(true);
  return frame;
}

// Every scalar field of Data set (the descriptor's list, so a field added to
// the proto and not to the decoder fails here) survives the decoder.
TEST(DataFrameTest, DecodesEveryScalarField) {
  v1::ServerFrame chunk = Chunk(64);
  v1::Data* data = chunk.mutable_data();
  const google::protobuf::Descriptor* d = data->GetDescriptor();
  const google::protobuf::Reflection* r = data->GetReflection();
  for (int i = 0; i < d->field_count(); ++i) {
    const google::protobuf::FieldDescriptor* f = d->field(i);
    switch (f->cpp_type()) {
      case google::protobuf::FieldDescriptor::CPPTYPE_BOOL:
        r->SetBool(data, f, true);
        break;
      case google::protobuf::FieldDescriptor::CPPTYPE_UINT64:
        r->SetUInt64(data, f, 1000 + static_cast<uint64_t>(f->number()));
        break;
      case google::protobuf::FieldDescriptor::CPPTYPE_UINT32:
        r->SetUInt32(data, f, 100 + static_cast<uint32_t>(f->number()));
        break;
      case google::protobuf::FieldDescriptor::CPPTYPE_STRING:
      case google::protobuf::FieldDescriptor::CPPTYPE_MESSAGE:
        break;  // the payload and meta, checked below
      default:
        ADD_FAILURE() << "Data." << f->name() << " has a type this test and "
                      << "the decoder do not know";
    }
  }
  grpc::ByteBuffer buffer = Buffer(chunk.SerializeAsString(), 16);
  DataFrame frame;
  ASSERT_TRUE(DecodeDataFrame(&buffer, &frame));
  EXPECT_EQ(Joined(frame), chunk.data().payload().data());
  v1::ServerFrame header = chunk;
  header.mutable_data()->mutable_payload()->set_data("");
  EXPECT_EQ(frame.header.DebugString(), header.DebugString());
}

TEST(DataFrameTest, DecodesFieldsAndLeavesThePayloadInPieces) {
  const v1::ServerFrame chunk = Chunk(100000);
  for (size_t piece : {size_t{7}, size_t{4096}, size_t{1} << 20}) {
    grpc::ByteBuffer buffer = Buffer(chunk.SerializeAsString(), piece);
    DataFrame frame;
    ASSERT_TRUE(DecodeDataFrame(&buffer, &frame)) << piece;
    EXPECT_EQ(Joined(frame), chunk.data().payload().data());
    v1::ServerFrame header = chunk;
    header.mutable_data()->mutable_payload()->set_data("");
    EXPECT_EQ(frame.header.SerializeAsString(), header.SerializeAsString());
    EXPECT_EQ(buffer.Length(), chunk.ByteSizeLong());  // left as it was
  }
}

TEST(DataFrameTest, AliasedFrameDecodes) {
  auto chunk = std::make_shared<v1::ServerFrame>(Chunk(1 << 20));
  grpc::ByteBuffer buffer = SerializeAliased(chunk);
  DataFrame frame;
  ASSERT_TRUE(DecodeDataFrame(&buffer, &frame));
  EXPECT_EQ(Joined(frame), chunk->data().payload().data());
  EXPECT_EQ(frame.header.data().request_id(), 5u);
  EXPECT_TRUE(frame.header.data().last());
  EXPECT_EQ(frame.header.seq(), 41u);
}

// A chunk whose bytes are elsewhere (Note [Payloads]): each span survives.
TEST(DataFrameTest, ChunkWithoutBytes) {
  for (int where = 0; where < 3; ++where) {
    v1::ServerFrame chunk;
    chunk.mutable_data()->set_request_id(3);
    v1::Payload* payload = chunk.mutable_data()->mutable_payload();
    if (where == 0) {
      payload->mutable_region()->set_region(2);
      payload->mutable_region()->set_offset(8192);
      payload->mutable_region()->set_size(4096);
    } else if (where == 1) {
      payload->mutable_cma()->set_address(0x7f0000001000);
      payload->mutable_cma()->set_size(4096);
    } else {
      payload->mutable_bulk()->set_size(4096);
      payload->mutable_bulk()->set_lanes(3);
    }
    grpc::ByteBuffer buffer = Buffer(chunk.SerializeAsString(), 3);
    DataFrame frame;
    ASSERT_TRUE(DecodeDataFrame(&buffer, &frame)) << where;
    EXPECT_TRUE(frame.payload.empty());
    EXPECT_EQ(frame.header.SerializeAsString(), chunk.SerializeAsString())
        << where;
  }
}

TEST(DataFrameTest, OtherFramesAreLeftToTheParser) {
  v1::ServerFrame ack;
  ack.mutable_ack()->set_last_seq(3);
  grpc::ByteBuffer buffer = Buffer(ack.SerializeAsString(), 64);
  DataFrame frame;
  EXPECT_FALSE(DecodeDataFrame(&buffer, &frame));
  v1::ServerFrame parsed;
  ASSERT_TRUE(ParseFromByteBuffer(&buffer, &parsed));
  EXPECT_EQ(parsed.ack().last_seq(), 3u);
}

TEST(DataFrameTest, MalformedFramesAreLeftToTheParser) {
  std::string bytes = Chunk(1000).SerializeAsString();
  bytes.resize(bytes.size() - 10);  // the payload is cut short
  grpc::ByteBuffer buffer = Buffer(bytes, 100);
  DataFrame frame;
  EXPECT_FALSE(DecodeDataFrame(&buffer, &frame));
  v1::ServerFrame parsed;
  EXPECT_FALSE(ParseFromByteBuffer(&buffer, &parsed));
}

TEST(DataFrameTest, UnknownDataFieldsAreSkipped) {
  v1::ServerFrame chunk = Chunk(64);
  std::string bytes = chunk.SerializeAsString();
  // Data gains field 15 (varint 1): its length grows by 2.
  v1::ServerFrame header;
  header.set_seq(chunk.seq());
  std::string data_bytes = chunk.data().SerializeAsString() + "\x78\x01";
  std::string framed = std::string("\x1a") +
                       static_cast<char>(0x80 | (data_bytes.size() & 0x7f)) +
                       static_cast<char>(data_bytes.size() >> 7) + data_bytes +
                       header.SerializeAsString();
  grpc::ByteBuffer buffer = Buffer(framed, 10);
  DataFrame frame;
  ASSERT_TRUE(DecodeDataFrame(&buffer, &frame));
  EXPECT_EQ(Joined(frame), chunk.data().payload().data());
  EXPECT_EQ(frame.header.seq(), chunk.seq());
}

}  // namespace
}  // namespace tensord
