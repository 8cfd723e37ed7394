"""``unique`` and ``unique_consecutive`` over all elements (``dim=None``): output sizes that are
data, so, as ``nonzero`` (``_data_sized``), the count is read once and the rest asks the daemon
fixed-size questions with its existing rows.

The elements (sorted first by the stable ``sort`` for ``unique``: NaN last) are compared with
their predecessor; each element unlike it (NaN is unlike everything, as in PyTorch, so every NaN
is its own value) starts a group. The number of groups is the one read. The values are the
group starts (``nonzero_static`` of the marks, ``index_select``), the group of each element is a
running sum of the marks (its inverse index, put back in input order through the sort's
permutation), and the counts are a ``scatter_add`` of ones by group. ``unique_parts`` is shared
with the PyTorch device (``tensord.torch._data_sized``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, Optional, Tuple

from . import _calls, _dtype

if TYPE_CHECKING:
    from ._tensor import Tensor

__all__ = ["unique", "unique_consecutive"]

Call = Callable[[str, list, dict], Any]


def unique_parts(call: Call, count: Callable[[Any], int], flat: Any, n: int, sort: bool,
                 want_inverse: bool, want_counts: bool) -> Tuple[Any, Any, Any, int]:
    """(values, inverse or None, counts or None, number of values) of the 1-d daemon tensor
    ``flat`` of ``n`` elements; ``call(name, inputs, attrs)`` runs a daemon row and ``count(t)``
    reads how many elements of ``t`` are nonzero (the one wait). ``inverse`` is 1-d, in
    ``flat``'s order; both index tensors are int64."""
    i64 = _dtype.int64
    if n == 0:
        empty = call("zeros", [], {"shape": [0], "dtype": i64})
        return flat, empty if want_inverse else None, empty if want_counts else None, 0
    perm = None
    if sort:
        flat, perm = call("sort", [flat], {"dim": 0, "stable": True})
    first = call("ones", [], {"shape": [1], "dtype": _dtype.bool_})
    if n > 1:
        later = call("narrow", [flat], {"dim": 0, "start": 1, "length": n - 1})
        earlier = call("narrow", [flat], {"dim": 0, "start": 0, "length": n - 1})
        marks = call("cat", [first, call("ne", [later, earlier], {})], {"dim": 0})
    else:
        marks = first
    k = count(marks)
    starts = call("reshape", [call("nonzero_static", [marks], {"size": k})], {"shape": [-1]})
    values = call("index_select", [flat, starts], {"dim": 0})
    group = None
    if want_inverse or want_counts:
        group = call("sub", [call("cumsum", [marks], {"dim": 0, "dtype": i64}), 1], {})
    inverse = counts = None
    if want_inverse:
        inverse = group
        if perm is not None:  # group of sorted element i belongs at input position perm[i]
            inverse = call("scatter", [call("zeros", [], {"shape": [n], "dtype": i64}), perm,
                                       group], {"dim": 0})
    if want_counts:
        counts = call("scatter_add", [call("zeros", [], {"shape": [k], "dtype": i64}), group,
                                      call("ones", [], {"shape": [n], "dtype": i64})],
                      {"dim": 0})
    return values, inverse, counts, k


def _native(input: Tensor, sort: bool, return_inverse: bool, return_counts: bool,  # noqa: A002
            dim: Optional[int], what: str) -> Any:
    if dim is not None:
        raise NotImplementedError(f"{what}: dim={dim} is not supported on the daemon yet "
                                  "(only dim=None: all elements)")
    s, dev = input._session, input.device

    def call(name: str, inputs: list, attrs: dict) -> Any:
        if not inputs:  # zeros/ones: on the input's device, not the session's default
            attrs = dict(attrs, device=dev)
        return _calls.call(name, inputs, attrs or None, session=s)

    def count(t: Any) -> int:
        return int(call("sum", [call("ne", [t, 0], {})], {"dtype": _dtype.int64}).item())

    flat = call("reshape", [input], {"shape": [-1]})
    values, inverse, counts, _ = unique_parts(call, count, flat, input.numel(), sort,
                                              return_inverse, return_counts)
    out = [values]
    if return_inverse:
        out.append(call("reshape", [inverse], {"shape": list(input.shape)}))
    if return_counts:
        out.append(counts)
    return out[0] if len(out) == 1 else tuple(out)


def unique(input: Tensor, sorted: bool = True, return_inverse: bool = False,  # noqa: A002
           return_counts: bool = False, dim: Optional[int] = None) -> Any:
    """``torch.unique`` (``dim=None``): the distinct elements in ascending order (NaN last, each
    NaN distinct; ``sorted=False`` sorts too, as PyTorch's CPU does), with the inverse indices
    (input's shape) and the counts when asked."""
    return _native(input, True, return_inverse, return_counts, dim, "unique")


def unique_consecutive(input: Tensor, return_inverse: bool = False,  # noqa: A002
                       return_counts: bool = False, dim: Optional[int] = None) -> Any:
    """``torch.unique_consecutive`` (``dim=None``): each run of equal consecutive elements
    collapsed to one, with the inverse indices and the run lengths when asked."""
    return _native(input, False, return_inverse, return_counts, dim, "unique_consecutive")
