"""The download cache (Note [Download cache], ``tensord/_download_cache.py``) against the real
daemon: big ``numpy()`` results of a same-host session arrive in cached shared buffers, a
buffer is reused only once no array shows it, the idle bytes stay under the cap, the daemon's
refusals fall back to the staging buffer (Note [Staging buffer]), and values are always the
tensor's. Results whose size is not known yet take the staging buffer."""

from __future__ import annotations

import os
import tempfile

import numpy as np
import pytest

import tensord as td
from conftest import running_daemon, session_info
from tensord import _download_cache
from tensord._local_transport import LocalTransport

BIG = 3 << 20  # bytes: over _download_cache.MIN_BYTES


@pytest.fixture
def gets(monkeypatch: pytest.MonkeyPatch) -> list:
    """The shared-buffer Gets the sessions issue: (region, offset, nbytes) each."""
    seen = []
    real = LocalTransport._get_shared_locked

    def spy(self, handle, site, where, nbytes):
        seen.append((where[0], where[1], nbytes))
        return real(self, handle, site, where, nbytes)

    monkeypatch.setattr(LocalTransport, "_get_shared_locked", spy)
    return seen


def _known(t: td.Tensor) -> td.Tensor:
    """``t`` once its metadata arrived: a download of a tensor of known size can pick its path
    (an unknown size takes the stream rather than wait a round trip for the Ack)."""
    assert t.shape is not None
    return t


def _random(n: int, seed: int, dtype=np.float32) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(n).astype(dtype)


def test_size_classes() -> None:
    assert _download_cache.size_class(1) == 2 << 20
    assert _download_cache.size_class(2 << 20) == 2 << 20
    assert _download_cache.size_class((2 << 20) + 1) == (2 << 20) + (512 << 10)
    assert _download_cache.size_class(3 << 20) == 3 << 20
    assert _download_cache.size_class(256 << 20) == 256 << 20
    assert _download_cache.size_class((256 << 20) + 1) == 320 << 20
    for n in (1, 12345, 5 << 20, (100 << 20) + 7):
        c = _download_cache.size_class(n)
        assert n <= c < 2 * n + (2 << 20)


