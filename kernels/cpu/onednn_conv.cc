#include "kernels/cpu/onednn_conv.h"

#include <omp.h>

#include <algorithm>
#include <array>
#include <dnnl.hpp>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "kernels/cpu/parallel.h"

namespace tensord {
namespace cpu {
namespace {

using dnnl::memory;
using Tag = memory::format_tag;
constexpr memory::data_type kF32 = memory::data_type::f32;

// Below this many multiply-adds a conv runs as one block on the calling
// thread (the pool's hand-off would cost more than it saves).
constexpr int64_t kSplitWork = int64_t{1} << 20;
// Primitives kept per thread; past it the cache starts over (a client that
// sends ever new shapes must not grow the daemon without bound).
constexpr size_t kMaxCached = 256;

enum class Kind { kForward, kBackwardData, kBackwardWeights };

// Note [oneDNN conv geometry]: conv2d's and conv3d's geometries as one,
// rank 2 or 3 spatial axes (ConvGeometry, ConvGeometry3d): every primitive,
// key and block split below reads only this.
struct Geo {
  int rank;
  int64_t n, c, o, groups;
  int64_t in[3], k[3], s[3], p[3], d[3], out[3];
};

Geo From2d(const ConvGeometry& g) {
  const Window2d& w = g.win;
  return {2,
          g.n,
          g.c,
          g.o,
          g.groups,
          {g.h, g.w, 1},
          {w.kh, w.kw, 1},
          {w.sh, w.sw, 1},
          {w.ph, w.pw, 0},
          {w.dh, w.dw, 1},
          {w.oh, w.ow, 1}};
}

Geo From3d(const ConvGeometry3d& g) {
  Geo r{3, g.n, g.c, g.o, g.groups, {}, {}, {}, {}, {}, {}};
  for (int a = 0; a < 3; ++a) {
    r.in[a] = g.in[a], r.k[a] = g.k[a], r.s[a] = g.stride[a];
    r.p[a] = g.pad[a], r.d[a] = g.dil[a], r.out[a] = g.out[a];
  }
  return r;
}

int64_t Prod(const Geo& g, const int64_t* v) {
  int64_t r = 1;
  for (int a = 0; a < g.rank; ++a) r *= v[a];
  return r;
}

using Key = std::array<int64_t, 24>;

Key KeyOf(Kind kind, const Geo& g, int64_t n) {
  Key key{static_cast<int64_t>(kind), g.rank, n, g.c, g.o, g.groups};
  for (int a = 0; a < 3; ++a) {
    key[6 + a] = g.in[a], key[9 + a] = g.k[a], key[12 + a] = g.s[a];
    key[15 + a] = g.p[a], key[18 + a] = g.d[a];
  }
  return key;  // out[] follows from the rest
}

// A plain tensor handed to a primitive in its own layout, through `buffer`
// (a reorder) when the primitive picked another.
struct Arg {
  memory::desc plain, want;
  memory buffer;           // in `want`; empty when want == plain
  dnnl::reorder to, from;  // plain -> buffer, buffer -> plain
};

// One primitive for one block geometry, with its arguments' layouts: [0] and
// [1] the inputs, [2] the output (forward: src, weights -> dst; backward
// data: diff_dst, weights -> diff_src; backward weights: diff_dst, src ->
// diff_weights).
struct Entry {
  dnnl::primitive prim;
  int args[3];
  Arg arg[3];
};

struct ThreadState {
  dnnl::engine engine{dnnl::engine::kind::cpu, 0};
  dnnl::stream stream{engine};
  absl::flat_hash_map<Key, std::unique_ptr<Entry>> cache;
};

ThreadState& State() {
  thread_local ThreadState state;
  return state;
}

void SetArg(ThreadState& st, Arg& a, const memory::desc& plain,
            const memory::desc& want, bool is_output) {
  a.plain = plain;
  a.want = want;
  if (want == plain) return;
  a.buffer = memory(want, st.engine);
  if (is_output) {
    a.from = dnnl::reorder(
        dnnl::reorder::primitive_desc(st.engine, want, st.engine, plain));
  } else {
    a.to = dnnl::reorder(
        dnnl::reorder::primitive_desc(st.engine, plain, st.engine, want));
  }
}

// The spatial entries of `v` after `head`.
memory::dims Dims(const Geo& g, std::initializer_list<int64_t> head,
                  const int64_t* v, int64_t minus = 0) {
  memory::dims r(head.begin(), head.end());
  for (int a = 0; a < g.rank; ++a) r.push_back(v[a] - minus);
  return r;
}

std::unique_ptr<Entry> Build(ThreadState& st, Kind kind, const Geo& g,
                             int64_t n) {
  const bool three = g.rank == 3;
  const memory::dims src = Dims(g, {n, g.c}, g.in),
                     dst = Dims(g, {n, g.o}, g.out);
  const memory::dims wei =
      g.groups == 1 ? Dims(g, {g.o, g.c}, g.k)
                    : Dims(g, {g.groups, g.o / g.groups, g.c / g.groups}, g.k);
  const Tag wtag = g.groups == 1 ? (three ? Tag::oidhw : Tag::oihw)
                                 : (three ? Tag::goidhw : Tag::goihw);
  const Tag act = three ? Tag::ncdhw : Tag::nchw;
  const memory::desc src_p(src, kF32, act), dst_p(dst, kF32, act),
      wei_p(wei, kF32, wtag);
  const memory::desc src_a(src, kF32, Tag::any), dst_a(dst, kF32, Tag::any),
      wei_a(wei, kF32, Tag::any);
  const memory::dims stride = Dims(g, {}, g.s), dil = Dims(g, {}, g.d, 1),
                     pad = Dims(g, {}, g.p);
  const auto algo = dnnl::algorithm::convolution_direct;
  // The forward's descriptor hints the backward ones.
  const dnnl::convolution_forward::primitive_desc fwd(
      {dnnl::prop_kind::forward_training, algo, src_a, wei_a, dst_a, stride,
       dil, pad, pad},
      st.engine);
  auto e = std::make_unique<Entry>();
  if (kind == Kind::kForward) {
    e->prim = dnnl::convolution_forward(fwd);
    e->args[0] = DNNL_ARG_SRC, e->args[1] = DNNL_ARG_WEIGHTS;
    e->args[2] = DNNL_ARG_DST;
    SetArg(st, e->arg[0], src_p, fwd.src_desc(), false);
    SetArg(st, e->arg[1], wei_p, fwd.weights_desc(), false);
    SetArg(st, e->arg[2], dst_p, fwd.dst_desc(), true);
  } else if (kind == Kind::kBackwardData) {
    const dnnl::convolution_backward_data::primitive_desc pd(
        {algo, src_a, wei_a, dst_a, stride, dil, pad, pad}, st.engine, fwd);
    e->prim = dnnl::convolution_backward_data(pd);
    e->args[0] = DNNL_ARG_DIFF_DST, e->args[1] = DNNL_ARG_WEIGHTS;
    e->args[2] = DNNL_ARG_DIFF_SRC;
    SetArg(st, e->arg[0], dst_p, pd.diff_dst_desc(), false);
    SetArg(st, e->arg[1], wei_p, pd.weights_desc(), false);
    SetArg(st, e->arg[2], src_p, pd.diff_src_desc(), true);
  } else {
    const dnnl::convolution_backward_weights::primitive_desc pd(
        {algo, src_a, wei_a, dst_a, stride, dil, pad, pad}, st.engine, fwd);
    e->prim = dnnl::convolution_backward_weights(pd);
    e->args[0] = DNNL_ARG_DIFF_DST, e->args[1] = DNNL_ARG_SRC;
    e->args[2] = DNNL_ARG_DIFF_WEIGHTS;
    SetArg(st, e->arg[0], dst_p, pd.diff_dst_desc(), false);
    SetArg(st, e->arg[1], src_p, pd.src_desc(), false);
    SetArg(st, e->arg[2], wei_p, pd.diff_weights_desc(), true);
  }
  return e;
}

// Runs `kind` for a block of `n` images: ptrs[0], ptrs[1] in, ptrs[2] out,
// all plain. On the calling thread, with one OpenMP thread (Note [oneDNN
// threads]).
void RunBlock(Kind kind, const Geo& g, int64_t n, const float* const in0,
              const float* const in1, float* out) {
  ThreadState& st = State();
  omp_set_num_threads(1);
  const Key key = KeyOf(kind, g, n);
  auto it = st.cache.find(key);
  if (it == st.cache.end()) {
    if (st.cache.size() >= kMaxCached) st.cache.clear();
    it = st.cache.emplace(key, Build(st, kind, g, n)).first;
  }
  Entry& e = *it->second;
  void* ptrs[3] = {const_cast<float*>(in0), const_cast<float*>(in1), out};
  std::unordered_map<int, memory> args;
  for (int i = 0; i < 2; ++i) {
    memory plain(e.arg[i].plain, st.engine, ptrs[i]);
    if (e.arg[i].buffer) {
      e.arg[i].to.execute(st.stream, plain, e.arg[i].buffer);
      args.emplace(e.args[i], e.arg[i].buffer);
    } else {
      args.emplace(e.args[i], plain);
    }
  }
  memory plain_out(e.arg[2].plain, st.engine, ptrs[2]);
  args.emplace(e.args[2], e.arg[2].buffer ? e.arg[2].buffer : plain_out);
  e.prim.execute(st.stream, args);
  if (e.arg[2].buffer)
    e.arg[2].from.execute(st.stream, e.arg[2].buffer, plain_out);
  st.stream.wait();
}

int64_t WeightSize(const Geo& g) {
  return g.o * (g.c / g.groups) * Prod(g, g.k);
}

int64_t Work(const Geo& g) { return g.n * Prod(g, g.out) * WeightSize(g); }

// Blocks of images: one per pool thread, or one when the conv is small.
int64_t Blocks(const Geo& g) {
  if (Work(g) < kSplitWork) return 1;
  return std::min<int64_t>(g.n, NumThreads());
}

int64_t BlockBegin(const Geo& g, int64_t blocks, int64_t b) {
  return g.n * b / blocks;
}

// fn(block, first image, images) for every block, blocks split over the pool.
template <typename Fn>
absl::Status ForBlocks(const Geo& g, const char* what, Fn fn) {
  const int64_t blocks = Blocks(g);
  std::vector<std::string> errors(blocks);
  ParallelFor(blocks, kParallelGrain, [&](int64_t first, int64_t last) {
    for (int64_t b = first; b < last; ++b) {
      const int64_t begin = BlockBegin(g, blocks, b),
                    end = BlockBegin(g, blocks, b + 1);
      try {
        fn(b, begin, end - begin);
      } catch (const dnnl::error& e) {
        errors[b] = e.what();
      }
    }
  });
  for (const std::string& e : errors) {
    if (!e.empty()) {
      return absl::InternalError(absl::StrCat(what, ": oneDNN: ", e));
    }
  }
  return absl::OkStatus();
}

absl::Status Forward(const Geo& g, const char* what, const float* x,
                     const float* w, float* y) {
  const int64_t in_image = g.c * Prod(g, g.in),
                out_image = g.o * Prod(g, g.out);
  return ForBlocks(g, what, [&](int64_t, int64_t first, int64_t n) {
    RunBlock(Kind::kForward, g, n, x + first * in_image, w,
             y + first * out_image);
  });
}

absl::Status BackwardInput(const Geo& g, const char* what, const float* dy,
                           const float* w, float* dx) {
  const int64_t in_image = g.c * Prod(g, g.in),
                out_image = g.o * Prod(g, g.out);
  return ForBlocks(g, what, [&](int64_t, int64_t first, int64_t n) {
    RunBlock(Kind::kBackwardData, g, n, dy + first * out_image, w,
             dx + first * in_image);
  });
}

absl::Status BackwardWeight(const Geo& g, const char* what, const float* dy,
                            const float* x, const StridedView& workspace,
                            float* dw) {
  const int64_t size = WeightSize(g);
  const int64_t blocks = Blocks(g);
  if (workspace.numel() < (blocks - 1) * size) {
    return absl::InternalError(
        absl::StrCat(what, ": workspace smaller than the partial sums"));
  }
  float* partial = workspace.ptr<float>();
  const int64_t in_image = g.c * Prod(g, g.in),
                out_image = g.o * Prod(g, g.out);
  absl::Status s = ForBlocks(g, what, [&](int64_t b, int64_t first, int64_t n) {
    RunBlock(Kind::kBackwardWeights, g, n, dy + first * out_image,
             x + first * in_image, b == 0 ? dw : partial + (b - 1) * size);
  });
  if (!s.ok()) return s;
  for (int64_t b = 1; b < blocks; ++b) {  // in block order: no timing in it
    const float* p = partial + (b - 1) * size;
    for (int64_t i = 0; i < size; ++i) dw[i] += p[i];
  }
  return absl::OkStatus();
}

bool Applies(DType dtype, const Geo& g) {
  return dtype == DType::kFloat32 && g.n > 0 && g.c > 0 && g.o > 0 &&
         Prod(g, g.out) > 0;
}

int64_t GradWorkspace(const Geo& g) {
  return std::max<int64_t>(1, (Blocks(g) - 1) * WeightSize(g));
}

}  // namespace

bool OnednnConvApplies(DType dtype, const ConvGeometry& g) {
  return Applies(dtype, From2d(g));
}

bool OnednnConvApplies(DType dtype, const ConvGeometry3d& g) {
  return Applies(dtype, From3d(g));
}

int64_t OnednnConvGradWorkspace(const ConvGeometry& g) {
  return GradWorkspace(From2d(g));
}

int64_t OnednnConvGradWorkspace(const ConvGeometry3d& g) {
  return GradWorkspace(From3d(g));
}

absl::Status OnednnConv2d(const StridedView& input, const StridedView& weight,
                          const ConvGeometry& g, const StridedView& out) {
  return Forward(From2d(g), "conv2d", input.ptr<const float>(),
                 weight.ptr<const float>(), out.ptr<float>());
}

absl::Status OnednnConv2dBackwardInput(const StridedView& grad,
                                       const StridedView& weight,
                                       const ConvGeometry& g,
                                       const StridedView& grad_input) {
  return BackwardInput(From2d(g), "conv2d_backward_input",
                       grad.ptr<const float>(), weight.ptr<const float>(),
                       grad_input.ptr<float>());
}

absl::Status OnednnConv2dBackwardWeight(const StridedView& grad,
                                        const StridedView& input,
                                        const ConvGeometry& g,
                                        const StridedView& workspace,
                                        const StridedView& grad_weight) {
  return BackwardWeight(From2d(g), "conv2d_backward_weight",
                        grad.ptr<const float>(), input.ptr<const float>(),
                        workspace, grad_weight.ptr<float>());
}

absl::Status OnednnConv3d(const StridedView& input, const StridedView& weight,
                          const ConvGeometry3d& g, const StridedView& out) {
  return Forward(From3d(g), "conv3d", input.ptr<const float>(),
                 weight.ptr<const float>(), out.ptr<float>());
}

absl::Status OnednnConv3dBackwardInput(const StridedView& grad,
                                       const StridedView& weight,
                                       const ConvGeometry3d& g,
                                       const StridedView& grad_input) {
  return BackwardInput(From3d(g), "conv3d_backward_input",
                       grad.ptr<const float>(), weight.ptr<const float>(),
                       grad_input.ptr<float>());
}

absl::Status OnednnConv3dBackwardWeight(const StridedView& grad,
                                        const StridedView& input,
                                        const ConvGeometry3d& g,
                                        const StridedView& workspace,
                                        const StridedView& grad_weight) {
  return BackwardWeight(From3d(g), "conv3d_backward_weight",
                        grad.ptr<const float>(), input.ptr<const float>(),
                        workspace, grad_weight.ptr<float>());
}

}  // namespace cpu
}  // namespace tensord
