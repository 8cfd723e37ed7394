"""A per-session op profiler, read like ``torch.profiler``::

    with td.profiler.profile() as prof:
        train_step()
    print(prof.key_averages().table(sort_by="total_time", row_limit=10))
    prof.export_chrome_trace("trace.json")     # chrome://tracing or ui.perfetto.dev

Underneath: ``SetOptions{profile}`` makes the daemon record every Call and Backward of the
session (op, device, start, wall time, bytes held by the outputs, call site) and the phases of
each: ``wait`` (queued in the daemon before it ran), then within the wall time ``decode``
(handles, attributes, checks), ``infer`` (shape inference), ``alloc`` (outputs) and ``kernel``
(on CUDA: the launch); the rest (``other``) is autograd recording and the acknowledgement.
Leaving the block fetches the records (``GetProfile``). ``tensorctl profile SESSION`` reads the
same profiler from outside the client.

The ops the client ran itself while profiling (the PyTorch device's CPU fallback reports each
one: Note [Client fallbacks]) come back counted by name: ``prof.fallbacks``, and a table of them
under ``key_averages().table()``.
"""

from __future__ import annotations

import json
from typing import Any, Dict, List, NamedTuple, Optional

from . import _context

__all__ = ["profile", "OpEvent", "OpAverage"]


class OpEvent(NamedTuple):
    """One op the daemon ran while profiling (times in microseconds)."""

    name: str
    device: str
    start_us: float
    wall_us: float
    bytes_allocated: int
    site: str
    wait_us: float = 0.0
    decode_us: float = 0.0
    infer_us: float = 0.0
    alloc_us: float = 0.0
    kernel_us: float = 0.0
    nodes: tuple = ()  # backward: (node name, start_us, wall_us) per graph node it ran

    @property
    def other_us(self) -> float:
        """Wall time in no phase: autograd recording, the acknowledgement."""
        return max(0.0, self.wall_us - self.decode_us - self.infer_us - self.alloc_us
                   - self.kernel_us)


_PHASES = ("wait", "decode", "infer", "alloc", "kernel", "other")


class OpAverage(NamedTuple):
    """Every event of one (op, device): the rows of ``key_averages()``; ``phases_us`` maps
    each phase (wait, decode, infer, alloc, kernel, other) to its total."""

    name: str
    device: str
    count: int
    total_us: float
    bytes_allocated: int
    phases_us: Dict[str, float] = {}

    @property
    def avg_us(self) -> float:
        return self.total_us / self.count if self.count else 0.0


class _Averages(list):
    fallbacks: Dict[str, int] = {}  # Note [Client fallbacks]: op name -> calls

    def table(self, sort_by: str = "total_time", row_limit: int = 100) -> str:
        """A text table, as ``torch.profiler``'s ``key_averages().table()``."""
        keys = {"total_time": lambda a: a.total_us, "count": lambda a: a.count,
                "avg_time": lambda a: a.avg_us, "bytes": lambda a: a.bytes_allocated}
        key = keys.get(sort_by.replace("cpu_", "").replace("cuda_", ""))
        if key is None:
            raise ValueError(f"sort_by must be one of {sorted(keys)}, got {sort_by!r}")
        rows = sorted(self, key=key, reverse=True)[:row_limit]
        total = sum(a.total_us for a in self) or 1.0
        head = ("Name", "Device", "Calls", "Total", "Total %", "Avg",
                *(f"Avg {p}" for p in _PHASES), "Bytes alloc")
        body = [(a.name, a.device, str(a.count), _us(a.total_us),
                 f"{100.0 * a.total_us / total:.1f}%", _us(a.avg_us),
                 *(_us(a.phases_us.get(p, 0.0) / max(a.count, 1)) for p in _PHASES),
                 _bytes(a.bytes_allocated))
                for a in rows]
        widths = [max(len(r[i]) for r in body + [head]) for i in range(len(head))]
        sep = "-" * (sum(widths) + 2 * len(widths))
        fmt = lambda r: "  ".join(c.ljust(w) if i < 2 else c.rjust(w)  # noqa: E731
                                  for i, (c, w) in enumerate(zip(r, widths)))
        lines = [sep, fmt(head), sep] + [fmt(r) for r in body] + [sep]
        lines.append(f"Self time total: {_us(total)}")
        if self.fallbacks:
            width = max(len(n) for n in self.fallbacks)
            lines.append(f"Ran on the client's CPU instead of the daemon (fallbacks): "
                         f"{sum(self.fallbacks.values())} call(s)")
            lines += [f"  {n.ljust(width)}  {c}" for n, c in sorted(self.fallbacks.items())]
        return "\n".join(lines)


