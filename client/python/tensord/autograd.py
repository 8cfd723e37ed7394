"""``tensord.autograd``: ``backward`` and ``grad`` as in ``torch.autograd``.

The engine runs in the daemon: a whole backward pass is one ``Backward`` command. ``backward``
then synchronizes once, so that its failures (a second backward through a freed graph, a saved
tensor modified in place, a root that does not require grad) raise at the call, as in PyTorch;
that costs one round trip per backward, never one per graph node. ``grad`` waits for its result
handles' Ack instead (it must know which inputs were unused), which raises its failure too.
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Sequence, Tuple, Union

from . import _tensor
from ._grad import enable_grad, is_grad_enabled, no_grad, set_grad_enabled
from ._site import call_site
from ._tensor import Tensor

__all__ = ["backward", "grad", "no_grad", "enable_grad", "set_grad_enabled", "is_grad_enabled"]

_Tensors = Union[Tensor, Sequence[Tensor]]


def _as_list(x: Any, what: str) -> List[Any]:
    if isinstance(x, Tensor):
        return [x]
    if x is None:
        return []
    out = list(x)
    for t in out:
        if t is not None and not isinstance(t, Tensor):
            raise TypeError(f"{what}: expected Tensors, got {type(t).__name__}")
    return out


def _grads(roots: List[Tensor], grads: Optional[Sequence[Optional[Tensor]]]
           ) -> Tuple[List[int], List[Tensor]]:
    """Handles for Backward.grads: empty when all are implicit (scalar roots), else one per
    root (ones for the implicit ones, as PyTorch); and the tensors to keep alive until the
    Backward is queued."""
    if grads is None or all(g is None for g in grads):
        return [], []
    if len(grads) != len(roots):
        raise RuntimeError(f"grad can be implicitly created only for scalar outputs; got "
                           f"{len(grads)} gradients for {len(roots)} outputs")
    out = []
    keep = []
    for r, g in zip(roots, grads):
        if g is None:
            if r.numel() != 1:
                raise RuntimeError("grad can be implicitly created only for scalar outputs")
            g = _tensor.call("ones_like", [r])
            keep.append(g)
        elif not isinstance(g, Tensor):
            raise TypeError(f"gradients must be Tensors, got {type(g).__name__}")
        out.append(g._handle)
    return out, keep


def _check_session(ts: Sequence[Tensor]) -> Any:
    s = ts[0]._session
    for t in ts:
        if t._session is not s:
            raise ValueError("autograd: tensors belong to different tensord sessions")
    return s


def backward(tensors: _Tensors, grad_tensors: Optional[Sequence[Optional[Tensor]]] = None,
             retain_graph: Optional[bool] = None, create_graph: bool = False,
             inputs: Optional[_Tensors] = None) -> None:
    """Accumulates the gradients of ``tensors`` into the leaves' ``.grad``: one daemon command,
    not waited for. Its errors raise at the next value read, ``synchronize()`` or
    ``backward()``, naming this call site (Note [Deferred backward errors], ``_batch.py``).
    With ``inputs``, only those tensors' ``.grad`` are updated."""
    roots = _as_list(tensors, "backward")
    if isinstance(grad_tensors, Tensor):
        grad_tensors = [grad_tensors]
    if not roots:
        raise RuntimeError("backward() needs at least one tensor")
    s = _check_session(roots)
    if retain_graph is None:
        retain_graph = create_graph
    if inputs is not None:
        ins = _as_list(inputs, "backward(inputs=)")
        gs = grad(roots, ins, grad_tensors, retain_graph=retain_graph, create_graph=create_graph,
                  allow_unused=True)
        for x, g in zip(ins, gs):
            if g is not None:
                old = x.grad
                x.grad = g if old is None else old + g
        return
    handles, keep = _grads(roots, grad_tensors)
    s.backward([r._handle for r in roots], handles, retain_graph=bool(retain_graph),
               create_graph=bool(create_graph), site=call_site())
    del keep


def grad(outputs: _Tensors, inputs: _Tensors,
         grad_outputs: Optional[Sequence[Optional[Tensor]]] = None,
         retain_graph: Optional[bool] = None, create_graph: bool = False,
         allow_unused: bool = False) -> Tuple[Optional[Tensor], ...]:
    """The gradients of ``outputs`` with respect to ``inputs`` (one per input; None for an
    unused input when ``allow_unused``), without touching any ``.grad``. With
    ``create_graph=True`` the results are themselves differentiable (second order)."""
    roots = _as_list(outputs, "grad(outputs)")
    ins = _as_list(inputs, "grad(inputs)")
    if isinstance(grad_outputs, Tensor):
        grad_outputs = [grad_outputs]
    if not roots or not ins:
        raise RuntimeError("grad() needs at least one output and one input")
    s = _check_session(roots + ins)
    if retain_graph is None:
        retain_graph = create_graph
    handles, keep = _grads(roots, grad_outputs)
    first, seq = s.backward([r._handle for r in roots], handles,
                            retain_graph=bool(retain_graph), create_graph=bool(create_graph),
                            inputs=[x._handle for x in ins], allow_unused=bool(allow_unused),
                            site=call_site())
    del keep
    results = [Tensor._make(s, first + i, seq, x._dev) for i, x in enumerate(ins)]
    out: List[Optional[Tensor]] = []
    for i, r in enumerate(results):
        info = r._meta()  # raises the backward's error
        if info.is_none:
            if not allow_unused:
                raise RuntimeError(f"One of the differentiated Tensors (input {i}) appears to "
                                   "not have been used in the graph. Set allow_unused=True if "
                                   "this is the desired behavior.")
            out.append(None)
        else:
            out.append(r)
    return tuple(out)


def grads_of(params: Sequence[Tensor]) -> List[Optional[Tensor]]:
    """The ``.grad`` of each of ``params`` (None where there is none), asked in one batch:
    one round trip for all of them, not one per parameter (optimizers use this)."""
    asked = []
    for p in params:
        h, seq = p._session.get_grad(p._handle)
        asked.append(Tensor._make(p._session, h, seq, p._dev))
    return [None if g._meta().is_none else g for g in asked]


def zero_grads(params: Sequence[Tensor], set_to_none: bool = True) -> None:
    """``zero_grad`` of modules and optimizers: ``.grad = None`` for each parameter, or, with
    ``set_to_none=False``, existing gradients zeroed in place by the daemon (``zero_grads``,
    which knows which exist); queued either way, no wait."""
    if set_to_none:
        for p in params:
            p._session.set_grad(p._handle, 0)
        return
    by_session: Dict[int, List[Tensor]] = {}
    for p in params:
        by_session.setdefault(id(p._session), []).append(p)
    for group in by_session.values():
        _tensor.call("zero_grads", group, {}, num_outputs=0,
                     why="zero_grad(set_to_none=False) comes with the daemon's autograd")
