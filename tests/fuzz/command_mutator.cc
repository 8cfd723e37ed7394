#include "tests/fuzz/command_mutator.h"

#include <algorithm>
#include <string>

#include "runtime/ops/op_table.h"

namespace tensord {
namespace fuzz {
namespace {

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

}  // namespace

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

void MutateCommand(Rng& rng, const std::vector<uint64_t>& ids,
                   v1::Command* cmd) {
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

}  // namespace fuzz
}  // namespace tensord
