#include "proto/frame_buffer.h"

#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "proto/tensord.pb.h"

namespace tensord {
namespace {

std::string Flatten(const grpc::ByteBuffer& buffer) {
  std::vector<grpc::Slice> slices;
  EXPECT_TRUE(buffer.Dump(&slices).ok());
  std::string out;
  for (const grpc::Slice& s : slices) {
    out.append(reinterpret_cast<const char*>(s.begin()), s.size());
  }
  return out;
}

// Whether some slice of `buffer` starts at `data` (bytes not copied).
bool HasSliceAt(const grpc::ByteBuffer& buffer, const void* data) {
  std::vector<grpc::Slice> slices;
  EXPECT_TRUE(buffer.Dump(&slices).ok());
  for (const grpc::Slice& s : slices) {
    if (s.begin() == data) return true;
  }
  return false;
}

std::shared_ptr<v1::ServerFrame> DataFrame(size_t bytes) {
  auto frame = std::make_shared<v1::ServerFrame>();
  frame->set_seq(7);
  v1::Data* data = frame->mutable_data();
  data->set_request_id(3);
  data->mutable_meta()->add_shape(static_cast<int64_t>(bytes));
  data->set_offset(1 << 20);
  data->set_last(true);
  std::string payload(bytes, '\0');
  for (size_t i = 0; i < bytes; ++i) payload[i] = static_cast<char>(i * 7);
  data->mutable_payload()->set_data(std::move(payload));
  return frame;
}

TEST(FrameBufferTest, LargePayloadIsAliasedAndBytesMatchProtobuf) {
  auto frame = DataFrame(1 << 20);
  grpc::ByteBuffer buffer = SerializeAliased(frame);
  EXPECT_EQ(Flatten(buffer), frame->SerializeAsString());
  EXPECT_TRUE(HasSliceAt(buffer, frame->data().payload().data().data()));
}

TEST(FrameBufferTest, BufferKeepsTheMessageAlive) {
  auto frame = DataFrame(256 << 10);
  const std::string expected = frame->SerializeAsString();
  std::weak_ptr<v1::ServerFrame> weak = frame;
  grpc::ByteBuffer buffer = SerializeAliased(std::move(frame));
  EXPECT_FALSE(weak.expired());
  EXPECT_EQ(Flatten(buffer), expected);
  buffer.Clear();
  EXPECT_TRUE(weak.expired());
}

TEST(FrameBufferTest, SmallFrameIsOneSlice) {
  auto frame = std::make_shared<v1::ServerFrame>();
  frame->mutable_ack()->set_last_seq(12345);
  frame->mutable_ack()->add_created()->set_handle(9);
  grpc::ByteBuffer buffer = SerializeAliased(frame);
  std::vector<grpc::Slice> slices;
  ASSERT_TRUE(buffer.Dump(&slices).ok());
  EXPECT_EQ(slices.size(), 1u);
  EXPECT_EQ(Flatten(buffer), frame->SerializeAsString());
}

TEST(FrameBufferTest, BatchOfChunksRoundTrips) {
  auto frame = std::make_shared<v1::ClientFrame>();
  for (int i = 0; i < 5; ++i) {
    v1::Command* command = frame->mutable_batch()->add_commands();
    command->set_seq(i + 1);
    v1::Put* put = command->mutable_put();
    put->set_handle(4);
    put->set_offset(i * (300 << 10));
    put->mutable_payload()->set_data(
        std::string(i == 2 ? 100 : 300 << 10, static_cast<char>(i)));
    put->set_last(i == 4);
  }
  frame->mutable_batch()->add_commands()->mutable_call()->set_op_id(2);
  grpc::ByteBuffer buffer = SerializeAliased(frame);
  EXPECT_EQ(Flatten(buffer), frame->SerializeAsString());
  v1::ClientFrame parsed;
  ASSERT_TRUE(ParseFromByteBuffer(&buffer, &parsed));
  EXPECT_EQ(parsed.SerializeAsString(), frame->SerializeAsString());
  EXPECT_EQ(buffer.Length(), 0u);  // consumed
}

TEST(FrameBufferTest, ParseRejectsGarbage) {
  const std::string bytes = "\x12\xff\xff\xff\x0f garbage";
  grpc::Slice slice(bytes.data(), bytes.size());
  grpc::ByteBuffer buffer(&slice, 1);
  v1::ClientFrame frame;
  EXPECT_FALSE(ParseFromByteBuffer(&buffer, &frame));
}

}  // namespace
}  // namespace tensord
