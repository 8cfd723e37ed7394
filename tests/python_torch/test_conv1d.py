"""1-d convolutions on the tensord device (aten.convolution / convolution_backward with 3-d
input, mapped onto the daemon's 2-d ops over a unit height): values and every output_mask of
the backward against CPU PyTorch, for plain and transposed convolutions of several geometries,
with no op on the CPU fallback (conftest's autouse check)."""

from __future__ import annotations

import itertools

import pytest

torch = pytest.importorskip("torch")
nn = pytest.importorskip("torch.nn")

from conv_support import D, check_modules, close, to_device, train_losses  # noqa: E402

aten = torch.ops.aten

# (in, out, kernel, stride, padding, dilation, groups, output_padding)
PLAIN = [(4, 6, 3, 1, 0, 1, 1, 0), (4, 6, 3, 2, 1, 1, 1, 0), (4, 6, 4, 3, 2, 2, 2, 0),
         (6, 6, 5, 1, 4, 2, 6, 0)]
TRANSPOSED = [(4, 6, 3, 1, 0, 1, 1, 0), (4, 6, 3, 2, 1, 1, 1, 1), (4, 6, 4, 3, 2, 2, 2, 2),
              (6, 6, 3, 2, 0, 3, 3, 1)]


def _tensors(transposed: bool, geo: tuple, bias: bool) -> tuple:
    cin, cout, k, stride, pad, dil, groups, opad = geo
    g = torch.Generator().manual_seed(0)
    x = torch.randn(2, cin, 11, generator=g)
    wshape = (cin, cout // groups, k) if transposed else (cout, cin // groups, k)
    w = torch.randn(*wshape, generator=g)
    b = torch.randn(cout, generator=g) if bias else None
    return x, w, b, [stride], [pad], [dil], transposed, [opad], groups




@pytest.mark.parametrize("transposed,geo", [(False, g) for g in PLAIN]
                         + [(True, g) for g in TRANSPOSED])
@pytest.mark.parametrize("bias", [True, False])
def test_convolution_and_every_backward_mask(td: object, transposed: bool, geo: tuple,
                                             bias: bool) -> None:
    args = _tensors(transposed, geo, bias)
    want = aten.convolution(*args)
    close(aten.convolution(*to_device(args, D)), want)
    grad = torch.randn(want.shape, generator=torch.Generator().manual_seed(1))
    x, w, b, stride, pad, dil, tr, opad, groups = args
    sizes = [b.shape[0]] if b is not None else None
    bias_masks = [False, True] if bias else [False]
    for mask in itertools.product([False, True], [False, True], bias_masks):
        ref = aten.convolution_backward(grad, x, w, sizes, stride, pad, dil, tr, opad, groups,
                                        list(mask))
        got = aten.convolution_backward(grad.to(D), x.to(D), w.to(D), sizes, stride, pad, dil,
                                        tr, opad, groups, list(mask))
        # Only what the mask asks for: CPU PyTorch fills some unasked outputs (a 4-d weight
        # gradient of a transposed conv1d when only the bias's is asked for).
        for wanted, gv, rv in zip(mask, got, ref):
            close(gv, rv if wanted else None)


def test_modules_with_unbatched_input_and_same_padding(td: object) -> None:
    torch.manual_seed(0)
    modules = [nn.Conv1d(3, 4, 4, padding="same"),
               nn.Conv1d(3, 4, 3, padding="valid"),
               nn.ConvTranspose1d(3, 4, 3, stride=2, output_padding=1)]
    check_modules(modules, (3, 9))


def _train_1d(device: str) -> list:
    def model() -> nn.Module:
        return nn.Sequential(nn.Conv1d(2, 8, 5, stride=2, padding=2),
                             nn.ReLU(),
                             nn.Conv1d(8, 8, 3, padding=2, dilation=2, groups=4),
                             nn.ReLU(),
                             nn.ConvTranspose1d(8, 2, 4, stride=2, padding=1))

    return train_losses(model, (4, 2, 16), device)


def test_a_1d_autoencoder_trains_like_local_pytorch(td: object) -> None:
    torch.testing.assert_close(_train_1d(D), _train_1d("cpu"), rtol=1e-4, atol=1e-5)
