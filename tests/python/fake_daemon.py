"""A small in-process stand-in for the tensord daemon, for client unit tests only.

It speaks the wire protocol (docs/protocol.md) over real gRPC and runs a few ops with NumPy, and
it records every frame it receives, so tests can check batching, chunking, handle order and
releases without the C++ daemon. Results are checked against PyTorch only with the real daemon
(see conftest.py); this fake is no reference for values.
"""

from __future__ import annotations

import threading
from concurrent import futures
from typing import Any, Callable, Dict, List, Optional

import grpc
import numpy as np

from tensord._proto import tensord_pb2 as pb
from tensord._proto import tensord_pb2_grpc as pb_grpc

from packed_runs import meta_entry

NP = {1: np.float32, 2: np.float64, 3: np.float16, 5: np.int64, 6: np.int32, 7: np.int8,
      8: np.uint8, 9: np.bool_}
PROTO = {np.dtype(v): k for k, v in NP.items()}
CREATE = [("shape", "ints", True, None), ("dtype", "dtype", False, 1),
          ("device", "string", False, "")]
# name: (min_inputs, max_inputs, attrs)
OPS = {
    "zeros": (0, 0, CREATE), "ones": (0, 0, CREATE), "randn": (0, 0, CREATE),
    "full": (0, 0, CREATE + [("fill_value", "float", True, None)]),
    "add": (2, 2, [("alpha", "float", False, 1.0)]), "sub": (2, 2, [("alpha", "float", False, 1.0)]),
    "mul": (2, 2, []), "div": (2, 2, []), "neg": (1, 1, []), "relu": (1, 1, []),
    "matmul": (2, 2, []),
    "sum": (1, 1, [("dim", "ints", False, []), ("keepdim", "bool", False, False)]),
    "reshape": (1, 1, [("shape", "ints", True, None)]),
    "transpose": (1, 1, [("dim0", "int", True, None), ("dim1", "int", True, None)]),
    "select": (1, 1, [("dim", "int", True, None), ("index", "int", True, None)]),
    "narrow": (1, 1, [("dim", "int", True, None), ("start", "int", True, None),
                      ("length", "int", True, None)]),
}


class OpError(Exception):
    def __init__(self, code: int, msg: str) -> None:
        super().__init__(msg)
        self.code = code


def _attr(a: Any) -> Any:
    kind = a.WhichOneof("value")
    v = getattr(a, kind)
    return list(v.values) if kind in ("ints", "floats") else v


def _promote(x: np.ndarray, y: np.ndarray) -> np.dtype:
    if x.ndim == 0 and y.ndim > 0:
        x, y = y, x
    if y.ndim == 0 and x.ndim > 0:
        cat = lambda d: 0 if d.kind == "b" else 1 if d.kind in "iu" else 2  # noqa: E731
        return y.dtype if cat(y.dtype) > cat(x.dtype) else x.dtype
    return np.result_type(x, y)


