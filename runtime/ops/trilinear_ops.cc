// _trilinear (PyTorch's aten::_trilinear, which torch.nn.functional.bilinear
// calls): i1, i2 and i3 each unsqueezed at its `expand` dims to one rank,
// multiplied (broadcasting size-1 dims) and summed over `sumdim`, whose dims
// leave the result. Composed as ATen computes it (Linear.cpp): the sum-product
// of i1 and i2 over the summed dims i3 lacks, then of that and i3 over the
// rest, each pair one bmm after a permute and reshape (sumproduct_pair).
// ATen also loops over `unroll_dim` to bound its temporaries; the sums are
// the same, so the attribute is only checked. A composite row: its gradient
// is that of the rows it runs (ATen's derivatives.yaml calls _trilinear with
// the expand and sum lists swapped, the same products), on every device.
#include <algorithm>

#include "absl/strings/str_cat.h"
#include "runtime/core/status_macros.h"
#include "runtime/ops/compose.h"
#include "runtime/ops/op_helpers.h"
#include "runtime/ops/op_table.h"

namespace tensord {
namespace {

using Ints = std::vector<int64_t>;
using Views = absl::StatusOr<std::vector<Tensor>>;
constexpr char kOp[] = "_trilinear";

// A dim list as a mask over `rank` dims (ATen's dim_list_to_bitset): dims
// wrap, repeats are refused.
absl::StatusOr<std::vector<bool>> Mask(const Ints& dims, int rank,
                                       const char* attr) {
  std::vector<bool> mask(rank, false);
  for (int64_t d : dims) {
    auto w = WrapDim(d, rank);
    if (!w.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat(kOp, ": ", attr, " holds dim ", d,
                       ", out of range for the ", rank, "-d product"));
    }
    if (mask[*w]) {
      return absl::InvalidArgumentError(
          absl::StrCat(kOp, ": dim ", d, " appears multiple times in ", attr));
    }
    mask[*w] = true;
  }
  return mask;
}

Ints Concat(std::initializer_list<const Ints*> parts) {
  Ints out;
  for (const Ints* p : parts) out.insert(out.end(), p->begin(), p->end());
  return out;
}

// ATen's sumproduct_pair with keepdim: left * right summed over the dims in
// `summed` (kept with size 1). Both have the same rank; size-1 dims
// broadcast. One bmm of [lro, lo, sum] and [lro, sum, ro].
absl::StatusOr<Tensor> SumProductPair(const ComposeOps& op, Tensor left,
                                      Tensor right,
                                      const std::vector<bool>& summed) {
  const int rank = left.ndim();
  Ints sum_dims;
  for (int i = 0; i < rank; ++i) {
    if (summed[i]) sum_dims.push_back(i);
  }
  if (sum_dims.empty()) return op("mul", {left, right});
  Ints lro, lo, ro;
  int64_t lro_size = 1, lo_size = 1, ro_size = 1, sum_size = 1;
  for (int i = 0; i < rank; ++i) {
    const int64_t l = left.shape()[i], r = right.shape()[i];
    if ((l != 1 && r != 1) && l != r) {
      return absl::InvalidArgumentError(
          absl::StrCat(kOp, ": non-broadcast dimensions must match: dim ", i,
                       " is ", l, " in one operand and ", r, " in the other"));
    }
    const Ints one = {i};
    if (summed[i]) {
      if (l != 1 && r != 1) {
        sum_size *= l;
      } else if (l != 1) {  // in one operand only: summed right away
        TD_ASSIGN_OR_RETURN(
            left, op("sum", {left}, {{"dim", one}, {"keepdim", true}}));
      } else if (r != 1) {
        TD_ASSIGN_OR_RETURN(
            right, op("sum", {right}, {{"dim", one}, {"keepdim", true}}));
      }
    } else if (l != 1 && r != 1) {
      lro.push_back(i);
      lro_size *= l;
    } else if (l != 1) {
      lo.push_back(i);
      lo_size *= l;
    } else {
      ro.push_back(i);
      ro_size *= r;
    }
  }
  Ints out_size;
  for (int64_t d : lro) out_size.push_back(left.shape()[d]);
  for (int64_t d : lo) out_size.push_back(left.shape()[d]);
  out_size.insert(out_size.end(), sum_dims.size(), 1);
  for (int64_t d : ro) out_size.push_back(right.shape()[d]);
  const Ints lperm = Concat({&lro, &lo, &sum_dims, &ro});
  const Ints rperm = Concat({&lro, &sum_dims, &ro, &lo});
  Ints operm(rank);
  for (int i = 0; i < rank; ++i) operm[lperm[i]] = i;
  TD_ASSIGN_OR_RETURN(Tensor l, op("permute", {left}, {{"dims", lperm}}));
  TD_ASSIGN_OR_RETURN(
      l, op("reshape", {l}, {{"shape", Ints{lro_size, lo_size, sum_size}}}));
  TD_ASSIGN_OR_RETURN(Tensor r, op("permute", {right}, {{"dims", rperm}}));
  TD_ASSIGN_OR_RETURN(
      r, op("reshape", {r}, {{"shape", Ints{lro_size, sum_size, ro_size}}}));
  TD_ASSIGN_OR_RETURN(Tensor prod, op("bmm", {l, r}));
  TD_ASSIGN_OR_RETURN(prod, op("reshape", {prod}, {{"shape", out_size}}));
  return op("permute", {prod}, {{"dims", operm}});
}

Views Trilinear(absl::Span<const Tensor> in, const Attrs& attrs,
                const OpContext& ctx) {
  const char* names[3] = {"expand1", "expand2", "expand3"};
  const int total =
      in[0].ndim() + static_cast<int>(attrs.Ints(names[0]).size());
  const int64_t unroll = attrs.Int("unroll_dim");
  if (unroll < 0 || unroll >= total) {
    return absl::InvalidArgumentError(absl::StrCat(
        kOp, ": unroll_dim must be in [0, ", total - 1, "], got ", unroll));
  }
  const ComposeOps op{ctx};
  std::vector<std::vector<bool>> expand;
  std::vector<Tensor> u;
  for (int k = 0; k < 3; ++k) {
    const Tensor& t = in[k];
    if (t.dtype() != in[0].dtype()) {
      return absl::InvalidArgumentError(
          absl::StrCat(kOp, ": expected i1, i2 and i3 of one dtype, got ",
                       DTypeName(in[0].dtype()), ", ", DTypeName(in[1].dtype()),
                       " and ", DTypeName(in[2].dtype())));
    }
    const Ints& e = attrs.Ints(names[k]);
    if (t.ndim() + static_cast<int>(e.size()) != total) {
      return absl::InvalidArgumentError(absl::StrCat(
          kOp, ": i", k + 1, " of shape ", ShapeToString(t.shape()), " with ",
          e.size(), " ", names[k], " dims is not ", total, "-d, as i1 is"));
    }
    TD_ASSIGN_OR_RETURN(std::vector<bool> mask, Mask(e, total, names[k]));
    Tensor v = t;
    for (int i = 0; i < total; ++i) {
      if (!mask[i]) continue;
      TD_ASSIGN_OR_RETURN(v, op("unsqueeze", {v}, {{"dim", int64_t{i}}}));
    }
    expand.push_back(std::move(mask));
    u.push_back(std::move(v));
  }
  TD_ASSIGN_OR_RETURN(std::vector<bool> sum,
                      Mask(attrs.Ints("sumdim"), total, "sumdim"));
  // ATen's output size: per dim, the last input not expanded there.
  Ints want, kept;
  for (int i = 0; i < total; ++i) {
    int64_t s = 0;
    for (int k = 0; k < 3; ++k) {
      if (!expand[k][i]) s = u[k].shape()[i];
    }
    want.push_back(sum[i] ? 1 : s);
    if (!sum[i]) kept.push_back(s);
  }
  std::vector<bool> sum12(total), sum23(total);
  for (int i = 0; i < total; ++i) {
    sum12[i] = sum[i] && expand[2][i];
    sum23[i] = sum[i] && !expand[2][i];
  }
  TD_ASSIGN_OR_RETURN(Tensor buf, SumProductPair(op, u[0], u[1], sum12));
  TD_ASSIGN_OR_RETURN(buf, SumProductPair(op, buf, u[2], sum23));
  for (int i = 0; i < total; ++i) {
    if (buf.shape()[i] != want[i] && buf.shape()[i] != 1) {
      return absl::InvalidArgumentError(absl::StrCat(
          kOp, ": the product's shape ", ShapeToString(buf.shape()),
          " does not fit the output's ",
          ShapeToString(Shape(want.begin(), want.end())),
          " (each dim's size comes from the last input not expanded there)"));
    }
  }
  TD_ASSIGN_OR_RETURN(buf, op("expand", {buf}, {{"size", want}}));
  TD_ASSIGN_OR_RETURN(buf, op("reshape", {buf}, {{"shape", kept}}));
  return std::vector<Tensor>{buf};
}

}  // namespace

std::vector<OpDef> TrilinearOps() {
  using I = std::vector<int64_t>;
  OpDef def = MakeOp(
      kOp, 3, 3,
      {Required("expand1", AttrType::kInts),
       Required("expand2", AttrType::kInts),
       Required("expand3", AttrType::kInts),
       Required("sumdim", AttrType::kInts),
       Optional("unroll_dim", AttrType::kInt, int64_t{1})},
      "aten::_trilinear (torch.nn.functional.bilinear's op): i1, i2, i3 "
      "unsqueezed at their expand dims, multiplied (size-1 dims broadcast) "
      "and summed over sumdim, which leaves the result.");
  def.composite = Trilinear;
  // bilinear's call: x1 [N, I], weight [O, I, J], x2 [N, J] -> [N, O].
  def.examples = {Example({{4, 3}, {5, 3, 2}, {4, 2}}, {{"expand1", I{1, 3}},
                                                        {"expand2", I{0}},
                                                        {"expand3", I{1, 2}},
                                                        {"sumdim", I{2, 3}}})};
  std::vector<OpDef> ops;
  ops.push_back(std::move(def));
  return ops;
}

}  // namespace tensord
