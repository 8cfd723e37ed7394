"""The neural-net reference cases of op_cases.py: softmax, dropout, the losses, convolution,
pooling and the norms as the catalog serves them, and the autograd-support rows (the conv, pool
and gelu backwards, the fused batch_norm, layer_norm and cross_entropy rows, the optimizer
steps) with the torch references of their outputs and gradients."""

from __future__ import annotations

from typing import Any, Callable, List

import torch
import torch.nn.functional as F

from op_case_inputs import NC, Case, I, R


def _native_batch_norm(x: torch.Tensor, w: torch.Tensor = None, b: torch.Tensor = None,
                       eps: float = 1e-5) -> tuple:
    var, mean = torch.var_mean(x, [0] + list(range(2, x.dim())), unbiased=False)
    y = F.batch_norm(x, None, None, w, b, training=True, eps=eps)
    return y, mean.detach(), var.detach()


def _native_batch_norm_backward(g: torch.Tensor, x: torch.Tensor, mean: torch.Tensor,
                                var: torch.Tensor, w: torch.Tensor, eps: float = 1e-5) -> tuple:
    return torch.ops.aten.native_batch_norm_backward(
        g, x, w, None, None, mean, (var + eps).rsqrt(), True, eps, [True, True, True])


def _native_layer_norm(x: torch.Tensor, w: torch.Tensor = None, b: torch.Tensor = None,
                       normalized_shape: tuple = (), eps: float = 1e-5) -> tuple:
    dims = list(range(-len(normalized_shape), 0))
    var, mean = torch.var_mean(x, dims, unbiased=False, keepdim=True)
    y = F.layer_norm(x, normalized_shape, w, b, eps=eps)
    return y, mean.detach(), (var + eps).rsqrt().detach()


def _native_layer_norm_backward(g: torch.Tensor, x: torch.Tensor, mean: torch.Tensor,
                                rstd: torch.Tensor, w: torch.Tensor = None,
                                normalized_shape: tuple = ()) -> tuple:
    """Without a weight the row still gives sum(dy * xhat) and sum(dy) over the rows."""
    if w is not None:
        return torch.ops.aten.native_layer_norm_backward(
            g, x, list(normalized_shape), mean, rstd, w, torch.zeros_like(w), [True] * 3)
    dx = torch.ops.aten.native_layer_norm_backward(g, x, list(normalized_shape), mean, rstd,
                                                   None, None, [True, False, False])[0]
    rows = list(range(x.dim() - len(normalized_shape)))
    return dx, (g * (x - mean) * rstd).sum(rows), g.sum(rows)


def _fused_cross_entropy(x: torch.Tensor, t: torch.Tensor, w: torch.Tensor = None,
                         **kw: Any) -> tuple:
    """(loss, log-sum-exp per position, total weight of the targets not ignored)."""
    cdim = 1 if x.dim() > 1 else 0
    kept = t != kw.get("ignore_index", -100)
    tw = kept.to(x.dtype) if w is None else w[torch.where(kept, t, 0)] * kept
    return (F.cross_entropy(x, t, w, **kw), torch.logsumexp(x, cdim).detach(),
            tw.sum().detach())


def _fused_cross_entropy_backward(g: torch.Tensor, x: torch.Tensor, t: torch.Tensor,
                                  lse: torch.Tensor, tw: torch.Tensor, w: torch.Tensor = None,
                                  **kw: Any) -> torch.Tensor:
    xr = x.detach().requires_grad_()
    return torch.autograd.grad(F.cross_entropy(xr, t, w, **kw), xr, g)[0]


def _ce_backward_args(x: torch.Tensor, t: torch.Tensor, reduction: str, w: torch.Tensor = None,
                      ignore_index: int = -100) -> list:
    """fused_cross_entropy_backward's inputs consistent with x and t."""
    _, lse, tw = _fused_cross_entropy(x, t, w, ignore_index=ignore_index)
    g = R(*t.shape, seed=3, dtype=x.dtype) if reduction == "none" else torch.tensor(1.5, dtype=x.dtype)
    return [g, x, t, lse, tw] + ([w] if w is not None else [])


