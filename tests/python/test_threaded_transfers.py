"""Several Python threads on one session while big transfers run (the real daemon, a small
shared-memory region so that big uploads and downloads take several slots and wait for Acks
mid-transfer): handles must reach the daemon in increasing order, every transfer's chunks must
stay consecutive, and every value must arrive intact.

Handles are allocated in command order (``_session``): a thread that has to wait for another
thread's exclusive transfer (``Batcher._exclusive_locked``) allocates its handle only once it
may queue the command that creates it. Were it allocated before the wait, a thread that got the
lock first afterwards would queue a higher handle ahead of it, and the daemon would refuse the
lower one ("is not above the last created handle")."""

from __future__ import annotations

import threading
from typing import List

import numpy as np
import pytest

import tensord as td
from conftest import running_daemon
from tensord import _shm

SLOT = 1 << 20  # the region's slots: a 4 MiB region, 4 slots
ROUNDS = 40
UPLOADERS = 2
CREATORS = 2


@pytest.fixture(scope="module")
def small_region_daemon():
    # no command ring: it would take part of the region (the slots' size is the point here)
    with running_daemon(f"--shm_bytes={4096 + 4 * SLOT}", "--command_ring=false") as address:
        yield address


def test_threads_creating_tensors_around_big_uploads(small_region_daemon: str) -> None:
    with td.connect(small_region_daemon, shm=True) as s:
        assert s._transport.shares_memory and s._transport.region.slot_bytes == SLOT
        start = threading.Barrier(UPLOADERS + CREATORS)
        errors: List[BaseException] = []

        def uploader(k: int) -> None:
            # Multi-slot uploads through the region (exclusive, waiting for slot Acks) and
            # their multi-slot downloads; in between, a one-chunk stream upload.
            start.wait()
            for i in range(ROUNDS):
                n = (5 * SLOT) // 4 + 1024 * (i % 7)
                a = np.full(n, k * 10_000 + i, dtype=np.float32)
                assert a.nbytes >= _shm.MIN_BYTES
                t = td.tensor(a)
                mid = td.tensor(np.arange(1 << 15, dtype=np.float32) + i)  # 128 KiB: stream
                got = t.numpy()
                assert np.array_equal(got, a), (k, i)
                assert mid[-1].item() == (1 << 15) - 1 + i

        def creator(k: int) -> None:
            # Ops and small uploads, each creating handles, read back as they go.
            start.wait()
            for i in range(4 * ROUNDS):
                x = td.full((16,), float(k * 10_000 + i)) + 1
                y = td.tensor([float(i)] * 16) * 2
                assert (x + y).tolist() == [k * 10_000 + i + 1 + 2.0 * i] * 16, (k, i)

        def run(fn, k: int) -> None:
            try:
                fn(k)
            except BaseException as e:  # reported by the main thread
                errors.append(e)
                start.abort()

        threads = ([threading.Thread(target=run, args=(uploader, k)) for k in range(UPLOADERS)]
                   + [threading.Thread(target=run, args=(creator, k)) for k in range(CREATORS)])
        for t in threads:
            t.start()
        for t in threads:
            t.join(120)
        assert not any(t.is_alive() for t in threads), "a thread hung"
        assert not errors, errors[0]
        s.synchronize()  # no frame error (a refused handle) either
