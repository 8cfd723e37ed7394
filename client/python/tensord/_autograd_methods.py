"""Tensor's autograd surface: ``requires_grad``, ``grad``, ``grad_fn``, ``is_leaf``,
``backward``, ``detach``, as in PyTorch.

The graph lives in the daemon (docs/protocol.md "Autograd"); these are thin wrappers over its
commands. What costs a round trip, and why:

- ``requires_grad``, ``is_leaf`` and ``grad_fn`` come from the Ack of the command that made the
  tensor (usually already there, like ``shape``);
- ``t.grad`` sends ``GetGrad`` and waits for its Ack: the client cannot know without asking
  whether the daemon holds a gradient (``None``) or not;
- ``t.grad = g``, ``requires_grad_()`` and ``detach()`` are queued like ops and never wait;
- ``backward()`` is one ``Backward`` command followed by a synchronize, so a failing backward
  (backward twice without ``retain_graph``, a saved tensor modified in place, a root that does
  not require grad) raises at the ``backward()`` line as in PyTorch, not later (see
  ``tensord.autograd.backward``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Optional

from . import _calls, _grad
from ._site import call_site

if TYPE_CHECKING:
    from ._tensor import Tensor


class GradFn:
    """The graph node that produced a tensor, by name (the graph itself lives in the daemon)."""

    __slots__ = ("_name",)

    def __init__(self, name: str) -> None:
        self._name = name

    def name(self) -> str:
        """The node's name, e.g. ``"MulBackward0"`` (as ``torch.autograd.graph.Node.name``)."""
        return self._name

    def __repr__(self) -> str:
        return f"<{self._name} object>"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, GradFn) and other._name == self._name

    def __hash__(self) -> int:
        return hash(self._name)


class AutogradMethods:
    """Mixed into ``Tensor``; see the module docstring."""

    __slots__ = ()

    @property
    def requires_grad(self) -> bool:
        """Whether autograd records ops on this tensor. Settable on leaves."""
        rg = self._rg  # type: ignore[attr-defined]
        return rg if rg is not None else self._meta().requires_grad  # type: ignore[attr-defined]

    @requires_grad.setter
    def requires_grad(self, flag: bool) -> None:
        self.requires_grad_(flag)

    def requires_grad_(self, requires_grad: bool = True) -> Any:
        """Sets ``requires_grad`` of this leaf in place; returns the tensor. As in PyTorch,
        turning it off on a non-leaf is an error, raised here, and turning it on is a no-op
        there (so this reads the tensor's Ack, like ``shape``)."""
        flag = bool(requires_grad)
        info = self._meta()  # type: ignore[attr-defined]
        if not info.is_leaf:
            if flag:
                return self  # a non-leaf that requires grad already does
            raise RuntimeError("you can only change requires_grad flags of leaf variables. If "
                               "you want to use a computed variable in a subgraph that doesn't "
                               "require differentiation use var_no_grad = var.detach().")
        self._session.set_requires_grad(self._handle, flag, call_site())  # type: ignore
        self._rg = flag  # type: ignore[attr-defined]
        return self

    @property
    def is_leaf(self) -> bool:
        """True for tensors no recorded op produced (user-created, or not requiring grad)."""
        return self._meta().is_leaf  # type: ignore[attr-defined]

    @property
    def grad_fn(self) -> Optional[GradFn]:
        """The node that produced this tensor (``.name()`` gives e.g. ``"AddBackward0"``), or
        None for leaves."""
        name = self._meta().grad_fn  # type: ignore[attr-defined]
        return GradFn(name) if name else None

    @property
    def grad(self) -> Optional["Tensor"]:
        """The gradient accumulated by ``backward()``, or None. Waits for the daemon's answer
        (one round trip)."""
        s = self._session  # type: ignore[attr-defined]
        handle, seq = s.get_grad(self._handle)  # type: ignore[attr-defined]
        g = _calls.Tensor._make(s, handle, seq, self._dev)  # type: ignore[attr-defined]
        return None if g._meta().is_none else g

    @grad.setter
    def grad(self, value: Optional["Tensor"]) -> None:
        if value is None:
            self._session.set_grad(self._handle, 0)  # type: ignore[attr-defined]
            return
        if not isinstance(value, _calls.Tensor):
            raise TypeError(f"assigned grad expected to be a Tensor or None but got "
                            f"{type(value).__name__}")
        if value._session is not self._session:  # type: ignore[attr-defined]
            raise ValueError("assigned grad belongs to a different tensord session")
        self._session.set_grad(self._handle, value._handle)  # type: ignore[attr-defined]

    def backward(self, gradient: Optional["Tensor"] = None,
                 retain_graph: Optional[bool] = None, create_graph: bool = False,
                 inputs: Any = None) -> None:
        """Accumulates the gradient of this tensor into the ``.grad`` of the leaves: one
        ``Backward`` command, then a synchronize (errors raise here). ``gradient`` is needed for
        non-scalar tensors; ``retain_graph`` defaults to ``create_graph``."""
        from .autograd import backward
        backward([self], None if gradient is None else [gradient], retain_graph,  # type: ignore
                 create_graph, inputs=inputs)

    def detach(self) -> "Tensor":
        """A new tensor sharing this one's storage, outside the graph (a leaf without grad)."""
        if "detach" in self._session.catalog:  # type: ignore[attr-defined]
            return _calls.call("detach", [self])
        with _grad.no_grad():  # an alias made with grad off is out of the graph too
            return _calls.call("view", [self], {"shape": list(self.shape)})  # type: ignore

    @property
    def data(self) -> "Tensor":
        """``detach()``: the values outside the graph (shares storage)."""
        return self.detach()