def _dropout_check(got: Any, want: Any) -> None:
    g = torch.from_numpy(got.numpy())
    x = torch.ones(g.shape)
    kept = (g != 0).double().mean().item()
    assert abs(kept - 0.7) < 0.03
    assert torch.allclose(g[g != 0], x[g != 0] / 0.7)


def _pool_grad(fn: Callable[..., Any], g: torch.Tensor, x: torch.Tensor, **kw: Any) -> torch.Tensor:
    """The gradient of pooling `fn` at x for output gradient g (the *_backward ops' reference)."""
    x = x.detach().requires_grad_(True)
    fn(x, **kw).backward(g)
    return x.grad


def _pooled_with_indices(x: torch.Tensor, **kw: Any) -> tuple:
    """(values, indices) of torch's max_pool2d: the reference of max_pool2d_with_indices."""
    return F.max_pool2d(x, return_indices=True, **kw)


def _exact(got: Any, want: Any) -> None:
    """Values (NaN where torch's are) and indices exactly torch's: ties and NaNs, where a
    gradient is not defined (no gradient or finite-difference check: ``check`` cases)."""
    assert isinstance(got, tuple) and len(got) == len(want)
    for g, w in zip(got, want):
        torch.testing.assert_close(torch.from_numpy(g.numpy()), w.detach(), rtol=0, atol=0,
                                   equal_nan=True)


def _ties(*shape: int, nans: bool = False) -> torch.Tensor:
    """Values from {-2, ..., 2} (ties in every window), every seventh NaN when ``nans``."""
    t = R(*shape).mul(1.2).round().clamp(-2, 2)
    if nans:
        t.view(-1)[3::7] = float("nan")
    return t


def _pair(v: Any) -> List[int]:
    return [v, v] if isinstance(v, int) else list(v)


def _max_pool_backward_args(x: torch.Tensor, **kw: Any) -> list:
    """max_pool2d_with_indices_backward's (grad_output, self, indices) with torch's indices."""
    idx = F.max_pool2d(x, return_indices=True, **kw)[1]
    return [R(*idx.shape, seed=1, dtype=x.dtype), x, idx]


def _max_pool_backward(g: torch.Tensor, x: torch.Tensor, idx: torch.Tensor, kernel_size: Any,
                       stride: Any = (), padding: Any = 0, dilation: Any = 1,
                       ceil_mode: bool = False) -> torch.Tensor:
    return torch.ops.aten.max_pool2d_with_indices_backward(
        g, x, _pair(kernel_size), _pair(stride) if stride else [], _pair(padding),
        _pair(dilation), ceil_mode, idx)


# softmax's and log_softmax's fused gradient rows: CUDA composes them (KnownCpuOnly).
CPU_ONLY = {"softmax_backward", "log_softmax_backward"}


def _masked_rows() -> torch.Tensor:
    """Rows of 19 masked with -inf as causal attention's. A row all -inf (NaN, as PyTorch's)
    and log_softmax's -inf outputs are kernels/cpu/softmax_test.cc's: their losses leave no
    finite differences here."""
    x = R(4, 19) * 3
    for i in range(4):
        x[i, 10 + i:] = float("-inf")
    return x


def _softmax_backward(g: torch.Tensor, y: torch.Tensor, dim: int) -> torch.Tensor:
    return torch.ops.aten._softmax_backward_data(g, y, dim, y.dtype)


def _log_softmax_backward(g: torch.Tensor, y: torch.Tensor, dim: int) -> torch.Tensor:
    return torch.ops.aten._log_softmax_backward_data(g, y, dim, y.dtype)


