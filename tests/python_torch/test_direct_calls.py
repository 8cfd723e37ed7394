"""Note [Direct calls] (tensord/torch/_direct.py): an op called again with the same argument key
queues its recorded Call without its rule. Each case runs an op several times on new values of
the same shapes (the third call onwards takes the recorded Call) and compares every result with
local PyTorch; the cases the recording must refuse (a number whose value the key does not hold,
a CPU scalar tensor, seeded random ops) change that value between calls.

The suite's meta check (TENSORD_TORCH_CHECK=1) turns the path off, so these tests turn the
check off for their own calls."""

from __future__ import annotations

from typing import Any, Callable

import pytest

torch = pytest.importorskip("torch")

D = "tensord"


@pytest.fixture
def production(td: Any, monkeypatch: pytest.MonkeyPatch) -> Any:
    from tensord.torch import _dispatch
    monkeypatch.setattr(_dispatch, "CHECK", False)
    return _dispatch


def recorded(dispatch: Any) -> int:
    return sum(1 for v in dispatch._plain.values() if v[5] is not None)


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