def run_op(name: str, ins: List[np.ndarray], at: Dict[str, Any], rng: Any) -> np.ndarray:
    shape = at.get("shape")
    dt = NP.get(at.get("dtype", 1), np.float32)
    if name == "zeros":
        return np.zeros(shape, dt)
    if name == "ones":
        return np.ones(shape, dt)
    if name == "full":
        return np.full(shape, at["fill_value"], dt)
    if name == "randn":
        return rng.standard_normal(shape).astype(dt)
    if name in ("add", "sub", "mul", "div"):
        x, y = ins
        try:
            np.broadcast_shapes(x.shape, y.shape)
        except ValueError:
            raise OpError(3, f"shapes {list(x.shape)} and {list(y.shape)} cannot be broadcast")
        d = _promote(x, y)
        alpha = at.get("alpha", 1.0)
        r = {"add": lambda: x + alpha * y, "sub": lambda: x - alpha * y,
             "mul": lambda: x * y, "div": lambda: np.true_divide(x, y)}[name]()
        return r.astype(d if name != "div" or d.kind == "f" else np.float32)
    if name == "neg":
        return -ins[0]
    if name == "relu":
        return np.maximum(ins[0], 0).astype(ins[0].dtype)
    if name == "matmul":
        x, y = ins
        if x.shape[-1] != y.shape[0]:
            raise OpError(3, f"shapes {list(x.shape)} and {list(y.shape)} cannot be multiplied")
        return x @ y
    if name == "sum":
        dims = tuple(at.get("dim") or range(ins[0].ndim))
        return np.sum(ins[0], axis=dims, keepdims=at.get("keepdim", False))
    if name == "reshape":
        try:
            return ins[0].reshape(shape)
        except ValueError:
            raise OpError(3, f"shape {shape} is invalid for input of size {ins[0].size}")
    if name == "transpose":
        return np.swapaxes(ins[0], at["dim0"], at["dim1"])
    if name == "select":
        return np.take(ins[0], at["index"], axis=at["dim"])
    if name == "narrow":
        idx = [slice(None)] * ins[0].ndim
        idx[at["dim"]] = slice(at["start"], at["start"] + at["length"])
        return ins[0][tuple(idx)]
    raise OpError(12, f"{name} not implemented")


