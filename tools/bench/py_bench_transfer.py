"""py_bench.py's transfer benchmark (``--bench transfer``): uploads and downloads of a big
float32 array through tensord (by whichever path the session takes: shared memory, the bulk
socket or the stream; and from and into shared buffers), against a local memcpy and a bare
loopback TCP socket for PyTorch's row."""

from __future__ import annotations

import time
from statistics import median
from typing import Any, Callable, Dict

import numpy as np


def raw_tcp_loopback(nbytes: int, reps: int) -> float:
    """Median GB/s of ``nbytes`` through a bare loopback TCP socket in 1 MiB sends (a receiving
    thread, no framing, no copies beyond the kernel's): the ceiling any TCP transport has here."""
    import socket
    import threading
    chunk = 1 << 20
    payload = bytes(chunk)
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(1)
        times = []
        for _ in range(reps + 1):
            def receive() -> None:
                conn, _ = server.accept()
                with conn:
                    view = memoryview(bytearray(chunk))
                    got = 0
                    while got < nbytes:
                        n = conn.recv_into(view)
                        if n == 0:
                            break
                        got += n
            receiver = threading.Thread(target=receive)
            receiver.start()
            t0 = time.perf_counter()
            with socket.create_connection(server.getsockname()) as conn:
                for _ in range(nbytes // chunk):
                    conn.sendall(payload)
            receiver.join()
            times.append(time.perf_counter() - t0)
    return nbytes / median(times[1:]) / 1e9


def _round_trips(lib: Any, src: np.ndarray, reps: int, download: Callable[[Any], np.ndarray]
                 ) -> Dict[str, float]:
    """Median GB/s of ``reps`` uploads of ``src`` (``lib.tensor``, then a synchronize) and
    downloads (``download(tensor)``), after one warm-up round."""
    nbytes = src.nbytes
    up, down = [], []
    for i in range(reps + 1):
        t0 = time.perf_counter()
        t = lib.tensor(src)
        lib.synchronize()
        t1 = time.perf_counter()
        back = download(t)
        t2 = time.perf_counter()
        if back.nbytes != nbytes or back[12345] != src[12345] or back[-1] != src[-1]:
            raise SystemExit("transfer: the download differs from the upload")
        del t, back
        if i:  # the first round is warm-up
            up.append(nbytes / (t1 - t0) / 1e9)
            down.append(nbytes / (t2 - t1) / 1e9)
    return {"upload_gbps": median(up), "download_gbps": median(down)}


def transfer(lib: Any, mib: int, reps: int) -> Dict[str, float]:
    """Upload/download of ``mib`` MiB float32 (tensord), or a local memcpy of it (torch):
    median GB/s. With shared memory, also from and into shared buffers (``shared_*``: one copy,
    ``tensor()`` of an ``empty_shared`` array and ``numpy(out=)`` into another)."""
    src = np.arange(mib << 18, dtype=np.float32)
    nbytes = src.nbytes
    if lib.__name__ != "tensord":
        dst = np.empty_like(src)
        np.copyto(dst, src)
        times = []
        for _ in range(reps):
            t0 = time.perf_counter()
            np.copyto(dst, src)
            times.append(time.perf_counter() - t0)
        return {"memcpy_gbps": nbytes / median(times) / 1e9,
                "raw_tcp_gbps": raw_tcp_loopback(nbytes, reps)}
    out = _round_trips(lib, src, reps, lambda t: t.numpy())
    lanes = getattr(lib.default_session()._transport, "lanes", None)  # RemoteTransport's
    out["bulk"] = bool(lanes and lanes.state)  # the bulk socket carried them
    out["bulk_lanes"] = lanes.connected if lanes else 0
    shared_src = lib.empty_shared(src.shape, dtype=np.float32)
    shared_dst = lib.empty_shared(src.shape, dtype=np.float32)
    if lib.default_session()._shared_ranges:  # same host: the buffers are shared
        shared_src[:] = src
        res = _round_trips(lib, shared_src, reps, lambda t: t.numpy(out=shared_dst))
        out.update({"shared_" + k: v for k, v in res.items()})
    return out
