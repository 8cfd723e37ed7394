"""How a session moves commands and bytes: every switch, and the one place that reads the
environment (docs/transport.md lists the paths these choose between).

Three environment toggles, no more (issue 27):

- ``TENSORD_SHM=0``: no shared-memory region, as on another host (so no command ring, mailbox,
  cross-memory attach, shared buffers or shared download cache). ``connect(shm=)`` overrides.
- ``TENSORD_BULK=0``: no bulk socket; without a region every byte goes on the stream.
  ``connect(bulk=)`` overrides.
- ``TENSORD_PURE_PYTHON=1``: none of the C modules (``_speedups``, ``_ring``, ``_mailbox``),
  read once at import: the Python reference path, which the test command runs once more.

Every other switch is a ``connect()`` keyword (``Session``'s), resolved here into one
``TransportOptions``. ``TENSORD_ADDRESS`` and ``TENSORD_TOKEN`` (``tensord.connect``) say where
to connect, not how.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Optional

ENV_SHM = "TENSORD_SHM"
ENV_BULK = "TENSORD_BULK"
ENV_PURE_PYTHON = "TENSORD_PURE_PYTHON"

MAX_BULK_LANES = 8  # proto/bulk_socket.h kBulkMaxLanes
DEFAULT_SYNC_SPIN_US = 200  # the C++ client's ClientOptions::sync_spin
DEFAULT_DOWNLOAD_CACHE_BYTES = 1 << 30
# Without the command ring the mailbox pays only on hosts of this many CPUs or more: on 2 vCPUs
# gRPC Python's send path, not the answer's way back, dominates a round trip, and the waiter's
# spin takes the CPU that gRPC and the daemon need (BENCHMARKS.md, session 9's mailbox table).
MAILBOX_MIN_CPUS = 4


def _env_off(name: str) -> bool:
    return os.environ.get(name, "1") == "0"


def pure_python() -> bool:
    """``TENSORD_PURE_PYTHON`` set (not empty, not 0): run without the C modules."""
    return os.environ.get(ENV_PURE_PYTHON, "0") not in ("", "0")


@dataclass(frozen=True)
class TransportOptions:
    """A session's transport switches, resolved (``resolve``). Each says what it allows; the
    daemon must offer the path too, and the client falls back where it does not."""

    #: ask for the same-host shared-memory region (``TENSORD_SHM``)
    shm: bool = True
    #: with a region: write batches into its command ring (when ``_ring`` is built)
    ring: bool = True
    #: with a region: take ``item()``'s answer from its mailbox (when ``_mailbox`` is built);
    #: None: with the ring, or on hosts of ``MAILBOX_MIN_CPUS`` or more
    mailbox: Optional[bool] = None
    #: how long a mailbox waiter spins before it sleeps, in microseconds
    sync_spin_us: int = DEFAULT_SYNC_SPIN_US
    #: with a region: uploads of 1 MiB or more by cross-memory attach
    cma: bool = True
    #: without a region: big transfers on the bulk socket (``TENSORD_BULK``)
    bulk: bool = True
    #: the most bulk-socket lanes to connect (1: lane 0 alone)
    bulk_lanes: int = MAX_BULK_LANES
    #: idle bytes the download cache keeps (0: off); None: 1 GiB, or off on a region under a
    #: quota (``LocalTransport``)
    download_cache_bytes: Optional[int] = None
    #: keep chunk-sized transfer buffers mapped (``_malloc``) when the stream carries bytes
    tune_malloc: bool = True

    def mailbox_wanted(self, ring_in_use: bool) -> bool:
        """Whether a region's mailbox is used, given whether its command ring is."""
        if self.mailbox is not None:
            return self.mailbox
        return ring_in_use or (os.cpu_count() or 1) >= MAILBOX_MIN_CPUS


def resolve(shm: Optional[bool] = None, bulk: Optional[bool] = None, *,
            ring: bool = True, mailbox: Optional[bool] = None,
            sync_spin_us: int = DEFAULT_SYNC_SPIN_US, cma: Optional[bool] = None,
            bulk_lanes: Optional[int] = None,
            download_cache_bytes: Optional[int] = None,
            tune_malloc: bool = True) -> TransportOptions:
    """The options of a new session: the keywords given, the environment toggles for ``shm``
    and ``bulk`` left None, defaults for the rest. Raises ValueError for a nonsense value."""
    if bulk_lanes is None:
        bulk_lanes = MAX_BULK_LANES
    if isinstance(bulk_lanes, bool) or not isinstance(bulk_lanes, int) or bulk_lanes < 1:
        raise ValueError(f"bulk_lanes={bulk_lanes!r}: must be an integer >= 1")
    if sync_spin_us < 0:
        raise ValueError(f"sync_spin_us={sync_spin_us!r}: must be >= 0")
    if download_cache_bytes is not None and download_cache_bytes < 0:
        raise ValueError(f"download_cache_bytes={download_cache_bytes!r}: must be >= 0")
    return TransportOptions(
        shm=not _env_off(ENV_SHM) if shm is None else bool(shm),
        ring=bool(ring), mailbox=None if mailbox is None else bool(mailbox),
        sync_spin_us=int(sync_spin_us), cma=True if cma is None else bool(cma),
        bulk=not _env_off(ENV_BULK) if bulk is None else bool(bulk),
        bulk_lanes=min(bulk_lanes, MAX_BULK_LANES),
        download_cache_bytes=download_cache_bytes, tune_malloc=bool(tune_malloc))
