"""Shared by the autograd/nn/optim tests: fixtures that skip while the daemon lacks autograd
(it answers Backward with UNIMPLEMENTED) or the fused optimizer ops."""

from __future__ import annotations

from typing import Iterator

import pytest

import tensord as td


def _has_autograd() -> bool:
    x = td.tensor([1.0, 2.0], requires_grad=True)
    try:
        (x * 2).sum().backward()
    except td.UnimplementedError:
        return False
    return True


@pytest.fixture
def grad_session(session: td.Session) -> Iterator[td.Session]:
    """The ``session`` fixture, skipping the test when the daemon has no autograd yet."""
    if not _has_autograd():
        pytest.skip("the daemon answers Backward with UNIMPLEMENTED (no autograd engine yet)")
    yield session


@pytest.fixture
def optim_session(grad_session: td.Session) -> Iterator[td.Session]:
    """``grad_session``, also skipping when the fused optimizer ops are missing."""
    missing = [op for op in ("sgd_step", "adam_step") if op not in grad_session.catalog]
    if missing:
        pytest.skip(f"the daemon's catalog has no {missing} yet")
    yield grad_session
