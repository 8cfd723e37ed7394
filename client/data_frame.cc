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
    {v1::Data::kShmFieldNumber,
     [](v1::Data* d, uint64_t v) { d->set_shm(v != 0); }},
    {v1::Data::kShmOffsetFieldNumber,
     [](v1::Data* d, uint64_t v) { d->set_shm_offset(v); }},
    {v1::Data::kShmSizeFieldNumber,
     [](v1::Data* d, uint64_t v) { d->set_shm_size(v); }},
    {v1::Data::kCmaFieldNumber,
     [](v1::Data* d, uint64_t v) { d->set_cma(v != 0); }},
    {v1::Data::kCmaSizeFieldNumber,
     [](v1::Data* d, uint64_t v) { d->set_cma_size(v); }},
    {v1::Data::kBulkSizeFieldNumber,
     [](v1::Data* d, uint64_t v) { d->set_bulk_size(v); }},
    {v1::Data::kBulkLanesFieldNumber,
     [](v1::Data* d, uint64_t v) {
       d->set_bulk_lanes(static_cast<uint32_t>(v));
     }},
};

VarintSetter VarintSetterFor(int number) {
  for (const VarintField& f : kVarintFields) {
    if (f.number == number) return f.set;
  }
  return nullptr;
}

// The fields of a Data message up to `in`'s limit, all but the payload,
// whose position is noted and skipped.
bool DecodeData(CodedInputStream* in, v1::Data* data, PayloadRange* payload) {
  while (const uint32_t tag = in->ReadTag()) {
    const int number = WireFormatLite::GetTagFieldNumber(tag);
    if (VarintSetter set = VarintSetterFor(number)) {
      uint64_t v = 0;
      if (!ReadVarint(in, tag, &v)) return false;
      set(data, v);
      continue;
    }
    switch (number) {
      case v1::Data::kMetaFieldNumber: {
        CodedInputStream::Limit limit;
        if (!PushLength(in, tag, &limit) ||
            !data->mutable_meta()->MergePartialFromCodedStream(in) ||
            !in->ConsumedEntireMessage()) {
          return false;
        }
        in->PopLimit(limit);
        break;
      }
      case v1::Data::kDataFieldNumber: {
        uint32_t size;
        if (payload->at >= 0 ||  // a repeated payload: the parser's rules
            WireFormatLite::GetTagWireType(tag) !=
                WireFormatLite::WIRETYPE_LENGTH_DELIMITED ||
            !in->ReadVarint32(&size)) {
          return false;
        }
        payload->at = in->CurrentPosition();
        payload->size = size;
        if (!in->Skip(static_cast<int>(size))) return false;
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
