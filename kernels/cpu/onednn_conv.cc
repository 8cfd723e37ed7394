#include "kernels/cpu/onednn_conv.h"

#include <omp.h>

#include <algorithm>
#include <dnnl.hpp>
#include <memory>
#include <string>
#include <tuple>
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

using Key = std::tuple<int, int64_t, int64_t, int64_t, int64_t, int64_t,
                       int64_t, int64_t, int64_t, int64_t, int64_t, int64_t,
                       int64_t, int64_t, int64_t>;

Key KeyOf(Kind kind, const ConvGeometry& g, int64_t n) {
  const Window2d& w = g.win;
  return {static_cast<int>(kind),
          n,
          g.c,
          g.h,
          g.w,
          g.o,
          g.groups,
          w.kh,
          w.kw,
          w.sh,
          w.sw,
          w.ph,
          w.pw,
          w.dh,
          w.dw};
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

memory::dims Dims(std::initializer_list<int64_t> v) {
  return memory::dims(v.begin(), v.end());
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

std::unique_ptr<Entry> Build(ThreadState& st, Kind kind, const ConvGeometry& g,
                             int64_t n) {
  const Window2d& w = g.win;
  const memory::dims src = Dims({n, g.c, g.h, g.w}),
                     dst = Dims({n, g.o, w.oh, w.ow});
  const memory::dims wei =
      g.groups == 1
          ? Dims({g.o, g.c, w.kh, w.kw})
          : Dims({g.groups, g.o / g.groups, g.c / g.groups, w.kh, w.kw});
  const Tag wtag = g.groups == 1 ? Tag::oihw : Tag::goihw;
  const memory::desc src_p(src, kF32, Tag::nchw), dst_p(dst, kF32, Tag::nchw),
      wei_p(wei, kF32, wtag);
  const memory::desc src_a(src, kF32, Tag::any), dst_a(dst, kF32, Tag::any),
      wei_a(wei, kF32, Tag::any);
  const memory::dims stride = Dims({w.sh, w.sw}),
                     dil = Dims({w.dh - 1, w.dw - 1}), pad = Dims({w.ph, w.pw});
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
void RunBlock(Kind kind, const ConvGeometry& g, int64_t n,
              const float* const in0, const float* const in1, float* out) {
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

int64_t Work(const ConvGeometry& g) {
  return g.n * g.o * g.win.oh * g.win.ow * (g.c / g.groups) * g.win.kh *
         g.win.kw;
}

// Blocks of images: one per pool thread, or one when the conv is small.
int64_t Blocks(const ConvGeometry& g) {
  if (Work(g) < kSplitWork) return 1;
  return std::min<int64_t>(g.n, NumThreads());
}

int64_t BlockBegin(const ConvGeometry& g, int64_t blocks, int64_t b) {
  return g.n * b / blocks;
}

// fn(block, first image, images) for every block, blocks split over the pool.
template <typename Fn>
absl::Status ForBlocks(const ConvGeometry& g, const char* what, Fn fn) {
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

}  // namespace

bool OnednnConvApplies(DType dtype, const ConvGeometry& g) {
  return dtype == DType::kFloat32 && g.n > 0 && g.c > 0 && g.o > 0 &&
         g.win.oh > 0 && g.win.ow > 0;
}

int64_t OnednnConvGradWorkspace(const ConvGeometry& g) {
  const int64_t size = g.o * (g.c / g.groups) * g.win.kh * g.win.kw;
  return std::max<int64_t>(1, (Blocks(g) - 1) * size);
}

absl::Status OnednnConv2d(const StridedView& input, const StridedView& weight,
                          const ConvGeometry& g, const StridedView& out) {
  const float* x = input.ptr<const float>();
  float* y = out.ptr<float>();
  const int64_t in_image = g.c * g.h * g.w,
                out_image = g.o * g.win.oh * g.win.ow;
  return ForBlocks(g, "conv2d", [&](int64_t, int64_t first, int64_t n) {
    RunBlock(Kind::kForward, g, n, x + first * in_image,
             weight.ptr<const float>(), y + first * out_image);
  });
}

absl::Status OnednnConv2dBackwardInput(const StridedView& grad,
                                       const StridedView& weight,
                                       const ConvGeometry& g,
                                       const StridedView& grad_input) {
  const float* dy = grad.ptr<const float>();
  float* dx = grad_input.ptr<float>();
  const int64_t in_image = g.c * g.h * g.w,
                out_image = g.o * g.win.oh * g.win.ow;
  return ForBlocks(g, "conv2d_backward_input",
                   [&](int64_t, int64_t first, int64_t n) {
                     RunBlock(Kind::kBackwardData, g, n, dy + first * out_image,
                              weight.ptr<const float>(), dx + first * in_image);
                   });
}

absl::Status OnednnConv2dBackwardWeight(const StridedView& grad,
                                        const StridedView& input,
                                        const ConvGeometry& g,
                                        const StridedView& workspace,
                                        const StridedView& grad_weight) {
  const int64_t size = g.o * (g.c / g.groups) * g.win.kh * g.win.kw;
  const int64_t blocks = Blocks(g);
  if (workspace.numel() < (blocks - 1) * size) {
    return absl::InternalError(
        "conv2d_backward_weight: workspace smaller than the partial sums");
  }
  const float* dy = grad.ptr<const float>();
  const float* x = input.ptr<const float>();
  float* dw = grad_weight.ptr<float>();
  float* partial = workspace.ptr<float>();
  const int64_t in_image = g.c * g.h * g.w,
                out_image = g.o * g.win.oh * g.win.ow;
  absl::Status s = ForBlocks(
      g, "conv2d_backward_weight", [&](int64_t b, int64_t first, int64_t n) {
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

}  // namespace cpu
}  // namespace tensord