def test_big_results_reuse_a_buffer_once_no_array_shows_it(daemon: str, gets: list) -> None:
    with td.connect(daemon, shm=True) as s:
        x, y = _random(BIG // 4, 1), _random(BIG // 4, 2)
        tx, ty = _known(td.tensor(x)), _known(td.tensor(y))
        a = tx.numpy()
        assert np.array_equal(a, x) and len(gets) == 1
        b = ty.numpy()  # `a` still lives: another buffer
        assert np.array_equal(b, y) and len(gets) == 2
        assert gets[0][0] != gets[1][0]
        assert np.array_equal(a, x)  # untouched by the second download
        region_a = gets[0][0]
        del a
        c = ty.numpy()  # the first buffer is free again
        assert gets[2][0] == region_a and np.array_equal(c, y) and np.array_equal(b, y)
        view = c[10:20]
        del c
        d = tx.numpy()  # `view` keeps the first buffer: not reused
        assert gets[3][0] != region_a and np.array_equal(d, x)
        assert np.array_equal(view, y[10:20])
        c2 = _known(ty * 2).numpy()
        assert np.array_equal(c2, y * 2)


def test_dtypes_shapes_and_a_later_upload_from_the_result(daemon: str, gets: list) -> None:
    with td.connect(daemon, shm=True):
        for dtype, shape in ((np.float64, (513, 1025)), (np.int64, (3, 170001)),
                             (np.int8, (2, 1 << 20)), (np.float16, (1 << 20,))):
            v = (_random(int(np.prod(shape)), 3) * 100).astype(dtype).reshape(shape)
            got = _known(td.tensor(v)).numpy()
            assert got.dtype == dtype and got.shape == shape and np.array_equal(got, v)
            again = _known(td.tensor(got * 1)).numpy()  # its own memory: fine either way
            assert np.array_equal(again, v)
        n = len(gets)
        bf = _known(td.tensor(_random(BIG // 4, 4)).to(td.bfloat16)).numpy()  # then converted
        assert bf.dtype == np.float32 and len(gets) == n + 1


def test_idle_bytes_stay_under_the_cap_and_empty_frees_them(daemon: str, gets: list,
                                                             admin) -> None:
    with td.connect(daemon, shm=True, download_cache_bytes=7 << 20) as s:
        values = [_random((k + 2) << 18, k) for k in range(4)]  # 2, 3, 4, 5 MiB
        ts = [_known(td.tensor(v)) for v in values]
        arrays = [t.numpy() for t in ts]
        assert len({g[0] for g in gets}) == 4
        td.synchronize()
        assert session_info(admin, s.session_id).shared_buffers == 4
        del arrays  # 14 MiB idle now
        got = ts[0].numpy()  # trims to the cap (oldest first), then takes a 2 MiB buffer
        assert np.array_equal(got, values[0])
        idle = s._transport.cache.idle_bytes()
        assert 0 < idle <= 7 << 20
        td.synchronize()  # the trimmed buffers' Release has run
        kept = len(s._transport.cache._idle)
        assert session_info(admin, s.session_id).shared_buffers == 1 + kept < 5
        s.empty_download_cache()
        assert s._transport.cache.idle_bytes() == 0
        td.synchronize()
        assert session_info(admin, s.session_id).shared_buffers == 1  # the one `got` shows
        assert np.array_equal(got, values[0])


def test_the_cache_leaves_buffers_for_the_program(daemon: str, gets: list,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_download_cache, "MAX_BUFFERS", 2)
    with td.connect(daemon, shm=True) as s:
        x = _random(BIG // 4, 8)
        t = _known(td.tensor(x))
        kept = [t.numpy() for _ in range(3)]  # the third one takes the staging buffer
        assert len(gets) == 2 and all(np.array_equal(k, x) for k in kept)
        mine = [td.empty_shared(1 << 18) for _ in range(3)]  # the program's own still fit
        assert all(m.base._owner.is_shared for m in mine)
        del kept
        again = t.numpy()  # an idle buffer serves it
        assert len(gets) == 3 and np.array_equal(again, x)
        assert s._transport.cache._owned == 2


def test_sizes_not_known_yet_take_the_staging_buffer(daemon: str, gets: list,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """A result whose Ack has not arrived: ``numpy()`` asks through the staging buffer and
    learns the size from the first answer (two Gets for one larger than the first buffer);
    ``item()`` takes the mailbox (or the stream without its C module); an error arrives as the
    op's."""
    from tensord import _staging
    totals = []
    real = _staging.Staging.download_locked

    def spy(self, r, handle, total, site, out):
        totals.append(total)
        return real(self, r, handle, total, site, out)

    monkeypatch.setattr(_staging.Staging, "download_locked", spy)
    # No timer flush: an op's Ack cannot arrive before the numpy() that sends it.
    with td.connect(daemon, shm=True, flush_interval=600.0) as s:
        x = _random(_staging.FIRST_BYTES // 4 + 12345, 9)  # more than the first buffer
        t = _known(td.tensor(x))
        for make, want in ((lambda: t * 2, x * 2), (lambda: t[:7] + 1, x[:7] + 1),
                           (lambda: t[:0] * 1, x[:0])):
            got = make().numpy()  # no Ack yet: size unknown
            assert got.dtype == np.float32 and np.array_equal(got, want)
        assert totals == [None, None, None] and gets == []
        assert (t[:1] * 3).item() == pytest.approx(float(x[0]) * 3, rel=1e-6)
        # item(): the region's mailbox when its C module is built (Note [Python mailbox]),
        # else the stream
        assert len(totals) == (4 if s._transport.region.word else 3)
        with pytest.raises(td.Error, match="matmul"):
            td.matmul(t, td.tensor(np.ones((3, 3), np.float32))).numpy()


def test_turned_off(daemon: str, gets: list) -> None:
    with td.connect(daemon, shm=True, download_cache_bytes=0) as s:
        x = _random(BIG // 4, 5)
        assert s._transport.cache is None and np.array_equal(_known(td.tensor(x)).numpy(), x)
    with td.connect(daemon, shm=False) as s:  # no shared memory: nothing to cache in
        assert np.array_equal(_known(td.tensor(x)).numpy(), x)
    assert gets == []


def test_refused_buffers_fall_back() -> None:
    tokens = os.path.join(tempfile.mkdtemp(prefix="tensord-tokens-"), "tokens")
    with open(tokens, "w") as f:
        f.write("bob tok-bob quota=24MiB\n")
    with running_daemon(f"--tokens_file={tokens}") as address:
        with td.connect(address, token="tok-bob", shm=True) as s:
            assert s._transport.cache is None  # a quota: off unless asked for
        with td.connect(address, token="tok-bob", shm=True,
                        download_cache_bytes=64 << 20) as s:
            x = _random(5 << 20 >> 2, 6)  # 5 MiB: tensor, buffer and a second one fit
            t = _known(td.tensor(x))
            a = t.numpy()
            b = t.numpy()
            yv = _random(8 << 20 >> 2, 7)
            y = _known(td.tensor(yv))  # 13 MiB of tensors, 10 of buffers
            c = y.numpy()  # no room for an 8 MiB buffer even after emptying: staging or stream
            assert np.array_equal(a, x) and np.array_equal(b, x) and np.array_equal(c, yv)
            assert s._transport.cache.idle_bytes() == 0
            del a, b  # idle now, and counted: the 5 MiB op does not fit
            with pytest.raises(td.OutOfMemoryError, match="quota"):
                (t + 1).numpy()
            s.empty_download_cache()
            assert (t + 1).sum().item() == pytest.approx(float((x + 1).sum()), rel=1e-4)
