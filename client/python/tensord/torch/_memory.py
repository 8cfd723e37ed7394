"""``torch.tensord.memory_allocated()`` / ``memory_reserved()`` / ``memory_stats()``: the
daemon's allocator statistics for the device behind ``tensord:0``.

They come from the daemon's Admin service (``MemoryStats``, the numbers ``tensorctl memory``
shows), asked over the device session's address with its token and credentials, so they need
a token with admin rights (or a daemon run with ``--insecure``); without one they raise
``PermissionError`` saying so. Each call first waits for the ops queued so far (one
round trip), since the daemon allocates when it runs an op, not when the client queues it.

- ``memory_stats()``: the device allocator's counters under ``torch.cuda.memory_stats()``'s
  keys (``allocated_bytes.all.current``, ``reserved_bytes.all.peak``, ``num_ooms`` ...): the
  whole daemon's use of that device, as PyTorch's are the whole process's.
- ``memory_allocated()``: the bytes this session's tensors hold on that device (the daemon's
  per-session count), which is what a program means by "my tensors".
- ``memory_reserved()``: the bytes the device allocator holds from the device
  (``reserved_bytes.all.current``).
"""

from __future__ import annotations

import collections
from typing import Any, Dict, Optional, Tuple

from . import _connection

_stubs: Dict[int, Any] = {}  # id(session) -> Admin stub over the session's address


def _stub(s: Any) -> Any:
    stub = _stubs.get(id(s))
    if stub is None:
        import grpc
        from .._proto import admin_pb2_grpc
        creds = s._credentials
        channel = (grpc.secure_channel(s.address, creds) if creds is not None
                   else grpc.insecure_channel(s.address))
        _stubs.clear()  # one session at a time: an older one's channel is dropped
        stub = _stubs[id(s)] = admin_pb2_grpc.AdminStub(channel)
    return stub


def _read(device: Any) -> Tuple[Dict[str, int], int]:
    """(the device's torch-keyed stats, this session's bytes on it)."""
    import grpc
    from .._proto import admin_pb2
    _check_index(device)
    s = _connection.session()
    s.synchronize()
    name = _connection.daemon_device() or s.default_device
    try:
        r = _stub(s).MemoryStats(admin_pb2.MemoryStatsRequest(device=name),
                                 metadata=s._metadata, timeout=30)
    except grpc.RpcError as e:
        if e.code() in (grpc.StatusCode.PERMISSION_DENIED, grpc.StatusCode.UNAUTHENTICATED):
            raise PermissionError(
                f"torch.tensord memory statistics read the daemon's Admin service at "
                f"{s.address}, which refused this session's token ({e.details()}): use an admin "
                "token (the tokens file's 'admin' flag) or ask the operator "
                "(tensorctl memory)") from None
        raise RuntimeError(f"torch.tensord memory statistics: Admin.MemoryStats for device "
                           f"'{name}' failed: {e.code().name}: {e.details()}") from None
    for d in r.devices:
        if d.pool == "":  # the device's own memory, not its pinned staging pool
            return dict(d.stats), int(d.session_bytes.get(s.session_id, 0))
    raise RuntimeError(f"torch.tensord memory statistics: the daemon reported no memory pool "
                       f"for device '{name}'")


def _check_index(device: Any) -> None:
    index = getattr(device, "index", device)
    if isinstance(device, str):
        index = int(device.split(":")[1]) if ":" in device else None
    if index not in (None, 0):
        raise RuntimeError(f"{device}: the tensord device has one index, tensord:0 "
                           "(Note [tensord:N])")


def memory_stats(device: Optional[Any] = None) -> "collections.OrderedDict[str, int]":
    """The device allocator's statistics, under ``torch.cuda.memory_stats()``'s keys."""
    stats, _ = _read(device)
    return collections.OrderedDict(sorted(stats.items()))


def memory_allocated(device: Optional[Any] = None) -> int:
    """Bytes held by this session's tensors on the device."""
    return _read(device)[1]


def memory_reserved(device: Optional[Any] = None) -> int:
    """Bytes the device's allocator holds from the device (cached ones included)."""
    return int(_read(device)[0].get("reserved_bytes.all.current", 0))
