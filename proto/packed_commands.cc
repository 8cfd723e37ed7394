#include "proto/packed_commands.h"

#include <limits>

#include "absl/strings/str_cat.h"

namespace tensord {
namespace packed {
namespace {

constexpr size_t kMaxVarintBytes = 10;

// Writes `value` at `p`; returns the byte after it.
char* PutVarint(uint64_t value, char* p) {
  while (value >= 0x80) {
    *p++ = static_cast<char>((value & 0x7f) | 0x80);
    value >>= 7;
  }
  *p++ = static_cast<char>(value);
  return p;
}

char* PutHandles(absl::Span<const uint64_t> handles, char* p) {
  p = PutVarint(handles.size(), p);
  for (uint64_t h : handles) p = PutVarint(h, p);
  return p;
}

// Appends what `write` writes into at most `bound` bytes: one resize of
// `out` per entry instead of an append per varint.
template <typename Write>
void AppendBounded(size_t bound, std::string* out, Write write) {
  const size_t old = out->size();
  out->resize(old + bound);
  char* begin = &(*out)[old];
  out->resize(old + static_cast<size_t>(write(begin) - begin));
}

}  // namespace

void AppendCall(uint32_t op_id, uint32_t site_id,
                absl::Span<const uint64_t> inputs,
                absl::Span<const uint64_t> outputs, std::string* out) {
  AppendBounded(CallBytes(inputs.size(), outputs.size()), out, [&](char* p) {
    p = PutVarint(static_cast<uint64_t>(Kind::kCall), p);
    p = PutVarint(op_id, p);
    p = PutVarint(site_id, p);
    p = PutHandles(inputs, p);
    return PutHandles(outputs, p);
  });
}

void AppendRelease(absl::Span<const uint64_t> handles, std::string* out) {
  AppendBounded(ReleaseBytes(handles.size()), out, [&](char* p) {
    p = PutVarint(static_cast<uint64_t>(Kind::kRelease), p);
    return PutHandles(handles, p);
  });
}

void AppendMeta(const Meta& meta, std::string* out) {
  AppendBounded(kMaxVarintBytes * (5 + meta.shape.size()), out, [&](char* p) {
    p = PutVarint(meta.handle, p);
    p = PutVarint(meta.dtype, p);
    p = PutVarint(meta.device, p);
    p = PutVarint(meta.flags, p);
    p = PutVarint(meta.shape.size(), p);
    for (int64_t d : meta.shape) p = PutVarint(static_cast<uint64_t>(d), p);
    return p;
  });
}

size_t CallBytes(size_t inputs, size_t outputs) {
  return kMaxVarintBytes * (5 + inputs + outputs);
}

size_t ReleaseBytes(size_t handles) { return kMaxVarintBytes * (2 + handles); }

bool Reader::VarintSlow(uint64_t* value) {
  uint64_t result = 0;
  for (int shift = 0; shift < 64 && pos_ < bytes_.size(); shift += 7) {
    const uint8_t byte = static_cast<uint8_t>(bytes_[pos_++]);
    // The tenth byte may only hold the top bit of a uint64.
    if (shift == 63 && byte > 1) return false;
    result |= static_cast<uint64_t>(byte & 0x7f) << shift;
    if ((byte & 0x80) == 0) {
      *value = result;
      return true;
    }
  }
  return false;
}

absl::Status Reader::Handles(const char* what,
                             absl::InlinedVector<uint64_t, 4>* out) {
  const size_t at = pos_;
  uint64_t n = 0;
  if (!Varint(&n)) {
    return absl::InvalidArgumentError(
        absl::StrCat("bad varint for the count of ", what, " at byte ", at));
  }
  // Every handle takes at least one byte.
  if (n > bytes_.size() - pos_) {
    return absl::InvalidArgumentError(
        absl::StrCat(n, " ", what, " at byte ", at, ", but only ",
                     bytes_.size() - pos_, " bytes follow"));
  }
  out->resize(n);
  for (uint64_t i = 0; i < n; ++i) {
    const size_t item = pos_;
    if (!Varint(&(*out)[i])) {
      return absl::InvalidArgumentError(
          absl::StrCat("bad varint for ", what, " #", i, " at byte ", item));
    }
  }
  return absl::OkStatus();
}

absl::Status Reader::Next(Entry* entry) {
  const size_t start = pos_;
  absl::Status status = [&]() -> absl::Status {
    uint64_t kind = 0;
    if (!Varint(&kind)) {
      return absl::InvalidArgumentError(
          absl::StrCat("bad varint for the entry kind at byte ", start));
    }
    if (kind == static_cast<uint64_t>(Kind::kRelease)) {
      entry->kind = Kind::kRelease;
      absl::Status handles = Handles("handles", &first_);
      if (!handles.ok()) return handles;
      entry->handles = first_;
      return absl::OkStatus();
    }
    if (kind != static_cast<uint64_t>(Kind::kCall)) {
      return absl::InvalidArgumentError(absl::StrCat("unknown entry kind ",
                                                     kind, " at byte ", start,
                                                     " (1: Call, 2: Release)"));
    }
    entry->kind = Kind::kCall;
    uint64_t ids[2];
    const char* names[2] = {"op_id", "site_id"};
    for (int i = 0; i < 2; ++i) {
      const size_t at = pos_;
      if (!Varint(&ids[i]) || ids[i] > std::numeric_limits<uint32_t>::max()) {
        return absl::InvalidArgumentError(absl::StrCat(
            "bad ", names[i], " at byte ", at, " (a uint32 varint)"));
      }
    }
    entry->op_id = static_cast<uint32_t>(ids[0]);
    entry->site_id = static_cast<uint32_t>(ids[1]);
    absl::Status inputs = Handles("inputs", &first_);
    if (!inputs.ok()) return inputs;
    absl::Status outputs = Handles("outputs", &second_);
    if (!outputs.ok()) return outputs;
    entry->inputs = first_;
    entry->outputs = second_;
    return absl::OkStatus();
  }();
  if (!status.ok()) pos_ = start;
  return status;
}

absl::Status Reader::NextMeta(Meta* meta) {
  const size_t start = pos_;
  absl::Status status = [&]() -> absl::Status {
    if (!Varint(&meta->handle)) {
      return absl::InvalidArgumentError(
          absl::StrCat("bad varint for the handle at byte ", start));
    }
    uint32_t* fields[3] = {&meta->dtype, &meta->device, &meta->flags};
    const char* names[3] = {"dtype", "device", "flags"};
    for (int i = 0; i < 3; ++i) {
      const size_t at = pos_;
      uint64_t v = 0;
      if (!Varint(&v) || v > std::numeric_limits<uint32_t>::max()) {
        return absl::InvalidArgumentError(absl::StrCat(
            "bad ", names[i], " at byte ", at, " (a uint32 varint)"));
      }
      *fields[i] = static_cast<uint32_t>(v);
    }
    absl::Status dims = Handles("dims", &first_);
    if (!dims.ok()) return dims;
    dims_.resize(first_.size());
    for (size_t i = 0; i < first_.size(); ++i) {
      if (first_[i] >
          static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
        return absl::InvalidArgumentError(absl::StrCat(
            "dim #", i, " of the entry at byte ", start, " is over 2^63"));
      }
      dims_[i] = static_cast<int64_t>(first_[i]);
    }
    meta->shape = dims_;
    return absl::OkStatus();
  }();
  if (!status.ok()) pos_ = start;
  return status;
}

}  // namespace packed
}  // namespace tensord