class FakeDaemon(pb_grpc.TensordServicer):
    """Serves on 127.0.0.1:<port>; ``frames`` holds every received ClientFrame, ``hellos``
    every Hello. With ``packed_metas`` set, a client that asks (Hello.packed_acks) gets its
    results that are no error in Ack.packed_created (Note [Packed metas]), passed through
    ``packed_metas`` (the identity, or a test's way of spoiling them)."""

    def __init__(self, chunk_bytes: int = 1 << 20) -> None:
        self.chunk_bytes = chunk_bytes
        self.frames: List[Any] = []
        self.hellos: List[Any] = []
        self.packed_metas: Optional[Callable[[bytes], bytes]] = None
        self.live: Dict[str, int] = {}
        self.lock = threading.Lock()
        self.server = grpc.server(futures.ThreadPoolExecutor(max_workers=8))
        pb_grpc.add_TensordServicer_to_server(self, self.server)
        self.port = self.server.add_insecure_port("127.0.0.1:0")
        self.address = f"127.0.0.1:{self.port}"
        self.server.start()

    def stop(self) -> None:
        self.server.stop(0)

    def welcome(self, sid: str) -> Any:
        w = pb.Welcome(session_id=sid, protocol_version=pb.PROTOCOL_VERSION_CURRENT,
                       chunk_bytes=self.chunk_bytes, max_frame_bytes=8 << 20,
                       default_device="cpu")
        w.devices.add(name="cpu", kind="cpu")
        for i, (name, (lo, hi, attrs)) in enumerate(OPS.items()):
            op = w.ops.add(id=100 + i, name=name, min_inputs=lo, max_inputs=hi, num_outputs=1)
            for an, at, req, default in attrs:
                a = op.attrs.add(name=an, type=at, required=req)
                if default is not None:
                    field = {"int": "i", "float": "f", "bool": "b", "string": "s",
                             "dtype": "dtype"}.get(at)
                    if field:
                        setattr(a.default_value, field, default)
                    else:
                        a.default_value.ints.values.extend(default)
        return w

    def Session(self, request_iterator: Any, context: Any) -> Any:  # noqa: N802
        hello = next(request_iterator)
        self.hellos.append(hello.hello)
        packed = hello.hello.packed_acks and self.packed_metas is not None
        sid = f"s{id(hello)}"
        yield pb.ServerFrame(welcome=self.welcome(sid))
        ops = {100 + i: n for i, n in enumerate(OPS)}
        vals: Dict[int, Any] = {}  # handle -> ndarray or pb.Status (poisoned)
        last_handle = 0
        first_error = None
        puts: Dict[int, Any] = {}
        rng = np.random.default_rng(0)
        for frame in request_iterator:
            with self.lock:
                self.frames.append(frame)
            ack = pb.Ack()
            out = []
            for cmd in frame.batch.commands:
                kind = cmd.WhichOneof("kind")
                ack.last_seq = cmd.seq
                if kind == "call":
                    c = cmd.call
                    name = ops[c.op_id]
                    err = None
                    ins = []
                    for h in c.inputs:
                        v = vals.get(h)
                        if v is None:
                            err = pb.Status(code=5, message=f"unknown handle {h}", op=name,
                                            site=c.site)
                        elif isinstance(v, pb.Status):
                            err = err or v
                        else:
                            ins.append(v)
                    result = None
                    if err is None:
                        try:
                            result = run_op(name, ins, {k: _attr(v) for k, v in c.attrs.items()},
                                            rng)
                        except OpError as e:
                            err = pb.Status(code=e.code, message=str(e), op=name, site=c.site)
                    if err is not None and first_error is None:
                        first_error = err
                    for h in c.outputs:
                        assert h > last_handle, (h, last_handle)
                        last_handle = h
                        vals[h] = err if err is not None else np.asarray(result)
                        self._describe(ack, h, vals[h], packed)
                elif kind == "put":
                    p = cmd.put
                    if p.offset == 0:
                        assert p.handle > last_handle
                        last_handle = p.handle
                        puts[p.handle] = (p.dtype, list(p.shape), bytearray())
                    dt, shape, buf = puts[p.handle]
                    assert p.offset == len(buf), (p.offset, len(buf))
                    buf += p.payload.data
                    if p.last:
                        del puts[p.handle]
                        vals[p.handle] = np.frombuffer(bytes(buf), NP[dt]).reshape(shape)
                        self._describe(ack, p.handle, vals[p.handle], packed)
                elif kind == "get":
                    g = cmd.get
                    v = vals.get(g.handle)
                    if not isinstance(v, np.ndarray):
                        st = v if v is not None else pb.Status(code=5, message="unknown handle")
                        out.append(pb.ServerFrame(error=pb.Error(request_id=g.request_id,
                                                                 status=st)))
                        continue
                    data = np.ascontiguousarray(v).tobytes()
                    meta = self._meta(g.handle, v)
                    off = 0
                    while True:
                        chunk = data[off:off + self.chunk_bytes]
                        d = pb.Data(request_id=g.request_id, offset=off,
                                    payload=pb.Payload(data=chunk),
                                    last=off + len(chunk) >= len(data))
                        if off == 0:
                            d.meta.CopyFrom(meta)
                            d.total_bytes = len(data)
                        out.append(pb.ServerFrame(data=d))
                        off += len(chunk)
                        if d.last:
                            break
                elif kind == "release":
                    for h in cmd.release.handles:
                        vals.pop(h, None)
                elif kind == "sync":
                    st = first_error or pb.Status()
                    first_error = None
                    out.append(pb.ServerFrame(sync_done=pb.SyncDone(
                        request_id=cmd.sync.request_id, error=st)))
                elif kind == "options":
                    if cmd.options.WhichOneof("option") == "seed":
                        rng = np.random.default_rng(cmd.options.seed)
            with self.lock:
                self.live[sid] = len(vals)
            if ack.packed_created:
                ack.packed_created = self.packed_metas(ack.packed_created)
            yield pb.ServerFrame(ack=ack)
            for f in out:
                yield f
        with self.lock:
            self.live[sid] = 0

    def _describe(self, ack: Any, h: int, v: Any, packed: bool) -> None:
        """Lists ``h`` (holding ``v``) among the handles ``ack`` created."""
        if packed and not isinstance(v, pb.Status):  # device 0, no flags: as _meta says
            ack.packed_created += meta_entry(h, PROTO[v.dtype], 0, 0, list(v.shape))
        else:
            ack.created.append(self._meta(h, v))

    @staticmethod
    def _meta(h: int, v: Any) -> Any:
        if isinstance(v, pb.Status):
            return pb.TensorMeta(handle=h, error=v)
        return pb.TensorMeta(handle=h, dtype=PROTO[v.dtype], shape=list(v.shape), device="cpu")
