// Frames to and from gRPC byte buffers, for the ends that move them as raw
// `grpc::ByteBuffer`s (server/grpc_stream.cc, client/session.cc) instead
// of through gRPC's protobuf glue.
//
// Note [Aliased payloads]: gRPC's glue serialises a message by copying every
// byte of it into fresh slices, so a 1 MiB Put or Data chunk is copied once
// into the message (from the tensor or the caller's buffer) and once more
// into the slices, and those slices are new memory each time. Serialised
// here, a `bytes`/`string` field that does not fit the current block is not
// copied: its slice points into the message's own string and holds a
// reference to the message until gRPC has written it to the socket. The
// small fields around it are copied into blocks as before. Whoever keeps the
// message (a resume's replay or resend buffer) shares it with the stream.
//
// Thread safety: functions of their arguments only; `message` must not be
// modified while any slice of the returned buffer is alive.
#ifndef TENSORD_PROTO_FRAME_BUFFER_H_
#define TENSORD_PROTO_FRAME_BUFFER_H_

#include <memory>

#include "google/protobuf/message_lite.h"
#include "grpcpp/support/byte_buffer.h"

namespace tensord {

// Serialises `message` (Note [Aliased payloads]). Its large byte fields stay
// in the message, which the buffer's slices keep alive.
grpc::ByteBuffer SerializeAliased(
    std::shared_ptr<const google::protobuf::MessageLite> message);

// Parses `buffer` into `message` straight from its slices, as gRPC's glue
// does, and clears it. False when the bytes are not a valid `message`.
bool ParseFromByteBuffer(grpc::ByteBuffer* buffer,
                         google::protobuf::MessageLite* message);

}  // namespace tensord

#endif  // TENSORD_PROTO_FRAME_BUFFER_H_
