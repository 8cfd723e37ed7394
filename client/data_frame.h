// Decoding a download's Data frame without parsing its payload.
//
// Note [Data frames in place]: Data chunks are the bulk of what a session's
// reader receives. Parsed as a message, a chunk's bytes are copied out of
// gRPC's slices into a string, and then again into the download's
// destination. DecodeDataFrame reads the frame's fields but leaves the
// payload in the slices, as pieces that DataAssembler::AddPieces copies
// once, straight to where they belong. Other frames are parsed whole.
// No I/O, no locks.
#ifndef TENSORD_CLIENT_DATA_FRAME_H_
#define TENSORD_CLIENT_DATA_FRAME_H_

#include <vector>

#include "absl/strings/string_view.h"
#include "grpcpp/support/byte_buffer.h"
#include "grpcpp/support/slice.h"
#include "proto/tensord.pb.h"

namespace tensord {
inline namespace client {

struct DataFrame {
  // The frame without its payload's bytes: when they are in the frame,
  // header.data().payload().data() is empty (and set: where_case() says
  // kData); a span (region, cma, bulk) is decoded as it is.
  v1::ServerFrame header;
  // The payload in order, as views into `slices`, which keep them alive.
  std::vector<absl::string_view> payload;
  std::vector<grpc::Slice> slices;
};

// True when `buffer` holds a ServerFrame{data}: `out` then has it, and the
// buffer may be dropped. False for any other frame and for bytes that do
// not decode as a Data frame: parse those as a message (ParseFromByteBuffer,
// which reports what is wrong); `buffer` is left as it was.
bool DecodeDataFrame(grpc::ByteBuffer* buffer, DataFrame* out);

}  // namespace client
}  // namespace tensord

#endif  // TENSORD_CLIENT_DATA_FRAME_H_
