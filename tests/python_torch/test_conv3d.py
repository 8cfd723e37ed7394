"""3-d convolutions on the tensord device (aten.convolution / convolution_backward with 5-d
input and weight, on the daemon's conv3d rows: oneDNN for float32, direct loops for float64):
values and every output_mask of the backward against CPU PyTorch, for plain and transposed
convolutions of several geometries (stride, padding, dilation, groups, output_padding), a
float64 gradcheck (finite differences), the modules with bias, unbatched input and 'same'
padding, and a small 3-d model's training losses; no op on the CPU fallback (conftest's autouse
check)."""

from __future__ import annotations

import itertools

import pytest

torch = pytest.importorskip("torch")
nn = pytest.importorskip("torch.nn")

from conv_support import D, check_modules, close, to_device, train_losses  # noqa: E402

aten = torch.ops.aten

# (in, out, kernel, stride, padding, dilation, groups, output_padding); per-axis triples where
# a tuple is given.
PLAIN = [(4, 6, 3, 1, 0, 1, 1, 0), (4, 6, (3, 2, 3), (2, 1, 1), (1, 0, 1), (1, 2, 1), 2, 0),
         (4, 6, 2, 3, 2, 2, 2, 0), (6, 6, 3, 1, 2, 2, 6, 0)]
TRANSPOSED = [(4, 6, 3, 1, 0, 1, 1, 0), (4, 6, 3, 2, 1, 1, 1, 1),
              (4, 6, (2, 3, 2), (3, 2, 1), (1, 2, 0), (2, 1, 2), 2, (2, 1, 1)),
              (6, 6, 3, 1, 0, 2, 3, 1)]  # output_padding >= stride (< dilation)


def _triple(v: object) -> list:
    return list(v) if isinstance(v, tuple) else [v] * 3


def _tensors(transposed: bool, geo: tuple, bias: bool, dtype: object = torch.float32) -> tuple:
    cin, cout, k, stride, pad, dil, groups, opad = geo
    g = torch.Generator().manual_seed(0)
    x = torch.randn(2, cin, 7, 6, 5, generator=g, dtype=dtype)
    k = _triple(k)
    wshape = (cin, cout // groups, *k) if transposed else (cout, cin // groups, *k)
    w = torch.randn(*wshape, generator=g, dtype=dtype)
    b = torch.randn(cout, generator=g, dtype=dtype) if bias else None
    return (x, w, b, _triple(stride), _triple(pad), _triple(dil), transposed, _triple(opad),
            groups)




@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("transposed,geo", [(False, g) for g in PLAIN]
                         + [(True, g) for g in TRANSPOSED])
@pytest.mark.parametrize("bias", [True, False])
def test_convolution_and_every_backward_mask(td: object, transposed: bool, geo: tuple,
                                             bias: bool, dtype: object) -> None:
    args = _tensors(transposed, geo, bias, dtype)
    want = aten.convolution(*args)
    close(aten.convolution(*to_device(args, D)), want, atol=1e-4)
    grad = torch.randn(want.shape, generator=torch.Generator().manual_seed(1), dtype=dtype)
    x, w, b, stride, pad, dil, tr, opad, groups = args
    sizes = [b.shape[0]] if b is not None else None
    bias_masks = [False, True] if bias else [False]
    for mask in itertools.product([False, True], [False, True], bias_masks):
        ref = aten.convolution_backward(grad, x, w, sizes, stride, pad, dil, tr, opad, groups,
                                        list(mask))
        got = aten.convolution_backward(grad.to(D), x.to(D), w.to(D), sizes, stride, pad, dil,
                                        tr, opad, groups, list(mask))
        for wanted, gv, rv in zip(mask, got, ref):  # only what the mask asks for
            close(gv, rv if wanted else None, atol=1e-4)


@pytest.mark.parametrize("transposed", [False, True])
def test_float64_gradcheck(td: object, transposed: bool) -> None:
    g = torch.Generator().manual_seed(2)
    x = torch.randn(1, 2, 4, 3, 4, generator=g, dtype=torch.float64).to(D).requires_grad_()
    w = torch.randn(2, 1, 2, 2, 3, generator=g, dtype=torch.float64).to(D).requires_grad_()
    b = torch.randn(2, generator=g, dtype=torch.float64).to(D).requires_grad_()
    if transposed:
        fn = lambda x, w, b: torch.nn.functional.conv_transpose3d(  # noqa: E731
            x, w, b, stride=(2, 1, 2), padding=(0, 1, 1), output_padding=(1, 0, 1), groups=2)
    else:
        fn = lambda x, w, b: torch.nn.functional.conv3d(  # noqa: E731
            x, w, b, stride=(1, 2, 1), padding=1, dilation=(2, 1, 1), groups=2)
    # fast_mode: the projected check, as test_grid_sample.py's (the whole Jacobian: 8 s).
    assert torch.autograd.gradcheck(fn, (x, w, b), eps=1e-6, atol=1e-5, rtol=1e-4,
                                    fast_mode=True)


def test_modules_with_unbatched_input_and_same_padding(td: object) -> None:
    torch.manual_seed(0)
    modules = [nn.Conv3d(3, 4, 4, padding="same"),
               nn.Conv3d(3, 4, (3, 1, 2), padding="valid"),
               nn.ConvTranspose3d(3, 4, 3, stride=2, output_padding=1)]
    check_modules(modules, (3, 5, 6, 4), atol=1e-4)


def _train_3d(device: str) -> list:
    def model() -> nn.Module:
        return nn.Sequential(nn.Conv3d(2, 8, 3, stride=2, padding=1),
                             nn.ReLU(),
                             nn.Conv3d(8, 8, 3, padding=2, dilation=2, groups=4),
                             nn.ReLU(),
                             nn.ConvTranspose3d(8, 2, 4, stride=2, padding=1))

    return train_losses(model, (2, 2, 8, 8, 8), device)


def test_a_3d_autoencoder_trains_like_local_pytorch(td: object) -> None:
    torch.testing.assert_close(_train_3d(D), _train_3d("cpu"), rtol=1e-4, atol=1e-5)
