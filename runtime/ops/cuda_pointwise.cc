// CUDA wrappers for the elementwise rows: unary, binary, comparisons, where,
// masked_fill, clamp, clone and the fill/arange/linspace/eye creation rows.
// They mirror the CPU wrappers (cast operands to the result dtype, broadcast
// views) and only enqueue kernels on ctx.alloc.stream, the session's stream.
#include "runtime/ops/cuda_kernels.h"

#if TENSORD_WITH_CUDA
#include <algorithm>

#include "absl/strings/str_cat.h"
#include "kernels/cpu/elementwise.h"
#include "kernels/cuda/elementwise.h"
#include "runtime/core/status_macros.h"
#include "runtime/ops/dispatch.h"
#include "runtime/ops/op_helpers.h"
#endif

namespace tensord {

#if TENSORD_WITH_CUDA
namespace {

using Ins = absl::Span<const Tensor>;

template <cuda::UnaryOp kOp>
absl::Status CudaUnary(Ins in, Ins out, const Attrs&, const OpContext& ctx) {
  TD_ASSIGN_OR_RETURN(Tensor x, CastTo(in[0], out[0].dtype(), ctx));
  return cuda::Unary(kOp, x.view(), out[0].view(), ctx.alloc.stream);
}

// gelu's `approximate` picks the kernel (gelu_ops.cc validated it).
absl::Status CudaGelu(Ins in, Ins out, const Attrs& attrs,
                      const OpContext& ctx) {
  return attrs.String("approximate") == "tanh"
             ? CudaUnary<cuda::UnaryOp::kGeluTanh>(in, out, attrs, ctx)
             : CudaUnary<cuda::UnaryOp::kGelu>(in, out, attrs, ctx);
}

// dy * gelu'(x) in one elementwise pass (any strides; the row checked that
// grad and input match in shape and floating dtype).
absl::Status CudaGeluBackward(Ins in, Ins out, const Attrs& attrs,
                              const OpContext& ctx) {
  return cuda::GeluBackward(in[0].view(), in[1].view(),
                            attrs.String("approximate") == "tanh",
                            out[0].view(), ctx.alloc.stream);
}

absl::Status CudaSignbit(Ins in, Ins out, const Attrs&, const OpContext& ctx) {
  return cuda::Signbit(in[0].view(), out[0].view(), ctx.alloc.stream);
}

absl::Status CudaPolygamma(Ins in, Ins out, const Attrs& attrs,
                           const OpContext& ctx) {
  TD_ASSIGN_OR_RETURN(Tensor x, CastTo(in[0], out[0].dtype(), ctx));
  return cuda::Polygamma(static_cast<int>(attrs.Int("n")), x.view(),
                         out[0].view(), ctx.alloc.stream);
}

template <cuda::BinaryOp kOp>
absl::Status CudaBinary(Ins in, Ins out, const Attrs& attrs,
                        const OpContext& ctx) {
  const DType dtype = out[0].dtype();
  TD_ASSIGN_OR_RETURN(Tensor a, CastTo(in[0], dtype, ctx));
  TD_ASSIGN_OR_RETURN(Tensor b, CastTo(in[1], dtype, ctx));
  const double alpha =
      (kOp == cuda::BinaryOp::kAdd || kOp == cuda::BinaryOp::kSub)
          ? attrs.Float("alpha")
      : kOp == cuda::BinaryOp::kThresholdBackward ? attrs.Float("threshold")
                                                  : 1.0;
  const Shape& shape = out[0].shape();
  return cuda::Binary(kOp, a.BroadcastView(shape), b.BroadcastView(shape),
                      alpha, out[0].view(), ctx.alloc.stream);
}

absl::Status CudaDiv(Ins in, Ins out, const Attrs& attrs,
                     const OpContext& ctx) {
  const std::string& mode = attrs.String("rounding_mode");
  if (mode == "trunc") {
    return CudaBinary<cuda::BinaryOp::kTruncDiv>(in, out, attrs, ctx);
  }
  if (mode == "floor") {
    return CudaBinary<cuda::BinaryOp::kFloorDiv>(in, out, attrs, ctx);
  }
  return CudaBinary<cuda::BinaryOp::kDiv>(in, out, attrs, ctx);
}

template <cuda::CompareOp kOp>
absl::Status CudaCompare(Ins in, Ins out, const Attrs&, const OpContext& ctx) {
  const DType common = ResultType(in);
  TD_ASSIGN_OR_RETURN(Tensor a, CastTo(in[0], common, ctx));
  TD_ASSIGN_OR_RETURN(Tensor b, CastTo(in[1], common, ctx));
  const Shape& shape = out[0].shape();
  return cuda::Compare(kOp, a.BroadcastView(shape), b.BroadcastView(shape),
                       out[0].view(), ctx.alloc.stream);
}

absl::Status CudaLogicalNot(Ins in, Ins out, const Attrs&,
                            const OpContext& ctx) {
  return cuda::LogicalNot(in[0].view(), out[0].view(), ctx.alloc.stream);
}

absl::Status CudaWhere(Ins in, Ins out, const Attrs&, const OpContext& ctx) {
  const DType d = out[0].dtype();
  TD_ASSIGN_OR_RETURN(Tensor a, CastTo(in[1], d, ctx));
  TD_ASSIGN_OR_RETURN(Tensor b, CastTo(in[2], d, ctx));
  const Shape& s = out[0].shape();
  return cuda::Where(in[0].BroadcastView(s), a.BroadcastView(s),
                     b.BroadcastView(s), out[0].view(), ctx.alloc.stream);
}

absl::Status CudaMaskedFill(Ins in, Ins out, const Attrs&,
                            const OpContext& ctx) {
  TD_ASSIGN_OR_RETURN(Tensor v, CastTo(in[2], out[0].dtype(), ctx));
  TD_ASSIGN_OR_RETURN(Tensor x, CastTo(in[0], out[0].dtype(), ctx));
  const Shape& s = out[0].shape();
  return cuda::Where(in[1].BroadcastView(s), v.BroadcastView(s), x.view(),
                     out[0].view(), ctx.alloc.stream);
}

absl::Status CudaClamp(Ins in, Ins out, const Attrs& attrs,
                       const OpContext& ctx) {
  TD_ASSIGN_OR_RETURN(Tensor x, CastTo(in[0], out[0].dtype(), ctx));
  const bool lo = attrs.Has("min"), hi = attrs.Has("max");
  return cuda::Clamp(x.view(), lo, lo ? attrs.Float("min") : 0, hi,
                     hi ? attrs.Float("max") : 0, out[0].view(),
                     ctx.alloc.stream);
}

absl::Status CudaClone(Ins in, Ins out, const Attrs&, const OpContext& ctx) {
  return cuda::Copy(in[0].view(), out[0].view(), ctx.alloc.stream);
}

template <int kValue>
absl::Status CudaFillConst(Ins, Ins out, const Attrs&, const OpContext& ctx) {
  return cuda::Fill(out[0].view(), kValue, ctx.alloc.stream);
}

absl::Status CudaEmpty(Ins, Ins, const Attrs&, const OpContext&) {
  return absl::OkStatus();  // the allocator scrubs memory across sessions
}

absl::Status CudaFull(Ins, Ins out, const Attrs& attrs, const OpContext& ctx) {
  return cuda::Fill(out[0].view(), attrs.Float("fill_value"), ctx.alloc.stream);
}

absl::Status CudaArange(Ins, Ins out, const Attrs& attrs,
                        const OpContext& ctx) {
  const DType d = out[0].dtype();
  return cuda::Arange(out[0].view(), IntegralScalar(d, attrs.Float("start")),
                      IntegralScalar(d, attrs.Float("step")), ctx.alloc.stream);
}

// linspace as the CPU computes it: the first half counts up from start,
// the second half down from end (here: an arange over a reversed view,
// whose arithmetic is the same, so the values match bit for bit).
absl::Status CudaLinspace(Ins, Ins out, const Attrs& attrs,
                          const OpContext& ctx) {
  const DType d = out[0].dtype();
  const double start = IntegralScalar(d, attrs.Float("start")),
               end = IntegralScalar(d, attrs.Float("end"));
  const StridedView v = out[0].view();
  const int64_t n = v.numel();
  if (n == 0) return absl::OkStatus();
  if (n == 1) return cuda::Fill(v, start, ctx.alloc.stream);
  const double step = (end - start) / static_cast<double>(n - 1);
  const int64_t half = n / 2;
  StridedView head = v, tail = v;
  head.sizes[0] = half;
  tail.sizes[0] = n - half;
  tail.strides[0] = -v.strides[0];
  tail.data = static_cast<char*>(v.data) +
              (n - 1) * v.strides[0] * static_cast<int64_t>(ItemSize(v.dtype));
  if (half > 0) {
    TD_RETURN_IF_ERROR(cuda::Arange(head, start, step, ctx.alloc.stream));
  }
  return cuda::Arange(tail, end, -step, ctx.alloc.stream);
}

absl::Status CudaEye(Ins, Ins out, const Attrs&, const OpContext& ctx) {
  TD_RETURN_IF_ERROR(cuda::Fill(out[0].view(), 0, ctx.alloc.stream));
  const Tensor& t = out[0];
  const int64_t k = std::min(t.shape()[0], t.shape()[1]);
  const Tensor diag =
      t.AsStrided({k}, {t.strides()[0] + t.strides()[1]}, t.offset());
  return cuda::Fill(diag.view(), 1, ctx.alloc.stream);
}

}  // namespace

void AddCudaPointwiseKernels(CudaKernelMap* map) {
  using U = cuda::UnaryOp;
  using B = cuda::BinaryOp;
  using C = cuda::CompareOp;
  CudaKernelMap& m = *map;
  m["neg"] = CudaUnary<U::kNeg>;
  m["abs"] = CudaUnary<U::kAbs>;
  m["sign"] = CudaUnary<U::kSign>;
  m["relu"] = CudaUnary<U::kRelu>;
  m["floor"] = CudaUnary<U::kFloor>;
  m["ceil"] = CudaUnary<U::kCeil>;
  m["round"] = CudaUnary<U::kRound>;
  m["trunc"] = CudaUnary<U::kTrunc>;
  m["square"] = CudaUnary<U::kSquare>;
  m["exp"] = CudaUnary<U::kExp>;
  m["log"] = CudaUnary<U::kLog>;
  m["log1p"] = CudaUnary<U::kLog1p>;
  m["expm1"] = CudaUnary<U::kExpm1>;
  m["sqrt"] = CudaUnary<U::kSqrt>;
  m["rsqrt"] = CudaUnary<U::kRsqrt>;
  m["sin"] = CudaUnary<U::kSin>;
  m["cos"] = CudaUnary<U::kCos>;
  m["tanh"] = CudaUnary<U::kTanh>;
  m["sigmoid"] = CudaUnary<U::kSigmoid>;
  m["silu"] = CudaUnary<U::kSilu>;
  m["erf"] = CudaUnary<U::kErf>;
  m["reciprocal"] = CudaUnary<U::kReciprocal>;
  m["tan"] = CudaUnary<U::kTan>;
  m["atan"] = CudaUnary<U::kAtan>;
  m["asin"] = CudaUnary<U::kAsin>;
  m["acos"] = CudaUnary<U::kAcos>;
  m["sinh"] = CudaUnary<U::kSinh>;
  m["cosh"] = CudaUnary<U::kCosh>;
  m["asinh"] = CudaUnary<U::kAsinh>;
  m["acosh"] = CudaUnary<U::kAcosh>;
  m["atanh"] = CudaUnary<U::kAtanh>;
  m["log2"] = CudaUnary<U::kLog2>;
  m["log10"] = CudaUnary<U::kLog10>;
  m["exp2"] = CudaUnary<U::kExp2>;
  m["erfc"] = CudaUnary<U::kErfc>;
  m["erfinv"] = CudaUnary<U::kErfinv>;
  m["lgamma"] = CudaUnary<U::kLgamma>;
  m["digamma"] = CudaUnary<U::kDigamma>;
  m["polygamma"] = CudaPolygamma;
  // torch.special's rows (special_ops.cc): the same casts and broadcasts as
  // the CPU wrappers, the kernels' shared math (Note [Special function ops]).
  m["i0"] = CudaUnary<U::kI0>;
  m["i0e"] = CudaUnary<U::kI0e>;
  m["i1"] = CudaUnary<U::kI1>;
  m["i1e"] = CudaUnary<U::kI1e>;
  m["ndtri"] = CudaUnary<U::kNdtri>;
  m["log_ndtr"] = CudaUnary<U::kLogNdtr>;
  m["erfcx"] = CudaUnary<U::kErfcx>;
  m["bessel_j0"] = CudaUnary<U::kBesselJ0>;
  m["bessel_j1"] = CudaUnary<U::kBesselJ1>;
  m["bessel_y0"] = CudaUnary<U::kBesselY0>;
  m["bessel_y1"] = CudaUnary<U::kBesselY1>;
  m["modified_bessel_i0"] = CudaUnary<U::kI0>;
  m["modified_bessel_i1"] = CudaUnary<U::kI1>;
  m["modified_bessel_k0"] = CudaUnary<U::kBesselK0>;
  m["modified_bessel_k1"] = CudaUnary<U::kBesselK1>;
  m["scaled_modified_bessel_k0"] = CudaUnary<U::kScaledBesselK0>;
  m["scaled_modified_bessel_k1"] = CudaUnary<U::kScaledBesselK1>;
  m["spherical_bessel_j0"] = CudaUnary<U::kSphericalBesselJ0>;
  m["airy_ai"] = CudaUnary<U::kAiryAi>;
  m["chebyshev_polynomial_t"] = CudaBinary<B::kChebyshevT>;
  m["chebyshev_polynomial_u"] = CudaBinary<B::kChebyshevU>;
  m["chebyshev_polynomial_v"] = CudaBinary<B::kChebyshevV>;
  m["chebyshev_polynomial_w"] = CudaBinary<B::kChebyshevW>;
  m["shifted_chebyshev_polynomial_t"] = CudaBinary<B::kShiftedChebyshevT>;
  m["shifted_chebyshev_polynomial_u"] = CudaBinary<B::kShiftedChebyshevU>;
  m["shifted_chebyshev_polynomial_v"] = CudaBinary<B::kShiftedChebyshevV>;
  m["shifted_chebyshev_polynomial_w"] = CudaBinary<B::kShiftedChebyshevW>;
  m["hermite_polynomial_h"] = CudaBinary<B::kHermiteH>;
  m["hermite_polynomial_he"] = CudaBinary<B::kHermiteHe>;
  m["laguerre_polynomial_l"] = CudaBinary<B::kLaguerreL>;
  m["legendre_polynomial_p"] = CudaBinary<B::kLegendreP>;
  m["igamma"] = CudaBinary<B::kIgamma>;
  m["igammac"] = CudaBinary<B::kIgammac>;
  m["signbit"] = CudaSignbit;
  m["gelu"] = CudaGelu;
  m["gelu_backward"] = CudaGeluBackward;
  m["bitwise_not"] = CudaUnary<U::kBitwiseNot>;
  m["logical_not"] = CudaLogicalNot;
  m["clamp"] = CudaClamp;
  m["add"] = CudaBinary<B::kAdd>;
  m["sub"] = CudaBinary<B::kSub>;
  m["mul"] = CudaBinary<B::kMul>;
  m["div"] = CudaDiv;
  m["pow"] = CudaBinary<B::kPow>;
  m["atan2"] = CudaBinary<B::kAtan2>;
  m["fmax"] = CudaBinary<B::kFmax>;
  m["fmin"] = CudaBinary<B::kFmin>;
  m["fmod"] = CudaBinary<B::kFmod>;
  m["hypot"] = CudaBinary<B::kHypot>;
  m["copysign"] = CudaBinary<B::kCopysign>;
  m["nextafter"] = CudaBinary<B::kNextafter>;
  m["zeta"] = CudaBinary<B::kZeta>;
  m["maximum"] = CudaBinary<B::kMax>;
  m["minimum"] = CudaBinary<B::kMin>;
  m["remainder"] = CudaBinary<B::kRemainder>;
  m["floor_divide"] = CudaBinary<B::kFloorDiv>;
  m["bitwise_and"] = CudaBinary<B::kBitAnd>;
  m["bitwise_or"] = CudaBinary<B::kBitOr>;
  m["bitwise_xor"] = CudaBinary<B::kBitXor>;
  m["threshold_backward"] = CudaBinary<B::kThresholdBackward>;
  m["eq"] = CudaCompare<C::kEq>;
  m["ne"] = CudaCompare<C::kNe>;
  m["lt"] = CudaCompare<C::kLt>;
  m["le"] = CudaCompare<C::kLe>;
  m["gt"] = CudaCompare<C::kGt>;
  m["ge"] = CudaCompare<C::kGe>;
  m["logical_and"] = CudaCompare<C::kAnd>;
  m["logical_or"] = CudaCompare<C::kOr>;
  m["logical_xor"] = CudaCompare<C::kXor>;
  m["where"] = CudaWhere;
  m["masked_fill"] = CudaMaskedFill;
  m["clone"] = CudaClone;
  m["zeros"] = CudaFillConst<0>;
  m["ones"] = CudaFillConst<1>;
  m["empty"] = CudaEmpty;
  m["full"] = CudaFull;
  m["arange"] = CudaArange;
  m["linspace"] = CudaLinspace;
  m["eye"] = CudaEye;
}

KernelFn CudaAddKernel() { return CudaBinary<cuda::BinaryOp::kAdd>; }

void AddCudaNativeHalfRows(absl::flat_hash_set<std::string>* rows) {
  for (const char* name :
       {// unary maps (UnaryFn<float> per element)
        "neg", "abs", "sign", "relu", "floor", "ceil", "round", "trunc",
        "square", "exp", "log", "log1p", "expm1", "sqrt", "rsqrt", "sin", "cos",
        "tanh", "sigmoid", "silu", "erf", "reciprocal", "gelu", "logical_not",
        "clamp",
        // binary maps (BinaryFn<float>)
        "add", "sub", "mul", "div", "pow", "maximum", "minimum", "remainder",
        "floor_divide",
        // comparisons read half operands; where/masked_fill move bytes
        "eq", "ne", "lt", "le", "gt", "ge", "logical_and", "logical_or",
        "logical_xor", "where", "masked_fill",
        // creation: Fill/Arange store any dtype
        "zeros", "ones", "empty", "full", "arange", "linspace", "eye"}) {
    rows->insert(name);
  }
}

#else  // !TENSORD_WITH_CUDA

void AddCudaPointwiseKernels(CudaKernelMap*) {}
void AddCudaNativeHalfRows(absl::flat_hash_set<std::string>*) {}
KernelFn CudaAddKernel() { return nullptr; }

#endif  // TENSORD_WITH_CUDA

void AttachCudaKernels(std::vector<OpDef>* ops) {
  CudaKernelMap map;
  AddCudaPointwiseKernels(&map);
  AddCudaNnKernels(&map);
  AddCudaNormKernels(&map);
  AddCudaConvKernels(&map);
  AddCudaSortKernels(&map);
  absl::flat_hash_set<std::string> native_half;
  AddCudaNativeHalfRows(&native_half);
  for (OpDef& def : *ops) {
    if (def.infer == nullptr) continue;  // views and composites need none
    auto it = map.find(def.name);
    if (it == map.end()) continue;
    def.cuda = it->second;
    if (native_half.contains(def.name)) def.native_half_cuda = true;
  }
}

}  // namespace tensord
