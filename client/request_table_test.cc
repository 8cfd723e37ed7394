#include "client/request_table.h"

#include <cstring>
#include <string>

#include "gtest/gtest.h"

namespace tensord {
inline namespace client {
namespace internal {
namespace {

v1::ServerFrame Data(uint64_t request_id, std::string bytes) {
  v1::ServerFrame frame;
  v1::Data* data = frame.mutable_data();
  data->set_request_id(request_id);
  data->mutable_meta()->set_dtype(v1::FLOAT32);
  data->mutable_meta()->add_shape(static_cast<int64_t>(bytes.size() / 4));
  data->set_total_bytes(bytes.size());
  data->mutable_payload()->set_data(std::move(bytes));
  data->set_last(true);
  return frame;
}

v1::ServerFrame Error(uint64_t request_id, const std::string& message) {
  v1::ServerFrame frame;
  frame.mutable_error()->set_request_id(request_id);
  frame.mutable_error()->mutable_status()->set_code(3);  // INVALID_ARGUMENT
  frame.mutable_error()->mutable_status()->set_message(message);
  return frame;
}

v1::ServerFrame SyncDone(uint64_t request_id) {
  v1::ServerFrame frame;
  frame.mutable_sync_done()->set_request_id(request_id);
  return frame;
}

TEST(RequestTableTest, AssemblesADownloadIntoItsTarget) {
  RequestTable table;
  char target[8] = {};
  const uint64_t id =
      table.Add(RequestTable::Kind::kDownload, {target, sizeof(target)});
  table.Queued(id, /*seq=*/5);
  EXPECT_TRUE(table.DownloadWaiting(id));
  EXPECT_TRUE(table.Apply(Data(id, std::string("abcdefgh")), {}).ok());
  EXPECT_TRUE(table.DownloadDone(id));
  EXPECT_FALSE(table.DownloadWaiting(id));
  EXPECT_EQ(std::string(target, sizeof(target)), "abcdefgh");
  PendingDownload got = table.TakeDownload(id);
  EXPECT_TRUE(got.status.ok());
  EXPECT_EQ(table.answered_seq(), 5u);
}

TEST(RequestTableTest, AnswersInPlaceAreLeftToTheWaiter) {
  RequestTable table;
  const uint64_t id = table.Add(RequestTable::Kind::kDownload);
  v1::ServerFrame frame;
  frame.mutable_data()->set_request_id(id);
  frame.mutable_data()->mutable_payload()->mutable_bulk()->set_size(1 << 20);
  EXPECT_TRUE(table.Apply(frame, {}).ok());
  PendingDownload got = table.TakeDownload(id);
  EXPECT_TRUE(got.done);
  EXPECT_TRUE(got.shm);
  EXPECT_EQ(got.shm_reply.payload().bulk().size(), 1u << 20);
}

TEST(RequestTableTest, SyncsTakeTheirStatus) {
  RequestTable table;
  const uint64_t ok = table.Add(RequestTable::Kind::kSync);
  const uint64_t bad = table.Add(RequestTable::Kind::kSync);
  table.Queued(ok, 3);
  table.Queued(bad, 4);
  EXPECT_FALSE(table.SyncDone(ok));
  EXPECT_TRUE(table.Apply(SyncDone(ok), {}).ok());
  EXPECT_TRUE(table.Apply(Error(bad, "no such event"), {}).ok());
  EXPECT_TRUE(table.SyncDone(ok));
  EXPECT_TRUE(table.SyncDone(bad));
  std::optional<absl::Status> first = table.TakeSync(ok);
  ASSERT_TRUE(first.has_value());
  EXPECT_TRUE(first->ok());
  std::optional<absl::Status> second = table.TakeSync(bad);
  ASSERT_TRUE(second.has_value());
  EXPECT_EQ(second->code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(table.answered_seq(), 4u);
}

TEST(RequestTableTest, AnErrorAnsweringNoRequestIsReturned) {
  RequestTable table;
  const uint64_t id = table.Add(RequestTable::Kind::kSync);
  table.TakeSync(id);  // a past request: its replayed answer is ignored
  EXPECT_TRUE(table.Apply(Error(id, "late"), {}).ok());
  EXPECT_EQ(table.Apply(Error(0, "bad frame"), {}).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_FALSE(table.Apply(Error(id + 1, "unknown"), {}).ok());
}

TEST(RequestTableTest, AForgottenRequestCountsAsNotAnswered) {
  RequestTable table;
  const uint64_t id = table.Add(RequestTable::Kind::kDownload);
  table.Forget(id);
  EXPECT_FALSE(table.DownloadWaiting(id));
  EXPECT_EQ(table.answered_seq(), 0u);
}

}  // namespace
}  // namespace internal
}  // namespace client
}  // namespace tensord