def nn_cases() -> List[Case]:
    c: List[Case] = []
    # ------------------------------------------------------------------- nn
    c += [Case("softmax", [R(4, 5)], {"dim": 1}), Case("softmax", [R(2, 3, 4)], {"dim": 1}),
          Case("softmax", [NC(R(3, 4))], {"dim": -1}), Case("softmax", [R(3, 4) * 50], {"dim": 0}),
          Case("log_softmax", [R(4, 5)], {"dim": 1}), Case("log_softmax", [R(2, 3, 4)], {"dim": 0}),
          Case("softmax", [R(3, 4, dtype=torch.float64)], {"dim": 1}),
          # Rows of 64 and 13 along the last dim (kernels/cpu/softmax.cc's AVX2 rows and
          # their tails), masked rows.
          Case("softmax", [R(2, 4, 64) * 3], {"dim": -1}),
          Case("log_softmax", [R(5, 13) * 3], {"dim": -1}),
          Case("softmax", [_masked_rows()], {"dim": -1}),
          Case("softmax_backward", [R(2, 4, 64, seed=1), F.softmax(R(2, 4, 64), -1)], {"dim": -1},
               ref=_softmax_backward),
          Case("softmax_backward", [NC(R(4, 3, 13, seed=1)), F.softmax(R(4, 3, 13), 0)], {"dim": 0},
               ref=_softmax_backward),
          Case("softmax_backward", [R(2, 3, 5, seed=1, dtype=torch.float64),
                                    F.softmax(R(2, 3, 5, dtype=torch.float64), 1)], {"dim": 1},
               ref=_softmax_backward),
          Case("log_softmax_backward", [R(5, 13, seed=1), F.log_softmax(R(5, 13), -1)],
               {"dim": -1}, ref=_log_softmax_backward),
          Case("log_softmax_backward", [R(2, 9, 3, seed=1), F.log_softmax(R(2, 9, 3), 1)],
               {"dim": 1}, ref=_log_softmax_backward),
          Case("dropout", [torch.ones(100, 100)], {"p": 0.3}, ref=F.dropout, check=_dropout_check),
          Case("dropout", [R(3, 4)], {"p": 0.3, "training": False}, ref=F.dropout),
          Case("mse_loss", [R(3, 4), R(3, 4, seed=1)], ref=F.mse_loss),
          Case("mse_loss", [R(3, 4), R(4, seed=1)], {"reduction": "sum"}, ref=F.mse_loss),
          Case("nll_loss", [F.log_softmax(R(5, 3), 1), I(5, high=3)], ref=F.nll_loss),
          Case("nll_loss", [F.log_softmax(R(5, 3), 1), torch.tensor([0, 2, -100, 1, 1]), R(3, lo=0.5)],
               {"reduction": "mean"}, ref=F.nll_loss),
          Case("nll_loss", [F.log_softmax(R(2, 3, 4), 1), I(2, 4, high=3)], {"reduction": "none"},
               ref=F.nll_loss),
          Case("cross_entropy", [R(5, 3), I(5, high=3)], ref=F.cross_entropy),
          Case("cross_entropy", [R(5, 3), torch.tensor([0, 2, 7, 1, 1])],
               {"ignore_index": 7, "reduction": "sum"}, ref=F.cross_entropy),
          Case("cross_entropy", [R(5, 4), I(5, high=4)], {"label_smoothing": 0.2}, ref=F.cross_entropy),
          Case("cross_entropy", [R(5, 4), I(5, high=4), R(4, lo=0.5)], {"label_smoothing": 0.1},
               ref=F.cross_entropy),
          Case("cross_entropy", [R(2, 3, 4), I(2, 4, high=3)], {"reduction": "none"}, ref=F.cross_entropy),
          Case("cross_entropy", [R(5, 3), torch.softmax(R(5, 3, seed=4), 1)], ref=F.cross_entropy),
          Case("conv2d", [R(2, 4, 7, 7), R(6, 4, 3, 3), R(6)], ref=F.conv2d),
          Case("conv2d", [R(2, 4, 7, 6), R(6, 2, 3, 2)],
               {"stride": (2, 1), "padding": (1, 0), "dilation": (1, 2), "groups": 2}, ref=F.conv2d),
          Case("conv2d", [NC(R(3, 3)).t.reshape(1, 1, 3, 3), R(2, 1, 1, 1)], ref=F.conv2d),
          # Big enough to run image by image on the intra-op pool.
          Case("conv2d", [R(6, 3, 16, 16), R(16, 3, 3, 3), R(16)], {"padding": (1,)}, ref=F.conv2d,
               rtol=1e-4),
          # conv3d: oneDNN (float32), direct loops (float64); the last big enough to split
          # into blocks of images over the pool.
          Case("conv3d", [R(2, 4, 5, 6, 5), R(6, 2, 3, 2, 3), R(6)],
               {"stride": (2, 1, 1), "padding": (1, 0, 1), "dilation": (1, 2, 1), "groups": 2},
               ref=F.conv3d),
          Case("conv3d",
               [R(1, 3, 4, 4, 3, dtype=torch.float64), R(2, 3, 2, 1, 2, dtype=torch.float64)],
               {"padding": (1,)}, ref=F.conv3d),
          Case("conv3d", [R(4, 4, 8, 8, 8), R(8, 4, 3, 3, 3), R(8)], {"padding": (1,)},
               ref=F.conv3d, rtol=1e-4),
          Case("max_pool2d", [R(2, 3, 7, 7)], {"kernel_size": 3, "stride": 2, "padding": 1}, ref=F.max_pool2d),
          Case("max_pool2d", [R(3, 6, 5)], {"kernel_size": (2, 3), "ceil_mode": True, "dilation": 1},
               ref=F.max_pool2d),
          # PyTorch's indices: the first maximum of a window, its last NaN; padded, dilated,
          # ceil-mode windows; 3-d input.
          Case("max_pool2d_with_indices", [R(2, 3, 7, 7)],
               {"kernel_size": 3, "stride": 2, "padding": 1}, ref=_pooled_with_indices, nout=2),
          Case("max_pool2d_with_indices", [NC(R(3, 6, 5))],
               {"kernel_size": (2, 3), "ceil_mode": True, "dilation": (1, 2)},
               ref=_pooled_with_indices, nout=2),
          Case("max_pool2d_with_indices", [R(2, 3, 7, 6, dtype=torch.float64)],
               {"kernel_size": (3, 2), "stride": (2, 1), "padding": (1, 1), "dilation": (1, 2),
                "ceil_mode": True}, ref=_pooled_with_indices, nout=2),
          Case("max_pool2d_with_indices", [_ties(2, 3, 8, 7)], {"kernel_size": 2, "stride": 1},
               ref=_pooled_with_indices, nout=2, check=_exact),
          Case("max_pool2d_with_indices", [_ties(2, 3, 9, 8, nans=True)],
               {"kernel_size": 3, "stride": 2, "padding": 1, "ceil_mode": True},
               ref=_pooled_with_indices, nout=2, check=_exact),
          Case("max_pool2d_with_indices", [_ties(3, 7, 6, nans=True).double()],
               {"kernel_size": 2, "dilation": 2, "padding": 1}, ref=_pooled_with_indices,
               nout=2, check=_exact),
          Case("avg_pool2d", [R(2, 3, 7, 7)], {"kernel_size": 3, "stride": 2, "padding": 1}, ref=F.avg_pool2d),
          Case("avg_pool2d", [R(1, 2, 5, 5)], {"kernel_size": 2, "ceil_mode": True,
                                               "count_include_pad": False}, ref=F.avg_pool2d),
          # int64, as PyTorch's CPU kernel: an int64 sum divided with truncation
          Case("avg_pool2d", [R(2, 3, 7, 7, dtype=torch.int64)], {"kernel_size": 3, "stride": 2,
                                                                 "padding": 1}, ref=F.avg_pool2d),
          Case("avg_pool2d", [R(1, 2, 5, 5, dtype=torch.int64)], {"kernel_size": 2, "ceil_mode": True,
                                                                 "count_include_pad": False},
               ref=F.avg_pool2d),
          Case("adaptive_avg_pool2d", [R(2, 3, 7, 5)], {"output_size": (3, 2)}, ref=F.adaptive_avg_pool2d),
          Case("batch_norm", [R(4, 3, 2, 2), R(3), R(3, lo=0.5), R(3), R(3)], {"training": False},
               ref=F.batch_norm),
          Case("batch_norm", [R(4, 3), R(3), R(3, lo=0.5)], {"training": True, "momentum": 0.2},
               ref=lambda x, m, v, **k: F.batch_norm(x, m.clone(), v.clone(), **k)),
          Case("batch_norm", [R(4, 3, 2, 2), R(3), R(3, lo=0.5), R(3), R(3)],
               {"training": True, "momentum": 0.1},
               ref=lambda x, m, v, w, b, **k: F.batch_norm(x, m.clone(), v.clone(), w, b, **k)),
          Case("layer_norm", [R(2, 3, 4), R(3, 4), R(3, 4)], {"normalized_shape": (3, 4)},
               ref=lambda x, w, b, normalized_shape: F.layer_norm(x, normalized_shape, w, b)),
          Case("layer_norm", [R(2, 5)], {"normalized_shape": (5,), "eps": 1e-3},
               ref=lambda x, normalized_shape, eps: F.layer_norm(x, normalized_shape, eps=eps))]
    return c


