"""Note [Direct calls] (tensord/torch/_direct.py): an op called again with the same argument key
queues its recorded Call without its rule. Each case runs an op several times on new values of
the same shapes (the third call onwards takes the recorded Call) and compares every result with
local PyTorch; Python numbers, which a pointwise op's key holds by type only, change between
calls (each replay must send its own: a stale one fails these), and so do the things the
recording must refuse (a CPU scalar tensor, seeded random ops). In-place ops and lists:
test_direct_calls_inplace.py.

The suite's meta check (TENSORD_TORCH_CHECK=1) turns the path off, so these tests turn the
check off for their own calls."""

from __future__ import annotations

from typing import Any, Callable

import pytest
from conftest import recorded

torch = pytest.importorskip("torch")

D = "tensord"


CASES = {
    "add": lambda x, y: x + y,
    "relu": lambda x, y: x.relu(),
    "sum_dim": lambda x, y: x.sum(1),
    "mean_keepdim": lambda x, y: x.mean(0, keepdim=True),
    "t": lambda x, y: x.t(),
    "mm": lambda x, y: x @ y.t(),
    "softmax": lambda x, y: torch.softmax(x, -1),
    "transpose_of_slice": lambda x, y: x[1:].transpose(0, 1),
    "view": lambda x, y: x.view(-1),
    "expand": lambda x, y: x[:1].expand(x.shape[0], -1),
    "where": lambda x, y: torch.where(x > y, x, y),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_repeated_calls_match_torch(production: Any, name: str) -> None:
    fn: Callable[..., Any] = CASES[name]
    n = 3 + sorted(CASES).index(name)  # a shape of its own: keys no other case recorded
    before = recorded(production)
    for i in range(5):
        x, y = torch.randn(n, n + 2), torch.randn(n, n + 2)
        torch.testing.assert_close(fn(x.to(D), y.to(D)).cpu(), fn(x, y), msg=f"call {i}")
    assert recorded(production) > before, "no call took the recorded path"


def test_views_keep_their_base_offset(production: Any) -> None:
    base = torch.randn(10, 3)
    on = base.to(D)
    for start in (1, 2, 5, 7, 2):  # one key: the offset is not in it
        torch.testing.assert_close(on[start:start + 3].t().cpu(), base[start:start + 3].t())


def test_number_values_outside_the_key(production: Any) -> None:
    x, y = torch.randn(5), torch.randn(5)
    dx, dy = x.to(D), y.to(D)
    for alpha in (1, 2, 3, 2.5, -1):  # add.Tensor is pointwise: the key holds int/float only
        torch.testing.assert_close(torch.add(dx, dy, alpha=alpha).cpu(),
                                   torch.add(x, y, alpha=alpha))
    for k in (2.0, 3.0, -0.5, 7.0):
        torch.testing.assert_close((dx * k).cpu(), x * k)
        torch.testing.assert_close(dx.clamp(min=k - 2.5).cpu(), x.clamp(min=k - 2.5))
    for v in (0.1, 0.4, -0.3, 0.9):  # a CPU scalar tensor acts as its value
        lo = torch.tensor(v)
        torch.testing.assert_close(torch.maximum(dx, lo).cpu(), torch.maximum(x, lo))


def test_seeded_ops_draw_anew(production: Any) -> None:
    x = torch.ones(4096, device=D)
    masks = [torch.nn.functional.dropout(x, 0.5).cpu() for _ in range(4)]
    for m in masks:
        assert set(m.unique().tolist()) <= {0.0, 2.0}
    assert not torch.equal(masks[2], masks[3]), "a dropout call repeated its mask"


def test_inputs_without_a_payload_yet(production: Any) -> None:
    for i in range(4):
        e = torch.zeros(3, 4, device=D)  # a lazy payload (Note [Lazy payload]) bound by fill
        f = torch.empty(3, 4, device=D)  # none at all: made when the op reads it
        assert torch.equal((e + 1).relu().cpu(), torch.ones(3, 4)), f"call {i}"
        assert f.t().shape == (4, 3)


def test_a_new_session_does_not_reuse_entries(production: Any, daemon: str) -> None:
    import tensord.torch as tdt
    x = torch.randn(3, 3)
    for _ in range(4):
        torch.testing.assert_close((x.to(D) * x.to(D)).sum(0).cpu(), (x * x).sum(0))
    tdt.close()
    tdt.connect(daemon)
    for _ in range(4):
        torch.testing.assert_close((x.to(D) * x.to(D)).sum(0).cpu(), (x * x).sum(0))


def test_arguments_sharing_a_payload_are_not_recorded_in_their_order(production: Any) -> None:
    # rsub(y, x) is the daemon's sub(x, y): the rule swaps its inputs. Recorded with both
    # arguments one payload, the order would be undecided for the calls after.
    a = torch.randn(3, 5)
    da = a.to(D)
    for _ in range(3):
        torch.testing.assert_close(torch.rsub(da, da).cpu(), torch.rsub(a, a))
    for _ in range(4):
        x, y = torch.randn(3, 5), torch.randn(3, 5)
        torch.testing.assert_close(torch.rsub(x.to(D), y.to(D)).cpu(), torch.rsub(x, y))


# Pointwise ops whose numbers the recorded Call takes from each call (Note [Direct calls]): as
# inputs (wrapped-number handles) or as attributes. Each gets new numbers on every call.
NUMBER_CASES = {
    "mul": lambda x, y, k: x * k,
    "rmul": lambda x, y, k: k * x,
    "add_number": lambda x, y, k: x + k,
    "rsub": lambda x, y, k: k - x,
    "div": lambda x, y, k: x / k,
    "pow": lambda x, y, k: x.abs() ** k,
    "add_alpha": lambda x, y, k: torch.add(x, y, alpha=k),
    "sub_alpha": lambda x, y, k: torch.sub(x, y, alpha=k),
    "clamp_min": lambda x, y, k: x.clamp(min=k),
    "clamp_both": lambda x, y, k: x.clamp(k - 1.0, k),
    "gt": lambda x, y, k: x > k,
    "masked_fill": lambda x, y, k: x.masked_fill(y > 0, k),
    "leaky_relu": lambda x, y, k: torch.nn.functional.leaky_relu(x, k),
    "where_number": lambda x, y, k: torch.where(x > 0, x, y * k),
}
NUMBERS = (2.0, 3.5, -0.5, 0.25, 7.0, 1.0, -3.0)


@pytest.mark.parametrize("name", sorted(NUMBER_CASES))
def test_numbers_change_between_replays(production: Any, name: str) -> None:
    fn = NUMBER_CASES[name]
    n = 20 + sorted(NUMBER_CASES).index(name)  # a shape of its own
    x, y = torch.randn(3, n), torch.randn(3, n)
    dx, dy = x.to(D), y.to(D)
    before = recorded(production)
    for k in NUMBERS:
        torch.testing.assert_close(fn(dx, dy, k).cpu(), fn(x, y, k), msg=f"number {k}")
    assert recorded(production) > before, "no call took the recorded path"


@pytest.mark.parametrize("dtype", [torch.int64, torch.int32, torch.uint8, torch.bool,
                                   torch.float16, torch.float32, torch.float64])
def test_numbers_promote_as_pythons(production: Any, dtype: Any) -> None:
    base = torch.arange(-3, 9).reshape(3, 4) % (2 if dtype is torch.bool else 7)
    x = base.to(dtype)
    dx = x.to(D)
    before = recorded(production)
    for k in (2, 3, 0.5, 0.1, True, False, 2, 0.25):  # int, float, bool keys, each repeated
        for fn in (lambda t: t * k, lambda t: t + k, lambda t: t >= k):
            want = fn(x)
            got = fn(dx).cpu()
            assert got.dtype == want.dtype, (dtype, k)
            assert torch.equal(got, want), (dtype, k, got, want)  # float64 * 0.1 in double
    assert recorded(production) > before, "no call took the recorded path"


def test_the_sign_of_zero_and_nan_numbers(production: Any) -> None:
    x = torch.tensor([1.0, -2.0, 0.0, 3.0])
    dx = x.to(D)
    for k in (0.0, -0.0, 0.0, -0.0, float("nan"), 0.0, -0.0):  # one key: float
        want, got = x * k, (dx * k).cpu()
        assert torch.equal(torch.signbit(got), torch.signbit(want)), k
        torch.testing.assert_close(got, want, equal_nan=True)


def test_gradients_take_each_calls_numbers(production: Any) -> None:
    x0, y0 = torch.randn(4, 3), torch.randn(4, 3)
    for k in (2.0, -1.5, 0.5, 3.0, 1.0):
        x, y = x0.to(D).requires_grad_(), y0.to(D).requires_grad_()
        (torch.add(x * k, y, alpha=k + 1.0) ** 2).sum().backward()
        cx, cy = x0.clone().requires_grad_(), y0.clone().requires_grad_()
        (torch.add(cx * k, cy, alpha=k + 1.0) ** 2).sum().backward()
        torch.testing.assert_close(x.grad.cpu(), cx.grad, msg=f"number {k}")
        torch.testing.assert_close(y.grad.cpu(), cy.grad, msg=f"number {k}")


def test_more_numbers_than_the_session_keeps_handles_for(production: Any) -> None:
    from tensord.torch import _direct_numbers
    x = torch.randn(6)
    dx = x.to(D)
    ks = [i * 0.37 - 20 for i in range(_direct_numbers.MAX_NUMBERS + 40)]
    outs = [dx * k for k in ks]  # queued before any read: released handles stay correct
    for k, out in zip(ks, outs):
        torch.testing.assert_close(out.cpu(), x * k, msg=f"number {k}")


def test_numbers_the_rule_changes_or_shares_are_still_right(production: Any) -> None:
    x, y = torch.randn(5), torch.randn(5)
    dx, dy = x.to(D), y.to(D)
    for alpha in (2, 3, -1, 2, 5):  # int: the rule passes float(alpha), a new object
        torch.testing.assert_close(torch.add(dx, dy, alpha=alpha).cpu(),
                                   torch.add(x, y, alpha=alpha))
    for v in (0.5, 0.25, -1.0, 0.5, 2.0):  # one object as both bounds, then two
        torch.testing.assert_close(dx.clamp(v, v).cpu(), x.clamp(v, v))
        torch.testing.assert_close(dx.clamp(v - 1, v).cpu(), x.clamp(v - 1, v))
