"""Builds the tensord package; generates the protocol stubs from ../../proto first.

All metadata lives in pyproject.toml; this file only hooks stub generation into build_py.
"""

import os
import sys

from setuptools import setup
from setuptools.command.build_py import build_py

HERE = os.path.dirname(os.path.abspath(__file__))


class BuildPyWithProto(build_py):
    """build_py that first writes tensord/_proto/ from the .proto files."""

    def run(self) -> None:
        sys.path.insert(0, HERE)
        try:
            import gen_proto
        finally:
            sys.path.pop(0)
        proto_dir = os.environ.get("TENSORD_PROTO_DIR", gen_proto.DEFAULT_PROTO_DIR)
        out_dir = os.path.join(HERE, "tensord", "_proto")
        if os.path.exists(os.path.join(proto_dir, "tensord.proto")):
            used = gen_proto.generate(proto_dir, out_dir)
            print(f"generated tensord/_proto with {used}")
        elif not os.path.exists(os.path.join(out_dir, "tensord_pb2.py")):
            raise RuntimeError(f"no proto sources at {proto_dir} and no generated stubs: build "
                               "from a tensord checkout or set TENSORD_PROTO_DIR")
        super().run()


setup(cmdclass={"build_py": BuildPyWithProto})
