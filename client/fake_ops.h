// The fake daemon's tensors and op math (client/fake_tensord.h): a tensor is
// its dtype, shape and values held as doubles; Compute evaluates the handful
// of ops the fake advertises (client/fake_welcome.h) on them. Pure functions,
// no protocol and no locking. Test-only; not the daemon's kernels.
#ifndef TENSORD_CLIENT_FAKE_OPS_H_
#define TENSORD_CLIENT_FAKE_OPS_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "proto/tensord.pb.h"

namespace tensord {
namespace testing {
namespace fake {

struct FakeTensor {
  v1::DType dtype = v1::FLOAT32;
  std::vector<int64_t> shape;
  std::vector<double> values;
  v1::Status error;  // code != 0: poisoned
};

// Elements in a tensor of `shape` (1 for a 0-dim one).
int64_t Numel(const std::vector<int64_t>& shape);
// Bytes per element on the wire.
size_t ItemSize(v1::DType dtype);
// One element at `p` (ItemSize(dtype) bytes, host order) as a double, and back.
double Load(v1::DType dtype, const char* p);
void Store(v1::DType dtype, double v, char* p);

// Evaluates op `name` with `call`'s attrs on `in` (one per call input, none
// poisoned) into `*r`. INVALID_ARGUMENT for shapes the op rejects,
// UNIMPLEMENTED for what the fake does not model.
absl::Status Compute(const std::string& name, const v1::Call& call,
                     const std::vector<const FakeTensor*>& in, FakeTensor* r);

}  // namespace fake
}  // namespace testing
}  // namespace tensord

#endif  // TENSORD_CLIENT_FAKE_OPS_H_