def _grid_sampler_2d_backward(g: torch.Tensor, x: torch.Tensor, grid: torch.Tensor,
                              interpolation_mode: int = 0, padding_mode: int = 0,
                              align_corners: bool = False) -> tuple:
    return torch.ops.aten.grid_sampler_2d_backward(g, x, grid, interpolation_mode, padding_mode,
                                                   align_corners, [True, True])


def autograd_support_cases() -> List[Case]:
    c: List[Case] = []
    # ------------------------------------------- autograd support (gradients: test_autograd_*)
    c += [Case("detach", [R(3, 4)], ref=lambda x: x.detach()),
          # grid_sampler_2d_backward: grad_output, input, grid (some points outside [-1, 1]).
          Case("grid_sampler_2d_backward", [R(2, 3, 4, 5), R(2, 3, 5, 6), R(2, 4, 5, 2) * 0.8],
               ref=_grid_sampler_2d_backward, nout=2),
          Case("grid_sampler_2d_backward",
               [R(1, 2, 3, 3, dtype=torch.float64), NC(R(1, 2, 4, 4, dtype=torch.float64)),
                R(1, 3, 3, 2, dtype=torch.float64) * 0.8],
               {"interpolation_mode": 2, "padding_mode": 2, "align_corners": True},
               ref=_grid_sampler_2d_backward, nout=2),
          Case("grid_sampler_2d_backward", [R(1, 2, 3, 3), R(1, 2, 4, 4), R(1, 3, 3, 2) * 0.8],
               {"interpolation_mode": 1, "padding_mode": 1}, ref=_grid_sampler_2d_backward,
               nout=2),
          Case("conv3d_backward_input", [R(2, 6, 3, 4, 5), R(6, 2, 3, 2, 3)],
               {"input_size": (2, 4, 5, 6, 5), "stride": (2, 1, 1), "padding": (1, 0, 1),
                "dilation": (1, 2, 1), "groups": 2},
               ref=lambda g, w, input_size, **k: torch.nn.grad.conv3d_input(input_size, w, g, **k)),
          Case("conv3d_backward_weight", [R(2, 6, 3, 4, 5), R(2, 4, 5, 6, 5)],
               {"weight_size": (6, 2, 3, 2, 3), "stride": (2, 1, 1), "padding": (1, 0, 1),
                "dilation": (1, 2, 1), "groups": 2},
               ref=lambda g, x, weight_size, **k: torch.nn.grad.conv3d_weight(
                   x, weight_size, g, **k),
               rtol=1e-4),
          Case("conv2d_backward_input", [R(2, 6, 3, 5), R(6, 2, 3, 3)],
               {"input_size": (2, 4, 5, 5), "stride": (2, 1), "padding": (1,), "groups": 2},
               ref=lambda g, w, input_size, stride, padding, groups: torch.nn.grad.conv2d_input(
                   input_size, w, g, stride=stride, padding=padding * 2, groups=groups)),
          Case("conv2d_backward_weight", [R(2, 6, 3, 5), R(2, 4, 5, 5)],
               {"weight_size": (6, 2, 3, 3), "stride": (2, 1), "padding": (1,), "groups": 2},
               ref=lambda g, x, weight_size, stride, padding, groups: torch.nn.grad.conv2d_weight(
                   x, weight_size, g, stride=stride, padding=padding * 2, groups=groups),
               rtol=1e-4),
          # Big enough to split their GEMMs over the pool: the weight gradient
          # over K (few rows and columns), the input gradient over columns.
          Case("conv2d_backward_weight", [R(6, 16, 16, 16), R(6, 3, 16, 16)],
               {"weight_size": (16, 3, 3, 3), "padding": (1,)},
               ref=lambda g, x, weight_size, padding: torch.nn.grad.conv2d_weight(
                   x, weight_size, g, padding=padding * 2), rtol=5e-4),  # float32 sums of 1536 terms
          Case("conv2d_backward_input", [R(6, 16, 16, 16), R(16, 8, 3, 3)],
               {"input_size": (6, 8, 16, 16), "padding": (1,)},
               ref=lambda g, w, input_size, padding: torch.nn.grad.conv2d_input(
                   input_size, w, g, padding=padding * 2), rtol=1e-4),
          # batch_norm's fused CPU rows: (output, mean, biased var), the statistics carrying
          # no gradient (as PyTorch's native_batch_norm), and the three gradients.
          Case("native_batch_norm", [R(4, 3, 5, 5), R(3), R(3)], {"eps": 1e-3},
               ref=_native_batch_norm, nout=3),
          Case("native_batch_norm", [R(6, 4, dtype=torch.float64)], ref=_native_batch_norm,
               nout=3),
          Case("native_batch_norm_backward",
               [R(4, 3, 5, 5, seed=1), R(4, 3, 5, 5), R(3), R(3, lo=0.5), R(3)],
               ref=_native_batch_norm_backward, nout=3, rtol=1e-4),
          # layer_norm's, cross_entropy's and gelu's fused CPU rows; the statistics carry no
          # gradient (as PyTorch's native_layer_norm).
          Case("native_layer_norm", [R(2, 3, 4), R(3, 4), R(3, 4, seed=1)],
               {"normalized_shape": (3, 4)}, ref=_native_layer_norm, nout=3),
          Case("native_layer_norm", [NC(R(5, 6, dtype=torch.float64)), R(6, dtype=torch.float64)],
               {"normalized_shape": (6,), "eps": 1e-3}, ref=_native_layer_norm, nout=3),
          Case("native_layer_norm", [R(0, 4)], {"normalized_shape": (4,)},
               ref=_native_layer_norm, nout=3),
          Case("native_layer_norm_backward",
               [R(3, 8, seed=1), R(3, 8), R(3, 1), R(3, 1, lo=0.5), R(8, seed=2)],
               {"normalized_shape": (8,)}, ref=_native_layer_norm_backward, nout=3, rtol=1e-4),
          Case("native_layer_norm_backward",
               [R(2, 3, 2, seed=1, dtype=torch.float64), R(2, 3, 2, dtype=torch.float64),
                R(2, 1, 1, dtype=torch.float64), R(2, 1, 1, lo=0.5, dtype=torch.float64)],
               {"normalized_shape": (3, 2)}, ref=_native_layer_norm_backward, nout=3),
          Case("fused_cross_entropy", [R(6, 5), I(6, high=5)], ref=_fused_cross_entropy, nout=3),
          Case("fused_cross_entropy", [NC(R(5, 4)), torch.tensor([0, 3, 7, 1, 1]), R(4, lo=0.5)],
               {"ignore_index": 7, "reduction": "sum", "label_smoothing": 0.2},
               ref=_fused_cross_entropy, nout=3),
          Case("fused_cross_entropy", [R(2, 3, 4, dtype=torch.float64), I(2, 4, high=3)],
               {"reduction": "none", "label_smoothing": 0.1}, ref=_fused_cross_entropy, nout=3),
          Case("fused_cross_entropy", [R(3), torch.tensor(2)], ref=_fused_cross_entropy, nout=3),
          Case("fused_cross_entropy", [R(0, 3), I(0, high=3)], {"reduction": "sum"},
               ref=_fused_cross_entropy, nout=3),
          Case("fused_cross_entropy_backward",
               _ce_backward_args(R(6, 5), torch.tensor([0, 4, 1, -100, 2, 2]), "mean"),
               {"label_smoothing": 0.1}, ref=_fused_cross_entropy_backward),
          Case("fused_cross_entropy_backward",
               _ce_backward_args(R(2, 3, 4, dtype=torch.float64), I(2, 4, high=3), "none",
                                 R(3, lo=0.5, dtype=torch.float64)),
               {"reduction": "none", "label_smoothing": 0.3}, ref=_fused_cross_entropy_backward),
          Case("gelu", [R(3, 4)], {"approximate": "tanh"}, ref=F.gelu),
          Case("gelu", [NC(R(3, 4, dtype=torch.float64) * 3)], {"approximate": "tanh"}, ref=F.gelu),
          Case("gelu", [R(0, 3)], ref=F.gelu),
          Case("gelu_backward", [R(3, 4, seed=1), NC(R(3, 4) * 3)],
               ref=lambda g, x, approximate="none": torch.ops.aten.gelu_backward(
                   g, x, approximate=approximate)),
          Case("gelu_backward", [R(5, seed=1, dtype=torch.float64), R(5, dtype=torch.float64)],
               {"approximate": "tanh"},
               ref=lambda g, x, approximate="none": torch.ops.aten.gelu_backward(
                   g, x, approximate=approximate)),
          # Disjoint windows (2x2 stride 2), then overlapping ones.
          Case("max_pool2d_backward", [R(2, 3, 3, 4), R(2, 3, 7, 9)],
               {"kernel_size": (2,), "stride": (2,)},
               ref=lambda g, x, **k: _pool_grad(F.max_pool2d, g, x, **k)),
          Case("max_pool2d_backward", [R(2, 3, 4, 4), R(2, 3, 7, 7)],
               {"kernel_size": (3,), "stride": (2,), "padding": (1,)},
               ref=lambda g, x, **k: _pool_grad(F.max_pool2d, g, x, **k)),
          # At torch's indices: overlapping windows (an element the maximum of several);
          # 3-d, dilated, ceil mode.
          Case("max_pool2d_with_indices_backward",
               _max_pool_backward_args(R(2, 3, 7, 7), kernel_size=3, stride=2, padding=1),
               {"kernel_size": 3, "stride": 2, "padding": 1}, ref=_max_pool_backward),
          Case("max_pool2d_with_indices_backward",
               _max_pool_backward_args(R(3, 6, 7, dtype=torch.float64), kernel_size=(2, 3),
                                       stride=1, dilation=(2, 1), ceil_mode=True),
               {"kernel_size": (2, 3), "stride": 1, "dilation": (2, 1), "ceil_mode": True},
               ref=_max_pool_backward),
          Case("avg_pool2d_backward", [R(1, 2, 3, 3), R(1, 2, 5, 5)],
               {"kernel_size": (2,), "ceil_mode": True, "count_include_pad": False},
               ref=lambda g, x, **k: _pool_grad(F.avg_pool2d, g, x, **k)),
          Case("adaptive_avg_pool2d_backward", [R(2, 3, 3, 2), R(2, 3, 7, 5)],
               ref=lambda g, x: _pool_grad(F.adaptive_avg_pool2d, g, x, output_size=(3, 2))),
          Case("sgd_step", [R(3)], {"n": 1, "lr": 0.1}, ref=lambda *a, **k: ()),
          Case("adam_step", [R(3), R(3, seed=2), R(3, lo=0.1), R()],
               {"n": 1}, ref=lambda *a, **k: ()),
          Case("zero_grads", [R(3)], {}, ref=lambda *a, **k: ()),
          # Without .grad (the reference cases' inputs have none) the total is 0, as
          # PyTorch's; the clipping itself: tests/python/test_clip_grad.py.
          Case("clip_grad_norm_", [R(3), R(2, 2)], {"max_norm": 1.0},
               ref=lambda *a, **k: torch.tensor(0.0))]
    return c
