"""A client killed with SIGKILL mid-stream: its session is detached, then released.

The daemon runs with ``--resume_grace=1s``; the memory the killed client held must be back
within the grace period plus one second, while another session keeps computing.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time

import numpy as np
import tensord as td
from conftest import CLIENT, running_daemon
from tensord._proto import admin_pb2, admin_pb2_grpc

# The victim: allocates ~8 MiB, reports its session id, then keeps sending ops until killed.
VICTIM = textwrap.dedent("""
    import sys, tensord as td
    s = td.connect(sys.argv[1])
    keep = td.ones(2048, 1024)          # 8 MiB held by this session
    keep.sum().item()                   # make sure it exists before we report
    print(s.session_id, flush=True)
    x = td.ones(4)
    while True:
        x = x + 1                       # mid-stream when the SIGKILL lands
        x.sum().item()
""")


def session_bytes(stub: admin_pb2_grpc.AdminStub, session_id: str) -> int:
    resp = stub.MemoryStats(admin_pb2.MemoryStatsRequest())
    return sum(d.session_bytes.get(session_id, 0) for d in resp.devices)


def test_sigkilled_client_memory_returns_within_grace_plus_one_second() -> None:
    import grpc

    with running_daemon("--resume_grace=1s") as address:
        stub = admin_pb2_grpc.AdminStub(grpc.insecure_channel(address))
        env = dict(os.environ, PYTHONPATH=CLIENT)
        with td.connect(address):
            bystander = td.arange(0, 1000, dtype=td.float32)
            for _ in range(3):
                victim = subprocess.Popen([sys.executable, "-c", VICTIM, address],
                                          stdout=subprocess.PIPE, env=env, text=True)
                session_id = victim.stdout.readline().strip()
                assert session_id, "the victim did not start"
                assert session_bytes(stub, session_id) >= 8 << 20
                victim.send_signal(signal.SIGKILL)
                victim.wait()
                killed = time.monotonic()
                # Polling an Admin counter against a deadline (the grace period is a timer).
                while session_bytes(stub, session_id) and time.monotonic() - killed < 2.0:
                    time.sleep(0.02)
                assert session_bytes(stub, session_id) == 0, "memory not returned"
                assert time.monotonic() - killed < 2.0
                # The other session is unaffected.
                np.testing.assert_array_equal((bystander * 2).numpy(),
                                              np.arange(0, 1000, dtype=np.float32) * 2)
