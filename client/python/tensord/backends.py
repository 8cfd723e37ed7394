"""``tensord.backends``: the PyTorch-style switches for CUDA math.

``tensord.backends.cuda.matmul.allow_tf32 = True`` lets float32 matmuls (cuBLAS) and
convolutions (cuDNN) of the default session use TF32 tensor cores: faster, with about 10
mantissa bits per product. Off by default, as ``torch.backends.cuda.matmul.allow_tf32``.
tensord has one switch for both, so ``tensord.backends.cudnn.allow_tf32`` is the same flag
(PyTorch's cuDNN flag defaults to True; tensord's does not). The CPU ignores it: float32 is
computed exactly there. The flag is per session, sent as ``SetOptions.allow_tf32``.
"""

from __future__ import annotations

from . import _context

__all__ = ["cuda", "cudnn"]


class _Tf32Flag:
    """An object whose ``allow_tf32`` reads and sets the default session's TF32 option."""

    @property
    def allow_tf32(self) -> bool:
        return _context.default_session().allow_tf32

    @allow_tf32.setter
    def allow_tf32(self, value: bool) -> None:
        _context.default_session().set_options(allow_tf32=bool(value))


class _Cuda:
    matmul = _Tf32Flag()


cuda = _Cuda()
cudnn = _Tf32Flag()
