"""Big downloads on the bulk socket land in kept host buffers (Note [Download cache],
``LocalDownloadCache`` in ``tensord/_download_cache.py``): against the real daemon over TCP
without a region, a ``numpy()`` result of 1 MiB or more is an array over a cached buffer, a
buffer is reused only once no array (or view) shows it, values are always the tensor's, ``out=``
downloads and small ones bypass the cache, a failed download gives its buffer back, and the
idle bytes stay under the cap."""

from __future__ import annotations

import numpy as np
import pytest

import tensord as td
from tensord import _download_cache
from tensord._bulk import BulkLanes

BIG = 3 << 20  # bytes: over _download_cache.MIN_BYTES


def _random(n: int, seed: int) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(n).astype(np.float32)


def _address(a: np.ndarray) -> int:
    return a.__array_interface__["data"][0]


def _known(t: td.Tensor) -> td.Tensor:
    assert t.shape is not None  # its metadata arrived: the download knows its size
    return t


def test_results_reuse_a_buffer_once_no_array_shows_it(daemon: str) -> None:
    with td.connect(daemon, shm=False) as s:
        assert isinstance(s._transport.cache, _download_cache.LocalDownloadCache)
        x, y = _random(BIG // 4, 1), _random(BIG // 4, 2)
        tx, ty = _known(td.tensor(x)), _known(td.tensor(y))
        a = tx.numpy()
        b = ty.numpy()  # `a` still lives: another buffer
        assert np.array_equal(a, x) and np.array_equal(b, y)
        first = _address(a)
        assert _address(b) != first
        del a
        c = ty.numpy()  # the first buffer is free again
        assert _address(c) == first and np.array_equal(c, y) and np.array_equal(b, y)
        view = c[10:20]
        del c
        d = tx.numpy()  # `view` keeps the first buffer: not reused
        assert _address(d) != first and np.array_equal(d, x)
        assert np.array_equal(view, y[10:20])
        # A result whose size is not known yet: the buffer is taken once the answer says it.
        doubled = (ty * 2).numpy()
        assert np.array_equal(doubled, y * 2)


def test_out_and_small_downloads_bypass_the_cache(daemon: str) -> None:
    with td.connect(daemon, shm=False) as s:
        cache = s._transport.cache
        x = _random(BIG // 4, 3)
        tx = _known(td.tensor(x))
        out = np.empty_like(x)
        assert tx.numpy(out=out) is out and np.array_equal(out, x)
        small = _known(td.tensor(x[:1000])).numpy()
        assert np.array_equal(small, x[:1000])
        assert cache._owned == 0  # no buffer was ever made
        got = tx.numpy()
        assert np.array_equal(got, x) and cache._owned == 1
        del got
        assert cache.idle_bytes() == _download_cache.size_class(BIG)


def test_a_failed_download_gives_its_buffer_back(daemon: str,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    with td.connect(daemon, shm=False) as s:
        x = _random(BIG // 4, 4)
        tx = _known(td.tensor(x))

        def broken(self, what, n, lanes, move, lock):
            raise td.ConnectionLost(f"{what}: broken for the test")

        monkeypatch.setattr(BulkLanes, "io", broken)
        with pytest.raises(td.ConnectionLost, match="broken for the test"):
            tx.numpy()
        assert s._transport.cache.idle_bytes() == _download_cache.size_class(BIG)


def test_idle_bytes_stay_under_the_cap(daemon: str) -> None:
    with td.connect(daemon, shm=False, download_cache_bytes=5 << 20) as s:
        cache = s._transport.cache
        values = [_random((k + 2) << 18, k) for k in range(3)]  # 2, 3, 4 MiB
        tensors = [_known(td.tensor(v)) for v in values]
        arrays = [t.numpy() for t in tensors]  # all three shown at once
        for a, v in zip(arrays, values):
            assert np.array_equal(a, v)
        del arrays, a
        assert cache.idle_bytes() <= 5 << 20
        again = [t.numpy() for t in tensors]
        for a, v in zip(again, values):
            assert np.array_equal(a, v)


def test_turned_off(daemon: str) -> None:
    with td.connect(daemon, shm=False, download_cache_bytes=0) as s:
        assert s._transport.cache is None
        x = _random(BIG // 4, 5)
        assert np.array_equal(_known(td.tensor(x)).numpy(), x)
    with td.connect(daemon, shm=False, bulk=False) as s:
        assert s._transport.cache is None  # the stream's chunks are joined into new arrays
