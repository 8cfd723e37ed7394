// Writes the fuzzers' seed corpus: one valid session per op-table example
// (Put the inputs, Call, Get every output, Sync), one through autograd per
// differentiable op (inputs requiring grad, sum, Backward, read the grads),
// and a few protocol sessions (chunked Put, release, options, resume).
//
//   bazel run //tests/fuzz:make_seeds -- \
//       $PWD/tests/fuzz/corpus/sessions $PWD/tests/fuzz/regressions
#include <cstdio>
#include <fstream>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "proto/packed_commands.h"
#include "runtime/device.h"
#include "runtime/ops/dispatch.h"
#include "runtime/ops/op_table.h"
#include "tests/fuzz/session_driver.h"

namespace tensord {
namespace fuzz {
namespace {

v1::AttrValue ToProto(const AttrValue& value) {
  v1::AttrValue out;
  if (auto* i = std::get_if<int64_t>(&value)) out.set_i(*i);
  if (auto* f = std::get_if<double>(&value)) out.set_f(*f);
  if (auto* b = std::get_if<bool>(&value)) out.set_b(*b);
  if (auto* s = std::get_if<std::string>(&value)) out.set_s(*s);
  if (auto* is = std::get_if<std::vector<int64_t>>(&value)) {
    auto* list = out.mutable_ints();
    for (int64_t v : *is) list->add_values(v);
  }
  if (auto* fs = std::get_if<std::vector<double>>(&value)) {
    auto* list = out.mutable_floats();
    for (double v : *fs) list->add_values(v);
  }
  if (auto* d = std::get_if<DType>(&value)) {
    out.set_dtype(static_cast<v1::DType>(*d));
  }
  return out;
}

uint32_t OpIdOf(const std::string& name) {
  const auto& table = OpTable();
  for (uint32_t i = 0; i < table.size(); ++i) {
    if (table[i].name == name) return i;
  }
  return static_cast<uint32_t>(table.size());  // unknown: a failing call
}

// Builds one session's frames; handles and seqs are assigned in order.
class SessionWriter {
 public:
  SessionWriter() {
    frames_.emplace_back().mutable_hello()->set_protocol_version(
        v1::PROTOCOL_VERSION_CURRENT);
    frames_.back().mutable_hello()->set_client_name("seed");
    NewBatch();
  }
  void NewBatch() { frames_.emplace_back().mutable_batch(); }
  v1::Command* Add() {
    v1::Command* c = frames_.back().mutable_batch()->add_commands();
    c->set_seq(++seq_);
    return c;
  }
  // Uploads small values (floats in (0, 1), integers and bools zero: valid
  // indices and targets) in chunks of `chunk` bytes.
  uint64_t Put(DType dtype, const Shape& shape, bool requires_grad,
               size_t chunk = 1 << 20) {
    const uint64_t id = ++handle_;
    const size_t n = NumElements(shape);
    std::string bytes(n * ItemSize(dtype), '\0');
    std::uniform_real_distribution<float> uniform(0.1f, 0.9f);
    for (size_t i = 0; i < n; ++i) {
      if (dtype == DType::kFloat32) {
        const float v = uniform(rng_);
        std::memcpy(&bytes[i * 4], &v, 4);
      } else if (dtype == DType::kFloat64) {
        const double v = uniform(rng_);
        std::memcpy(&bytes[i * 8], &v, 8);
      }
    }
    size_t offset = 0;
    do {
      v1::Put* put = Add()->mutable_put();
      put->set_handle(id);
      if (offset == 0) {
        put->set_dtype(static_cast<v1::DType>(dtype));
        for (int64_t s : shape) put->add_shape(s);
        put->set_requires_grad(requires_grad);
      }
      const size_t len = std::min(chunk, bytes.size() - offset);
      put->set_offset(offset);
      put->mutable_payload()->set_data(bytes.substr(offset, len));
      offset += len;
      put->set_last(offset == bytes.size());
    } while (offset < bytes.size());
    return id;
  }
  std::vector<uint64_t> Call(const std::string& op_name,
                             const std::vector<uint64_t>& inputs,
                             const std::map<std::string, AttrValue>& attrs,
                             int outputs) {
    v1::Call* call = Add()->mutable_call();
    const auto& table = OpTable();
    for (uint32_t i = 0; i < table.size(); ++i) {
      if (table[i].name == op_name) call->set_op_id(i);
    }
    for (uint64_t id : inputs) call->add_inputs(id);
    for (const auto& [name, value] : attrs) {
      (*call->mutable_attrs())[name] = ToProto(value);
    }
    std::vector<uint64_t> out;
    for (int i = 0; i < outputs; ++i) {
      out.push_back(++handle_);
      call->add_outputs(handle_);
    }
    call->set_site("seed.py:1");
    return out;
  }
  void Get(uint64_t id) {
    Add()->mutable_get()->set_handle(id);
    frames_.back()
        .mutable_batch()
        ->mutable_commands()
        ->rbegin()
        ->mutable_get()
        ->set_request_id(++request_);
  }
  void Sync() { Add()->mutable_sync()->set_request_id(++request_); }
  uint64_t NextHandle() { return ++handle_; }
  // A packed run of `count` commands (Note [Packed commands]) at the next
  // seqs; the caller appends its entries.
  v1::Packed* AddRun(uint32_t count) {
    v1::Command* c = Add();
    seq_ += count - 1;
    c->mutable_packed()->set_count(count);
    return c->mutable_packed();
  }
  std::vector<v1::ClientFrame>& frames() { return frames_; }