def _us(v: float) -> str:
    return f"{v / 1e6:.3f}s" if v >= 1e6 else f"{v / 1e3:.3f}ms" if v >= 1e3 else f"{v:.3f}us"


def _bytes(n: int) -> str:
    for unit, size in (("Gb", 1 << 30), ("Mb", 1 << 20), ("Kb", 1 << 10)):
        if n >= size:
            return f"{n / size:.2f} {unit}"
    return f"{n} b"


class profile:  # noqa: N801 (torch.profiler's name)
    """Records the ops of ``session`` (default: the default session) inside the block."""

    def __init__(self, session: Any = None) -> None:
        self._session = session
        self.events: List[OpEvent] = []
        self.dropped = 0
        self.fallbacks: Dict[str, int] = {}  # op name -> calls the client ran itself

    def __enter__(self) -> "profile":
        s = self._session = self._session or _context.default_session()
        s.profile_fetch(clear=True)  # forget anything recorded before
        s.set_options(profile=True)
        return self

    def __exit__(self, *exc: Any) -> None:
        s = self._session
        s.set_options(profile=False)
        p = s.profile_fetch(clear=True)
        self.dropped = p.dropped
        self.fallbacks = {f.op: f.count for f in p.fallbacks}
        self.events = [OpEvent(r.op, r.device, r.start_ns / 1e3, r.wall_ns / 1e3,
                               r.bytes_allocated, r.site, r.wait_ns / 1e3, r.decode_ns / 1e3,
                               r.infer_ns / 1e3, r.alloc_ns / 1e3, r.kernel_ns / 1e3,
                               tuple((n.name, n.start_ns / 1e3, n.wall_ns / 1e3)
                                     for n in r.nodes))
                       for r in p.ops]

    def key_averages(self) -> _Averages:
        """Events grouped by (op, device); its ``table()`` lists the client's fallbacks too."""
        groups: Dict[tuple, List[OpEvent]] = {}
        for e in self.events:
            groups.setdefault((e.name, e.device), []).append(e)
        averages = _Averages(OpAverage(n, d, len(es), sum(e.wall_us for e in es),
                                       sum(e.bytes_allocated for e in es),
                                       {p: sum(getattr(e, p + "_us") for e in es)
                                        for p in _PHASES})
                             for (n, d), es in groups.items())
        averages.fallbacks = dict(self.fallbacks)
        return averages

    def backward_nodes(self) -> _Averages:
        """The graph nodes the backward passes ran, grouped by name (their wall time counts
        as kernel time): ``prof.backward_nodes().table()``."""
        groups: Dict[tuple, List[float]] = {}
        for e in self.events:
            for name, _, wall in e.nodes:
                groups.setdefault((name, e.device), []).append(wall)
        return _Averages(OpAverage(n, d, len(ws), sum(ws), 0, {"kernel": sum(ws)})
                         for (n, d), ws in groups.items())

    def export_chrome_trace(self, path: str, pid: Optional[str] = None) -> None:
        """Writes the events as Chrome trace JSON (chrome://tracing, ui.perfetto.dev): each op
        a slice on its device's track with its phases nested in order (decode, infer, alloc,
        kernel); the queue wait is in the op's args."""
        pid = pid or f"tensord session {self._session.session_id}"
        trace: List[Dict[str, Any]] = []
        for e in self.events:
            trace.append({"name": e.name, "ph": "X", "ts": e.start_us, "dur": e.wall_us,
                          "pid": pid, "tid": e.device, "cat": "op",
                          "args": {"bytes_allocated": e.bytes_allocated, "site": e.site,
                                   "wait_us": e.wait_us}})
            for name, start, wall in e.nodes:  # a backward: its nodes at their times
                trace.append({"name": name, "ph": "X", "ts": start, "dur": wall, "pid": pid,
                              "tid": e.device, "cat": "node"})
            if e.nodes:
                continue
            at = e.start_us
            for phase in ("decode", "infer", "alloc", "kernel"):
                dur = getattr(e, phase + "_us")
                if dur > 0:
                    trace.append({"name": phase, "ph": "X", "ts": at, "dur": dur, "pid": pid,
                                  "tid": e.device, "cat": "phase"})
                    at += dur
        with open(path, "w") as f:
            json.dump({"traceEvents": trace, "displayTimeUnit": "ms"}, f)
