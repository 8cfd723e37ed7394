"""``torch.autocast(device_type="tensord", dtype=torch.bfloat16)`` (or ``float16``).

PyTorch registers autocast kernels for its own devices only; a PrivateUse1 device brings its
own under the ``AutocastPrivateUse1`` dispatch key, which PyTorch consults before autograd, so
the casts below are recorded by autograd like any op: parameters stay float32 (the optimizer's
master weights) and their gradients come back float32 through the casts' backward.

The policy is CUDA's (the op lists of ``ATen/autocast_mode.h``, as of PyTorch 2.15):
- ``LOWER``: matmuls, convolutions, linear and attention run in the autocast dtype;
- ``FP32``: ops that lose too much in 16 bits (exp, log, norms, losses ...) run in float32;
- ``FP32_DTYPE``: reductions and softmax accumulate in float32 (their ``dtype`` argument set
  when the caller left it unset and the first input is floating);
- ``PROMOTE``: ops mixing dtypes run in the widest floating dtype among their inputs.
Every other op runs as it is called. Only floating tensors on the device other than float64
are cast, as on CUDA. PyTorch's cache of weight casts within a region is not copied: a weight
used twice in one forward is cast twice (the daemon runs the casts; the step's result is the
same).
"""

from __future__ import annotations

from typing import Any, Callable, List

import torch

LOWER = ["_convolution.deprecated", "_convolution", "conv1d", "conv2d", "conv3d", "conv_tbc",
         "conv_transpose1d", "conv_transpose2d.input", "conv_transpose3d.input", "convolution",
         "prelu", "addmm", "addmv", "addr", "matmul", "einsum", "mm", "mv", "linalg_vecdot",
         "linear", "addbmm", "baddbmm", "bmm", "chain_matmul", "linalg_multi_dot",
         "lstm_cell", "gru_cell", "rnn_tanh_cell", "rnn_relu_cell",
         "scaled_dot_product_attention"]
FP32 = ["acos", "asin", "cosh", "erfinv", "exp", "expm1", "log", "log10", "log2", "log1p",
        "reciprocal", "rsqrt", "sinh", "tan", "pow.Tensor_Scalar", "pow.Tensor_Tensor",
        "pow.Scalar", "softplus", "layer_norm", "native_layer_norm", "rms_norm", "group_norm",
        "frobenius_norm.dim", "nuclear_norm", "nuclear_norm.dim", "cosine_similarity",
        "poisson_nll_loss", "cosine_embedding_loss", "nll_loss", "nll_loss2d",
        "hinge_embedding_loss", "kl_div", "l1_loss", "smooth_l1_loss", "huber_loss", "mse_loss",
        "margin_ranking_loss", "multilabel_margin_loss", "soft_margin_loss",
        "triplet_margin_loss", "multi_margin_loss", "binary_cross_entropy_with_logits", "dist",
        "pdist", "cdist", "renorm", "logsumexp", "upsample_nearest1d", "upsample_nearest2d",
        "upsample_nearest3d", "upsample_linear1d", "upsample_bilinear2d",
        "upsample_trilinear3d", "upsample_bicubic2d"]
FP32_DTYPE = ["prod", "prod.dim_int", "softmax.int", "log_softmax.int", "cumprod", "cumsum",
              "linalg_vector_norm", "linalg_matrix_norm", "linalg_matrix_norm.str_ord", "sum",
              "sum.dim_IntList"]
PROMOTE = ["addcdiv", "addcmul", "atan2", "bilinear", "cross", "dot", "vdot", "grid_sampler",
           "index_put", "tensordot", "scatter_add"]

_KEY = torch._C.DispatchKeySet(torch._C.DispatchKey.AutocastPrivateUse1)
_lib: Any = None
_fallthrough: Any = None


def _eligible(x: Any) -> bool:
    return (isinstance(x, torch.Tensor) and x.is_floating_point() and x.dtype != torch.float64
            and x.device.type == "tensord")


def _cast_all(args: tuple, kwargs: dict, dtype: torch.dtype) -> tuple:
    def one(x: Any) -> Any:
        if isinstance(x, (list, tuple)):
            return type(x)(one(v) for v in x)
        return x.to(dtype) if _eligible(x) and x.dtype != dtype else x
    return tuple(one(a) for a in args), {k: one(v) for k, v in kwargs.items()}


def _tensors(args: tuple, kwargs: dict) -> List[torch.Tensor]:
    out = []
    for x in list(args) + list(kwargs.values()):
        out.extend(x if isinstance(x, (list, tuple)) else [x])
    return [x for x in out if _eligible(x)]


def _kernel(op: Any, policy: str) -> Callable[..., Any]:
    dtype_at = next((i for i, a in enumerate(op._schema.arguments) if a.name == "dtype"), None)

    def run(*args: Any, **kwargs: Any) -> Any:
        if policy == "lower":
            args, kwargs = _cast_all(args, kwargs, torch.get_autocast_dtype("tensord"))
        elif policy == "fp32":
            args, kwargs = _cast_all(args, kwargs, torch.float32)
        elif policy == "promote":
            ts = _tensors(args, kwargs)
            if ts:
                widest = ts[0].dtype
                for t in ts[1:]:
                    widest = torch.promote_types(widest, t.dtype)
                args, kwargs = _cast_all(args, kwargs, widest)
        elif args and _eligible(args[0]):  # fp32_dtype: accumulate in float32 unless told
            if dtype_at is not None and dtype_at < len(args):
                if args[dtype_at] is None:
                    args = args[:dtype_at] + (torch.float32,) + args[dtype_at + 1:]
            elif kwargs.get("dtype") is None:
                kwargs = dict(kwargs, dtype=torch.float32)
        with torch._C._ExcludeDispatchKeyGuard(_KEY):
            return op(*args, **kwargs)
    return run


def register() -> None:
    """Registers the kernels (once; ``_registration.register`` calls it)."""
    global _lib, _fallthrough
    if _lib is not None:
        return
    # every op without a kernel below passes the key by, as PyTorch does for its own devices
    _fallthrough = torch.library.Library("_", "IMPL")
    _fallthrough.fallback(torch.library.fallthrough_kernel, "AutocastPrivateUse1")
    _lib = torch.library.Library("aten", "IMPL")
    for names, policy in ((LOWER, "lower"), (FP32, "fp32"), (FP32_DTYPE, "fp32_dtype"),
                          (PROMOTE, "promote")):
        for name in names:
            base, _, overload = name.partition(".")
            packet = getattr(torch.ops.aten, base, None)
            op = getattr(packet, overload or "default", None) if packet is not None else None
            if op is not None:  # an op of a later PyTorch's list: nothing to register here
                _lib.impl(name, _kernel(op, policy), "AutocastPrivateUse1")