 private:
  std::vector<v1::ClientFrame> frames_;
  uint64_t seq_ = 0, handle_ = 0, request_ = 0;
  std::mt19937 rng_{7};
};

// How many outputs `op` gives on `example` (views like split decide at run
// time); 1 if it fails there.
int CountOutputs(const OpDef& op, const OpExample& ex,
                 DeviceRegistry* devices) {
  if (op.num_outputs >= 0) return op.num_outputs;
  OpContext ctx;
  ctx.device = devices->cpu();
  ctx.devices = devices;
  std::vector<Tensor> inputs;
  for (size_t i = 0; i < ex.shapes.size(); ++i) {
    const DType dtype = i < ex.dtypes.size() ? ex.dtypes[i] : DType::kFloat32;
    auto t = Tensor::Empty(devices->cpu(), dtype, ex.shapes[i], ctx.alloc);
    if (!t.ok()) return 1;
    std::memset(t->data(), 0, t->nbytes());
    inputs.push_back(*t);
  }
  auto attrs = Attrs::Build(op.name, op.attrs, ex.attrs);
  if (!attrs.ok()) return 1;
  auto out = RunOp(op, inputs, *attrs, ctx);
  return out.ok() ? static_cast<int>(out->size()) : 1;
}

void Write(const std::string& dir, const std::string& name,
           const std::vector<v1::ClientFrame>& frames) {
  std::ofstream out(dir + "/" + name, std::ios::binary);
  out << SerializeFrames(frames);
}

void WriteOpSeeds(const std::string& dir, DeviceRegistry* devices) {
  for (const OpDef& op : OpTable()) {
    std::vector<OpExample> examples = op.examples;
    if (examples.empty()) {
      OpExample ex;
      for (int i = 0; i < op.min_inputs; ++i) ex.shapes.push_back({2, 3});
      examples.push_back(ex);
    }
    const OpExample& ex = examples[0];
    const int outputs = CountOutputs(op, ex, devices);
    for (bool grad : {false, true}) {
      if (grad && !op.differentiable) continue;
      SessionWriter w;
      std::vector<uint64_t> inputs;
      for (size_t i = 0; i < ex.shapes.size(); ++i) {
        const DType dtype =
            i < ex.dtypes.size() ? ex.dtypes[i] : DType::kFloat32;
        inputs.push_back(w.Put(dtype, ex.shapes[i],
                               grad && IsFloating(dtype) && !op.inplace));
      }
      std::vector<uint64_t> out = w.Call(op.name, inputs, ex.attrs, outputs);
      if (grad) {
        // One root: the sum of the first output.
        const uint64_t root = w.Call("sum", {out[0]}, {}, 1)[0];
        w.Add()->mutable_backward()->add_roots(root);
        for (uint64_t id : inputs) {
          v1::GetGrad* g = w.Add()->mutable_get_grad();
          g->set_handle(id);
          g->set_output(w.NextHandle());
          w.Get(g->output());
        }
      } else {
        for (uint64_t id : out) w.Get(id);
      }
      w.Sync();
      Write(dir, op.name + (grad ? ".grad" : ""), w.frames());
    }
  }
}

void WriteProtocolSeeds(const std::string& dir) {
  {  // a chunked upload, a view, a release, options
    SessionWriter w;
    const uint64_t x = w.Put(DType::kFloat32, {4, 3}, false, /*chunk=*/16);
    w.Add()->mutable_options()->set_seed(42);
    w.Add()->mutable_options()->set_grad_enabled(false);
    const uint64_t y =
        w.Call("randn", {}, {{"shape", std::vector<int64_t>{4, 3}}}, 1)[0];
    const uint64_t z = w.Call("add", {x, y}, {}, 1)[0];
    w.Add()->mutable_release()->add_handles(x);
    w.NewBatch();
    w.Get(z);
    w.Sync();
    Write(dir, "protocol.chunks", w.frames());
  }
  {  // packed Calls and a Release, answered with packed metas
    SessionWriter w;
    w.frames()[0].mutable_hello()->set_packed_acks(true);
    const uint64_t x = w.Put(DType::kFloat32, {2, 3}, false);
    const uint64_t y = w.Put(DType::kFloat32, {2, 3}, false);
    v1::Packed* run = w.AddRun(4);
    std::string* entries = run->mutable_entries();
    const uint64_t a = w.NextHandle(), b = w.NextHandle(), c = w.NextHandle();
    packed::AppendCall(OpIdOf("add"), 0, std::vector<uint64_t>{x, y},
                       std::vector<uint64_t>{a}, entries);
    packed::AppendCall(OpIdOf("mul"), 0, std::vector<uint64_t>{a, y},
                       std::vector<uint64_t>{b}, entries);
    packed::AppendRelease(std::vector<uint64_t>{a}, entries);
    packed::AppendCall(OpIdOf("neg"), 0, std::vector<uint64_t>{b},
                       std::vector<uint64_t>{c}, entries);
    w.Get(c);
    w.Sync();
    Write(dir, "protocol.packed", w.frames());
  }
  {  // a resume between batches
    SessionWriter w;
    const uint64_t x = w.Put(DType::kFloat64, {3}, true);
    const uint64_t s = w.Call("sum", {x}, {}, 1)[0];
    w.frames().emplace_back().mutable_hello()->set_resume_received_seq(1);
    w.NewBatch();
    w.Add()->mutable_backward()->add_roots(s);
    v1::GetGrad* g = w.Add()->mutable_get_grad();
    g->set_handle(x);
    g->set_output(w.NextHandle());
    w.Get(g->output());
    w.Sync();
    Write(dir, "protocol.resume", w.frames());
  }
}

// Sessions that crashed the daemon once (tests/fuzz/regressions).
void WriteRegressions(const std::string& dir) {
  const int64_t kMax = std::numeric_limits<int64_t>::max();
  {  // chunk: ceil(size / chunks) overflowed; then 2^63 empty pieces
    SessionWriter w;
    const uint64_t x = w.Put(DType::kFloat32, {2, 3}, false);
    w.Call("chunk", {x}, {{"chunks", kMax}, {"dim", int64_t{0}}}, 1);
    const uint64_t e = w.Put(DType::kFloat32, {0, 3}, false);
    w.Call("chunk", {e}, {{"chunks", int64_t{1} << 40}, {"dim", int64_t{0}}},
           1);
    w.Sync();
    Write(dir, "chunk_huge_chunks", w.frames());
  }
  {  // unbind/split of a zero-size tensor with a huge dimension
    SessionWriter w;
    const uint64_t e = w.Put(DType::kFloat32, {int64_t{1} << 40, 0}, false);
    w.Call("unbind", {e}, {{"dim", int64_t{0}}}, 1);
    w.Call("split", {e},
           {{"split_size_or_sections", std::vector<int64_t>{1}},
            {"dim", int64_t{0}}},
           1);
    w.Sync();
    Write(dir, "unbind_split_huge_dim", w.frames());
  }
  {  // cross_entropy on 0-dim inputs read shape()[1] of an empty shape
    SessionWriter w;
    const uint64_t x = w.Put(DType::kFloat32, {}, false);
    const uint64_t t = w.Put(DType::kFloat32, {}, false);
    w.Call("cross_entropy", {x, t}, {}, 1);
    w.Call("cross_entropy", {x, t, x}, {}, 1);
    w.Sync();
    Write(dir, "cross_entropy_0d", w.frames());
  }
  {  // x.grad = x, and y.grad = x after x.grad = y: reference cycles that
     // kept the session's memory after it ended
    SessionWriter w;
    const uint64_t x = w.Put(DType::kFloat32, {2}, true);
    const uint64_t y = w.Put(DType::kFloat32, {2}, true);
    v1::SetGrad* g = w.Add()->mutable_set_grad();
    g->set_handle(x);
    g->set_grad(x);
    g = w.Add()->mutable_set_grad();
    g->set_handle(x);
    g->set_grad(y);
    g = w.Add()->mutable_set_grad();
    g->set_handle(y);
    g->set_grad(x);
    w.Sync();
    Write(dir, "set_grad_cycle", w.frames());
  }
  {  // prod's backward read an ints attribute as an int
    SessionWriter w;
    const uint64_t x = w.Put(DType::kFloat32, {2, 3}, true);
    const uint64_t p =
        w.Call("prod", {x}, {{"dim", std::vector<int64_t>{1}}}, 1)[0];
    const uint64_t s = w.Call("sum", {p}, {}, 1)[0];
    w.Add()->mutable_backward()->add_roots(s);
    w.Sync();
    Write(dir, "prod_backward_dim", w.frames());
  }
}

}  // namespace
}  // namespace fuzz
}  // namespace tensord

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: %s CORPUS_DIR REGRESSIONS_DIR\n", argv[0]);
    return 2;
  }
  auto devices = tensord::DeviceRegistry::Create({"cpu"});
  tensord::fuzz::WriteOpSeeds(argv[1], devices.get());
  tensord::fuzz::WriteProtocolSeeds(argv[1]);
  tensord::fuzz::WriteRegressions(argv[2]);
  return 0;
}
