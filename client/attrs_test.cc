#include "client/attrs.h"

#include "gtest/gtest.h"

namespace tensord {
namespace {

v1::OpSchema SumSchema() {
  v1::OpSchema op;
  op.set_name("sum");
  v1::AttrSchema* dim = op.add_attrs();
  dim->set_name("dim");
  dim->set_type("ints");
  v1::AttrSchema* keepdim = op.add_attrs();
  keepdim->set_name("keepdim");
  keepdim->set_type("bool");
  return op;
}

TEST(AttrsTest, ConvertsEachType) {
  EXPECT_EQ(AttrToProto("dim0", 3, "int")->i(), 3);
  EXPECT_EQ(AttrToProto("alpha", 2.5, "float")->f(), 2.5);
  EXPECT_EQ(AttrToProto("alpha", 2, "float")->f(), 2.0);  // int widens
  EXPECT_TRUE(AttrToProto("keepdim", true, "bool")->b());
  EXPECT_EQ(AttrToProto("device", "cpu", "string")->s(), "cpu");
  EXPECT_EQ(AttrToProto("dtype", DType::kInt64, "dtype")->dtype(), v1::INT64);
  EXPECT_EQ(AttrToProto("dtype", "float64", "dtype")->dtype(), v1::FLOAT64);
  v1::AttrValue shape =
      *AttrToProto("shape", std::vector<int64_t>{2, 3}, "ints");
  ASSERT_EQ(shape.ints().values_size(), 2);
  EXPECT_EQ(shape.ints().values(1), 3);
  EXPECT_EQ(AttrToProto("dim", 1, "ints")->ints().values(0), 1);  // scalar
  EXPECT_EQ(
      AttrToProto("w", std::vector<double>{0.5}, "floats")->floats().values(0),
      0.5);
  EXPECT_EQ(AttrToProto("dim0", 2.0, "int")->i(), 2);  // integral double
}

TEST(AttrsTest, RejectsWrongTypes) {
  absl::StatusOr<v1::AttrValue> bad = AttrToProto("keepdim", 1.5, "bool");
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(bad.status().message().find("keepdim"), std::string::npos);
  EXPECT_FALSE(AttrToProto("dim0", 1.5, "int").ok());
  EXPECT_FALSE(AttrToProto("dtype", "complex", "dtype").ok());
  EXPECT_FALSE(AttrToProto("shape", true, "ints").ok());
}

TEST(AttrsTest, ChecksAgainstSchema) {
  google::protobuf::Map<std::string, v1::AttrValue> out;
  ASSERT_TRUE(
      AttrsToProto(SumSchema(),
                   {{"dim", std::vector<int64_t>{0}}, {"keepdim", true}}, &out)
          .ok());
  EXPECT_EQ(out.at("dim").ints().values(0), 0);
  EXPECT_TRUE(out.at("keepdim").b());

  out.clear();
  absl::Status unknown = AttrsToProto(SumSchema(), {{"axis", 0}}, &out);
  EXPECT_EQ(unknown.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(unknown.message().find("sum: unknown attribute 'axis'"),
            std::string::npos);
  EXPECT_NE(unknown.message().find("known: [dim, keepdim]"), std::string::npos);
}

TEST(AttrsTest, RequiredAttributeMissing) {
  v1::OpSchema arange;
  arange.set_name("arange");
  v1::AttrSchema* end = arange.add_attrs();
  end->set_name("end");
  end->set_type("float");
  end->set_required(true);
  google::protobuf::Map<std::string, v1::AttrValue> out;
  absl::Status missing = AttrsToProto(arange, {}, &out);
  EXPECT_EQ(missing.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(missing.message().find("missing required attribute 'end'"),
            std::string::npos);
  EXPECT_TRUE(AttrsToProto(arange, {{"end", 5}}, &out).ok());
  EXPECT_EQ(out.at("end").f(), 5.0);
}

}  // namespace
}  // namespace tensord
