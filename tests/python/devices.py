"""Whether this machine has a CUDA GPU, asked of the driver directly (no daemon, no torch):
conftest.py's ``device`` parameters and the GPU-only tests use it (Note [Device-parametrized
tests] in conftest.py)."""

from __future__ import annotations

import ctypes
import functools
import os
from typing import Tuple


@functools.lru_cache(maxsize=None)
def cuda_visible() -> Tuple[bool, str]:
    """(whether a CUDA GPU is usable here, why not). ``TENSORD_TEST_CUDA=0`` or ``1`` overrides
    the probe (0: never run the cuda cases; 1: always try them against the daemon)."""
    forced = os.environ.get("TENSORD_TEST_CUDA")
    if forced in ("0", "1"):
        return forced == "1", "TENSORD_TEST_CUDA=0"
    try:
        cuda = ctypes.CDLL("libcuda.so.1")
    except OSError:
        return False, "no CUDA driver (libcuda.so.1 not found)"
    count = ctypes.c_int(0)
    rc = cuda.cuInit(0)
    if rc != 0:
        return False, f"the CUDA driver did not initialise (cuInit error {rc})"
    rc = cuda.cuDeviceGetCount(ctypes.byref(count))
    if rc != 0 or count.value == 0:
        return False, "the CUDA driver sees no device"
    return True, ""
