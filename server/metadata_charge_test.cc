// Note [Metadata charge] and Note [Kept errors] in process: handles and
// kept errors past the free allowance are charged to the quota in blocks and
// given back; a full quota refuses new handles with a clear text; error
// texts past the session's budget are kept short, still naming the op.
#include "server/metadata_charge.h"

#include <memory>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "runtime/memory/caching_allocator.h"
#include "runtime/memory/limited_backend.h"
#include "server/handle_table.h"
#include "server/kept_errors.h"

namespace tensord {
namespace {

constexpr size_t kMiB = size_t{1} << 20;
constexpr uint64_t kSession = 7;

class MetadataChargeTest : public ::testing::Test {
 protected:
  MetadataChargeTest() : quota_(std::make_unique<LimitedBackend>(64 * kMiB)) {
    quota_.SetSessionQuota(kSession, 4 * kMiB);
  }
  // Whether the session's account can still take `bytes`.
  bool Fits(size_t bytes) {
    absl::StatusOr<uint64_t> account = quota_.ChargeExternal(kSession, bytes);
    if (!account.ok()) return false;
    quota_.UnchargeExternal(*account, bytes);
    return true;
  }
  CachingAllocator quota_;
};

TEST_F(MetadataChargeTest, HandlesPastTheAllowanceAreChargedAndGivenBack) {
  MetadataCharge charge(&quota_, kSession, /*free_bytes=*/1 * kMiB);
  HandleTable handles(&charge);
  // docs/reliability.md quotes the measured size.
  RecordProperty("handle_metadata_bytes",
                 static_cast<int>(kHandleMetadataBytes));
  const size_t free_handles = kMiB / kHandleMetadataBytes;
  uint64_t id = 1;
  for (; id <= free_handles; ++id) {
    ASSERT_TRUE(handles.CheckNew(id).ok());
    handles.Insert(id, HandleEntry());
  }
  EXPECT_EQ(charge.charged(), 0u);
  EXPECT_TRUE(Fits(4 * kMiB));
  // The next handles take the quota, a block at a time.
  for (; id <= free_handles + 3 * kMiB / kHandleMetadataBytes; ++id) {
    ASSERT_TRUE(handles.CheckNew(id).ok()) << id;
    handles.Insert(id, HandleEntry());
  }
  EXPECT_EQ(charge.charged(), 3 * kMiB);
  EXPECT_FALSE(Fits(2 * kMiB));
  // Released, they give it back.
  for (uint64_t r = 1; r < id; ++r) handles.Release(r);
  EXPECT_EQ(charge.held(), 0u);
  EXPECT_EQ(charge.charged(), 0u);
  EXPECT_TRUE(Fits(4 * kMiB));
}

TEST_F(MetadataChargeTest, AFullQuotaRefusesNewHandlesSayingWhy) {
  MetadataCharge charge(&quota_, kSession, /*free_bytes=*/0);
  HandleTable handles(&charge);
  uint64_t id = 1;
  absl::Status refused;
  for (; id < (1u << 20); ++id) {
    refused = handles.CheckNew(id);
    if (!refused.ok()) break;
    handles.Insert(id, HandleEntry());
  }
  EXPECT_EQ(refused.code(), absl::StatusCode::kResourceExhausted) << refused;
  EXPECT_NE(refused.message().find("charged to its user's quota"),
            std::string::npos)
      << refused;
  EXPECT_EQ(id - 1, 4 * kMiB / kHandleMetadataBytes);
  // A batch of outputs is refused as a whole.
  EXPECT_FALSE(handles.Reserve(1).ok());
  handles.Release(1);
  EXPECT_TRUE(handles.Reserve(1).ok());
  handles.Clear();
  EXPECT_EQ(charge.held(), 0u);
  EXPECT_TRUE(Fits(4 * kMiB));
}

TEST_F(MetadataChargeTest, KeptErrorsPastTheBudgetAreShortAndNameTheOp) {
  auto charge = std::make_shared<MetadataCharge>(&quota_, kSession, 0);
  KeptErrors errors(charge, /*full_text_budget=*/64 << 10);
  const std::string reason(2000, 'x');
  const std::string site(1000, 's');
  std::vector<std::shared_ptr<const v1::Status>> kept;
  for (int i = 0; i < 200; ++i) {
    kept.push_back(
        errors.Keep(absl::InvalidArgumentError(reason), "matmul", site));
  }
  EXPECT_LE(errors.full_text_bytes(), 64u << 10);
  const v1::Status& first = *kept.front();
  const v1::Status& last = *kept.back();
  EXPECT_EQ(first.message().size(), reason.size());
  EXPECT_EQ(last.op(), "matmul");
  EXPECT_EQ(last.code(), static_cast<int>(absl::StatusCode::kInvalidArgument));
  EXPECT_LT(last.ByteSizeLong(), 512u);
  EXPECT_NE(last.message().find("[shortened: this session's poisoned handles"),
            std::string::npos)
      << last.message();
  EXPECT_EQ(last.message().substr(0, 16), reason.substr(0, 16));
  // All of it counted in the charge; all of it given back.
  EXPECT_GT(charge->held(), 200 * last.ByteSizeLong());
  kept.clear();
  EXPECT_EQ(charge->held(), 0u);
  EXPECT_EQ(errors.full_text_bytes(), 0u);
  EXPECT_EQ(charge->charged(), 0u);
}

}  // namespace
}  // namespace tensord
