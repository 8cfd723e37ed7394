"""Builds the tensord package; generates the protocol stubs from ../../proto first.

All metadata lives in pyproject.toml. The stubs are generated when this file runs (before
setuptools looks for the ``tensord._proto`` package), from ``$TENSORD_PROTO_DIR`` or the
checkout's ``proto/``; an sdist that already carries them builds without proto sources.
"""

import os
import sys

from setuptools import Extension, setup

HERE = os.path.dirname(os.path.abspath(__file__))


def _generate_stubs() -> None:
    sys.path.insert(0, HERE)
    try:
        import gen_proto
    finally:
        sys.path.pop(0)
    proto_dir = os.environ.get("TENSORD_PROTO_DIR", gen_proto.DEFAULT_PROTO_DIR)
    out_dir = os.path.join(HERE, "tensord", "_proto")
    if os.path.exists(os.path.join(proto_dir, "tensord.proto")):
        used = gen_proto.generate(proto_dir, out_dir)
        print(f"generated tensord/_proto from {proto_dir} with {used}")
    elif not os.path.exists(os.path.join(out_dir, "tensord_pb2.py")):
        raise RuntimeError(f"no proto sources at {proto_dir} and no generated stubs: build from "
                           "a tensord checkout or set TENSORD_PROTO_DIR")


_generate_stubs()
# The per-op hot path, the mailbox's wait and the command ring in C; optional: without a
# compiler the client runs the first in Python and sends and receives everything on the stream.
setup(ext_modules=[Extension("tensord._speedups", ["tensord/_speedups.c"], optional=True,
                             depends=["tensord/_speedups_call.h", "tensord/_speedups_wire.h",
                                      "tensord/_speedups_meta.h", "tensord/_speedups_method.h"]),
                   Extension("tensord._mailbox", ["tensord/_mailbox.c"], optional=True),
                   Extension("tensord._ring", ["tensord/_ring.c"], optional=True)])
