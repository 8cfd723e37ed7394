#include "client/status.h"

#include "gtest/gtest.h"

namespace tensord {
namespace {

TEST(StatusTest, ProtoCarriesOpAndSite) {
  v1::Status wire;
  wire.set_code(static_cast<int>(absl::StatusCode::kInvalidArgument));
  wire.set_message("shapes [64, 100] and [64, 10] cannot be multiplied");
  wire.set_op("matmul");
  wire.set_site("train.cc:42");
  absl::Status status = StatusFromProto(wire);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(status.message(),
            "matmul at train.cc:42: shapes [64, 100] and [64, 10] cannot be "
            "multiplied");
  wire.clear_site();
  EXPECT_EQ(StatusFromProto(wire).message(),
            "matmul: shapes [64, 100] and [64, 10] cannot be multiplied");
}

TEST(StatusTest, CodeZeroIsOk) {
  EXPECT_TRUE(StatusFromProto(v1::Status()).ok());
}

TEST(StatusTest, FromGrpc) {
  EXPECT_TRUE(StatusFromGrpc(grpc::Status::OK).ok());
  absl::Status s = StatusFromGrpc(
      grpc::Status(grpc::StatusCode::UNAUTHENTICATED, "bad token"));
  EXPECT_EQ(s.code(), absl::StatusCode::kUnauthenticated);
  EXPECT_EQ(s.message(), "bad token");
}

}  // namespace
}  // namespace tensord
