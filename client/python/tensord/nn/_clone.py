"""Deep copies of modules (``copy.deepcopy(module)``, and ``TransformerEncoder``'s copies of
its layer): the same structure and options, with parameters and buffers copied into new
daemon tensors, so that training one copy leaves the other as it was."""

from __future__ import annotations

import copy
from collections import OrderedDict
from typing import Any, Dict, Optional

from .. import _grad
from .._tensor import Tensor, call
from .parameter import Parameter


def _copy_tensor(t: Optional[Tensor], memo: Dict[int, Any]) -> Optional[Tensor]:
    if t is None:
        return None
    if id(t) in memo:  # a tensor shared by two modules stays shared in the copy
        return memo[id(t)]
    with _grad.no_grad():
        new = call("clone", [t])
    if isinstance(t, Parameter):
        new = Parameter._adopt(new, t.requires_grad)
    memo[id(t)] = new
    return new


def clone_module(module: Any, memo: Optional[Dict[int, Any]] = None) -> Any:
    """A deep copy of ``module``: its plain attributes copied shallowly (options, activation
    functions), its parameters, buffers and submodules deeply."""
    memo = {} if memo is None else memo
    if id(module) in memo:
        return memo[id(module)]
    new = copy.copy(module)
    memo[id(module)] = new
    d = new.__dict__
    d["_parameters"] = OrderedDict((k, _copy_tensor(v, memo))
                                   for k, v in module._parameters.items())
    d["_buffers"] = OrderedDict((k, _copy_tensor(v, memo)) for k, v in module._buffers.items())
    d["_modules"] = OrderedDict((k, None if m is None else clone_module(m, memo))
                                for k, m in module._modules.items())
    d["_non_persistent"] = set(module._non_persistent)
    return new
