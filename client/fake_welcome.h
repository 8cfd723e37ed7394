// The Welcome the fake daemon (client/fake_tensord.h) answers Hello with:
// session limits from FakeOptions, one cpu device, and the op-schema table
// of the ops client/fake_ops.h computes. Ops are numbered 1.. in table
// order; a Call names them by that id.
#ifndef TENSORD_CLIENT_FAKE_WELCOME_H_
#define TENSORD_CLIENT_FAKE_WELCOME_H_

#include "client/fake_tensord.h"
#include "proto/tensord.pb.h"

namespace tensord {
namespace testing {
namespace fake {

v1::Welcome FakeWelcome(const FakeOptions& options);

}  // namespace fake
}  // namespace testing
}  // namespace tensord

#endif  // TENSORD_CLIENT_FAKE_WELCOME_H_
