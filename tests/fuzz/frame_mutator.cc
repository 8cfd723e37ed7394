#include "tests/fuzz/frame_mutator.h"

#include <algorithm>
#include <limits>

#include "runtime/ops/op_table.h"

namespace tensord {
namespace fuzz {
namespace {

using Rng = std::mt19937_64;

uint64_t Below(Rng& rng, uint64_t n) { return n == 0 ? 0 : rng() % n; }
bool Coin(Rng& rng) { return rng() & 1; }

// Sizes and indices near the edges of what the daemon must reject.
int64_t InterestingInt(Rng& rng) {
  static const int64_t kValues[] = {0,
                                    1,
                                    2,
                                    3,
                                    -1,
                                    -2,
                                    7,
                                    64,
                                    1000,
                                    1 << 20,
                                    int64_t{1} << 31,
                                    int64_t{1} << 32,
                                    int64_t{1} << 62,
                                    std::numeric_limits<int64_t>::max(),
                                    std::numeric_limits<int64_t>::min(),
                                    std::numeric_limits<int32_t>::max()};
  if (Below(rng, 4) == 0) return static_cast<int64_t>(rng());
  return kValues[Below(rng, sizeof(kValues) / sizeof(kValues[0]))];
}

double InterestingFloat(Rng& rng) {
  static const double kValues[] = {0.0,
                                   -0.0,
                                   1.0,
                                   -1.0,
                                   0.5,
                                   1e300,
                                   -1e300,
                                   std::numeric_limits<double>::infinity(),
                                   std::numeric_limits<double>::quiet_NaN(),
                                   1e-320,
                                   9.3e18,
                                   -9.3e18};
  return kValues[Below(rng, sizeof(kValues) / sizeof(kValues[0]))];
}

// Every handle the sequence mentions, plus ids no one created.
std::vector<uint64_t> KnownHandles(const std::vector<v1::ClientFrame>& frames) {
  std::vector<uint64_t> ids = {0, 1, std::numeric_limits<uint64_t>::max()};
  for (const auto& f : frames) {
    for (const auto& c : f.batch().commands()) {
      if (c.has_put()) ids.push_back(c.put().handle());
      for (uint64_t id : c.call().outputs()) ids.push_back(id);
      for (uint64_t id : c.backward().outputs()) ids.push_back(id);
      if (c.has_get_grad()) ids.push_back(c.get_grad().output());
    }
  }
  return ids;
}

uint64_t PickHandle(Rng& rng, const std::vector<uint64_t>& ids) {
  const uint64_t id = ids[Below(rng, ids.size())];
  switch (Below(rng, 6)) {
    case 0:
      return id + 1;
    case 1:
      return id - 1;
    default:
      return id;
  }
}

uint64_t MaxHandle(const std::vector<uint64_t>& ids) {
  uint64_t m = 0;
  for (uint64_t id : ids) {
    if (id != std::numeric_limits<uint64_t>::max()) m = std::max(m, id);
  }
  return m;
}

void SetAttr(Rng& rng, const OpDef* op, v1::Call* call) {
  auto& attrs = *call->mutable_attrs();
  std::string name = "bogus_attr";
  AttrType type = static_cast<AttrType>(Below(rng, 7));
  if (op != nullptr && !op->attrs.empty() && Below(rng, 8) != 0) {
    const AttrSpec& spec = op->attrs[Below(rng, op->attrs.size())];
    name = spec.name;
    if (Below(rng, 6) != 0) type = spec.type;  // else: the wrong type
  }
  if (Below(rng, 8) == 0) {
    attrs.erase(name);
    return;
  }
  v1::AttrValue& v = attrs[name];
  switch (type) {
    case AttrType::kInt:
      v.set_i(InterestingInt(rng));
      break;
    case AttrType::kFloat:
      v.set_f(InterestingFloat(rng));
      break;
    case AttrType::kBool:
      v.set_b(Coin(rng));
      break;
    case AttrType::kString: {
      static const char* kStrings[] = {"",     "mean", "sum",    "none",
                                       "tanh", "cpu",  "cuda:0", "\xff"};
      v.set_s(kStrings[Below(rng, 8)]);
      break;
    }
    case AttrType::kInts: {
      v.mutable_ints()->clear_values();
      const int n = static_cast<int>(Below(rng, 6));
      for (int i = 0; i < n; ++i) {
        v.mutable_ints()->add_values(Below(rng, 3) == 0 ? InterestingInt(rng)
                                                        : Below(rng, 5));
      }
      break;
    }
    case AttrType::kFloats:
      v.mutable_floats()->clear_values();
      for (int i = 0, n = static_cast<int>(Below(rng, 4)); i < n; ++i) {
        v.mutable_floats()->add_values(InterestingFloat(rng));
      }
      break;
    case AttrType::kDType:
      v.set_dtype(static_cast<v1::DType>(Below(rng, 12)));
      break;
  }
}

void MutateShape(Rng& rng, google::protobuf::RepeatedField<int64_t>* shape) {
  switch (Below(rng, 4)) {
    case 0:
      shape->Add(Below(rng, 3) == 0 ? InterestingInt(rng) : Below(rng, 6));
      break;
    case 1:
      if (!shape->empty()) shape->RemoveLast();
      break;
    default:
      if (shape->empty()) {
        shape->Add(InterestingInt(rng));
      } else {
        shape->Set(Below(rng, shape->size()), InterestingInt(rng));
      }
  }
}

void MutateCall(Rng& rng, const std::vector<uint64_t>& ids, v1::Call* call) {
  const auto& table = OpTable();
  const OpDef* op =
      call->op_id() < table.size() ? &table[call->op_id()] : nullptr;
  switch (Below(rng, 7)) {
    case 0:
      call->set_op_id(Below(rng, 16) == 0 ? static_cast<uint32_t>(rng())
                                          : Below(rng, table.size()));
      break;
    case 1:
      call->add_inputs(PickHandle(rng, ids));
      break;
    case 2:
      if (call->inputs_size() > 0) call->mutable_inputs()->RemoveLast();
      break;
    case 3:
      if (call->inputs_size() > 0) {
        call->set_inputs(Below(rng, call->inputs_size()), PickHandle(rng, ids));
      }
      break;
    case 4:  // outputs: too many, too few, reused or decreasing
      if (Coin(rng) || call->outputs_size() == 0) {
        call->add_outputs(Coin(rng) ? MaxHandle(ids) + 1 + Below(rng, 3)
                                    : PickHandle(rng, ids));
      } else {
        call->mutable_outputs()->RemoveLast();
      }
      break;
    default:
      SetAttr(rng, op, call);
  }
}

// Bytes said to be elsewhere (Note [Payloads]), at ranges that are mostly
// hostile: a region span (the session's region or a shared buffer id), a
// cross-memory-attach span (no client is bound) or bulk bytes (no socket).
void SetSpan(Rng& rng, v1::Payload* payload) {
  auto some = [&rng] {
    return Coin(rng) ? Below(rng, 1 << 16)
                     : static_cast<uint64_t>(InterestingInt(rng));
  };
  switch (Below(rng, 3)) {
    case 0: {
      v1::RegionSpan* span = payload->mutable_region();
      span->set_region(Below(rng, 4) == 0 ? some() : 0);
      span->set_offset(some());
      span->set_size(some());
      break;
    }
    case 1:
      payload->mutable_cma()->set_address(some());
      payload->mutable_cma()->set_size(some());
      break;
    default:
      payload->mutable_bulk()->set_size(some());
      payload->mutable_bulk()->set_lanes(static_cast<uint32_t>(Below(rng, 10)));
  }
}

void MutatePut(Rng& rng, const std::vector<uint64_t>& ids, v1::Put* put) {
  switch (Below(rng, 8)) {
    case 0:
      MutateShape(rng, put->mutable_shape());
      break;
    case 1:
      put->set_dtype(static_cast<v1::DType>(Below(rng, 12)));
      break;
    case 2:
      put->set_offset(Coin(rng) ? put->offset() + Below(rng, 9) - 4
                                : static_cast<uint64_t>(InterestingInt(rng)));
      break;
    case 3: {  // data that lies about its length, or bytes elsewhere
      if (Coin(rng)) {
        SetSpan(rng, put->mutable_payload());
        break;
      }
      std::string* data = put->mutable_payload()->mutable_data();
      if (Coin(rng) && !data->empty()) {
        data->resize(Below(rng, data->size()));
      } else {
        data->append(Below(rng, 64) + 1, static_cast<char>(rng()));
      }
      break;
    }
    case 4:
      put->set_last(!put->last());
      break;
    case 5: {
      static const char* kDevices[] = {"", "cpu", "cuda:0", "cuda", "tpu:7"};
      put->set_device(kDevices[Below(rng, 5)]);
      break;
    }
    case 6:
      put->set_requires_grad(!put->requires_grad());
      break;
    default:
      put->set_handle(PickHandle(rng, ids));
  }
}

void MutateBackward(Rng& rng, const std::vector<uint64_t>& ids,
                    v1::Backward* b) {
  switch (Below(rng, 6)) {
    case 0:
      b->add_roots(PickHandle(rng, ids));
      break;
    case 1:
      b->add_grads(PickHandle(rng, ids));
      break;
    case 2:
      b->add_inputs(PickHandle(rng, ids));
      b->add_outputs(MaxHandle(ids) + 1);
      break;
    case 3:
      b->set_retain_graph(!b->retain_graph());
      break;
    case 4:
      b->set_create_graph(!b->create_graph());
      break;
    default:
      b->set_allow_unused(!b->allow_unused());
  }
}

// A new command of a random kind, built to be mostly valid.
v1::Command NewCommand(Rng& rng, const std::vector<uint64_t>& ids) {
  v1::Command c;
  const uint64_t next = MaxHandle(ids) + 1;
  switch (Below(rng, 10)) {
    case 0: {
      v1::Put* put = c.mutable_put();
      put->set_handle(next);
      put->set_dtype(static_cast<v1::DType>(1 + Below(rng, 9)));
      const int rank = static_cast<int>(Below(rng, 4));
      int64_t numel = 1;
      for (int i = 0; i < rank; ++i) {
        const int64_t s = static_cast<int64_t>(Below(rng, 5));
        put->add_shape(s);
        numel *= s;
      }
      // too long unless 64-bit
      put->mutable_payload()->set_data(std::string(numel * 8, '\x01'));
      put->set_last(true);
      put->set_requires_grad(Below(rng, 4) == 0);
      break;
    }
    case 1:
      c.mutable_get()->set_handle(PickHandle(rng, ids));
      c.mutable_get()->set_request_id(rng());
      if (Below(rng, 3) == 0) {
        c.mutable_get()->set_byte_offset(Below(rng, 64));
        SetSpan(rng, c.mutable_get()->mutable_into());
      }
      break;
    case 2:
      c.mutable_release()->add_handles(PickHandle(rng, ids));
      break;
    case 3:
      c.mutable_sync()->set_request_id(rng());
      break;
    case 4:
      if (Coin(rng)) {
        c.mutable_options()->set_grad_enabled(Coin(rng));
      } else {
        c.mutable_options()->set_seed(rng());
      }
      break;
    case 5:
      c.mutable_backward()->add_roots(PickHandle(rng, ids));
      break;
    case 6:
      c.mutable_set_requires_grad()->set_handle(PickHandle(rng, ids));
      c.mutable_set_requires_grad()->set_requires_grad(Coin(rng));
      break;
    case 7:
      c.mutable_get_grad()->set_handle(PickHandle(rng, ids));
      c.mutable_get_grad()->set_output(next);
      break;
    case 8:
      c.mutable_set_grad()->set_handle(PickHandle(rng, ids));
      c.mutable_set_grad()->set_grad(PickHandle(rng, ids));
      break;
    default: {
      const auto& table = OpTable();
      const uint32_t id = Below(rng, table.size());
      v1::Call* call = c.mutable_call();
      call->set_op_id(id);
      const int arity = std::max(table[id].min_inputs, 0);
      for (int i = 0; i < arity; ++i) call->add_inputs(PickHandle(rng, ids));
      const int outputs = table[id].num_outputs < 0 ? 2 : table[id].num_outputs;
      for (int i = 0; i < outputs; ++i) call->add_outputs(next + i);
      call->set_site("fuzz.py:1");
    }
  }
  return c;
}

// Renumbers seqs 1, 2, ... (most of the time: stale seqs are a mutation).
void Renumber(std::vector<v1::ClientFrame>* frames) {
  uint64_t seq = 0;
  for (auto& f : *frames) {
    for (auto& c : *f.mutable_batch()->mutable_commands()) c.set_seq(++seq);
  }
}

void MutateOnce(std::vector<v1::ClientFrame>* frames, Rng& rng) {
  const std::vector<uint64_t> ids = KnownHandles(*frames);
  // Frames after the Hello that are batches.
  std::vector<v1::Batch*> batches;
  for (size_t i = 1; i < frames->size(); ++i) {
    if ((*frames)[i].has_batch())
      batches.push_back((*frames)[i].mutable_batch());
  }
  if (batches.empty()) {
    frames->emplace_back().mutable_batch();
    batches.push_back(frames->back().mutable_batch());
  }
  v1::Batch* batch = batches[Below(rng, batches.size())];
  auto* commands = batch->mutable_commands();
  const int n = commands->size();
  v1::Command* cmd = n ? commands->Mutable(Below(rng, n)) : nullptr;
  switch (Below(rng, 12)) {
    case 0:
    case 1:
      *commands->Add() = NewCommand(rng, ids);
      if (n > 0) commands->SwapElements(n, Below(rng, n + 1));
      break;
    case 2:
      if (n > 0) commands->DeleteSubrange(Below(rng, n), 1);
      break;
    case 3:
      if (n > 1) commands->SwapElements(Below(rng, n), Below(rng, n));
      break;
    case 4:
      if (cmd) *commands->Add() = *cmd;  // a duplicate (reused ids)
      break;
    case 5: {  // a resume between two batches
      v1::ClientFrame hello;
      hello.mutable_hello()->set_protocol_version(v1::PROTOCOL_VERSION_CURRENT);
      hello.mutable_hello()->set_resume_received_seq(Below(rng, 64));
      frames->insert(frames->begin() + 1 + Below(rng, frames->size()),
                     std::move(hello));
      break;
    }
    case 6:
      if (cmd) cmd->set_seq(Coin(rng) ? 0 : cmd->seq() + Below(rng, 5) - 2);
      return;  // keep the odd seq
    default:
      if (cmd == nullptr) break;
      if (cmd->has_call()) {
        MutateCall(rng, ids, cmd->mutable_call());
      } else if (cmd->has_put()) {
        MutatePut(rng, ids, cmd->mutable_put());
      } else if (cmd->has_backward()) {
        MutateBackward(rng, ids, cmd->mutable_backward());
      } else {
        *cmd = NewCommand(rng, ids);
      }
  }
  Renumber(frames);
}

}  // namespace

void MutateFrames(std::vector<v1::ClientFrame>* frames, Rng* rng) {
  if (frames->empty() || !(*frames)[0].has_hello()) {
    v1::ClientFrame hello;
    hello.mutable_hello()->set_protocol_version(v1::PROTOCOL_VERSION_CURRENT);
    frames->insert(frames->begin(), std::move(hello));
  }
  const int edits = 1 + static_cast<int>(Below(*rng, 4));
  for (int i = 0; i < edits; ++i) MutateOnce(frames, *rng);
}

}  // namespace fuzz
}  // namespace tensord
