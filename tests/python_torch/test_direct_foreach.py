"""Note [Foreach replay] (tensord/torch/_foreach.py): a ``_foreach_`` call whose per-tensor
Calls are all recorded queues them in one loop. Each case runs a foreach op several times on
the same tensors with new numbers (an optimizer's changing step sizes) and compares every
result with local PyTorch; the plan must have been taken for the ops whose per-tensor op is
one daemon Call."""

from __future__ import annotations

from typing import Any, Callable, List

import pytest

torch = pytest.importorskip("torch")

D = "tensord"
KS = (0.9, 1.5, -0.25, 2.0, 0.1, 3.0)


def plans() -> int:
    from tensord.torch import _foreach
    return sum(1 for p in _foreach._plans.values() if isinstance(p, _foreach._Plan))


def lists(n: int, shapes: List[tuple]) -> tuple:
    cpu = [[torch.randn(*s) for s in shapes] for _ in range(n)]
    return cpu, [[x.to(D) for x in xs] for xs in cpu]


SHAPES = [(3, 4), (5,), (2, 2, 3), (3, 4)]  # one shape twice: two positions, one per-tensor key

# (number of tensor lists, the call on (lists, k), whether one daemon Call per tensor)
CASES = {
    "mul_scalar": (1, lambda ls, k: torch._foreach_mul_(ls[0], k), True),
    "mul_scalarlist": (1, lambda ls, k: torch._foreach_mul_(ls[0], [k, k + 1, -k, 2.0]), True),
    "mul_list": (2, lambda ls, k: torch._foreach_mul_(ls[0], ls[1]), True),
    "add_scalar": (1, lambda ls, k: torch._foreach_add_(ls[0], k), True),
    "add_list_alpha": (2, lambda ls, k: torch._foreach_add_(ls[0], ls[1], alpha=k), True),
    "add_scalarlist": (1, lambda ls, k: torch._foreach_add_(ls[0], [k, 1.0, k * 2, -k]), True),
    "div_scalarlist": (1, lambda ls, k: torch._foreach_div_(ls[0], [k, 2.0, -k, k + 4]), True),
    "sub_scalar": (1, lambda ls, k: torch._foreach_sub_(ls[0], k), True),
    "sqrt": (1, lambda ls, k: torch._foreach_sqrt(torch._foreach_abs(ls[0])), True),
    "neg": (1, lambda ls, k: torch._foreach_neg(ls[0]), True),
    "add_out_of_place": (2, lambda ls, k: torch._foreach_add(ls[0], ls[1], alpha=k), True),
    "mul_out_of_place": (1, lambda ls, k: torch._foreach_mul(ls[0], k), True),
    "addcmul_": (3, lambda ls, k: torch._foreach_addcmul_(ls[0], ls[1], ls[2], k), False),
    "addcdiv_": (3, lambda ls, k: torch._foreach_addcdiv_(
        ls[0], ls[1], torch._foreach_add(torch._foreach_abs(ls[2]), 1.0), [k, k, 1.0, -k]),
        False),
    "lerp_": (2, lambda ls, k: torch._foreach_lerp_(ls[0], ls[1], k / 4), False),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_foreach_calls_match_torch(production: Any, name: str) -> None:
    n, fn, planned = CASES[name]
    fn: Callable[..., Any]
    shapes = [tuple(d + sorted(CASES).index(name) for d in s) for s in SHAPES]  # own keys
    cpu, dev = lists(n, shapes)
    before = plans()
    for k in KS:
        want, got = fn(cpu, k), fn(dev, k)
        if want is None:  # in place: the first list
            want, got = cpu[0], dev[0]
        for w, g in zip(want, got):
            torch.testing.assert_close(g.cpu(), w, msg=f"number {k}")
    if planned:
        assert plans() > before, "no foreach call took a plan"


def test_versions_are_bumped(production: Any) -> None:
    xs = [torch.randn(13).to(D) for _ in range(3)]
    for k in KS:
        versions = [x._version for x in xs]
        torch._foreach_mul_(xs, k)
        assert all(x._version > v for x, v in zip(xs, versions)), f"number {k}"


def test_tensors_without_a_payload_yet(production: Any) -> None:
    for k in KS:
        xs = [torch.ones(2, 13, device=D), torch.empty(2, 13, device=D).fill_(2.0)]
        ys = torch._foreach_mul(xs, k)
        torch._foreach_add_(xs, ys)
        assert torch.equal(xs[0].cpu(), torch.full((2, 13), 1.0 + k)), k
        assert torch.equal(xs[1].cpu(), torch.full((2, 13), 2.0 + 2.0 * k)), k


def test_lists_of_new_tensors_each_call(production: Any) -> None:
    # An optimizer's lists are rebuilt every step; the key holds metadata only.
    for k in KS:
        cpu = [torch.randn(4, 12) for _ in range(3)]
        dev = [x.to(D) for x in cpu]
        torch._foreach_mul_(cpu, k)
        torch._foreach_mul_(dev, k)
        for c, d in zip(cpu, dev):
            torch.testing.assert_close(d.cpu(), c, msg=f"number {k}")


def test_a_list_sharing_one_tensor(production: Any) -> None:
    x = torch.randn(11)
    dx = x.to(D)
    y = torch.randn(11)
    dy = y.to(D)
    for k in KS:  # [x, y] recorded, then [x, x]: the same key, x written twice
        for c, d in (([x, y], [dx, dy]), ([x, x], [dx, dx])):
            torch._foreach_add_(c, k)
            torch._foreach_add_(d, k)
            torch.testing.assert_close(dx.cpu(), x, msg=f"number {k}")
            torch.testing.assert_close(dy.cpu(), y, msg=f"number {k}")


@pytest.mark.parametrize("make", [
    lambda p: torch.optim.AdamW(p, lr=0.05, weight_decay=0.1, foreach=True),
    lambda p: torch.optim.Adam(p, lr=0.05, amsgrad=True, foreach=True),
    lambda p: torch.optim.SGD(p, lr=0.1, momentum=0.9, nesterov=True, foreach=True),
], ids=["adamw", "adam_amsgrad", "sgd_nesterov"])
def test_foreach_optimizers_match_torch(production: Any, make: Any) -> None:
    torch.manual_seed(0)
    ref = torch.nn.Sequential(torch.nn.Linear(6, 5), torch.nn.Tanh(), torch.nn.Linear(5, 3))
    model = torch.nn.Sequential(torch.nn.Linear(6, 5), torch.nn.Tanh(), torch.nn.Linear(5, 3))
    model.load_state_dict(ref.state_dict())
    model.to(D)
    o_ref, o_dev = make(ref.parameters()), make(model.parameters())
    for step in range(6):
        x, y = torch.randn(7, 6), torch.randn(7, 3)
        for m, o, a, b in ((ref, o_ref, x, y), (model, o_dev, x.to(D), y.to(D))):
            o.zero_grad()
            torch.nn.functional.mse_loss(m(a), b).backward()
            o.step()
        for p, q in zip(ref.parameters(), model.parameters()):
            torch.testing.assert_close(q.detach().cpu(), p.detach(), msg=f"step {step}")
