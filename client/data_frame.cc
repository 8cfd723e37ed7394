#include "client/data_frame.h"

#include <algorithm>
#include <cstdint>

#include "google/protobuf/io/coded_stream.h"
#include "google/protobuf/wire_format_lite.h"
#include "grpcpp/support/proto_buffer_reader.h"

namespace tensord {
inline namespace client {
namespace {

using google::protobuf::internal::WireFormatLite;
using google::protobuf::io::CodedInputStream;

// Where the payload is in the frame: [at, at + size).
struct PayloadRange {
  int at = -1;
  uint32_t size = 0;
};

bool ReadVarint(CodedInputStream* in, uint32_t tag, uint64_t* value) {
  return WireFormatLite::GetTagWireType(tag) ==
             WireFormatLite::WIRETYPE_VARINT &&
         in->ReadVarint64(value);
}

// Reads a length-delimited field's length and limits `in` to it.
bool PushLength(CodedInputStream* in, uint32_t tag,
                CodedInputStream::Limit* limit) {
  uint32_t length;
  if (WireFormatLite::GetTagWireType(tag) !=
          WireFormatLite::WIRETYPE_LENGTH_DELIMITED ||
      !in->ReadVarint32(&length)) {
    return false;
  }
  *limit = in->PushLimit(static_cast<int>(length));
  return true;
}

// Data's scalar fields, all varints on the wire: field number and setter.
using VarintSetter = void (*)(v1::Data*, uint64_t);
struct VarintField {
  int number;
  VarintSetter set;
};
constexpr VarintField kVarintFields[] = {
    {v1::Data::kRequestIdFieldNumber,
     [](v1::Data* d, uint64_t v) { d->set_request_id(v); }},
    {v1::Data::kOffsetFieldNumber,
     [](v1::Data* d, uint64_t v) { d->set_offset(v); }},
    {v1::Data::kLastFieldNumber,
     [](v1::Data* d, uint64_t v) { d->set_last(v != 0); }},
    {v1::Data::kTotalBytesFieldNumber,
     [](v1::Data* d, uint64_t v) { d->set_total_bytes(v); }},
};

VarintSetter VarintSetterFor(int number) {
  for (const VarintField& f : kVarintFields) {
    if (f.number == number) return f.set;
  }
  return nullptr;
}

// Parses a length-delimited submessage field into `message`.
bool MergeMessage(CodedInputStream* in, uint32_t tag,
                  google::protobuf::MessageLite* message) {
  CodedInputStream::Limit limit;
  if (!PushLength(in, tag, &limit) ||
      !message->MergePartialFromCodedStream(in) ||
      !in->ConsumedEntireMessage()) {
    return false;
  }
  in->PopLimit(limit);
  return true;
}

// A Payload message (Note [Payloads]) up to `in`'s limit, holding exactly
// one field (anything else is left to the parser's rules): a span is parsed
// into `payload`; the position of `data`'s bytes is noted and skipped, and
// `payload` gets an empty `data`.
bool DecodePayload(CodedInputStream* in, v1::Payload* payload,
                   PayloadRange* range) {
  const uint32_t tag = in->ReadTag();
  switch (WireFormatLite::GetTagFieldNumber(tag)) {
    case v1::Payload::kDataFieldNumber: {
      uint32_t size;
      if (WireFormatLite::GetTagWireType(tag) !=
              WireFormatLite::WIRETYPE_LENGTH_DELIMITED ||
          !in->ReadVarint32(&size)) {
        return false;
      }
      range->at = in->CurrentPosition();
      range->size = size;
      payload->set_data(std::string());
      if (!in->Skip(static_cast<int>(size))) return false;
      break;
    }
    case v1::Payload::kRegionFieldNumber:
      if (!MergeMessage(in, tag, payload->mutable_region())) return false;
      break;
    case v1::Payload::kCmaFieldNumber:
      if (!MergeMessage(in, tag, payload->mutable_cma())) return false;
      break;
    case v1::Payload::kBulkFieldNumber:
      if (!MergeMessage(in, tag, payload->mutable_bulk())) return false;
      break;
    default:
      return tag == 0 && in->ConsumedEntireMessage();  // an empty Payload
  }
  return in->ReadTag() == 0 && in->ConsumedEntireMessage();
}

// The fields of a Data message up to `in`'s limit, all but the payload's
// bytes, whose position is noted and skipped.
bool DecodeData(CodedInputStream* in, v1::Data* data, PayloadRange* payload) {
  bool has_payload = false;
  while (const uint32_t tag = in->ReadTag()) {
    const int number = WireFormatLite::GetTagFieldNumber(tag);
    if (VarintSetter set = VarintSetterFor(number)) {
      uint64_t v = 0;
      if (!ReadVarint(in, tag, &v)) return false;
      set(data, v);
      continue;
    }
    switch (number) {
      case v1::Data::kMetaFieldNumber:
        if (!MergeMessage(in, tag, data->mutable_meta())) return false;
        break;
      case v1::Data::kPayloadFieldNumber: {
        CodedInputStream::Limit limit;
        if (has_payload ||  // a repeated payload: the parser's rules
            !PushLength(in, tag, &limit) ||
            !DecodePayload(in, data->mutable_payload(), payload)) {
          return false;
        }
        in->PopLimit(limit);
        has_payload = true;
        break;
      }
      default:
        if (!WireFormatLite::SkipField(in, tag)) return false;
    }
  }
  return in->ConsumedEntireMessage();
}

// Views of bytes [at, at + size) of the frame in `slices`.
void Pieces(const std::vector<grpc::Slice>& slices, PayloadRange range,
            std::vector<absl::string_view>* out) {
  const size_t begin = static_cast<size_t>(range.at);
  const size_t end = begin + range.size;
  size_t pos = 0;
  for (const grpc::Slice& slice : slices) {
    const size_t next = pos + slice.size();
    if (next > begin && pos < end) {
      const size_t from = std::max(begin, pos) - pos;
      const size_t to = std::min(end, next) - pos;
      out->emplace_back(reinterpret_cast<const char*>(slice.begin()) + from,
                        to - from);
    }
    pos = next;
    if (pos >= end) break;
  }
}

}  // namespace

bool DecodeDataFrame(grpc::ByteBuffer* buffer, DataFrame* out) {
  v1::ServerFrame header;
  PayloadRange payload;
  {
    grpc::ProtoBufferReader reader(buffer);
    if (!reader.status().ok()) return false;
    CodedInputStream in(&reader);
    bool has_data = false;
    while (const uint32_t tag = in.ReadTag()) {
      switch (WireFormatLite::GetTagFieldNumber(tag)) {
        case v1::ServerFrame::kDataFieldNumber: {
          CodedInputStream::Limit limit;
          if (has_data || !PushLength(&in, tag, &limit) ||
              !DecodeData(&in, header.mutable_data(), &payload)) {
            return false;
          }
          in.PopLimit(limit);
          has_data = true;
          break;
        }
        case v1::ServerFrame::kSeqFieldNumber: {
          uint64_t seq;
          if (!ReadVarint(&in, tag, &seq)) return false;
          header.set_seq(seq);
          break;
        }
        default:
          return false;  // another kind of frame
      }
    }
    if (!has_data || !in.ConsumedEntireMessage()) return false;
  }
  out->header = std::move(header);
  out->payload.clear();
  out->slices.clear();
  if (payload.size > 0) {
    if (!buffer->Dump(&out->slices).ok()) return false;
    Pieces(out->slices, payload, &out->payload);
  }
  return true;
}

}  // namespace client
}  // namespace tensord
