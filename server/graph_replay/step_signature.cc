#include "server/graph_replay/step_signature.h"

#include <algorithm>
#include <string>
#include <vector>

#include "proto/packed_commands.h"

namespace tensord {
namespace {

// Role tags; command kinds are letters.
constexpr char kFreshTag = 'f';
constexpr char kPreviousTag = 'p';
constexpr char kFixedTag = 'x';

}  // namespace

void StepSignatureBuilder::Int(uint64_t v) {
  if (full_) return;
  // Varint: small ids, ranks and dims take a byte or two.
  do {
    char byte = static_cast<char>(v & 0x7f);
    v >>= 7;
    if (v != 0) byte = static_cast<char>(byte | 0x80);
    current_.bytes.push_back(byte);
  } while (v != 0);
}

void StepSignatureBuilder::Text(absl::string_view s) {
  if (full_) return;
  Int(s.size());
  current_.bytes.append(s.data(), s.size());
}

void StepSignatureBuilder::Begin(char kind) {
  if (!full_ && (current_.commands >= kMaxStepCommands ||
                 current_.bytes.size() >= kMaxStepSignatureBytes)) {
    full_ = true;  // stop growing; the step can never be captured
    current_.capturable = false;
  }
  ++current_.commands;
  if (!full_) current_.bytes.push_back(kind);
}

void StepSignatureBuilder::Role(uint64_t id) {
  if (full_) return;
  if (auto it = fresh_.find(id); it != fresh_.end()) {
    current_.bytes.push_back(kFreshTag);
    return Int(it->second);
  }
  if (auto it = previous_.find(id); it != previous_.end()) {
    current_.bytes.push_back(kPreviousTag);
    Int(it->second);
  } else {
    current_.bytes.push_back(kFixedTag);
    Int(id);
    if (fixed_seen_.emplace(id, true).second) {
      current_.fixed.push_back({id, meta_->StorageOf(id)});
    }
  }
  // A handle from before the step: its metadata is part of the step.
  meta_->AppendMeta(id, &current_.bytes);
}

void StepSignatureBuilder::Fresh(uint64_t id) {
  if (full_) return;
  const uint32_t k = static_cast<uint32_t>(fresh_.size());
  fresh_.emplace(id, k);
  current_.bytes.push_back(kFreshTag);
  Int(k);
}

void StepSignatureBuilder::Opaque(char kind) {
  Begin(kind);
  current_.capturable = false;
}

void StepSignatureBuilder::AddCall(uint32_t op_id,
                                   absl::Span<const uint64_t> inputs,
                                   const AttrMap* attr_map,
                                   absl::Span<const uint64_t> outputs) {
  Begin('C');
  if (full_) return;
  Int(op_id);
  Int(inputs.size());
  for (uint64_t id : inputs) Role(id);
  // Attributes in key order: a protobuf map's order is not defined.
  std::vector<const AttrMap::value_type*> attrs;
  if (attr_map != nullptr) {
    attrs.reserve(attr_map->size());
    for (const auto& kv : *attr_map) attrs.push_back(&kv);
  }
  std::sort(attrs.begin(), attrs.end(),
            [](const auto* a, const auto* b) { return a->first < b->first; });
  Int(attrs.size());
  for (const auto* kv : attrs) {
    Text(kv->first);
    Text(kv->second.SerializeAsString());  // no maps inside: deterministic
  }
  Int(outputs.size());
  for (uint64_t id : outputs) Fresh(id);
}

void StepSignatureBuilder::AddRelease(absl::Span<const uint64_t> handles) {
  Begin('R');
  if (full_) return;
  Int(handles.size());
  for (uint64_t id : handles) {
    // Roles before forgetting: a released fresh handle stays named by its k.
    Role(id);
  }
}

void StepSignatureBuilder::Add(const v1::Command& cmd) {
  switch (cmd.kind_case()) {
    case v1::Command::kCall: {
      const v1::Call& call = cmd.call();
      return AddCall(
          call.op_id(),
          absl::MakeConstSpan(call.inputs().data(), call.inputs_size()),
          &call.attrs(),
          absl::MakeConstSpan(call.outputs().data(), call.outputs_size()));
    }
    case v1::Command::kPacked: {
      packed::Reader reader(cmd.packed().entries());
      packed::Entry entry;
      while (!reader.done()) {
        if (!reader.Next(&entry).ok()) return Opaque('!');  // a bad frame
        if (entry.kind == packed::Kind::kRelease) {
          AddRelease(entry.handles);
        } else {
          AddCall(entry.op_id, entry.inputs, nullptr, entry.outputs);
        }
      }
      return;
    }
    case v1::Command::kPut: {
      const v1::Put& put = cmd.put();
      Begin('P');
      if (full_) return;
      // Chunks of one upload name the same handle: fresh once.
      if (put.offset() == 0) {
        Fresh(put.handle());
      } else {
        Role(put.handle());
      }
      Int(put.dtype());
      Int(put.shape_size());
      for (int64_t d : put.shape()) Int(static_cast<uint64_t>(d));
      Text(put.device());
      Int(put.offset());
      Int(put.requires_grad());
      Int(put.last());
      return;
    }
    case v1::Command::kGet:
      Begin('G');
      Role(cmd.get().handle());
      Int(cmd.get().byte_offset());
      return;
    case v1::Command::kRelease:
      if (cmd.release().events_size() > 0 ||
          cmd.release().shared_buffers_size() > 0) {
        Opaque('r');
      }
      return AddRelease(absl::MakeConstSpan(cmd.release().handles().data(),
                                            cmd.release().handles_size()));
    case v1::Command::kSync:
      Begin('S');
      Int(cmd.sync().host_only());
      return;
    case v1::Command::kOptions:
      Begin('O');
      // Seeds, devices, autocast: all change what later ops compute.
      Text(cmd.options().SerializeAsString());
      return;
    case v1::Command::kBackward: {
      const v1::Backward& b = cmd.backward();
      Begin('B');
      for (const auto* list : {&b.roots(), &b.grads(), &b.inputs()}) {
        Int(list->size());
        for (uint64_t id : *list) Role(id);
      }
      Int(b.outputs_size());
      for (uint64_t id : b.outputs()) Fresh(id);
      Int(b.retain_graph() | (b.create_graph() << 1) | (b.allow_unused() << 2));
      return;
    }
    case v1::Command::kSetRequiresGrad:
      Begin('Q');
      Role(cmd.set_requires_grad().handle());
      Int(cmd.set_requires_grad().requires_grad());
      return;
    case v1::Command::kGetGrad:
      Begin('g');
      Role(cmd.get_grad().handle());
      Fresh(cmd.get_grad().output());
      return;
    case v1::Command::kSetGrad:
      Begin('s');
      Role(cmd.set_grad().handle());
      Role(cmd.set_grad().grad());
      return;
    case v1::Command::kNoteFallbacks:
      // Counters only (Note [Client fallbacks]): nothing a step computes.
      return;
    case v1::Command::kGetProfile:
    case v1::Command::kGetMemoryStats:
    case v1::Command::kRecordEvent:
    case v1::Command::kWaitEvent:
    case v1::Command::kAllocateShared:
    case v1::Command::KIND_NOT_SET:
      // Streams, events and shared buffers order or move bytes outside the
      // session's one stream: never part of a captured step.
      return Opaque(static_cast<char>('0' + cmd.kind_case()));
  }
}

StepSignature StepSignatureBuilder::Finish() {
  StepSignature done = std::move(current_);
  current_ = StepSignature();
  full_ = false;
  previous_ = std::move(fresh_);
  fresh_.clear();
  fixed_seen_.clear();
  return done;
}

}  // namespace tensord
